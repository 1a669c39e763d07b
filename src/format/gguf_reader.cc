// GGUF reader: memory-maps a file (or copies an in-memory image) and parses the header, metadata
// and tensor infos with every read bounds-checked. Spec: ggml-org/ggml docs/gguf.md; checks
// follow ggml's gguf.cpp (gguf_init_from_file_impl) where the spec is silent.

#include <cstring>
#include <limits>
#include <string>
#include <unordered_set>
#include <utility>

#include "format/gguf.h"
#include "format/gguf_internal.h"

namespace unmask::gguf {
namespace {

using internal::kMaxArrayDepth;
using Scalar = decltype(Value::scalar);

// Smallest number of bytes one encoded element of `type` occupies; used to reject counts that
// cannot fit in the rest of the file before anything is allocated.
uint64_t MinEncodedBytes(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool:
      return 1;
    case ValueType::kUint16:
    case ValueType::kInt16:
      return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32:
      return 4;
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
    case ValueType::kString:  // u64 length
      return 8;
    case ValueType::kArray:  // u32 element type + u64 count
      return 12;
  }
  return 1;
}

// Smallest encoded metadata entry: empty key (u64 length), u32 value type, one-byte value.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
// Smallest encoded tensor info: empty name, u32 n_dims, one u64 dim, u32 type, u64 offset.
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

// Names the item being read in error messages: "<context>: <item> #<index>".
struct Where {
  std::string_view context;  // e.g. "metadata key 'general.name'" (may be empty)
  std::string_view item;     // e.g. "string", "value type"
  int64_t index = -1;        // element index, or -1
};

// Bounds-checked little-endian reads over [data, data + size).
class Cursor {
 public:
  Cursor(std::string_view file, const uint8_t* data, size_t size)
      : file_(file), data_(data), size_(size) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  // DataLoss "<file>: <context>: <message>".
  Status Fail(std::string_view context, const std::string& message) const {
    std::string m(file_);
    m += ": ";
    if (!context.empty()) {
      m += context;
      m += ": ";
    }
    m += message;
    return DataLossError(std::move(m));
  }

  static std::string Describe(const Where& w) {
    std::string s(w.item);
    if (w.index >= 0) s += " #" + std::to_string(w.index);
    return s;
  }

  std::string PastEnd() const {
    return "runs past end of file (size " + std::to_string(size_) + ")";
  }

  template <typename T>
  Status Read(T* out, const Where& w) {
    if (remaining() < sizeof(T)) {
      return Fail(w.context, Describe(w) + " at offset " + std::to_string(pos_) + " " + PastEnd());
    }
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }

  // GGUF string: u64 length, then that many bytes (not NUL-terminated).
  Status ReadString(std::string* out, const Where& w) {
    const size_t start = pos_;
    uint64_t length = 0;
    if (remaining() < sizeof(length)) {
      return Fail(w.context,
                  Describe(w) + " length at offset " + std::to_string(start) + " " + PastEnd());
    }
    std::memcpy(&length, data_ + pos_, sizeof(length));
    pos_ += sizeof(length);
    if (length > remaining()) {
      pos_ = start;
      return Fail(w.context, Describe(w) + " length " + std::to_string(length) + " at offset " +
                                 std::to_string(start) + " " + PastEnd());
    }
    out->assign(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(length));
    pos_ += static_cast<size_t>(length);
    return Status::Ok();
  }

