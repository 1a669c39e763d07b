#include "ops/ref/attention_ref.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace unmask::ref {

void Attention(const float* q, const float* k, const float* v, int64_t t, int64_t s,
               int64_t num_heads, int64_t num_kv_heads, int64_t head_dim,
               const AttentionParams& params, float* out) {
  const int64_t group = num_heads / num_kv_heads;
  std::vector<double> p(static_cast<size_t>(s));
  std::vector<int64_t> keys, tree;
  for (int64_t i = 0; i < t; ++i) {
    // The keys query i sees, in order.
    keys.clear();
    if (params.mask == AttentionMask::kTree) {
      for (int64_t j = 0; j < params.q_pos0; ++j) keys.push_back(j);
      TreeKeys(params, params.tree_q0 + i, &tree);
      keys.insert(keys.end(), tree.begin(), tree.end());
    } else {
      const int64_t n = VisibleKeyCount(params, params.q_pos0 + i, s);
      for (int64_t j = 0; j < n; ++j) keys.push_back(j);
    }
    const auto visible = static_cast<int64_t>(keys.size());
    for (int64_t h = 0; h < num_heads; ++h) {
      const int64_t kv_h = h / group;
      const float* qi = q + (i * num_heads + h) * head_dim;
      double max = -INFINITY;
      for (int64_t j = 0; j < visible; ++j) {
        const float* kj = k + (keys[static_cast<size_t>(j)] * num_kv_heads + kv_h) * head_dim;
        double dot = 0.0;
        for (int64_t c = 0; c < head_dim; ++c) dot += static_cast<double>(qi[c]) * kj[c];
        p[static_cast<size_t>(j)] = dot * params.scale;
        max = std::max(max, p[static_cast<size_t>(j)]);
      }
      double sum = 0.0;
      for (int64_t j = 0; j < visible; ++j) {
        p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - max);
        sum += p[static_cast<size_t>(j)];
      }
      float* oi = out + (i * num_heads + h) * head_dim;
      for (int64_t c = 0; c < head_dim; ++c) {
        double acc = 0.0;
        for (int64_t j = 0; j < visible; ++j) {
          acc += p[static_cast<size_t>(j)] *
                 v[(keys[static_cast<size_t>(j)] * num_kv_heads + kv_h) * head_dim + c];
        }
        oi[c] = static_cast<float>(acc / sum);
      }
    }
  }
}

}  // namespace unmask::ref
