// Ops-internal optimized CPU kernels (<op>_cpu.cc). Callers (<op>.cc) have validated shapes,
// dtypes and pointers; these functions do no checking. Shapes as in the public op headers.
#ifndef UNMASK_OPS_KERNELS_CPU_H_
#define UNMASK_OPS_KERNELS_CPU_H_

#include <cstdint>

#include "core/dtype.h"
#include "ops/attention.h"
#include "ops/rope.h"

namespace unmask::cpu {

// convert_cpu.cc: bit-exact with core/half.h (signalling NaNs stay signalling, as in F16ToF32).
void ConvertF16ToF32(const uint16_t* src, int64_t n, float* dst);
void ConvertBF16ToF32(const uint16_t* src, int64_t n, float* dst);
// num_blocks blocks of 32 -> 32 * num_blocks floats; value = F16ToF32(d) * q (exact in f32).
void ConvertQ8_0ToF32(const BlockQ8_0* src, int64_t num_blocks, float* dst);
// quant_cpu.cc: num_blocks blocks -> block size * num_blocks floats, bit-identical to
// ops/ref/quant_ref.h.
void ConvertQ4_0ToF32(const BlockQ4_0* src, int64_t num_blocks, float* dst);
void ConvertQ4_1ToF32(const BlockQ4_1* src, int64_t num_blocks, float* dst);
void ConvertQ4_KToF32(const BlockQ4_K* src, int64_t num_blocks, float* dst);
void ConvertQ6_KToF32(const BlockQ6_K* src, int64_t num_blocks, float* dst);
// Dispatches on dtype (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K; n a multiple of the block
// size).
void ConvertRow(DType dtype, const void* src, int64_t n, float* dst);

// norm_cpu.cc: x, y [m, d]; rows in parallel.
void RmsNormRows(const float* x, const float* w, int64_t m, int64_t d, float eps, float* y);

// activation_cpu.cc: gate_up [m, 2f] -> out [m, f]; y[n] += x[n].
void SwiGluRows(const float* gate_up, int64_t m, int64_t f, float* out);
void AddInPlace(float* y, const float* x, int64_t n);

// softmax_cpu.cc: one row of n in place (all -inf -> all 0); rows of [m, n] in parallel.
void SoftmaxRow(float* x, int64_t n);
void SoftmaxRows(float* x, int64_t m, int64_t n);
// sum_i exp(x_i - shift), f32 terms summed in f64 (ops/softmax.h SumExpShifted), n >= 1.
double SumExpShifted(const float* x, int64_t n, float shift);

// rope_cpu.cc: x [m, num_heads, head_dim] rotated in place; positions already checked.
void RopeRows(float* x, int64_t m, int64_t num_heads, int64_t head_dim, const int32_t* positions,
              const RopeTable& table, RopeLayout layout);

// attention_cpu.cc: q [t, num_heads, head_dim], k/v [s, num_kv_heads, head_dim] -> out.
void AttentionF32(const float* q, const float* k, const float* v, int64_t t, int64_t s,
                  int64_t num_heads, int64_t num_kv_heads, int64_t head_dim,
                  const AttentionParams& params, float* out);

}  // namespace unmask::cpu

#endif  // UNMASK_OPS_KERNELS_CPU_H_