 private:
  std::string_view file_;
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Reads one non-array element of `type` into `out` (integers widened, floats as double).
Status ReadScalar(Cursor& c, ValueType type, const Where& w, Scalar* out) {
  switch (type) {
    case ValueType::kUint8: {
      uint8_t v = 0;
      UNMASK_RETURN_IF_ERROR(c.Read(&v, w));
      *out = static_cast<uint64_t>(v);
      return Status::Ok();
    }
    case ValueType::kInt8: {
      int8_t v = 0;
      UNMASK_RETURN_IF_ERROR(c.Read(&v, w));
      *out = static_cast<int64_t>(v);
      return Status::Ok();
    }
    case ValueType::kUint16: {
      uint16_t v = 0;
      UNMASK_RETURN_IF_ERROR(c.Read(&v, w));
      *out = static_cast<uint64_t>(v);
      return Status::Ok();
    }
    case ValueType::kInt16: {
      int16_t v = 0;
      UNMASK_RETURN_IF_ERROR(c.Read(&v, w));
      *out = static_cast<int64_t>(v);
      return Status::Ok();
    }
    case ValueType::kUint32: {
      uint32_t v = 0;
      UNMASK_RETURN_IF_ERROR(c.Read(&v, w));
      *out = static_cast<uint64_t>(v);
      return Status::Ok();
    }
    case ValueType::kInt32: {
      int32_t v = 0;
      UNMASK_RETURN_IF_ERROR(c.Read(&v, w));
      *out = static_cast<int64_t>(v);
      return Status::Ok();
    }
    case ValueType::kUint64: {
      uint64_t v = 0;
      UNMASK_RETURN_IF_ERROR(c.Read(&v, w));
      *out = v;
      return Status::Ok();
    }
    case ValueType::kInt64: {
      int64_t v = 0;
      UNMASK_RETURN_IF_ERROR(c.Read(&v, w));
      *out = v;
      return Status::Ok();
    }
    case ValueType::kFloat32: {
      float v = 0;
      UNMASK_RETURN_IF_ERROR(c.Read(&v, w));
      *out = static_cast<double>(v);
      return Status::Ok();
    }
    case ValueType::kFloat64: {
      double v = 0;
      UNMASK_RETURN_IF_ERROR(c.Read(&v, w));
      *out = v;
      return Status::Ok();
    }
    case ValueType::kBool: {
      const size_t at = c.pos();
      uint8_t v = 0;
      UNMASK_RETURN_IF_ERROR(c.Read(&v, w));
      if (v > 1) {
        return c.Fail(w.context, Cursor::Describe(w) + " " + std::to_string(v) + " at offset " +
                                     std::to_string(at) + " is not a bool (0 or 1)");
      }
      *out = v != 0;
      return Status::Ok();
    }
    case ValueType::kString: {
      std::string s;
      UNMASK_RETURN_IF_ERROR(c.ReadString(&s, w));
      *out = std::move(s);
      return Status::Ok();
    }
    case ValueType::kArray:
      break;
  }
  return InternalError("ReadScalar called with an array type");
}

// Reads an array body (u32 element type, u64 count, elements) into `out`. `depth` is this
// array's nesting level (1 for an array that is a metadata value); `context` names the key and,
// inside nested arrays, the path to this array ("metadata key 'k': array #2").
Status ReadArray(Cursor& c, std::string_view key_context, const std::string& context, int depth,
                 Value* out) {
  out->type = ValueType::kArray;
  const size_t type_at = c.pos();
  uint32_t raw_type = 0;
  UNMASK_RETURN_IF_ERROR(c.Read(&raw_type, Where{context, "array element type"}));
  if (!internal::IsValidValueType(raw_type)) {
    return c.Fail(context, "unknown array element type " + std::to_string(raw_type) +
                               " at offset " + std::to_string(type_at));
  }
  const auto elem_type = static_cast<ValueType>(raw_type);
  out->array_type = elem_type;
  if (elem_type == ValueType::kArray && depth + 1 > kMaxArrayDepth) {
    return c.Fail(key_context, "arrays nested deeper than " + std::to_string(kMaxArrayDepth) +
                                   " levels at offset " + std::to_string(type_at));
  }
  const size_t count_at = c.pos();
  uint64_t count = 0;
  UNMASK_RETURN_IF_ERROR(c.Read(&count, Where{context, "array count"}));
  const uint64_t min_bytes = MinEncodedBytes(elem_type);
  if (count > c.remaining() / min_bytes) {
    return c.Fail(
        context, "array count " + std::to_string(count) + " at offset " + std::to_string(count_at) +
                     " runs past end of file: " + std::string(ValueTypeName(elem_type)) +
                     " elements need at least " + std::to_string(min_bytes) +
                     " bytes each and only " + std::to_string(c.remaining()) + " bytes remain");
  }
  const auto n = static_cast<size_t>(count);
  const std::string_view item = ValueTypeName(elem_type);
  switch (elem_type) {
    case ValueType::kUint8:
    case ValueType::kUint16:
    case ValueType::kUint32:
    case ValueType::kUint64:
    case ValueType::kInt8:
    case ValueType::kInt16:
    case ValueType::kInt32:
    case ValueType::kInt64:
    case ValueType::kFloat32:
    case ValueType::kFloat64:
    case ValueType::kBool:
    case ValueType::kString: {
      Scalar s;
      for (size_t i = 0; i < n; ++i) {
        UNMASK_RETURN_IF_ERROR(
            ReadScalar(c, elem_type, Where{context, item, static_cast<int64_t>(i)}, &s));
        if (auto* u = std::get_if<uint64_t>(&s)) {
          if (i == 0) out->uints.reserve(n);
          out->uints.push_back(*u);
        } else if (auto* x = std::get_if<int64_t>(&s)) {
          if (i == 0) out->ints.reserve(n);
          out->ints.push_back(*x);
        } else if (auto* f = std::get_if<double>(&s)) {
          if (i == 0) out->floats.reserve(n);
          out->floats.push_back(*f);
        } else if (auto* b = std::get_if<bool>(&s)) {
          if (i == 0) out->bools.reserve(n);
          out->bools.push_back(*b ? 1 : 0);
        } else if (auto* str = std::get_if<std::string>(&s)) {
          if (i == 0) out->strings.reserve(n);
          out->strings.push_back(std::move(*str));
        }
      }
      return Status::Ok();
    }
    case ValueType::kArray: {
      out->arrays.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        const std::string inner_context = context + ": array #" + std::to_string(i);
        Value inner;
        UNMASK_RETURN_IF_ERROR(ReadArray(c, key_context, inner_context, depth + 1, &inner));
        out->arrays.push_back(std::move(inner));
      }
      return Status::Ok();
    }
  }
  return Status::Ok();
}

std::string QuoteKey(std::string_view kind, std::string_view name) {
  std::string s(kind);
  s += " '";
  s += name;
  s += "'";
  return s;
}

std::string TypeDescription(const Value& v) {
  if (!v.is_array()) return std::string(ValueTypeName(v.type));
  return "array of " + std::string(ValueTypeName(v.array_type));
}

bool IsUnsigned(ValueType t) {
  return t == ValueType::kUint8 || t == ValueType::kUint16 || t == ValueType::kUint32 ||
         t == ValueType::kUint64;
}
bool IsSigned(ValueType t) {
  return t == ValueType::kInt8 || t == ValueType::kInt16 || t == ValueType::kInt32 ||
         t == ValueType::kInt64;
}
bool IsFloat(ValueType t) { return t == ValueType::kFloat32 || t == ValueType::kFloat64; }

}  // namespace

