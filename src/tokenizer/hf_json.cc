#include "tokenizer/hf_json.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace unmask::hf {
namespace {

constexpr uintmax_t kMaxJsonBytes = uintmax_t{1} << 30;

std::string TypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number with a fraction";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "not a JSON value";
  }
}

// A key as a path component: `.key` when it is a plain identifier, else `['key']`.
std::string KeyPath(const std::string& parent, std::string_view key) {
  bool plain = !key.empty();
  for (char c : key) {
    plain &= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }
  if (plain) return parent.empty() ? std::string(key) : parent + "." + std::string(key);
  return parent + "[" + QuoteValue(key) + "]";
}

}  // namespace

std::string QuoteValue(std::string_view s) {
  if (s.size() <= 60) return "'" + std::string(s) + "'";
  size_t cut = 57;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // whole chars
  return "'" + std::string(s.substr(0, cut)) + "...'";
}

StatusOr<Json> ReadJsonFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return NotFoundError(path + ": not found");
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return NotFoundError(path + ": cannot read (" + ec.message() + ")");
  if (size > kMaxJsonBytes) {
    return ResourceExhaustedError(path + ": " + std::to_string(size) +
                                  " bytes is beyond the 1 GiB limit for a JSON file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return DataLossError(path + ": read error");
  try {
    return Json::parse(text.str());
  } catch (const Json::exception& e) {
    return DataLossError(path + ": not valid JSON: " + e.what());
  }
}

size_t JsonField::size() const {
  if (value_ == nullptr || !(value_->is_array() || value_->is_object())) return 0;
  return value_->size();
}

JsonField JsonField::operator[](std::string_view key) const {
  const Json* member = nullptr;
  if (is_object()) {
    const auto it = value_->find(key);
    if (it != value_->end()) member = &*it;
  }
  return JsonField(member, file_, KeyPath(path_, key));
}

JsonField JsonField::operator[](size_t index) const {
  const Json* element = nullptr;
  if (is_array() && index < value_->size()) element = &(*value_)[index];
  return JsonField(element, file_, path_ + "[" + std::to_string(index) + "]");
}

JsonField JsonField::Member(const std::string& key, const Json* value) const {
  return JsonField(value, file_, KeyPath(path_, key));
}

std::string JsonField::where() const { return path_.empty() ? *file_ : *file_ + ": " + path_; }

Status JsonField::WrongType(std::string_view expected) const {
  if (value_ == nullptr)
    return DataLossError(where() + " is missing (" + std::string(expected) + ")");
  return DataLossError(where() + " must be " + std::string(expected) + " (it is " +
                       TypeName(*value_) + ")");
}

Status JsonField::Bad(std::string_view what) const {
  return DataLossError(where() + " " + std::string(what));
}

Status JsonField::Unsupported(std::string_view value, std::string_view supported) const {
  return UnimplementedError(where() + " " + std::string(value) +
                            " is not supported (supported: " + std::string(supported) + ")");
}

StatusOr<std::string> JsonField::String() const {
  if (!is_string()) return WrongType("a string");
  return value_->get<std::string>();
}

StatusOr<bool> JsonField::Bool() const {
  if (value_ == nullptr || !value_->is_boolean()) return WrongType("a boolean");
  return value_->get<bool>();
}

StatusOr<int64_t> JsonField::Int(int64_t min, int64_t max) const {
  const std::string range =
      "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (value_ == nullptr || !value_->is_number_integer()) return WrongType(range);
  if (value_->is_number_unsigned()) {
    const uint64_t u = value_->get<uint64_t>();
    if (u > static_cast<uint64_t>(max)) return Bad("= " + std::to_string(u) + " must be " + range);
    return static_cast<int64_t>(u);
  }
  const int64_t v = value_->get<int64_t>();
  if (v < min || v > max) return Bad("= " + std::to_string(v) + " must be " + range);
  return v;
}

Status JsonField::ExpectObject() const {
  return is_object() ? Status::Ok() : WrongType("an object");
}

Status JsonField::ExpectArray() const { return is_array() ? Status::Ok() : WrongType("an array"); }

StatusOr<std::optional<std::string>> JsonField::OptionalString() const {
  if (null_or_absent()) return std::optional<std::string>();
  UNMASK_ASSIGN_OR_RETURN(std::string s, String());
  return std::optional<std::string>(std::move(s));
}

StatusOr<std::optional<bool>> JsonField::OptionalBool() const {
  if (null_or_absent()) return std::optional<bool>();
  UNMASK_ASSIGN_OR_RETURN(bool b, Bool());
  return std::optional<bool>(b);
}

}  // namespace unmask::hf
