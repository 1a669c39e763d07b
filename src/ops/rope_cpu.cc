// RoPE rows. Both layouts compute a' = fma(a, c, -(b s)), b' = fma(a, s, b c) with the same
// table values, so the interleaved and NEOX forms agree bit for bit under the Q/K row permutation
// of llama.cpp's converter. The loops are plain and auto-vectorized (RoPE is a tiny share of a
// forward: M * num_heads * head_dim elements per call).
#include <algorithm>
#include <cmath>

#include "core/parallel.h"
#include "ops/kernels_cpu.h"

namespace unmask::cpu {
namespace {

void RotateInterleaved(float* x, const float* cos, const float* sin, int64_t half) {
  for (int64_t i = 0; i < half; ++i) {
    const float a = x[2 * i], b = x[2 * i + 1];
    x[2 * i] = std::fma(a, cos[i], -(b * sin[i]));
    x[2 * i + 1] = std::fma(a, sin[i], b * cos[i]);
  }
}

void RotateNeox(float* x, const float* cos, const float* sin, int64_t half) {
  float* y = x + half;
  for (int64_t i = 0; i < half; ++i) {
    const float a = x[i], b = y[i];
    x[i] = std::fma(a, cos[i], -(b * sin[i]));
    y[i] = std::fma(a, sin[i], b * cos[i]);
  }
}

}  // namespace

void RopeRows(float* x, int64_t m, int64_t num_heads, int64_t head_dim, const int32_t* positions,
              const RopeTable& table, RopeLayout layout) {
  const int64_t half = table.rope_dim() / 2;
  const int64_t row = num_heads * head_dim;
  const int64_t grain = GrainForBytes(8 * row);
  ParallelFor(m, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* c = table.cos(positions[r]);
      const float* s = table.sin(positions[r]);
      for (int64_t h = 0; h < num_heads; ++h) {
        float* head = x + r * row + h * head_dim;
        if (layout == RopeLayout::kInterleaved) {
          RotateInterleaved(head, c, s, half);
        } else {
          RotateNeox(head, c, s, half);
        }
      }
    }
  });
}

}  // namespace unmask::cpu
