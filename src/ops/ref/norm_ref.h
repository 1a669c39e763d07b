// Scalar reference RMSNorm: y = x / sqrt(mean(x^2) + eps) * w, all in double, rounded once.
#ifndef UNMASK_OPS_REF_NORM_REF_H_
#define UNMASK_OPS_REF_NORM_REF_H_

#include <cstdint>

namespace unmask::ref {

// x, y: [m, d]; w: [d]. d >= 1.
void RmsNorm(const float* x, const float* w, int64_t m, int64_t d, float eps, float* y);

}  // namespace unmask::ref

#endif  // UNMASK_OPS_REF_NORM_REF_H_
