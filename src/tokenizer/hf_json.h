// Typed, path-tracking access to the JSON files of a Hugging Face checkpoint folder (internal to
// src/tokenizer/): every error names the file and the field ("dir/tokenizer.json: model.vocab").
#ifndef UNMASK_TOKENIZER_HF_JSON_H_
#define UNMASK_TOKENIZER_HF_JSON_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace unmask::hf {

using Json = nlohmann::json;

// Reads and parses `path`. NotFound when the file does not exist (or is not a regular file),
// DataLoss naming the file and nlohmann's message (with its byte position) when it is not JSON,
// ResourceExhausted beyond 1 GiB.
StatusOr<Json> ReadJsonFile(const std::string& path);

// One value inside a parsed file, with its path for messages; it may be absent (a missing key or
// index). Cheap to copy: it points into the parsed document and at the file name, which must
// outlive it.
class JsonField {
 public:
  JsonField(const Json* value, const std::string* file, std::string path)
      : value_(value), file_(file), path_(std::move(path)) {}

  bool absent() const { return value_ == nullptr; }
  bool is_null() const { return value_ != nullptr && value_->is_null(); }
  bool null_or_absent() const { return value_ == nullptr || value_->is_null(); }
  bool is_string() const { return value_ != nullptr && value_->is_string(); }
  bool is_object() const { return value_ != nullptr && value_->is_object(); }
  bool is_array() const { return value_ != nullptr && value_->is_array(); }
  // The value; only when !absent().
  const Json& json() const { return *value_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }
  // Number of elements of an array or object, 0 otherwise.
  size_t size() const;

  // A member (absent unless this is an object that has `key`) or an element (absent unless this is
  // an array longer than `index`).
  JsonField operator[](std::string_view key) const;
  JsonField operator[](size_t index) const;
  // A member named for an object iterated by the caller (path "parent.key" or "parent['a b']").
  JsonField Member(const std::string& key, const Json* value) const;

  // Required values: DataLoss naming the field when absent or of another type.
  StatusOr<std::string> String() const;
  StatusOr<bool> Bool() const;
  // An integer in [min, max] (a JSON number without fraction or exponent); DataLoss otherwise.
  StatusOr<int64_t> Int(int64_t min, int64_t max) const;
  Status ExpectObject() const;
  Status ExpectArray() const;
  // Optional values: nullopt when absent or null; DataLoss for another type.
  StatusOr<std::optional<std::string>> OptionalString() const;
  StatusOr<std::optional<bool>> OptionalBool() const;

  // DataLoss "file: path must be <expected> (it is <type>)".
  Status WrongType(std::string_view expected) const;
  // DataLoss "file: path <what>".
  Status Bad(std::string_view what) const;
  // Unimplemented "file: path <value> is not supported (supported: <supported>)".
  Status Unsupported(std::string_view value, std::string_view supported) const;
  // "file: path" (just "file" for the document itself).
  std::string where() const;

 private:
  const Json* value_;
  const std::string* file_;
  std::string path_;
};

// `s` in single quotes, cut to 60 bytes with "..." (for values inside messages).
std::string QuoteValue(std::string_view s);

}  // namespace unmask::hf

#endif  // UNMASK_TOKENIZER_HF_JSON_H_
