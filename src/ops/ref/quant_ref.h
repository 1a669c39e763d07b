// Scalar reference dequantizers of the GGUF/ggml 4- and 6-bit block types (the source of truth for
// ops/quant_cpu.cc and the fused Linear kernels). Element order, nibble order and the Q4_K scale
// packing are ggml's (ggml-quants.c dequantize_row_*); core/dtype.h documents the layouts.
//
// Formulas, in f32 with d, m, dmin = F16ToF32(...) and q the stored unsigned value:
//   Q4_0: d * (q - 8)
//   Q4_1: (d * q) + m
//   Q4_K: ((d * sc) * q) - (dmin * mn)        sc, mn: 6-bit scale and min of the 32-element
//   sub-block Q6_K: (d * sc) * (q - 32)                 sc: int8 scale of the 16-element sub-block
// Every product above is exact in f32 (d has at most 11 significant bits, a 6-bit sc or mn at
// most 6, an int8 sc at most 7, q at most 4 and q - 32 at most 5: <= 23 < 24 bits), so each value
// is rounded at most once, in the final add/subtract of Q4_1 and Q4_K; an implementation that
// forms d * sc first and then multiplies by q (or fuses the final add into an FMA) gets the same
// bits, signed zeros included. (d * sc) is formed first, as ggml does: d * (sc * q) would give +0
// instead of -0 when sc * q == 0 and d * sc < 0.
#ifndef UNMASK_OPS_REF_QUANT_REF_H_
#define UNMASK_OPS_REF_QUANT_REF_H_

#include <cstdint>

#include "core/dtype.h"

namespace unmask::ref {

// The 6-bit scale and min of Q4_K sub-block j in [0, 8) (ggml get_scale_min_k4): for j < 4,
// sc = scales[j] & 63 and mn = scales[j + 4] & 63; for j >= 4 the low 4 bits come from
// scales[j + 4] (sc: low nibble, mn: high nibble) and the high 2 bits from the top bits of
// scales[j - 4] (sc) and scales[j] (mn).
void Q4KScaleMin(const uint8_t* scales, int j, uint8_t* sc, uint8_t* mn);

// num_blocks blocks -> num_blocks * block size floats at dst.
void DequantizeQ4_0(const BlockQ4_0* src, int64_t num_blocks, float* dst);
void DequantizeQ4_1(const BlockQ4_1* src, int64_t num_blocks, float* dst);
void DequantizeQ4_K(const BlockQ4_K* src, int64_t num_blocks, float* dst);
void DequantizeQ6_K(const BlockQ6_K* src, int64_t num_blocks, float* dst);

}  // namespace unmask::ref

#endif  // UNMASK_OPS_REF_QUANT_REF_H_
