// The per-call activation conversions of the bf16 and int8 packed GEMMs (packed_gemm.h), and the
// int32 -> f32 rescaling of the int8 product: AVX2 loops (the program's baseline ISA) with the
// scalar definitions they must equal bit for bit (tests/backend/gemm_convert_test.cc).
#ifndef UNMASK_BACKEND_CPU_GEMM_CONVERT_H_
#define UNMASK_BACKEND_CPU_GEMM_CONVERT_H_

#include <cstdint>

namespace unmask::cpu {

// out[i] = F32ToBF16(x[i]) (core/half.h: round to nearest even, NaN stays a quiet NaN) for
// i < count. count >= 0.
void ConvertToBf16(const float* x, int64_t count, uint16_t* out);
void ConvertToBf16Reference(const float* x, int64_t count, uint16_t* out);

// Symmetric int8 quantization of one row x[0, k): amax = max |x_i|, d = amax / 127,
// q_i = x_i * (1 / d) rounded to nearest even (|q_i| <= 127). Returns d; 0 (and q = 0) for a row
// of zeros; NaN (q unspecified) when the row holds a NaN or an infinity. k >= 1.
float QuantizeRowS8(const float* x, int64_t k, int8_t* q);
float QuantizeRowS8Reference(const float* x, int64_t k, int8_t* q);

// y[j] = float(acc[j]) * (d_row * d_col[j]) for j < n, in f32 (a NaN d_row gives a row of NaN).
// acc and y may be the same memory (in place: the int8 GEMM writes its int32 result into y).
void RescaleRowS32(const int32_t* acc, int64_t n, float d_row, const float* d_col, float* y);
void RescaleRowS32Reference(const int32_t* acc, int64_t n, float d_row, const float* d_col,
                            float* y);

}  // namespace unmask::cpu

#endif  // UNMASK_BACKEND_CPU_GEMM_CONVERT_H_
