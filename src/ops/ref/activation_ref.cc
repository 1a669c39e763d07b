#include "ops/ref/activation_ref.h"

#include <cmath>

namespace unmask::ref {

void SwiGlu(const float* gate_up, int64_t m, int64_t f, float* out) {
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t i = 0; i < f; ++i) {
      const double g = gate_up[r * 2 * f + i];
      const double u = gate_up[r * 2 * f + f + i];
      out[r * f + i] = static_cast<float>(g / (1.0 + std::exp(-g)) * u);
    }
  }
}

void AddInPlace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = y[i] + x[i];
}

}  // namespace unmask::ref
