// GGUF v3 writer. Layout (ggml-org/ggml docs/gguf.md): header, metadata in insertion order,
// tensor infos, zero padding to the alignment, then each tensor's data at a multiple of the
// alignment, padded with zeros to the alignment after each tensor (as ggml's gguf_write_to_buf
// and gguf-py's GGUFWriter do), so that tensor offsets are packed in order the way
// ggml's reader expects (offset_i == sum of padded sizes before it).
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <unordered_set>
#include <utility>

#include "format/gguf.h"
#include "format/gguf_internal.h"

namespace unmask::gguf {
namespace {

using internal::kMaxArrayDepth;

Status Invalid(const std::string& message) {
  return InvalidArgumentError("GGUF writer: " + message);
}

// Checks that an integer fits the stored width of `type`.
bool FitsUnsigned(ValueType type, uint64_t v) {
  switch (type) {
    case ValueType::kUint8:
      return v <= std::numeric_limits<uint8_t>::max();
    case ValueType::kUint16:
      return v <= std::numeric_limits<uint16_t>::max();
    case ValueType::kUint32:
      return v <= std::numeric_limits<uint32_t>::max();
    default:
      return true;
  }
}
bool FitsSigned(ValueType type, int64_t v) {
  switch (type) {
    case ValueType::kInt8:
      return v >= std::numeric_limits<int8_t>::min() && v <= std::numeric_limits<int8_t>::max();
    case ValueType::kInt16:
      return v >= std::numeric_limits<int16_t>::min() && v <= std::numeric_limits<int16_t>::max();
    case ValueType::kInt32:
      return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
    default:
      return true;
  }
}

enum class Group { kUnsigned, kSigned, kFloat, kBool, kString, kArray };

Group GroupOf(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kUint16:
    case ValueType::kUint32:
    case ValueType::kUint64:
      return Group::kUnsigned;
    case ValueType::kInt8:
    case ValueType::kInt16:
    case ValueType::kInt32:
    case ValueType::kInt64:
      return Group::kSigned;
    case ValueType::kFloat32:
    case ValueType::kFloat64:
      return Group::kFloat;
    case ValueType::kBool:
      return Group::kBool;
    case ValueType::kString:
      return Group::kString;
    case ValueType::kArray:
      return Group::kArray;
  }
  return Group::kArray;
}

// Validates a value before anything is written: known types, the scalar alternative matching
// `type`, integers that fit their stored width, only the vector of `array_type` filled, and
// nesting at most kMaxArrayDepth. `depth` is the nesting level of `v` when it is an array.
Status ValidateValue(const Value& v, const std::string& context, int depth) {
  if (!internal::IsValidValueType(static_cast<uint32_t>(v.type))) {
    return Invalid(context + ": unknown value type " +
                   std::to_string(static_cast<uint32_t>(v.type)));
  }
  const std::string type_name(ValueTypeName(v.type));
  if (!v.is_array()) {
    bool ok = false;
    switch (GroupOf(v.type)) {
      case Group::kUnsigned: {
        const auto* u = std::get_if<uint64_t>(&v.scalar);
        if (u != nullptr && !FitsUnsigned(v.type, *u)) {
          return Invalid(context + ": value " + std::to_string(*u) + " does not fit in " +
                         type_name);
        }
        ok = u != nullptr;
        break;
      }
      case Group::kSigned: {
        const auto* x = std::get_if<int64_t>(&v.scalar);
        if (x != nullptr && !FitsSigned(v.type, *x)) {
          return Invalid(context + ": value " + std::to_string(*x) + " does not fit in " +
                         type_name);
        }
        ok = x != nullptr;
        break;
      }
      case Group::kFloat:
        ok = std::holds_alternative<double>(v.scalar);
        break;
      case Group::kBool:
        ok = std::holds_alternative<bool>(v.scalar);
        break;
      case Group::kString:
        ok = std::holds_alternative<std::string>(v.scalar);
        break;
      case Group::kArray:
        break;
    }
    if (!ok) {
      return Invalid(context + ": scalar of type " + type_name +
                     " does not hold the matching payload (uint64 for unsigned, int64 for signed, "
                     "double for floats, bool, std::string)");
    }
    return Status::Ok();
  }
  if (!internal::IsValidValueType(static_cast<uint32_t>(v.array_type))) {
    return Invalid(context + ": unknown array element type " +
                   std::to_string(static_cast<uint32_t>(v.array_type)));
  }
  const Group g = GroupOf(v.array_type);
  const std::string elem_name(ValueTypeName(v.array_type));
  const auto check_empty = [&](bool filled, size_t n, std::string_view what) -> Status {
    if (!filled && n != 0) {
      return Invalid(context + ": array of " + elem_name + " also holds " + std::to_string(n) +
                     " items in its " + std::string(what) + " vector");
    }
    return Status::Ok();
  };
  UNMASK_RETURN_IF_ERROR(check_empty(g == Group::kUnsigned, v.uints.size(), "uints"));
  UNMASK_RETURN_IF_ERROR(check_empty(g == Group::kSigned, v.ints.size(), "ints"));
  UNMASK_RETURN_IF_ERROR(check_empty(g == Group::kFloat, v.floats.size(), "floats"));
  UNMASK_RETURN_IF_ERROR(check_empty(g == Group::kBool, v.bools.size(), "bools"));
  UNMASK_RETURN_IF_ERROR(check_empty(g == Group::kString, v.strings.size(), "strings"));
  UNMASK_RETURN_IF_ERROR(check_empty(g == Group::kArray, v.arrays.size(), "arrays"));
  if (g == Group::kUnsigned) {
    for (size_t i = 0; i < v.uints.size(); ++i) {
      if (!FitsUnsigned(v.array_type, v.uints[i])) {
        return Invalid(context + ": element #" + std::to_string(i) + " value " +
                       std::to_string(v.uints[i]) + " does not fit in " + elem_name);
      }
    }
  } else if (g == Group::kSigned) {
    for (size_t i = 0; i < v.ints.size(); ++i) {
      if (!FitsSigned(v.array_type, v.ints[i])) {
        return Invalid(context + ": element #" + std::to_string(i) + " value " +
                       std::to_string(v.ints[i]) + " does not fit in " + elem_name);
      }
    }
  } else if (g == Group::kBool) {
    for (size_t i = 0; i < v.bools.size(); ++i) {
      if (v.bools[i] > 1) {
        return Invalid(context + ": bool element #" + std::to_string(i) + " is " +
                       std::to_string(v.bools[i]) + ", not 0 or 1");
      }
    }
  } else if (g == Group::kArray) {
    if (depth + 1 > kMaxArrayDepth) {
      return Invalid(context + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth) +
                     " levels");
    }
    for (size_t i = 0; i < v.arrays.size(); ++i) {
      const std::string inner_context = context + ": array #" + std::to_string(i);
      if (!v.arrays[i].is_array()) {
        return Invalid(inner_context + ": element of an array of arrays has type " +
                       std::string(ValueTypeName(v.arrays[i].type)));
      }
      UNMASK_RETURN_IF_ERROR(ValidateValue(v.arrays[i], inner_context, depth + 1));
    }
  }
  return Status::Ok();
}

