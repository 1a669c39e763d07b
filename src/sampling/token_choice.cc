#include "sampling/token_choice.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace unmask {
namespace {

bool IsExcluded(std::span<const int32_t> excluded, int32_t v) {
  return std::find(excluded.begin(), excluded.end(), v) != excluded.end();
}

}  // namespace

int32_t ArgMax(std::span<const float> logits) {
  int32_t best = 0;
  float best_value = -std::numeric_limits<float>::infinity();
  bool found = false;
  for (size_t v = 0; v < logits.size(); ++v) {
    const float x = logits[v];
    if (std::isnan(x)) continue;
    if (!found || x > best_value) {
      best = static_cast<int32_t>(v);
      best_value = x;
      found = true;
    }
  }
  return best;
}

int32_t SampleGumbelMax(std::span<const float> logits, double temperature, const CounterRng& rng,
                        uint32_t step, uint32_t position) {
  int32_t best = 0;
  double best_score = -std::numeric_limits<double>::infinity();
  bool found = false;
  for (size_t v = 0; v < logits.size(); ++v) {
    const double l = logits[v];
    if (std::isnan(l)) continue;
    const double u = rng.Uniform(RngStream::kGumbel, step, position, static_cast<uint32_t>(v));
    // -log(u) is in (0, inf]; u == 0 -> log(inf) = inf -> score -inf.
    const double score = l - temperature * std::log(-std::log(u));
    if (!found || score > best_score) {
      best = static_cast<int32_t>(v);
      best_score = score;
      found = true;
    }
  }
  return best;
}

double SoftmaxProbability(std::span<const float> logits, int32_t index,
                          std::span<const int32_t> excluded) {
  if (index < 0 || static_cast<size_t>(index) >= logits.size()) return 0.0;
  if (IsExcluded(excluded, index)) return 0.0;
  const double target = logits[static_cast<size_t>(index)];
  if (std::isinf(target) && target < 0) return 0.0;
  double max = -std::numeric_limits<double>::infinity();
  for (size_t v = 0; v < logits.size(); ++v) {
    if (!IsExcluded(excluded, static_cast<int32_t>(v))) max = std::max(max, double{logits[v]});
  }
  if (std::isinf(max) && max < 0) return 0.0;
  double sum = 0;
  for (size_t v = 0; v < logits.size(); ++v) {
    if (IsExcluded(excluded, static_cast<int32_t>(v))) continue;
    sum += std::exp(double{logits[v]} - max);
  }
  return std::exp(target - max) / sum;
}

}  // namespace unmask
