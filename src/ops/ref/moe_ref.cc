#include "ops/ref/moe_ref.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace unmask::ref {
namespace {

// Indices of `score` sorted by descending score, ties by ascending index.
std::vector<int64_t> Ranked(const std::vector<double>& score) {
  std::vector<int64_t> idx(score.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int64_t a, int64_t b) { return score[a] > score[b]; });
  return idx;
}

// y += w * expert(x) in double.
void AddExpert(const float* x, int64_t d, const ExpertRef& e, double w, std::vector<double>& y) {
  std::vector<double> a(static_cast<size_t>(e.f));
  for (int64_t i = 0; i < e.f; ++i) {
    double g = 0, u = 0;
    for (int64_t c = 0; c < d; ++c) {
      g += static_cast<double>(e.gate[i * d + c]) * x[c];
      u += static_cast<double>(e.up[i * d + c]) * x[c];
    }
    a[i] = g / (1.0 + std::exp(-g)) * u;
  }
  for (int64_t r = 0; r < d; ++r) {
    double s = 0;
    for (int64_t i = 0; i < e.f; ++i) s += static_cast<double>(e.down[r * e.f + i]) * a[i];
    y[r] += w * s;
  }
}

}  // namespace

void RouteExperts(const float* logits, int64_t t, const float* bias, const MoeRouting& r,
                  int32_t* ids, float* weights) {
  const int64_t n = r.num_experts, k = r.top_k, gsize = n / r.num_groups;
  for (int64_t tok = 0; tok < t; ++tok) {
    const float* x = logits + tok * n;
    std::vector<double> p(n), sel(n);
    if (r.gating == MoeGating::kSoftmax) {
      const double m = *std::max_element(x, x + n);
      double sum = 0;
      for (int64_t e = 0; e < n; ++e) sum += (p[e] = std::exp(static_cast<double>(x[e]) - m));
      for (double& v : p) v /= sum;
    } else {
      for (int64_t e = 0; e < n; ++e) p[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(x[e])));
    }
    for (int64_t e = 0; e < n; ++e) sel[e] = p[e] + (bias ? bias[e] : 0.0);
    std::vector<double> masked = sel;
    if (r.num_groups > 1) {
      std::vector<double> gscore(r.num_groups);
      for (int64_t g = 0; g < r.num_groups; ++g) {
        std::vector<double> s(sel.begin() + g * gsize, sel.begin() + (g + 1) * gsize);
        std::sort(s.rbegin(), s.rend());
        gscore[g] = s[0] + (gsize > 1 ? s[1] : 0.0);
      }
      const std::vector<int64_t> groups = Ranked(gscore);
      std::vector<bool> keep(r.num_groups, false);
      for (int64_t i = 0; i < r.groups_used; ++i) keep[groups[i]] = true;
      for (int64_t e = 0; e < n; ++e) {
        if (!keep[e / gsize]) masked[e] = -INFINITY;
      }
    }
    const std::vector<int64_t> order = Ranked(masked);
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += p[order[j]];
    for (int64_t j = 0; j < k; ++j) {
      ids[tok * k + j] = static_cast<int32_t>(order[j]);
      double w = p[order[j]];
      if (r.normalize) w /= sum + r.normalize_eps;
      weights[tok * k + j] = static_cast<float>(w * r.scale);
    }
  }
}

void MoeFfn(const float* x, int64_t t, int64_t d, const std::vector<ExpertRef>& experts,
            const int32_t* ids, const float* weights, int64_t top_k, const ExpertRef& shared,
            float* out) {
  for (int64_t tok = 0; tok < t; ++tok) {
    std::vector<double> y(static_cast<size_t>(d), 0.0);
    for (int64_t j = 0; j < top_k; ++j) {
      AddExpert(x + tok * d, d, experts[ids[tok * top_k + j]], weights[tok * top_k + j], y);
    }
    if (shared.f > 0) AddExpert(x + tok * d, d, shared, 1.0, y);
    for (int64_t c = 0; c < d; ++c) out[tok * d + c] = static_cast<float>(y[c]);
  }
}

}  // namespace unmask::ref