// Byte sinks: Write returns false on failure.
class CountingSink {
 public:
  bool Write(const void* /*data*/, size_t n) {
    count_ += n;
    return true;
  }
  uint64_t count() const { return count_; }

 private:
  uint64_t count_ = 0;
};

class VectorSink {
 public:
  explicit VectorSink(std::vector<uint8_t>* out) : out_(out) {}
  bool Write(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    out_->insert(out_->end(), p, p + n);
    return true;
  }

 private:
  std::vector<uint8_t>* out_;
};

class FileSink {
 public:
  explicit FileSink(std::FILE* f) : f_(f) {}
  bool Write(const void* data, size_t n) { return n == 0 || std::fwrite(data, 1, n, f_) == n; }

 private:
  std::FILE* f_;
};

// A validated write: the metadata to emit (including an added general.alignment) and each
// tensor's offset in the data section.
struct Plan {
  std::vector<const MetadataEntry*> metadata;    // the caller's entries, in insertion order
  std::optional<MetadataEntry> alignment_entry;  // general.alignment, appended when added
  std::vector<uint64_t> offsets;                 // [num_tensors]
};

template <typename Sink>
class Emitter {
 public:
  explicit Emitter(Sink* sink) : sink_(sink) {}
  bool ok() const { return ok_; }
  uint64_t written() const { return written_; }

