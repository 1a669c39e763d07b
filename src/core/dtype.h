// Element types of tensors unmask stores and computes with, and their block layouts.
// Quantized types store `block_size` elements in `block_bytes` bytes (GGUF/ggml block layouts:
// Q8_0 = {f16 scale d, int8 q[32]}, value = d * q).
#ifndef UNMASK_CORE_DTYPE_H_
#define UNMASK_CORE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace unmask {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kQ8_0,
  kQ4_0,
  kQ4_1,
  kQ4_K,
  kQ6_K,
  kI32,
};

struct DTypeInfo {
  std::string_view name;  // "f32", "f16", "bf16", "q8_0", ...
  int64_t block_size;     // elements per block (1 for plain types)
  int64_t block_bytes;    // bytes per block
};

const DTypeInfo& GetDTypeInfo(DType dtype);
inline std::string_view DTypeName(DType dtype) { return GetDTypeInfo(dtype).name; }
// Parses a name printed by DTypeName (case-insensitive); nullopt when unknown.
std::optional<DType> DTypeFromName(std::string_view name);

// Bytes of one row of `num_elements` elements; nullopt if num_elements is negative or not a
// multiple of the block size, or on overflow.
std::optional<size_t> RowBytes(DType dtype, int64_t num_elements);

// Q8_0 block: 32 int8 values sharing one f16 scale (ggml `block_q8_0`).
inline constexpr int64_t kQ8_0BlockSize = 32;
struct BlockQ8_0 {
  uint16_t d;  // f16 scale
  int8_t qs[kQ8_0BlockSize];
};
static_assert(sizeof(BlockQ8_0) == 34);

}  // namespace unmask

#endif  // UNMASK_CORE_DTYPE_H_
