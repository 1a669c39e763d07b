// Helpers shared by the GGUF reader and writer (not part of the public API).
#ifndef UNMASK_FORMAT_GGUF_INTERNAL_H_
#define UNMASK_FORMAT_GGUF_INTERNAL_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"
#include "format/ggml_type.h"
#include "format/gguf.h"

namespace unmask::gguf::internal {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader/writer assume a little-endian host");

inline constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};
inline constexpr uint32_t kWriteVersion = 3;
inline constexpr uint64_t kDefaultAlignment = 32;  // GGUF_DEFAULT_ALIGNMENT
inline constexpr std::string_view kAlignmentKey = "general.alignment";
// ggml GGML_MAX_DIMS.
inline constexpr uint32_t kMaxDims = 4;
// Nesting limit for arrays of arrays (the reader rejects deeper files, the writer deeper values).
inline constexpr int kMaxArrayDepth = 64;
// ggml GGML_MAX_NAME: ggml stores tensor names NUL-terminated in 64 bytes, so a name must be at
// most 63 bytes for llama.cpp to load the file (the writer enforces this, the reader does not).
inline constexpr size_t kMaxTensorNameBytes = 63;
// GGUF spec: keys are at most 2^16 - 1 bytes.
inline constexpr size_t kMaxKeyBytes = 65535;

inline bool IsValidValueType(uint32_t type) { return type <= 12; }

// True when `v` is a non-zero power of two.
inline bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Rounds `offset` up to a multiple of `alignment` (a power of two); false on overflow.
inline bool AlignUp(uint64_t offset, uint64_t alignment, uint64_t* out) {
  const uint64_t mask = alignment - 1;
  if (offset > UINT64_MAX - mask) return false;
  *out = (offset + mask) & ~mask;
  return true;
}

// Bytes of data of a tensor with `dims` (GGUF order, innermost first) of a ggml type.
// InvalidArgument (message without file/tensor prefix) when a dimension is not positive, the
// number of dims is not in [1, 4], dims[0] is not a multiple of the block size, or the element
// count or byte size overflows int64.
StatusOr<uint64_t> TensorDataBytes(const GgmlTypeInfo& type, std::span<const int64_t> dims);

}  // namespace unmask::gguf::internal

#endif  // UNMASK_FORMAT_GGUF_INTERNAL_H_