GgufFile::~GgufFile() = default;

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  UNMASK_ASSIGN_OR_RETURN(format::MappedFile bytes, format::MappedFile::Open(path));
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = path;
  file->bytes_ = std::move(bytes);
  file->base_ = file->bytes_.data();
  file->size_ = file->bytes_.size();
  UNMASK_RETURN_IF_ERROR(file->Parse());
  return file;
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::FromBytes(std::vector<uint8_t> bytes,
                                                        std::string name) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = std::move(name);
  file->bytes_ = format::MappedFile::FromBytes(std::move(bytes));
  file->base_ = file->bytes_.data();
  file->size_ = file->bytes_.size();
  UNMASK_RETURN_IF_ERROR(file->Parse());
  return file;
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::FromParts(std::string path,
                                                        std::vector<MetadataEntry> metadata,
                                                        std::vector<TensorInfo> tensors,
                                                        std::shared_ptr<const void> keep_alive) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = std::move(path);
  for (size_t i = 0; i < metadata.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (metadata[j].key == metadata[i].key) {
        return InvalidArgumentError(file->path_ + ": duplicate key '" + metadata[i].key + "'");
      }
    }
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    TensorInfo& t = tensors[i];
    const std::string what = file->path_ + ": tensor '" + t.name + "'";
    for (size_t j = 0; j < i; ++j) {
      if (tensors[j].name == t.name) return InvalidArgumentError(what + " appears twice");
    }
    const auto type_info = GetGgmlTypeInfo(static_cast<uint32_t>(t.type));
    if (!type_info) return InvalidArgumentError(what + " has an unknown type");
    if (t.data == nullptr) return InvalidArgumentError(what + " has no data");
    if (t.dims.empty() || t.dims.size() > 4) {
      return InvalidArgumentError(what + " must have 1 to 4 dimensions");
    }
    for (int64_t d : t.dims) {
      if (d <= 0) return InvalidArgumentError(what + " has a dimension <= 0");
    }
    StatusOr<uint64_t> bytes = internal::TensorDataBytes(*type_info, t.dims);
    if (!bytes.ok() || *bytes != t.num_bytes) {
      return InvalidArgumentError(what + " has " + std::to_string(t.num_bytes) +
                                  " bytes of data, its type and shape " + t.ShapeString() +
                                  " need " + (bytes.ok() ? std::to_string(*bytes) : "more"));
    }
    t.offset = offset;
    offset += t.num_bytes;
  }
  file->version_ = 3;
  file->size_ = static_cast<size_t>(offset);
  file->metadata_ = std::move(metadata);
  file->tensors_ = std::move(tensors);
  file->keep_alive_ = std::move(keep_alive);
  return file;
}