  void Bytes(const void* data, size_t n) {
    if (ok_ && !sink_->Write(data, n)) ok_ = false;
    written_ += n;
  }
  template <typename T>
  void Pod(T v) {
    Bytes(&v, sizeof(v));
  }
  void String(std::string_view s) {
    Pod<uint64_t>(s.size());
    Bytes(s.data(), s.size());
  }
  void PadTo(uint64_t alignment) {
    static constexpr uint8_t kZeros[256] = {};
    uint64_t target = 0;
    internal::AlignUp(written_, alignment, &target);  // cannot overflow for real sizes
    uint64_t left = target - written_;
    while (left > 0) {
      const size_t n = left < sizeof(kZeros) ? static_cast<size_t>(left) : sizeof(kZeros);
      Bytes(kZeros, n);
      left -= n;
    }
  }

  // The payload of `v` stored as `t`: the scalar, or the array body when `t` is kArray.
  void Scalar(ValueType t, const Value& v) {
    switch (t) {
      case ValueType::kUint8:
        Pod(static_cast<uint8_t>(std::get<uint64_t>(v.scalar)));
        break;
      case ValueType::kUint16:
        Pod(static_cast<uint16_t>(std::get<uint64_t>(v.scalar)));
        break;
      case ValueType::kUint32:
        Pod(static_cast<uint32_t>(std::get<uint64_t>(v.scalar)));
        break;
      case ValueType::kUint64:
        Pod(std::get<uint64_t>(v.scalar));
        break;
      case ValueType::kInt8:
        Pod(static_cast<int8_t>(std::get<int64_t>(v.scalar)));
        break;
      case ValueType::kInt16:
        Pod(static_cast<int16_t>(std::get<int64_t>(v.scalar)));
        break;
      case ValueType::kInt32:
        Pod(static_cast<int32_t>(std::get<int64_t>(v.scalar)));
        break;
      case ValueType::kInt64:
        Pod(std::get<int64_t>(v.scalar));
        break;
      case ValueType::kFloat32:
        Pod(static_cast<float>(std::get<double>(v.scalar)));
        break;
      case ValueType::kFloat64:
        Pod(std::get<double>(v.scalar));
        break;
      case ValueType::kBool:
        Pod(static_cast<uint8_t>(std::get<bool>(v.scalar) ? 1 : 0));
        break;
      case ValueType::kString:
        String(std::get<std::string>(v.scalar));
        break;
      case ValueType::kArray:
        ArrayBody(v);
        break;
    }
  }

