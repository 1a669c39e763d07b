// Scalar reference for Linear (y = x W^T): double accumulation, rounded once per output.
#ifndef UNMASK_OPS_REF_LINEAR_REF_H_
#define UNMASK_OPS_REF_LINEAR_REF_H_

#include <cstdint>

namespace unmask::ref {

// x: [m, k], w: [n, k] (f32, e.g. dequantized with ref::ConvertRowToF32), y: [m, n].
void Linear(const float* x, int64_t m, int64_t k, const float* w, int64_t n, float* y);

}  // namespace unmask::ref

#endif  // UNMASK_OPS_REF_LINEAR_REF_H_
