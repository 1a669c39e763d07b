// GGUF reader (versions 2 and 3) and writer.
// Spec: ggml-org/ggml docs/gguf.md. Layout: magic "GGUF", u32 version, u64 tensor_count,
// u64 metadata_kv_count, metadata KVs, tensor infos, padding to `general.alignment` (default 32),
// tensor data. All integers little-endian. (Version 1 used u32 counts and is rejected.)
//
// The reader memory-maps the file. Every offset, count and string length is bounds-checked
// against the file size before it is used: a truncated or malformed file yields a DataLoss
// status whose message names what was wrong and the byte offset where, never a crash or a read
// past the end. Counts are checked against the bytes left before anything is allocated.
//
// Reader rules beyond the spec's layout (ggml gguf.cpp where the spec is silent): duplicate keys
// or tensor names, unknown value types or ggml type ids, bool bytes other than 0/1, arrays nested
// deeper than 64 levels, n_dims outside [1, 4], a dimension of 0 or >= 2^63, an element count or
// byte size that overflows int64, a row (dims[0]) that is not a whole number of blocks, a tensor
// offset that is not a multiple of the alignment, tensor data outside the file, and a
// general.alignment that is not a uint32 power of two are all DataLoss. Tensor names of any
// length and tensors in any order are accepted; padding after the last tensor is optional.
#ifndef UNMASK_FORMAT_GGUF_H_
#define UNMASK_FORMAT_GGUF_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/status.h"
#include "format/ggml_type.h"
#include "format/mapped_file.h"

namespace unmask::gguf {

enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
std::string_view ValueTypeName(ValueType type);  // "uint8", ..., "array"

// A metadata value. Scalars hold one element; arrays hold elements of one type, which may itself
// be kArray (nested arrays). Integer scalars and arrays are widened to int64/uint64, floats to
// double, so callers need not care about the stored width (`type` says what was stored).
struct Value {
  ValueType type = ValueType::kUint8;
  // Element type when type == kArray.
  ValueType array_type = ValueType::kUint8;
  // Scalar payload (type != kArray): one of these is meaningful.
  std::variant<std::monostate, uint64_t, int64_t, double, bool, std::string> scalar;
  // Array payload (type == kArray): exactly the vector matching array_type is filled:
  // unsigned ints -> uints, signed ints -> ints, floats -> floats, bool -> bools,
  // string -> strings, array -> arrays.
  std::vector<uint64_t> uints;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<uint8_t> bools;
  std::vector<std::string> strings;
  std::vector<Value> arrays;

  bool is_array() const { return type == ValueType::kArray; }
  // Number of elements of an array (0 for scalars).
  size_t array_size() const;
  // Short human-readable rendering (arrays abbreviated), for `unmask inspect`.
  std::string ToString(size_t max_items = 8) const;

  // Builders used by the writer and tests.
  static Value U32(uint32_t v);
  static Value I32(int32_t v);
  static Value U64(uint64_t v);
  static Value F32(float v);
  static Value Bool(bool v);
  static Value String(std::string v);
  static Value StringArray(std::vector<std::string> v);
  static Value I32Array(std::vector<int32_t> v);
  static Value F32Array(std::vector<float> v);
};

struct MetadataEntry {
  std::string key;
  Value value;
};

struct TensorInfo {
  std::string name;
  // GGUF order: innermost (contiguous) dimension first, i.e. the reverse of the row-major shape.
  // A 2-D weight {n_in, n_out} is a row-major [n_out, n_in] matrix.
  std::vector<int64_t> dims;
  GgmlType type = GgmlType::kF32;
  uint64_t offset = 0;            // relative to the start of the tensor data section
  size_t num_bytes = 0;           // size of the data
  const uint8_t* data = nullptr;  // points into the mapping (reader) or caller memory (writer)

