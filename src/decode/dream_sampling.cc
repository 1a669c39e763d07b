#include "decode/dream_sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace unmask {
namespace {

// softmax(l) into probs with a sequential sum in index order (the reference's order).
void Softmax(std::span<const double> l, std::vector<double>& probs) {
  probs.resize(l.size());
  const double mx = *std::max_element(l.begin(), l.end());
  double sum = 0;
  for (size_t v = 0; v < l.size(); ++v) {
    probs[v] = std::exp(l[v] - mx);
    sum += probs[v];
  }
  for (double& p : probs) p /= sum;
}

// First index of the largest value.
int32_t FirstArgMax(std::span<const double> x) {
  return static_cast<int32_t>(std::max_element(x.begin(), x.end()) - x.begin());
}

}  // namespace

void DreamFilterLogits(std::span<const float> logits, double temperature, double top_p,
                       int64_t top_k, DreamScratch& scratch) {
  std::vector<double>& l = scratch.logits;
  l.assign(logits.begin(), logits.end());
  const size_t n = l.size();
  if (n == 0) return;
  if (temperature > 0) {
    for (double& x : l) x /= temperature;
  }
  if (top_p < 1.0) {
    std::vector<int32_t>& order = scratch.order;
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return l[static_cast<size_t>(a)] > l[static_cast<size_t>(b)];
    });
    const double mx = l[static_cast<size_t>(order[0])];
    std::vector<double>& e = scratch.probs;
    e.resize(n);
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
      e[i] = std::exp(l[static_cast<size_t>(order[i])] - mx);
      sum += e[i];
    }
    // Entry i is removed when the cumulative probability of entries 0..i-1 exceeds top_p.
    double cum = e[0] / sum;
    for (size_t i = 1; i < n; ++i) {
      const bool remove = cum > top_p;
      cum += e[i] / sum;
      if (remove) l[static_cast<size_t>(order[i])] = kDreamFilteredLogit;
    }
  }
  if (top_k > 0) {
    const size_t k = static_cast<size_t>(std::min<int64_t>(top_k, static_cast<int64_t>(n)));
    std::vector<double>& sorted = scratch.probs;
    sorted.assign(l.begin(), l.end());
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k - 1),
                     sorted.end(), std::greater<double>());
    const double kth = sorted[k - 1];
    for (double& x : l) {
      if (x < kth) x = kDreamFilteredLogit;
    }
  }
}

DreamSample DreamSampleTokens(std::span<const float> logits, const DreamParams& params,
                              const CounterRng& rng, uint32_t step, uint32_t position,
                              DreamScratch& scratch) {
  DreamFilterLogits(logits, params.temperature, params.top_p, params.top_k, scratch);
  const std::vector<double>& l = scratch.logits;
  std::vector<double>& probs = scratch.probs;
  Softmax(l, probs);
  DreamSample s;
  if (params.temperature > 0) {
    double best = -std::numeric_limits<double>::infinity();
    int32_t best_id = 0;
    for (size_t v = 0; v < l.size(); ++v) {
      const double u = rng.Uniform(RngStream::kGumbel, step, position, static_cast<uint32_t>(v));
      const double score = l[v] - std::log(-std::log(u));  // u == 0: -inf
      if (score > best) {
        best = score;
        best_id = static_cast<int32_t>(v);
      }
    }
    s.token = best_id;
  } else {
    s.token = FirstArgMax(probs);
  }
  s.confidence = probs[static_cast<size_t>(s.token)];
  if (params.alg == DreamAlg::kTopKMargin) {
    double top1 = -1, top2 = -1;
    for (double p : probs) {
      if (p > top1) {
        top2 = top1;
        top1 = p;
      } else if (p > top2) {
        top2 = p;
      }
    }
    s.confidence = probs.size() > 1 ? top1 - top2 : top1;
  } else if (params.alg == DreamAlg::kEntropy) {
    double sum = 0;
    for (double p : probs) sum += p * std::log(p + 1e-10);
    s.confidence = sum;
  }
  return s;
}

}  // namespace unmask
