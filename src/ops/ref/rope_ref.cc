#include "ops/ref/rope_ref.h"

#include <cmath>

namespace unmask::ref {

void ApplyRope(float* x, int64_t m, int64_t num_heads, int64_t head_dim, const int32_t* positions,
               int64_t rope_dim, double base, RopeLayout layout) {
  const int64_t half = rope_dim / 2;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t h = 0; h < num_heads; ++h) {
      float* head = x + (r * num_heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const double theta = static_cast<double>(positions[r]) *
                             std::pow(base, -2.0 * static_cast<double>(i) / rope_dim);
        const double c = std::cos(theta), s = std::sin(theta);
        // Interleaved: pair (2i, 2i + 1); NEOX: pair (i, i + rope_dim / 2).
        const int64_t ia = layout == RopeLayout::kInterleaved ? 2 * i : i;
        const int64_t ib = layout == RopeLayout::kInterleaved ? 2 * i + 1 : i + half;
        const double a = head[ia], b = head[ib];
        head[ia] = static_cast<float>(a * c - b * s);
        head[ib] = static_cast<float>(a * s + b * c);
      }
    }
  }
}

}  // namespace unmask::ref