  // u32 element type, u64 count, elements.
  void ArrayBody(const Value& v) {
    Pod(static_cast<uint32_t>(v.array_type));
    Pod(static_cast<uint64_t>(v.array_size()));
    switch (v.array_type) {
      case ValueType::kUint8:
        for (uint64_t x : v.uints) Pod(static_cast<uint8_t>(x));
        break;
      case ValueType::kUint16:
        for (uint64_t x : v.uints) Pod(static_cast<uint16_t>(x));
        break;
      case ValueType::kUint32:
        for (uint64_t x : v.uints) Pod(static_cast<uint32_t>(x));
        break;
      case ValueType::kUint64:
        for (uint64_t x : v.uints) Pod(x);
        break;
      case ValueType::kInt8:
        for (int64_t x : v.ints) Pod(static_cast<int8_t>(x));
        break;
      case ValueType::kInt16:
        for (int64_t x : v.ints) Pod(static_cast<int16_t>(x));
        break;
      case ValueType::kInt32:
        for (int64_t x : v.ints) Pod(static_cast<int32_t>(x));
        break;
      case ValueType::kInt64:
        for (int64_t x : v.ints) Pod(x);
        break;
      case ValueType::kFloat32:
        for (double x : v.floats) Pod(static_cast<float>(x));
        break;
      case ValueType::kFloat64:
        for (double x : v.floats) Pod(x);
        break;
      case ValueType::kBool:
        for (uint8_t x : v.bools) Pod(static_cast<uint8_t>(x != 0 ? 1 : 0));
        break;
      case ValueType::kString:
        for (const std::string& s : v.strings) String(s);
        break;
      case ValueType::kArray:
        for (const Value& inner : v.arrays) ArrayBody(inner);
        break;
    }
  }

 private:
  Sink* sink_;
  bool ok_ = true;
  uint64_t written_ = 0;
};

template <typename Sink>
bool Emit(const Plan& plan, const std::vector<TensorInfo>& tensors, uint64_t alignment,
          Sink* sink) {
  Emitter<Sink> e(sink);
  e.Bytes(internal::kMagic, sizeof(internal::kMagic));
  e.template Pod<uint32_t>(internal::kWriteVersion);
  e.template Pod<uint64_t>(tensors.size());
  e.template Pod<uint64_t>(plan.metadata.size() + (plan.alignment_entry ? 1 : 0));
  const auto emit_entry = [&e](const MetadataEntry& entry) {
    e.String(entry.key);
    e.template Pod<uint32_t>(static_cast<uint32_t>(entry.value.type));
    e.Scalar(entry.value.type, entry.value);
  };
  for (const MetadataEntry* entry : plan.metadata) emit_entry(*entry);
  if (plan.alignment_entry) emit_entry(*plan.alignment_entry);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    e.String(t.name);
    e.template Pod<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) e.template Pod<uint64_t>(static_cast<uint64_t>(d));
    e.template Pod<uint32_t>(static_cast<uint32_t>(t.type));
    e.template Pod<uint64_t>(plan.offsets[i]);
  }
  e.PadTo(alignment);
  for (const TensorInfo& t : tensors) {
    e.Bytes(t.data, t.num_bytes);
    e.PadTo(alignment);
  }
  return e.ok();
}

}  // namespace

void GgufWriter::Set(std::string key, Value value) {
  for (MetadataEntry& e : metadata_) {
    if (e.key == key) {
      e.value = std::move(value);
      return;
    }
  }
  metadata_.push_back(MetadataEntry{std::move(key), std::move(value)});
}

void GgufWriter::AddTensor(std::string name, GgmlType type, std::vector<int64_t> dims,
                           const void* data, size_t num_bytes) {
  TensorInfo info;
  info.name = std::move(name);
  info.type = type;
  info.dims = std::move(dims);
  info.data = static_cast<const uint8_t*>(data);
  info.num_bytes = num_bytes;
  tensors_.push_back(std::move(info));
}