Status GgufFile::Parse() {
  Cursor c(path_, base_, size_);

  // Header: magic, version, tensor count, metadata kv count.
  char magic[4] = {};
  UNMASK_RETURN_IF_ERROR(c.Read(&magic, Where{"", "magic"}));
  if (std::memcmp(magic, internal::kMagic, sizeof(magic)) != 0) {
    std::string shown;
    for (const char ch : magic) {
      shown += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
    }
    return c.Fail("", "bad magic '" + shown + "' at offset 0, expected 'GGUF' (not a GGUF file)");
  }
  UNMASK_RETURN_IF_ERROR(c.Read(&version_, Where{"", "version"}));
  if (version_ != 2 && version_ != 3) {
    std::string m = path_ + ": GGUF version " + std::to_string(version_) +
                    " at offset 4 is not supported (only versions 2 and 3 are)";
    if (version_ == 1) m += "; version 1 used 32-bit counts and was retired in 2023";
    if (version_ != 0 && (version_ & 0xFFFFu) == 0) m += "; a big-endian file?";
    return UnimplementedError(std::move(m));
  }
  uint64_t tensor_count = 0;
  uint64_t kv_count = 0;
  UNMASK_RETURN_IF_ERROR(c.Read(&tensor_count, Where{"", "tensor count"}));
  UNMASK_RETURN_IF_ERROR(c.Read(&kv_count, Where{"", "metadata kv count"}));
  if (kv_count > c.remaining() / kMinKvBytes) {
    return c.Fail("", "metadata kv count " + std::to_string(kv_count) +
                          " at offset 16 runs past end of file: each entry needs at least " +
                          std::to_string(kMinKvBytes) + " bytes and only " +
                          std::to_string(c.remaining()) + " bytes remain");
  }
  if (tensor_count > (c.remaining() - kv_count * kMinKvBytes) / kMinTensorInfoBytes) {
    return c.Fail("", "tensor count " + std::to_string(tensor_count) +
                          " at offset 8 runs past end of file: each tensor info needs at least " +
                          std::to_string(kMinTensorInfoBytes) + " bytes and only " +
                          std::to_string(c.remaining()) + " bytes remain");
  }

  // Metadata.
  metadata_.clear();
  metadata_.reserve(static_cast<size_t>(kv_count));
  std::unordered_set<std::string> keys;
  size_t alignment_value_at = 0;
  for (uint64_t i = 0; i < kv_count; ++i) {
    const std::string entry_context = "metadata entry #" + std::to_string(i);
    const size_t entry_at = c.pos();
    MetadataEntry entry;
    UNMASK_RETURN_IF_ERROR(c.ReadString(&entry.key, Where{entry_context, "key"}));
    const std::string context = QuoteKey("metadata key", entry.key);
    if (!keys.insert(entry.key).second) {
      return c.Fail(context, "duplicate key in entry #" + std::to_string(i) + " at offset " +
                                 std::to_string(entry_at));
    }
    const size_t type_at = c.pos();
    uint32_t raw_type = 0;
    UNMASK_RETURN_IF_ERROR(c.Read(&raw_type, Where{context, "value type"}));
    if (!internal::IsValidValueType(raw_type)) {
      return c.Fail(context, "unknown value type " + std::to_string(raw_type) + " at offset " +
                                 std::to_string(type_at));
    }
    entry.value.type = static_cast<ValueType>(raw_type);
    if (entry.key == internal::kAlignmentKey) alignment_value_at = c.pos();
    if (entry.value.type == ValueType::kArray) {
      UNMASK_RETURN_IF_ERROR(ReadArray(c, context, context, 1, &entry.value));
    } else {
      UNMASK_RETURN_IF_ERROR(
          ReadScalar(c, entry.value.type, Where{context, "value"}, &entry.value.scalar));
    }
    metadata_.push_back(std::move(entry));
  }

  // general.alignment: a u32 power of two (ggml: gguf_get_val_u32 + power-of-two check).
  alignment_ = internal::kDefaultAlignment;
  if (const Value* a = Find(internal::kAlignmentKey)) {
    const std::string context = QuoteKey("metadata key", internal::kAlignmentKey);
    if (a->type != ValueType::kUint32) {
      return c.Fail(context, "has type " + TypeDescription(*a) + " at offset " +
                                 std::to_string(alignment_value_at) + ", expected uint32");
    }
    const uint64_t value = std::get<uint64_t>(a->scalar);
    if (!internal::IsPowerOfTwo(value)) {
      return c.Fail(context, "value " + std::to_string(value) + " at offset " +
                                 std::to_string(alignment_value_at) +
                                 " is not a non-zero power of two");
    }
    alignment_ = value;
  }

  // Tensor infos.
  if (tensor_count > c.remaining() / kMinTensorInfoBytes) {
    return c.Fail("", "tensor count " + std::to_string(tensor_count) +
                          " at offset 8 runs past end of file: each tensor info needs at least " +
                          std::to_string(kMinTensorInfoBytes) + " bytes and only " +
                          std::to_string(c.remaining()) + " bytes remain");
  }
  tensors_.clear();
  tensors_.reserve(static_cast<size_t>(tensor_count));
  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    const size_t info_at = c.pos();
    TensorInfo info;
    UNMASK_RETURN_IF_ERROR(
        c.ReadString(&info.name, Where{"tensor info #" + std::to_string(i), "name"}));
    const std::string context = QuoteKey("tensor", info.name);
    if (!names.insert(info.name).second) {
      return c.Fail(context, "duplicate tensor name in tensor info #" + std::to_string(i) +
                                 " at offset " + std::to_string(info_at));
    }
    const size_t n_dims_at = c.pos();
    uint32_t n_dims = 0;
    UNMASK_RETURN_IF_ERROR(c.Read(&n_dims, Where{context, "n_dims"}));
    if (n_dims < 1 || n_dims > internal::kMaxDims) {
      return c.Fail(context, "n_dims " + std::to_string(n_dims) + " at offset " +
                                 std::to_string(n_dims_at) + " is not in [1, " +
                                 std::to_string(internal::kMaxDims) + "]");
    }
    info.dims.resize(n_dims);
    for (uint32_t d = 0; d < n_dims; ++d) {
      const size_t dim_at = c.pos();
      uint64_t dim = 0;
      UNMASK_RETURN_IF_ERROR(c.Read(&dim, Where{context, "dimension", d}));
      if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return c.Fail(context, "dimension " + std::to_string(d) + " = " + std::to_string(dim) +
                                   " at offset " + std::to_string(dim_at) + " is not in [1, 2^63)");
      }
      info.dims[d] = static_cast<int64_t>(dim);
    }
    const size_t type_at = c.pos();
    uint32_t type_id = 0;
    UNMASK_RETURN_IF_ERROR(c.Read(&type_id, Where{context, "ggml type"}));
    const std::optional<GgmlTypeInfo> type_info = GetGgmlTypeInfo(type_id);
    if (!type_info) {
      return c.Fail(context, "unknown ggml type id " + std::to_string(type_id) + " at offset " +
                                 std::to_string(type_at));
    }
    info.type = static_cast<GgmlType>(type_id);
    StatusOr<uint64_t> num_bytes = internal::TensorDataBytes(*type_info, info.dims);
    if (!num_bytes.ok()) {
      return c.Fail(context, num_bytes.status().message() + " (tensor info at offset " +
                                 std::to_string(info_at) + ")");
    }
    info.num_bytes = static_cast<size_t>(*num_bytes);
    const size_t offset_at = c.pos();
    UNMASK_RETURN_IF_ERROR(c.Read(&info.offset, Where{context, "data offset"}));
    if (info.offset % alignment_ != 0) {
      return c.Fail(context, "data offset " + std::to_string(info.offset) + " at offset " +
                                 std::to_string(offset_at) +
                                 " is not a multiple of the alignment " +
                                 std::to_string(alignment_));
    }
    tensors_.push_back(std::move(info));
  }

  // Tensor data starts at the next multiple of the alignment after the tensor infos. Like ggml
  // (which seeks there), a file without tensors may end before that point.
  if (!internal::AlignUp(c.pos(), alignment_, &data_offset_)) {
    return c.Fail("", "aligning offset " + std::to_string(c.pos()) + " to " +
                          std::to_string(alignment_) + " overflows");
  }
  const uint64_t data_size = data_offset_ < size_ ? size_ - data_offset_ : 0;
  for (TensorInfo& info : tensors_) {
    if (info.offset > data_size || info.num_bytes > data_size - info.offset) {
      return c.Fail(QuoteKey("tensor", info.name),
                    "data of " + std::to_string(info.num_bytes) + " bytes at tensor offset " +
                        std::to_string(info.offset) + " + data section offset " +
                        std::to_string(data_offset_) + " " + c.PastEnd());
    }
    info.data = base_ + data_offset_ + info.offset;
  }
  return Status::Ok();
}

