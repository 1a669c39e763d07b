// Element types of tensors unmask stores and computes with, and their block layouts.
// Quantized types store `block_size` elements in `block_bytes` bytes, in the GGUF/ggml block
// layouts (ggml-common.h `block_*`) declared below with the value each element dequantizes to.
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

// Q4_0 block (ggml `block_q4_0`): 32 4-bit values q in [0, 15] sharing one f16 scale; element j
// (j < 16) is the low nibble of qs[j], element j + 16 its high nibble. value = d * (q - 8).
inline constexpr int64_t kQ4_0BlockSize = 32;
struct BlockQ4_0 {
  uint16_t d;  // f16 scale
  uint8_t qs[kQ4_0BlockSize / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// Q4_1 block (ggml `block_q4_1`): as Q4_0 plus an f16 offset m; value = d * q + m.
inline constexpr int64_t kQ4_1BlockSize = 32;
struct BlockQ4_1 {
  uint16_t d;  // f16 scale
  uint16_t m;  // f16 offset (the block minimum)
  uint8_t qs[kQ4_1BlockSize / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// Elements per K-quant super-block (ggml QK_K).
inline constexpr int64_t kQkK = 256;

// Q4_K super-block (ggml `block_q4_K`): 8 sub-blocks of 32 elements. Sub-block s has a 6-bit scale
// sc[s] and a 6-bit min mn[s], packed into `scales` (see ref::Q4KScaleMin); element i of sub-block
// 2p (2p + 1) is the low (high) nibble of qs[32 p + i]. value = (d * sc) * q - (dmin * mn).
struct BlockQ4_K {
  uint16_t d;     // f16 super-block scale of the sub-block scales
  uint16_t dmin;  // f16 super-block scale of the sub-block mins
  uint8_t scales[12];
  uint8_t qs[kQkK / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q6_K super-block (ggml `block_q6_K`): 16 sub-blocks of 16 elements with int8 scales; 6-bit values
// q = low 4 bits from ql | 2 high bits from qh, value = (d * scales[s]) * (q - 32). In each half
// h (elements 128 h + [0, 128)), with ql' = ql + 64 h, qh' = qh + 32 h and l in [0, 32):
//   element l      : ql'[l] & 0xF,      (qh'[l] >> 0) & 3      scale scales[8 h + l / 16]
//   element l + 32 : ql'[l + 32] & 0xF, (qh'[l] >> 2) & 3      scale scales[8 h + l / 16 + 2]
//   element l + 64 : ql'[l] >> 4,       (qh'[l] >> 4) & 3      scale scales[8 h + l / 16 + 4]
//   element l + 96 : ql'[l + 32] >> 4,  (qh'[l] >> 6) & 3      scale scales[8 h + l / 16 + 6]
struct BlockQ6_K {
  uint8_t ql[kQkK / 2];  // low 4 bits
  uint8_t qh[kQkK / 4];  // high 2 bits
  int8_t scales[kQkK / 16];
  uint16_t d;  // f16 super-block scale
};
static_assert(sizeof(BlockQ6_K) == 210);

}  // namespace unmask

#endif  // UNMASK_CORE_DTYPE_H_
