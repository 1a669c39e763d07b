// Scalar reference conversions to f32 (the oracle for ops/convert_cpu.cc): core/half.h per
// element; Q8_0 value = F16ToF32(d) * q (ggml dequantize_row_q8_0); Q4_0, Q4_1, Q4_K and Q6_K as
// ops/ref/quant_ref.h.
#ifndef UNMASK_OPS_REF_CONVERT_REF_H_
#define UNMASK_OPS_REF_CONVERT_REF_H_

#include <cstdint>

#include "core/dtype.h"

namespace unmask::ref {

// n elements of dtype (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K or Q6_K; n a multiple of the block
// size) -> dst.
// Returns false, writing nothing, for other dtypes or a partial block.
bool ConvertRowToF32(DType dtype, const void* src, int64_t n, float* dst);

}  // namespace unmask::ref

#endif  // UNMASK_OPS_REF_CONVERT_REF_H_