const Value* GgufFile::Find(std::string_view key) const {
  for (const MetadataEntry& e : metadata_) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

const TensorInfo* GgufFile::FindTensor(std::string_view name) const {
  for (const TensorInfo& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

namespace {

// Resolves `key` or returns NotFound naming the file and key.
StatusOr<const Value*> Lookup(const GgufFile& file, std::string_view key) {
  const Value* v = file.Find(key);
  if (v == nullptr) {
    return NotFoundError(file.path() + ": metadata key '" + std::string(key) + "' not found");
  }
  return v;
}

Status WrongType(const GgufFile& file, std::string_view key, const Value& v,
                 std::string_view expected) {
  return InvalidArgumentError(file.path() + ": metadata key '" + std::string(key) + "' has type " +
                              TypeDescription(v) + ", expected " + std::string(expected));
}

// Integer scalar or array element as int64; nullopt when an unsigned value exceeds INT64_MAX.
std::optional<int64_t> UnsignedToInt64(uint64_t u) {
  if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return static_cast<int64_t>(u);
}

}  // namespace

StatusOr<std::string> GgufFile::GetString(std::string_view key) const {
  UNMASK_ASSIGN_OR_RETURN(const Value* v, Lookup(*this, key));
  const auto* s = std::get_if<std::string>(&v->scalar);
  if (v->type != ValueType::kString || s == nullptr) return WrongType(*this, key, *v, "string");
  return *s;
}

StatusOr<int64_t> GgufFile::GetInt(std::string_view key) const {
  UNMASK_ASSIGN_OR_RETURN(const Value* v, Lookup(*this, key));
  if (IsSigned(v->type)) {
    if (const auto* x = std::get_if<int64_t>(&v->scalar)) return *x;
  } else if (IsUnsigned(v->type)) {
    if (const auto* u = std::get_if<uint64_t>(&v->scalar)) {
      if (std::optional<int64_t> x = UnsignedToInt64(*u)) return *x;
      return InvalidArgumentError(path_ + ": metadata key '" + std::string(key) + "' value " +
                                  std::to_string(*u) + " does not fit in int64");
    }
  }
  return WrongType(*this, key, *v, "an integer");
}

StatusOr<uint32_t> GgufFile::GetU32(std::string_view key) const {
  UNMASK_ASSIGN_OR_RETURN(const Value* v, Lookup(*this, key));
  std::string shown;
  if (IsUnsigned(v->type)) {
    if (const auto* u = std::get_if<uint64_t>(&v->scalar)) {
      if (*u <= std::numeric_limits<uint32_t>::max()) return static_cast<uint32_t>(*u);
      shown = std::to_string(*u);
    }
  } else if (IsSigned(v->type)) {
    if (const auto* x = std::get_if<int64_t>(&v->scalar)) {
      if (*x >= 0 && *x <= static_cast<int64_t>(std::numeric_limits<uint32_t>::max())) {
        return static_cast<uint32_t>(*x);
      }
      shown = std::to_string(*x);
    }
  }
  if (shown.empty()) return WrongType(*this, key, *v, "an integer in [0, 2^32)");
  return InvalidArgumentError(path_ + ": metadata key '" + std::string(key) + "' (" +
                              std::string(ValueTypeName(v->type)) + ") value " + shown +
                              " is not in [0, 2^32)");
}

StatusOr<double> GgufFile::GetFloat(std::string_view key) const {
  UNMASK_ASSIGN_OR_RETURN(const Value* v, Lookup(*this, key));
  if (IsFloat(v->type)) {
    if (const auto* f = std::get_if<double>(&v->scalar)) return *f;
  } else if (IsUnsigned(v->type)) {
    if (const auto* u = std::get_if<uint64_t>(&v->scalar)) return static_cast<double>(*u);
  } else if (IsSigned(v->type)) {
    if (const auto* x = std::get_if<int64_t>(&v->scalar)) return static_cast<double>(*x);
  }
  return WrongType(*this, key, *v, "a float or integer");
}

StatusOr<bool> GgufFile::GetBool(std::string_view key) const {
  UNMASK_ASSIGN_OR_RETURN(const Value* v, Lookup(*this, key));
  const auto* b = std::get_if<bool>(&v->scalar);
  if (v->type != ValueType::kBool || b == nullptr) return WrongType(*this, key, *v, "bool");
  return *b;
}

StatusOr<std::vector<std::string>> GgufFile::GetStringArray(std::string_view key) const {
  UNMASK_ASSIGN_OR_RETURN(const Value* v, Lookup(*this, key));
  if (!v->is_array() || v->array_type != ValueType::kString) {
    return WrongType(*this, key, *v, "array of string");
  }
  return v->strings;
}

StatusOr<std::vector<int64_t>> GgufFile::GetIntArray(std::string_view key) const {
  UNMASK_ASSIGN_OR_RETURN(const Value* v, Lookup(*this, key));
  if (v->is_array() && IsSigned(v->array_type)) return v->ints;
  if (!v->is_array() || !IsUnsigned(v->array_type)) {
    return WrongType(*this, key, *v, "array of integers");
  }
  std::vector<int64_t> out;
  out.reserve(v->uints.size());
  for (size_t i = 0; i < v->uints.size(); ++i) {
    const std::optional<int64_t> x = UnsignedToInt64(v->uints[i]);
    if (!x) {
      return InvalidArgumentError(path_ + ": metadata key '" + std::string(key) + "' element #" +
                                  std::to_string(i) + " value " + std::to_string(v->uints[i]) +
                                  " does not fit in int64");
    }
    out.push_back(*x);
  }
  return out;
}

StatusOr<std::vector<double>> GgufFile::GetFloatArray(std::string_view key) const {
  UNMASK_ASSIGN_OR_RETURN(const Value* v, Lookup(*this, key));
  if (!v->is_array()) return WrongType(*this, key, *v, "array of floats");
  if (IsFloat(v->array_type)) return v->floats;
  if (IsUnsigned(v->array_type)) return std::vector<double>(v->uints.begin(), v->uints.end());
  if (IsSigned(v->array_type)) return std::vector<double>(v->ints.begin(), v->ints.end());
  return WrongType(*this, key, *v, "array of floats");
}

}  // namespace unmask::gguf
