#include "ops/ref/linear_ref.h"

namespace unmask::ref {

void Linear(const float* x, int64_t m, int64_t k, const float* w, int64_t n, float* y) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        acc += static_cast<double>(x[i * k + p]) * static_cast<double>(w[j * k + p]);
      }
      y[i * n + j] = static_cast<float>(acc);
    }
  }
}

}  // namespace unmask::ref