  int64_t num_elements() const;
  // Row-major shape string, e.g. "[8192, 768]".
  std::string ShapeString() const;
};

// A parsed GGUF file. Immutable after Open/FromBytes; const methods may be called from several
// threads at once. Tensor `data` pointers stay valid for the lifetime of the GgufFile.
class GgufFile {
 public:
  // Memory-maps and parses `path`. Errors: NotFound (cannot open), DataLoss (malformed, with
  // offset), Unimplemented (version 1 or > 3).
  static StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Parses an in-memory image (tests, fuzzing). The bytes are moved in; `name` stands for the
  // path in error messages.
  static StatusOr<std::unique_ptr<GgufFile>> FromBytes(std::vector<uint8_t> bytes,
                                                       std::string name = "<memory>");
  // A file assembled in memory by a converter (model/hf_import.h): `metadata` in order, and
  // `tensors` whose `data` point into memory that `keep_alive` holds (mappings of other files,
  // converted copies); `offset` is ignored (set to the running sum of sizes). file_size() is the
  // sum of the tensors' bytes. Errors: InvalidArgument naming the tensor for a duplicate name,
  // null data, an unknown type, dims the reader would refuse or num_bytes that differs from what
  // type and dims imply; InvalidArgument for a duplicate metadata key.
  static StatusOr<std::unique_ptr<GgufFile>> FromParts(std::string path,
                                                       std::vector<MetadataEntry> metadata,
                                                       std::vector<TensorInfo> tensors,
                                                       std::shared_ptr<const void> keep_alive);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute offset of tensor data
  size_t file_size() const { return size_; }

  const std::vector<MetadataEntry>& metadata() const { return metadata_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  // nullptr when absent.
  const Value* Find(std::string_view key) const;
  const TensorInfo* FindTensor(std::string_view name) const;

  // Typed getters. NotFound when the key is absent; InvalidArgument naming the key, the stored
  // type and the expected type when it has the wrong type or an integer does not fit.
  StatusOr<std::string> GetString(std::string_view key) const;
  StatusOr<int64_t> GetInt(std::string_view key) const;   // any integer type
  StatusOr<uint32_t> GetU32(std::string_view key) const;  // any integer type in [0, 2^32)
  StatusOr<double> GetFloat(std::string_view key) const;  // float32/float64 (or integer)
  StatusOr<bool> GetBool(std::string_view key) const;
  StatusOr<std::vector<std::string>> GetStringArray(std::string_view key) const;
  StatusOr<std::vector<int64_t>> GetIntArray(std::string_view key) const;
  StatusOr<std::vector<double>> GetFloatArray(std::string_view key) const;

 private:
  GgufFile() = default;
  Status Parse();

  std::string path_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  format::MappedFile bytes_;  // the mapping or the FromBytes storage (base_, size_ point into it)
  std::shared_ptr<const void> keep_alive_;  // FromParts: what the tensors point into
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<MetadataEntry> metadata_;
  std::vector<TensorInfo> tensors_;
};

// Writes GGUF v3 files that llama.cpp and gguf-py read. Tensor data is aligned to `alignment`
// (written as general.alignment, appended after the caller's keys, only when it is not the
// default 32). Tensors are laid out in AddTensor order, each padded with zeros to the alignment
// (also after the last one), as ggml's gguf_write_to_buf and gguf-py do; a file read by
// GgufFile and written back with the same keys and tensors is byte-identical to gguf-py output.
class GgufWriter {
 public:
  explicit GgufWriter(uint32_t alignment = 32) : alignment_(alignment) {}

  // Keys keep insertion order; adding an existing key replaces its value.
  void Set(std::string key, Value value);
  // Adds a tensor. `dims` in GGUF order (innermost first). `data` must stay valid until Write;
  // its size must equal the size implied by type and dims (checked in Write).
  void AddTensor(std::string name, GgmlType type, std::vector<int64_t> dims, const void* data,
                 size_t num_bytes);

  // InvalidArgument (nothing written) on: duplicate tensor names, data size != the size implied
  // by type and dims, unknown types, dims not as the reader requires, null data, tensor names
  // that are empty or longer than 63 bytes (ggml GGML_MAX_NAME), keys that are empty or longer
  // than 65535 bytes, a Value whose payload does not match its type (or does not fit the stored
  // width, or nests deeper than 64), an alignment that is not a power of two, or an explicit
  // general.alignment that differs from it. NotFound when the file cannot be created, DataLoss
  // when a write fails (a partially written regular file is removed).
  Status WriteFile(const std::string& path) const;
  StatusOr<std::vector<uint8_t>> WriteToBytes() const;

 private:
  uint32_t alignment_;
  std::vector<MetadataEntry> metadata_;
  std::vector<TensorInfo> tensors_;
};

}  // namespace unmask::gguf

#endif  // UNMASK_FORMAT_GGUF_H_
