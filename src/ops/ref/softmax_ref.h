// Scalar reference row softmax in double: p_i = exp(x_i - max) / sum_j exp(x_j - max).
#ifndef UNMASK_OPS_REF_SOFTMAX_REF_H_
#define UNMASK_OPS_REF_SOFTMAX_REF_H_

#include <cstdint>

namespace unmask::ref {

// x: [m, n] in place. A row of all -inf becomes all 0.
void SoftmaxInPlace(float* x, int64_t m, int64_t n);

// sum_i exp(x_i - shift) in double throughout.
double SumExpShifted(const float* x, int64_t n, float shift);

}  // namespace unmask::ref

#endif  // UNMASK_OPS_REF_SOFTMAX_REF_H_
