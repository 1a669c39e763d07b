// Status and StatusOr<T>: the error type at every boundary that reads outside input (files, JSON,
// user parameters). Messages name the file, key, tensor or field and what was expected
// (ARCHITECTURE.md "Errors"). No exceptions cross these boundaries and nothing aborts on bad input.
#ifndef UNMASK_CORE_STATUS_H_
#define UNMASK_CORE_STATUS_H_

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace unmask {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // a user parameter or flag is wrong
  kNotFound,            // a file, key, tensor or token is missing
  kOutOfRange,          // an index or size is beyond its limit (e.g. prompt longer than context)
  kDataLoss,            // a file is truncated or malformed
  kUnimplemented,       // a valid input that unmask does not support (yet)
  kFailedPrecondition,  // the call is valid but the object is not in a state that allows it
  kResourceExhausted,   // out of memory or over a configured budget
  kInternal,            // a bug: an invariant of unmask itself was broken
};

// Returns "OK", "INVALID_ARGUMENT", ...
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message" (or "OK").
  std::string ToString() const;
  // Returns a copy with "context: " prepended to the message (no-op when OK).
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgumentError(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status OutOfRangeError(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status DataLossError(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status UnimplementedError(std::string m) {
  return {StatusCode::kUnimplemented, std::move(m)};
}
inline Status FailedPreconditionError(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status ResourceExhaustedError(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Holds either a value or a non-OK Status. Accessing value() of an error is a bug (asserts).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : data_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(data_).ok() && "StatusOr built from an OK status");
  }
  StatusOr(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(data_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(data_); }

  T& value() & {
    assert(ok());
    return std::get<T>(data_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(data_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(data_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> data_;
};

}  // namespace unmask

#define UNMASK_CONCAT_INNER_(a, b) a##b
#define UNMASK_CONCAT_(a, b) UNMASK_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define UNMASK_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::unmask::Status unmask_status_ = (expr);        \
    if (!unmask_status_.ok()) return unmask_status_; \
  } while (0)

// `lhs = value of expr` or return its Status. lhs may be a declaration (`auto x`).
#define UNMASK_ASSIGN_OR_RETURN(lhs, expr) \
  UNMASK_ASSIGN_OR_RETURN_IMPL_(UNMASK_CONCAT_(unmask_statusor_, __LINE__), lhs, expr)
#define UNMASK_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

#endif  // UNMASK_CORE_STATUS_H_
