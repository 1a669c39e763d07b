#include "sampling/top_k.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace unmask {

std::vector<int32_t> SelectTopK(std::span<const double> scores, int64_t k) {
  const int64_t n = static_cast<int64_t>(scores.size());
  k = std::clamp<int64_t>(k, 0, n);
  std::vector<int32_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  // Strict weak order: higher score first, NaN last, then lower index.
  auto better = [&](int32_t a, int32_t b) {
    const double sa = scores[static_cast<size_t>(a)], sb = scores[static_cast<size_t>(b)];
    const bool na = std::isnan(sa), nb = std::isnan(sb);
    if (na != nb) return nb;
    if (!na && sa != sb) return sa > sb;
    return a < b;
  };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), better);
  idx.resize(static_cast<size_t>(k));
  return idx;
}

}  // namespace unmask
