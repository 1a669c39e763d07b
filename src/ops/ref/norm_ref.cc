#include "ops/ref/norm_ref.h"

#include <cmath>

namespace unmask::ref {

void RmsNorm(const float* x, const float* w, int64_t m, int64_t d, float eps, float* y) {
  for (int64_t r = 0; r < m; ++r) {
    double ss = 0.0;
    for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(x[r * d + i]) * x[r * d + i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(d) + static_cast<double>(eps));
    for (int64_t i = 0; i < d; ++i) {
      y[r * d + i] = static_cast<float>(static_cast<double>(x[r * d + i]) * inv * w[i]);
    }
  }
}

}  // namespace unmask::ref
