#include "ops/ref/softmax_ref.h"

#include <cmath>
#include <limits>
#include <vector>

namespace unmask::ref {

void SoftmaxInPlace(float* x, int64_t m, int64_t n) {
  std::vector<double> e(static_cast<size_t>(n));
  for (int64_t r = 0; r < m; ++r) {
    float* row = x + r * n;
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i) max = std::fmax(max, row[i]);
    if (max == -std::numeric_limits<double>::infinity()) {
      for (int64_t i = 0; i < n; ++i) row[i] = 0.0f;
      continue;
    }
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      e[static_cast<size_t>(i)] = std::exp(static_cast<double>(row[i]) - max);
      sum += e[static_cast<size_t>(i)];
    }
    for (int64_t i = 0; i < n; ++i) row[i] = static_cast<float>(e[static_cast<size_t>(i)] / sum);
  }
}

double SumExpShifted(const float* x, int64_t n, float shift) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - shift);
  return sum;
}

}  // namespace unmask::ref