namespace {

StatusOr<Plan> MakePlan(uint64_t alignment, const std::vector<MetadataEntry>& metadata,
                        const std::vector<TensorInfo>& tensors) {
  if (!internal::IsPowerOfTwo(alignment)) {
    return Invalid("alignment " + std::to_string(alignment) + " is not a non-zero power of two");
  }
  Plan plan;
  bool has_alignment_key = false;
  for (const MetadataEntry& entry : metadata) {
    const std::string context = "metadata key '" + entry.key + "'";
    if (entry.key.empty()) return Invalid("empty metadata key");
    if (entry.key.size() > internal::kMaxKeyBytes) {
      return Invalid("metadata key of " + std::to_string(entry.key.size()) +
                     " bytes is longer than " + std::to_string(internal::kMaxKeyBytes));
    }
    UNMASK_RETURN_IF_ERROR(ValidateValue(entry.value, context, 1));
    if (entry.key == internal::kAlignmentKey) {
      const auto* u = std::get_if<uint64_t>(&entry.value.scalar);
      if (entry.value.type != ValueType::kUint32 || u == nullptr || *u != alignment) {
        return Invalid(context + " = " + entry.value.ToString() +
                       " must be a uint32 equal to the writer's alignment " +
                       std::to_string(alignment));
      }
      has_alignment_key = true;
    }
    plan.metadata.push_back(&entry);
  }
  if (!has_alignment_key && alignment != internal::kDefaultAlignment) {
    plan.alignment_entry = MetadataEntry{std::string(internal::kAlignmentKey),
                                         Value::U32(static_cast<uint32_t>(alignment))};
  }

  std::unordered_set<std::string_view> names;
  uint64_t offset = 0;
  for (const TensorInfo& t : tensors) {
    const std::string context = "tensor '" + t.name + "'";
    if (t.name.empty()) return Invalid("empty tensor name");
    if (t.name.size() > internal::kMaxTensorNameBytes) {
      return Invalid(context + ": name of " + std::to_string(t.name.size()) +
                     " bytes is longer than ggml's limit of " +
                     std::to_string(internal::kMaxTensorNameBytes));
    }
    if (!names.insert(t.name).second) return Invalid("duplicate tensor name '" + t.name + "'");
    const std::optional<GgmlTypeInfo> type_info = GetGgmlTypeInfo(static_cast<uint32_t>(t.type));
    if (!type_info) {
      return Invalid(context + ": unknown ggml type id " +
                     std::to_string(static_cast<uint32_t>(t.type)));
    }
    StatusOr<uint64_t> expected = internal::TensorDataBytes(*type_info, t.dims);
    if (!expected.ok()) return Invalid(context + ": " + expected.status().message());
    if (t.num_bytes != *expected) {
      return Invalid(context + " (" + std::string(type_info->name) + ", shape " + t.ShapeString() +
                     ") has " + std::to_string(t.num_bytes) + " bytes of data, expected " +
                     std::to_string(*expected));
    }
    if (t.data == nullptr) return Invalid(context + ": data is null");
    plan.offsets.push_back(offset);
    uint64_t padded = 0;
    if (!internal::AlignUp(*expected, alignment, &padded) ||
        offset > std::numeric_limits<uint64_t>::max() - padded) {
      return Invalid(context + ": data section size overflows");
    }
    offset += padded;
  }
  return plan;
}

}  // namespace

Status GgufWriter::WriteFile(const std::string& path) const {
  UNMASK_ASSIGN_OR_RETURN(Plan plan, MakePlan(alignment_, metadata_, tensors_));
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return NotFoundError("GGUF writer: cannot open '" + path +
                         "' for writing: " + std::generic_category().message(errno));
  }
  // Only a regular file is removed after a failed write (never e.g. a device node).
  struct stat st {};
  const bool regular = ::fstat(::fileno(f), &st) == 0 && S_ISREG(st.st_mode);
  FileSink sink(f);
  const bool written = Emit(plan, tensors_, alignment_, &sink);
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    const int err = !written ? write_errno : errno;
    if (regular) std::remove(path.c_str());
    return DataLossError("GGUF writer: writing '" + path +
                         "' failed: " + std::generic_category().message(err));
  }
  return Status::Ok();
}

StatusOr<std::vector<uint8_t>> GgufWriter::WriteToBytes() const {
  UNMASK_ASSIGN_OR_RETURN(Plan plan, MakePlan(alignment_, metadata_, tensors_));
  CountingSink counter;
  Emit(plan, tensors_, alignment_, &counter);
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(counter.count()));
  VectorSink sink(&out);
  Emit(plan, tensors_, alignment_, &sink);
  return out;
}

}  // namespace unmask::gguf
