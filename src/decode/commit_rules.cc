#include "decode/commit_rules.h"

#include <algorithm>
#include <cmath>

#include "sampling/token_choice.h"
#include "sampling/top_k.h"

namespace unmask {
namespace {

// The candidates of `keep` (a mask over conf) in the rules' commit order.
std::vector<int32_t> Ordered(std::span<const double> conf, const std::vector<bool>& keep) {
  std::vector<int32_t> order = SelectTopK(conf, static_cast<int64_t>(conf.size()));
  std::vector<int32_t> out;
  for (int32_t i : order) {
    if (keep[static_cast<size_t>(i)]) out.push_back(i);
  }
  return out;
}

}  // namespace

std::vector<int32_t> SelectThreshold(std::span<const double> conf, double threshold) {
  std::vector<int32_t> order = SelectTopK(conf, static_cast<int64_t>(conf.size()));
  std::vector<int32_t> out;
  for (size_t r = 0; r < order.size(); ++r) {
    if (r == 0 || conf[static_cast<size_t>(order[r])] >= threshold) out.push_back(order[r]);
  }
  return out;
}

std::vector<int32_t> SelectFactor(std::span<const double> conf, double factor) {
  const std::vector<int32_t> order = SelectTopK(conf, static_cast<int64_t>(conf.size()));
  const int64_t n_total = static_cast<int64_t>(order.size());
  if (n_total == 0) return {};
  // 0-based rank r compares with thr[r] = 1 - factor / (r + 2); thr[0] = -1.
  int64_t top_i = n_total - 1;  // the reference loop's value when no rank fails
  for (int64_t r = 0; r < n_total; ++r) {
    const double thr = r == 0 ? -1.0 : 1.0 - factor / static_cast<double>(r + 2);
    if (conf[static_cast<size_t>(order[static_cast<size_t>(r)])] < thr) {
      top_i = r;
      break;
    }
  }
  if (top_i == 0 || top_i == n_total - 1) ++top_i;
  return std::vector<int32_t>(order.begin(), order.begin() + top_i);
}

std::vector<int32_t> SelectHierarchy(std::span<const double> conf,
                                     std::span<const int32_t> positions, double threshold,
                                     double low_threshold) {
  const size_t n = conf.size();
  if (n == 0) return {};
  const std::vector<int32_t> order = SelectTopK(conf, static_cast<int64_t>(n));
  std::vector<bool> keep(n, false);
  keep[static_cast<size_t>(order[0])] = true;  // the top-1 always (see header)
  if (conf[static_cast<size_t>(order[0])] < low_threshold) return {order[0]};
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && positions[j] == positions[j - 1] + 1) ++j;
    size_t best = i;  // first maximum of the run (torch.argmax)
    for (size_t k = i + 1; k < j; ++k) {
      if (conf[k] > conf[best]) best = k;
    }
    if (conf[best] > low_threshold) keep[best] = true;
    i = j;
  }
  for (size_t i = 0; i < n; ++i) {
    if (conf[i] > threshold) keep[i] = true;
  }
  return Ordered(conf, keep);
}

void CreditTracker::StartBlock(int64_t block_length) {
  credit_.assign(static_cast<size_t>(block_length), {});
  steps_ = 0;
}

void CreditTracker::StartStep() {
  if (steps_ > 0) {
    for (auto& entries : credit_) {
      for (auto& [token, c] : entries) c *= beta_;
    }
  }
  ++steps_;
}

void CreditTracker::Fuse(int64_t offset, std::span<float> logits) {
  auto& entries = credit_[static_cast<size_t>(offset)];
  const int32_t top = ArgMax(logits);
  const double p_top = SoftmaxProbability(logits, top, {});
  const double gain = std::pow(p_top, gamma_);
  auto it =
      std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.first == top; });
  if (it == entries.end()) {
    entries.emplace_back(top, gain);
  } else {
    it->second += gain;
  }
  for (const auto& [token, c] : entries) {
    logits[static_cast<size_t>(token)] += static_cast<float>(alpha_ * std::log1p(c));
  }
}

double CreditTracker::credit(int64_t offset, int32_t token) const {
  for (const auto& [t, c] : credit_[static_cast<size_t>(offset)]) {
    if (t == token) return c;
  }
  return 0;
}

}  // namespace unmask
