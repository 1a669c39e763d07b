#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>

#include "sampling/token_choice.h"

namespace unmask {

Status ValidateSamplingParams(const SamplingParams& p) {
  auto bad = [](const std::string& what) { return InvalidArgumentError(what); };
  if (!std::isfinite(p.temperature)) return bad("temperature must be finite");
  if (!(p.top_p > 0 && p.top_p <= 1)) {
    return bad("top_p must be in (0, 1], got " + std::to_string(p.top_p));
  }
  if (!(p.min_p >= 0 && p.min_p <= 1)) {
    return bad("min_p must be in [0, 1], got " + std::to_string(p.min_p));
  }
  if (!(p.repeat_penalty > 0) || !std::isfinite(p.repeat_penalty)) {
    return bad("repeat_penalty must be a positive number, got " + std::to_string(p.repeat_penalty));
  }
  if (p.repeat_last_n < -1) {
    return bad("repeat_last_n must be -1 (whole history), 0 (off) or positive, got " +
               std::to_string(p.repeat_last_n));
  }
  if (!std::isfinite(p.frequency_penalty) || !std::isfinite(p.presence_penalty)) {
    return bad("frequency_penalty and presence_penalty must be finite");
  }
  return Status::Ok();
}

double TokenDistribution::Prob(int32_t id) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] == id) return probs[i];
  }
  return 0.0;
}

int32_t TokenDistribution::Draw(double u) const {
  double cum = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    cum += probs[i];
    if (u < cum) return ids[i];
  }
  return ids.back();
}

TokenDistribution TokenDistribution::Without(int32_t id) const {
  TokenDistribution out;
  double sum = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] == id) continue;
    out.ids.push_back(ids[i]);
    out.probs.push_back(probs[i]);
    sum += probs[i];
  }
  if (out.ids.empty() || !(sum > 0)) return *this;
  for (double& p : out.probs) p /= sum;
  return out;
}

void Sampler::ApplyPenalties(std::span<float> logits, std::span<const int32_t> history) const {
  const SamplingParams& p = params_;
  const bool any =
      p.repeat_penalty != 1.0 || p.frequency_penalty != 0.0 || p.presence_penalty != 0.0;
  if (!any || p.repeat_last_n == 0 || history.empty()) return;
  const size_t window = p.repeat_last_n < 0
                            ? history.size()
                            : std::min(history.size(), static_cast<size_t>(p.repeat_last_n));
  std::unordered_map<int32_t, int> counts;
  for (size_t i = history.size() - window; i < history.size(); ++i) ++counts[history[i]];
  for (const auto& [id, count] : counts) {
    if (id < 0 || static_cast<size_t>(id) >= logits.size()) continue;
    float& l = logits[static_cast<size_t>(id)];
    if (p.repeat_penalty != 1.0) {
      l = l > 0 ? static_cast<float>(l / p.repeat_penalty)
                : static_cast<float>(l * p.repeat_penalty);
    }
    l -= static_cast<float>(count * p.frequency_penalty + p.presence_penalty);
  }
}

TokenDistribution Sampler::Distribution(std::span<const float> raw,
                                        std::span<const int32_t> history) const {
  const SamplingParams& p = params_;
  std::vector<float> logits(raw.begin(), raw.end());
  ApplyPenalties(logits, history);
  if (p.greedy()) return TokenDistribution::PointMass(ArgMax(logits));

  // Candidates: finite (or +inf) logits, ordered by logit descending, lower id first on ties.
  const float kNegInf = -std::numeric_limits<float>::infinity();
  std::vector<int32_t> cand;
  cand.reserve(logits.size());
  for (size_t v = 0; v < logits.size(); ++v) {
    if (!std::isnan(logits[v]) && logits[v] != kNegInf) cand.push_back(static_cast<int32_t>(v));
  }
  if (cand.empty()) return TokenDistribution::PointMass(0);
  auto better = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < cand.size()) {
    std::nth_element(cand.begin(), cand.begin() + p.top_k, cand.end(), better);
    cand.resize(static_cast<size_t>(p.top_k));
  }
  auto logit = [&](int32_t id) { return static_cast<double>(logits[static_cast<size_t>(id)]); };
  double l_max = -std::numeric_limits<double>::infinity();
  for (int32_t id : cand) l_max = std::max(l_max, logit(id));
  if (std::isinf(l_max)) {  // +inf logits: the first of them takes all the mass
    for (size_t v = 0; v < logits.size(); ++v) {
      if (std::isinf(logits[v]) && logits[v] > 0) {
        return TokenDistribution::PointMass(static_cast<int32_t>(v));
      }
    }
  }
  // Normalizer of softmax(l) over the top-k candidates, for top-p.
  double z = 0;
  for (int32_t id : cand) z += std::exp(logit(id) - l_max);
  if (p.min_p > 0) {
    const double floor = l_max + std::log(p.min_p);
    std::erase_if(cand, [&](int32_t id) { return logit(id) < floor; });
  }
  std::sort(cand.begin(), cand.end(), better);
  if (p.top_p < 1) {
    double cum = 0;
    size_t keep = 0;
    while (keep < cand.size()) {
      cum += std::exp(logit(cand[keep]) - l_max) / z;
      ++keep;
      if (cum >= p.top_p) break;
    }
    cand.resize(keep);
  }
  std::vector<double> probs;
  probs.reserve(cand.size());
  double sum = 0;
  for (int32_t id : cand) {
    probs.push_back(std::exp((logit(id) - l_max) / p.temperature));
    sum += probs.back();
  }
  for (double& q : probs) q /= sum;
  return TokenDistribution{std::move(cand), std::move(probs)};
}

int32_t Sampler::Sample(std::span<const float> logits, std::span<const int32_t> history,
                        int64_t position) const {
  const TokenDistribution d = Distribution(logits, history);
  if (d.ids.size() == 1) return d.ids[0];
  const CounterRng rng(params_.seed);
  return d.Draw(rng.Uniform(RngStream::kSampling, static_cast<uint32_t>(position), 0, 0));
}

}  // namespace unmask
