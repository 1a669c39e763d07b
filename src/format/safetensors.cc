#include "format/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

namespace unmask::safetensors {
namespace {

using Json = nlohmann::json;

// A SAX pass that finds duplicate keys of the top-level object (nlohmann's DOM keeps the last
// one silently; the format forbids them).
class DuplicateKeys : public nlohmann::json_sax<Json> {
 public:
  std::string duplicate;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    ++depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 1 && !seen_.insert(k).second && duplicate.empty()) duplicate = k;
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  int depth_ = 0;
  std::set<std::string> seen_;
};

struct DtypeEntry {
  const char* name;
  int bytes;  // 0: sub-byte, refused
};
constexpr DtypeEntry kDtypes[] = {
    {"BOOL", 1},        {"F4", 0},      {"F6_E2M3", 0}, {"F6_E3M2", 0}, {"U8", 1},
    {"I8", 1},          {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1}, {"F8_E4M3FNUZ", 1},
    {"F8_E5M2FNUZ", 1}, {"I16", 2},     {"U16", 2},     {"F16", 2},     {"BF16", 2},
    {"I32", 4},         {"U32", 4},     {"F32", 4},     {"C64", 8},     {"F64", 8},
    {"I64", 8},         {"U64", 8},
};

std::optional<DType> CoreDType(std::string_view name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  return std::nullopt;
}

}  // namespace

std::optional<int> ElementBytes(std::string_view dtype_name) {
  for (const DtypeEntry& d : kDtypes) {
    if (dtype_name == d.name) return d.bytes > 0 ? std::optional<int>(d.bytes) : std::nullopt;
  }
  return std::nullopt;
}

SafetensorsFile::~SafetensorsFile() = default;

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  UNMASK_ASSIGN_OR_RETURN(format::MappedFile bytes, format::MappedFile::Open(path));
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  file->bytes_ = std::move(bytes);
  file->base_ = file->bytes_.data();
  file->size_ = file->bytes_.size();
  UNMASK_RETURN_IF_ERROR(file->Parse());
  return file;
}

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::FromBytes(std::vector<uint8_t> bytes,
                                                                      std::string name) {
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = std::move(name);
  file->bytes_ = format::MappedFile::FromBytes(std::move(bytes));
  file->base_ = file->bytes_.data();
  file->size_ = file->bytes_.size();
  UNMASK_RETURN_IF_ERROR(file->Parse());
  return file;
}

const TensorInfo* SafetensorsFile::Find(std::string_view name) const {
  const auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

Status SafetensorsFile::Parse() {
  auto bad = [this](const std::string& what) {
    return DataLossError(path_ + ": not a valid safetensors file: " + what);
  };
  if (size_ < 8)
    return bad("shorter than the 8-byte header length (" + std::to_string(size_) + " bytes)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | base_[i];  // little-endian
  if (n > kMaxHeaderBytes) {
    return bad("header length " + std::to_string(n) + " exceeds the limit of " +
               std::to_string(kMaxHeaderBytes) + " bytes");
  }
  if (n > size_ - 8) {
    return bad("header length " + std::to_string(n) + " runs past the end of the file (" +
               std::to_string(size_) + " bytes)");
  }
  const char* text = reinterpret_cast<const char*>(base_ + 8);
  if (n == 0 || text[0] != '{') return bad("the header does not start with '{'");
  const std::string_view header(text, static_cast<size_t>(n));
  DuplicateKeys dup;
  if (!Json::sax_parse(header.begin(), header.end(), &dup))
    return bad("the header is not valid JSON");
  if (!dup.duplicate.empty()) return bad("tensor '" + dup.duplicate + "' is listed twice");
  Json j;
  try {
    j = Json::parse(header.begin(), header.end());
  } catch (const Json::exception& e) {
    return bad(std::string("the header is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) return bad("the header is not a JSON object");

  const uint64_t data_size = size_ - 8 - n;
  const uint8_t* data = base_ + 8 + n;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const Json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) return bad("__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) return bad("__metadata__ '" + m.key() + "' is not a string");
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "'";
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") ||
        !v.contains("data_offsets")) {
      return bad(where + " needs dtype, shape and data_offsets");
    }
    TensorInfo t;
    t.name = name;
    if (!v["dtype"].is_string()) return bad(where + ": dtype is not a string");
    t.dtype_name = v["dtype"].get<std::string>();
    const std::optional<int> elem = ElementBytes(t.dtype_name);
    if (!elem) return bad(where + ": unknown or sub-byte dtype '" + t.dtype_name + "'");
    t.dtype = CoreDType(t.dtype_name);
    const Json& shape = v["shape"];
    if (!shape.is_array()) return bad(where + ": shape is not an array");
    int64_t count = 1;
    for (const Json& d : shape) {
      if (!d.is_number_unsigned())
        return bad(where + ": a shape dimension is not a non-negative integer");
      const uint64_t dim = d.get<uint64_t>();
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          (dim != 0 && static_cast<uint64_t>(count) >
                           static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / dim)) {
        return bad(where + ": its element count overflows");
      }
      t.shape.push_back(static_cast<int64_t>(dim));
      count *= static_cast<int64_t>(dim);
    }
    if (count > std::numeric_limits<int64_t>::max() / *elem)
      return bad(where + ": its byte size overflows");
    t.num_elements = count;
    const Json& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned()) {
      return bad(where + ": data_offsets must be two non-negative integers");
    }
    t.begin = off[0].get<uint64_t>();
    t.end = off[1].get<uint64_t>();
    if (t.begin > t.end || t.end > data_size) {
      return bad(where + ": data_offsets [" + std::to_string(t.begin) + ", " +
                 std::to_string(t.end) + "] lie outside the data buffer of " +
                 std::to_string(data_size) + " bytes");
    }
    if (t.end - t.begin != static_cast<uint64_t>(count) * static_cast<uint64_t>(*elem)) {
      return bad(where + ": data_offsets span " + std::to_string(t.end - t.begin) +
                 " bytes, its shape and dtype need " + std::to_string(count * *elem));
    }
    t.data = data + t.begin;
    tensors_.push_back(std::move(t));
  }
  // The buffer must be covered exactly once (the reference's validate_offsets).
  std::stable_sort(tensors_.begin(), tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t at = 0;
  for (const TensorInfo& t : tensors_) {
    if (t.begin != at) {
      return bad("tensor '" + t.name + "' starts at " + std::to_string(t.begin) + " but the " +
                 (t.begin < at ? "previous tensor ends at " : "data before it ends at ") +
                 std::to_string(at) + (t.begin < at ? " (overlap)" : " (a hole)"));
    }
    at = t.end;
  }
  if (at != data_size) {
    return bad("the tensors end at " + std::to_string(at) + " but the data buffer has " +
               std::to_string(data_size) + " bytes");
  }
  for (size_t i = 0; i < tensors_.size(); ++i) by_name_[tensors_[i].name] = i;
  return Status::Ok();
}

}  // namespace unmask::safetensors
