// Value, TensorInfo helpers and type names shared by the GGUF reader and writer.
#include <charconv>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>

#include "format/gguf.h"
#include "format/gguf_internal.h"

namespace unmask::gguf {
namespace {

void AppendEscaped(std::string_view s, std::string* out) {
  out->push_back('"');
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(u));
          out->append(buf);
        } else {
          out->push_back(c);  // printable ASCII and UTF-8 bytes pass through
        }
    }
  }
  out->push_back('"');
}

// Shortest round-trip text of a float; float32 values are printed as float so that 1e-5f prints
// as "1e-05" rather than its double expansion.
void AppendFloat(double v, bool as_float32, std::string* out) {
  char buf[64];
  const std::to_chars_result r = as_float32
                                     ? std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v))
                                     : std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

void AppendScalar(const Value& value, std::string* out) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          out->append("<none>");
        } else if constexpr (std::is_same_v<T, bool>) {
          out->append(x ? "true" : "false");
        } else if constexpr (std::is_same_v<T, double>) {
          AppendFloat(x, value.type == ValueType::kFloat32, out);
        } else if constexpr (std::is_same_v<T, std::string>) {
          AppendEscaped(x, out);
        } else {
          out->append(std::to_string(x));
        }
      },
      value.scalar);
}

void AppendValue(const Value& value, size_t max_items, std::string* out) {
  if (!value.is_array()) {
    AppendScalar(value, out);
    return;
  }
  const size_t n = value.array_size();
  const size_t shown = n < max_items ? n : max_items;
  out->push_back('[');
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) out->append(", ");
    switch (value.array_type) {
      case ValueType::kUint8:
      case ValueType::kUint16:
      case ValueType::kUint32:
      case ValueType::kUint64:
        out->append(std::to_string(value.uints[i]));
        break;
      case ValueType::kInt8:
      case ValueType::kInt16:
      case ValueType::kInt32:
      case ValueType::kInt64:
        out->append(std::to_string(value.ints[i]));
        break;
      case ValueType::kFloat32:
      case ValueType::kFloat64:
        AppendFloat(value.floats[i], value.array_type == ValueType::kFloat32, out);
        break;
      case ValueType::kBool:
        out->append(value.bools[i] != 0 ? "true" : "false");
        break;
      case ValueType::kString:
        AppendEscaped(value.strings[i], out);
        break;
      case ValueType::kArray:
        AppendValue(value.arrays[i], max_items, out);
        break;
    }
  }
  if (shown < n) {
    if (shown > 0) out->append(", ");
    out->append("... (" + std::to_string(n) + " items)");
  }
  out->push_back(']');
}

}  // namespace

std::string_view ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
      return "uint8";
    case ValueType::kInt8:
      return "int8";
    case ValueType::kUint16:
      return "uint16";
    case ValueType::kInt16:
      return "int16";
    case ValueType::kUint32:
      return "uint32";
    case ValueType::kInt32:
      return "int32";
    case ValueType::kFloat32:
      return "float32";
    case ValueType::kBool:
      return "bool";
    case ValueType::kString:
      return "string";
    case ValueType::kArray:
      return "array";
    case ValueType::kUint64:
      return "uint64";
    case ValueType::kInt64:
      return "int64";
    case ValueType::kFloat64:
      return "float64";
  }
  return "unknown";
}

size_t Value::array_size() const {
  if (!is_array()) return 0;
  switch (array_type) {
    case ValueType::kUint8:
    case ValueType::kUint16:
    case ValueType::kUint32:
    case ValueType::kUint64:
      return uints.size();
    case ValueType::kInt8:
    case ValueType::kInt16:
    case ValueType::kInt32:
    case ValueType::kInt64:
      return ints.size();
    case ValueType::kFloat32:
    case ValueType::kFloat64:
      return floats.size();
    case ValueType::kBool:
      return bools.size();
    case ValueType::kString:
      return strings.size();
    case ValueType::kArray:
      return arrays.size();
  }
  return 0;
}

std::string Value::ToString(size_t max_items) const {
  std::string out;
  AppendValue(*this, max_items, &out);
  return out;
}

Value Value::U32(uint32_t v) {
  Value out;
  out.type = ValueType::kUint32;
  out.scalar = static_cast<uint64_t>(v);
  return out;
}

Value Value::I32(int32_t v) {
  Value out;
  out.type = ValueType::kInt32;
  out.scalar = static_cast<int64_t>(v);
  return out;
}

Value Value::U64(uint64_t v) {
  Value out;
  out.type = ValueType::kUint64;
  out.scalar = v;
  return out;
}

Value Value::F32(float v) {
  Value out;
  out.type = ValueType::kFloat32;
  out.scalar = static_cast<double>(v);
  return out;
}

Value Value::Bool(bool v) {
  Value out;
  out.type = ValueType::kBool;
  out.scalar = v;
  return out;
}

Value Value::String(std::string v) {
  Value out;
  out.type = ValueType::kString;
  out.scalar = std::move(v);
  return out;
}

Value Value::StringArray(std::vector<std::string> v) {
  Value out;
  out.type = ValueType::kArray;
  out.array_type = ValueType::kString;
  out.strings = std::move(v);
  return out;
}

Value Value::I32Array(std::vector<int32_t> v) {
  Value out;
  out.type = ValueType::kArray;
  out.array_type = ValueType::kInt32;
  out.ints.assign(v.begin(), v.end());
  return out;
}

Value Value::F32Array(std::vector<float> v) {
  Value out;
  out.type = ValueType::kArray;
  out.array_type = ValueType::kFloat32;
  out.floats.assign(v.begin(), v.end());
  return out;
}

int64_t TensorInfo::num_elements() const {
  int64_t n = 1;
  for (const int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

std::string TensorInfo::ShapeString() const {
  std::string out = "[";
  for (size_t i = dims.size(); i-- > 0;) {
    out += std::to_string(dims[i]);
    if (i > 0) out += ", ";
  }
  out += "]";
  return out;
}

namespace internal {

StatusOr<uint64_t> TensorDataBytes(const GgmlTypeInfo& type, std::span<const int64_t> dims) {
  if (dims.empty() || dims.size() > kMaxDims) {
    return InvalidArgumentError("n_dims " + std::to_string(dims.size()) + " is not in [1, " +
                                std::to_string(kMaxDims) + "]");
  }
  int64_t num_elements = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] <= 0) {
      return InvalidArgumentError("dimension " + std::to_string(i) + " is " +
                                  std::to_string(dims[i]) + " (must be positive)");
    }
    if (__builtin_mul_overflow(num_elements, dims[i], &num_elements)) {
      return InvalidArgumentError("element count overflows int64 at dimension " +
                                  std::to_string(i));
    }
  }
  if (dims[0] % type.block_size != 0) {
    return InvalidArgumentError("row length dims[0] = " + std::to_string(dims[0]) +
                                " is not a multiple of the " + std::string(type.name) +
                                " block size " + std::to_string(type.block_size));
  }
  int64_t num_bytes = 0;
  if (__builtin_mul_overflow(num_elements / type.block_size, type.block_bytes, &num_bytes)) {
    return InvalidArgumentError("data size overflows int64 (" + std::to_string(num_elements) +
                                " elements of " + std::string(type.name) + ")");
  }
  return static_cast<uint64_t>(num_bytes);
}

}  // namespace internal
}  // namespace unmask::gguf
