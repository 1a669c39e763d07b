// Test helpers for the 4- and 6-bit block types: simple reference quantizers (f32 -> blocks, for
// realistic weights), packers that build a block from explicit integer values (written from the
// ggml layouts in core/dtype.h, independently of the dequantizers), and random blocks (random bytes
// with chosen f16 scales). Header-only.
#ifndef UNMASK_TESTS_OPS_QUANT_TEST_UTIL_H_
#define UNMASK_TESTS_OPS_QUANT_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/half.h"

namespace unmask::testing {

inline bool IsQuantType(DType dtype) {
  return dtype == DType::kQ4_0 || dtype == DType::kQ4_1 || dtype == DType::kQ4_K ||
         dtype == DType::kQ6_K;
}

// Q4_K block from explicit values: q[256] in [0, 15], 6-bit sc[8] and mn[8] (sub-blocks of 32).
inline BlockQ4_K PackQ4_K(const uint8_t* q, const uint8_t* sc, const uint8_t* mn, uint16_t d,
                          uint16_t dmin) {
  BlockQ4_K b{};
  b.d = d;
  b.dmin = dmin;
  for (int j = 0; j < 4; ++j) {
    b.scales[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    b.scales[j + 4] = static_cast<uint8_t>((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    b.scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0F) | ((mn[j + 4] & 0x0F) << 4));
  }
  for (int e = 0; e < kQkK; ++e) {
    const int sub = e / 32;  // element e is nibble (sub & 1) of qs[32 (sub / 2) + e % 32]
    uint8_t& byte = b.qs[32 * (sub / 2) + e % 32];
    byte = static_cast<uint8_t>(byte | ((q[e] & 0x0F) << (4 * (sub & 1))));
  }
  return b;
}

// Q6_K block from explicit values: q[256] in [0, 63] (value (d * sc) * (q - 32)), sc[16].
inline BlockQ6_K PackQ6_K(const uint8_t* q, const int8_t* sc, uint16_t d) {
  BlockQ6_K b{};
  b.d = d;
  std::memcpy(b.scales, sc, sizeof(b.scales));
  for (int e = 0; e < kQkK; ++e) {
    const int h = e / 128, r = e % 128, g = r / 32, l = r % 32;
    // Groups 0/1 use the low nibbles of ql[l] / ql[l + 32], groups 2/3 their high nibbles; the
    // two high bits go to bits 2g, 2g + 1 of qh[l].
    uint8_t& low = b.ql[64 * h + l + 32 * (g & 1)];
    low = static_cast<uint8_t>(low | ((q[e] & 0x0F) << (4 * (g >> 1))));
    uint8_t& high = b.qh[32 * h + l];
    high = static_cast<uint8_t>(high | (((q[e] >> 4) & 3) << (2 * g)));
  }
  return b;
}

// Quantizers (round to nearest; not ggml's searches, but the same block formats).
inline BlockQ4_0 QuantizeQ4_0(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < kQ4_0BlockSize; ++j) amax = std::max(amax, std::fabs(x[j]));
  BlockQ4_0 b{};
  b.d = F32ToF16(amax / 7.0f);
  const float d = F16ToF32(b.d);
  for (int j = 0; j < kQ4_0BlockSize; ++j) {
    const long q = d == 0.0f ? 8 : std::clamp(std::lround(x[j] / d) + 8, 0L, 15L);
    b.qs[j % 16] = static_cast<uint8_t>(b.qs[j % 16] | (q << (j < 16 ? 0 : 4)));
  }
  return b;
}

inline BlockQ4_1 QuantizeQ4_1(const float* x) {
  const auto [lo, hi] = std::minmax_element(x, x + kQ4_1BlockSize);
  BlockQ4_1 b{};
  b.d = F32ToF16((*hi - *lo) / 15.0f);
  b.m = F32ToF16(*lo);
  const float d = F16ToF32(b.d), m = F16ToF32(b.m);
  for (int j = 0; j < kQ4_1BlockSize; ++j) {
    const long q = d == 0.0f ? 0 : std::clamp(std::lround((x[j] - m) / d), 0L, 15L);
    b.qs[j % 16] = static_cast<uint8_t>(b.qs[j % 16] | (q << (j < 16 ? 0 : 4)));
  }
  return b;
}

inline BlockQ4_K QuantizeQ4_K(const float* x) {
  float scale[8], neg_min[8];
  for (int s = 0; s < 8; ++s) {
    const auto [lo, hi] = std::minmax_element(x + 32 * s, x + 32 * s + 32);
    const float mn = std::min(0.0f, *lo);
    scale[s] = (*hi - mn) / 15.0f;
    neg_min[s] = -mn;
  }
  const uint16_t d = F32ToF16(*std::max_element(scale, scale + 8) / 63.0f);
  const uint16_t dmin = F32ToF16(*std::max_element(neg_min, neg_min + 8) / 63.0f);
  uint8_t sc[8], mn[8], q[kQkK];
  for (int s = 0; s < 8; ++s) {
    sc[s] = F16ToF32(d) == 0.0f
                ? 0
                : static_cast<uint8_t>(std::min(63L, std::lround(scale[s] / F16ToF32(d))));
    mn[s] = F16ToF32(dmin) == 0.0f
                ? 0
                : static_cast<uint8_t>(std::min(63L, std::lround(neg_min[s] / F16ToF32(dmin))));
    const float d1 = F16ToF32(d) * sc[s], m1 = F16ToF32(dmin) * mn[s];
    for (int l = 0; l < 32; ++l) {
      q[32 * s + l] = static_cast<uint8_t>(
          d1 == 0.0f ? 0 : std::clamp(std::lround((x[32 * s + l] + m1) / d1), 0L, 15L));
    }
  }
  return PackQ4_K(q, sc, mn, d, dmin);
}

// As ggml's quantize_row_q8_0_ref: d = max |x| / 127, q = round(x / d).
inline BlockQ8_0 QuantizeQ8_0(const float* x) {
  float amax = 0.0f;
  for (int l = 0; l < 32; ++l) amax = std::max(amax, std::fabs(x[l]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  BlockQ8_0 b{};
  b.d = F32ToF16(d);
  for (int l = 0; l < 32; ++l) b.qs[l] = static_cast<int8_t>(std::lround(x[l] * id));
  return b;
}

inline BlockQ6_K QuantizeQ6_K(const float* x) {
  float scale[16];
  for (int s = 0; s < 16; ++s) {
    float amax = 0.0f;
    for (int l = 0; l < 16; ++l) amax = std::max(amax, std::fabs(x[16 * s + l]));
    scale[s] = amax / 31.0f;
  }
  const uint16_t d = F32ToF16(*std::max_element(scale, scale + 16) / 127.0f);
  int8_t sc[16];
  uint8_t q[kQkK];
  for (int s = 0; s < 16; ++s) {
    sc[s] = F16ToF32(d) == 0.0f
                ? 0
                : static_cast<int8_t>(std::min(127L, std::lround(scale[s] / F16ToF32(d))));
    const float d1 = F16ToF32(d) * sc[s];
    for (int l = 0; l < 16; ++l) {
      q[16 * s + l] = static_cast<uint8_t>(
          d1 == 0.0f ? 32 : std::clamp(std::lround(x[16 * s + l] / d1) + 32, 0L, 63L));
    }
  }
  return PackQ6_K(q, sc, d);
}

// One row of `n` values of `dtype` (Q8_0, Q4_0, Q4_1, Q4_K or Q6_K) quantized into `out`
// (RowBytes(dtype, n) bytes).
inline void QuantizeRow(DType dtype, const float* x, int64_t n, uint8_t* out) {
  const int64_t block = GetDTypeInfo(dtype).block_size;
  const auto bytes = static_cast<size_t>(GetDTypeInfo(dtype).block_bytes);
  for (int64_t b = 0; b < n / block; ++b) {
    const float* v = x + b * block;
    uint8_t* dst = out + static_cast<size_t>(b) * bytes;
    if (dtype == DType::kQ8_0) {
      const BlockQ8_0 blk = QuantizeQ8_0(v);
      std::memcpy(dst, &blk, bytes);
    } else if (dtype == DType::kQ4_0) {
      const BlockQ4_0 blk = QuantizeQ4_0(v);
      std::memcpy(dst, &blk, bytes);
    } else if (dtype == DType::kQ4_1) {
      const BlockQ4_1 blk = QuantizeQ4_1(v);
      std::memcpy(dst, &blk, bytes);
    } else if (dtype == DType::kQ4_K) {
      const BlockQ4_K blk = QuantizeQ4_K(v);
      std::memcpy(dst, &blk, bytes);
    } else {
      const BlockQ6_K blk = QuantizeQ6_K(v);
      std::memcpy(dst, &blk, bytes);
    }
  }
}

// A random finite f16 scale of either sign, magnitude 2^-14 .. 2^2 (normal).
inline uint16_t RandomScale(std::mt19937_64& rng) {
  const float mag = std::ldexp(1.0f + static_cast<float>(rng() % 1024) / 1024.0f,
                               static_cast<int>(rng() % 17) - 14);
  return F32ToF16(rng() % 2 ? -mag : mag);
}

// Edge-case f16 scales: +-0, subnormals, max finite, +-1 and small negatives; then inf and NaN
// when `non_finite`.
inline std::vector<uint16_t> SpecialScales(bool non_finite) {
  std::vector<uint16_t> s = {0x0000, 0x8000, 0x0001, 0x83FF, 0x7BFF,
                             0xFBFF, 0x3C00, 0xBC00, 0xB800};
  if (non_finite) s.insert(s.end(), {0x7C00, 0xFC00, 0x7E00, 0x7C01});
  return s;
}

// num_blocks random blocks of `dtype` (bytes uniformly random) whose f16 fields (d, m, dmin) are
// random finite scales, except that the first blocks take SpecialScales(non_finite) in turn.
inline std::vector<uint8_t> RandomBlocks(DType dtype, int64_t num_blocks, uint64_t seed,
                                         bool non_finite) {
  std::mt19937_64 rng(seed);
  const auto bytes = static_cast<size_t>(GetDTypeInfo(dtype).block_bytes);
  std::vector<uint8_t> out(bytes * static_cast<size_t>(num_blocks));
  for (uint8_t& v : out) v = static_cast<uint8_t>(rng());
  const std::vector<uint16_t> special = SpecialScales(non_finite);
  // Byte offsets of the f16 fields in each layout.
  std::vector<size_t> fields;
  if (dtype == DType::kQ4_0 || dtype == DType::kQ8_0) fields = {0};
  if (dtype == DType::kQ4_1 || dtype == DType::kQ4_K) fields = {0, 2};
  if (dtype == DType::kQ6_K) fields = {offsetof(BlockQ6_K, d)};
  for (int64_t b = 0; b < num_blocks; ++b) {
    for (size_t f = 0; f < fields.size(); ++f) {
      const size_t idx = static_cast<size_t>(b) * fields.size() + f;
      const uint16_t h = idx < special.size() ? special[idx] : RandomScale(rng);
      std::memcpy(out.data() + static_cast<size_t>(b) * bytes + fields[f], &h, 2);
    }
  }
  return out;
}

}  // namespace unmask::testing

#endif  // UNMASK_TESTS_OPS_QUANT_TEST_UTIL_H_
