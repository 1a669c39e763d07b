// safetensors reader (huggingface/safetensors: README.md "Format", safetensors/src/tensor.rs):
// u64 little-endian header length N, N bytes of UTF-8 JSON (an object, which may be right-padded
// with spaces), then the data buffer to the end of the file. The header maps tensor names to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data buffer) and may
// hold "__metadata__": {string: string}. Tensors are row-major, little-endian.
//
// The reader memory-maps the file and checks everything against the file size before use, with
// the reference parser's rules: N <= 100,000,000 and within the file, the header a JSON object
// that starts with '{', no duplicate names, every dtype a known name, every shape dimension a
// non-negative integer whose product times the element size fits int64 and equals end - begin,
// begin <= end, and the offsets covering the data buffer exactly once with no holes or overlaps
// (so 8 + N + last end == file size). Any violation is DataLoss naming the tensor and the rule.
// Tensors need not be aligned (the format does not promise it): data() may be unaligned.
// Dtypes that unmask computes with map to core DType (F32, F16, BF16); the others (I8, U8, I32,
// F64, F8_*, ...) are read and listed with dtype == nullopt, for tools to report.
#ifndef UNMASK_FORMAT_SAFETENSORS_H_
#define UNMASK_FORMAT_SAFETENSORS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "format/mapped_file.h"

namespace unmask::safetensors {

// The reference parser's limit on the header (tensor.rs MAX_HEADER_SIZE).
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct TensorInfo {
  std::string name;
  std::string dtype_name;         // as stored: "BF16", "F32", "I64", ...
  std::optional<DType> dtype;     // kF32, kF16 or kBF16; nullopt for the other stored types
  std::vector<int64_t> shape;     // outermost first (row-major), may be empty (a scalar)
  int64_t num_elements = 0;       // product of shape (1 for a scalar)
  uint64_t begin = 0, end = 0;    // data_offsets, relative to the data buffer
  const uint8_t* data = nullptr;  // begin's byte in the mapping (possibly unaligned)
  size_t num_bytes() const { return static_cast<size_t>(end - begin); }
};

class SafetensorsFile {
 public:
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  // Errors: NotFound when the file cannot be opened or is not a regular file; ResourceExhausted
  // when it cannot be mapped; DataLoss (message names the file, the tensor and the rule) for a
  // malformed file.
  static StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  // The same checks on bytes in memory (tests); `name` stands for the path in messages.
  static StatusOr<std::unique_ptr<SafetensorsFile>> FromBytes(std::vector<uint8_t> bytes,
                                                              std::string name);

  const std::string& path() const { return path_; }
  size_t file_size() const { return size_; }
  // In the order of their data offsets.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* Find(std::string_view name) const;  // nullptr when absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  Status Parse();

  std::string path_;
  format::MappedFile bytes_;  // base_, size_ point into it
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> by_name_;
  std::map<std::string, std::string> metadata_;
};

// Bytes per element of a stored dtype name ("BF16" -> 2, "F64" -> 8, "BOOL" -> 1); nullopt for an
// unknown name or a sub-byte type (F4, F6_E2M3, F6_E3M2: not byte-addressable, refused).
std::optional<int> ElementBytes(std::string_view dtype_name);

}  // namespace unmask::safetensors

#endif  // UNMASK_FORMAT_SAFETENSORS_H_
