// The autoregressive sampling chain, in llama.cpp's default order (common/sampling.cpp,
// llama-sampling.cpp): penalties -> top-k -> top-p -> min-p -> temperature -> draw.
//   penalties (over the last repeat_last_n tokens of the history, prompt included):
//     repetition (CTRL, Keskar et al. 2019, as llama.cpp applies it): l > 0 ? l / r : l * r,
//       once per distinct token;
//     frequency / presence (OpenAI API): l -= count * frequency_penalty
//                                          + (count > 0) * presence_penalty.
//   top-k: the k largest logits (ties: lower id first).
//   top-p (nucleus, Holtzman et al. 2020): the smallest prefix, by probability, whose mass under
//     softmax(l) over the top-k candidates reaches top_p (at least one token).
//   min-p (Nguyen et al. 2024): tokens with p >= min_p * p_max, i.e. l >= l_max + log(min_p).
//   temperature: softmax(l / T) over the survivors; T <= 0 is greedy (argmax after penalties,
//     first id on ties), which ignores top-k/top-p/min-p.
// The result is a TokenDistribution (what speculative decoding's accept/reject rule needs); a
// draw maps one uniform number through its cumulative sum.
#ifndef UNMASK_SAMPLING_SAMPLER_H_
#define UNMASK_SAMPLING_SAMPLER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "core/rng.h"
#include "core/status.h"

namespace unmask {

// Parameter names and defaults follow llama.cpp (llama-cli / llama-server).
struct SamplingParams {
  double temperature = 0.8;        // <= 0: greedy
  int32_t top_k = 40;              // <= 0: off
  double top_p = 0.95;             // >= 1: off
  double min_p = 0.05;             // <= 0: off
  double repeat_penalty = 1.0;     // 1: off
  int32_t repeat_last_n = 64;      // penalty window in tokens; -1: the whole history; 0: off
  double frequency_penalty = 0.0;  // 0: off
  double presence_penalty = 0.0;   // 0: off
  uint64_t seed = 0;

  bool greedy() const { return temperature <= 0; }
};

// Errors: InvalidArgument naming the field (temperature not finite, top_p outside (0, 1],
// min_p outside [0, 1], repeat_penalty <= 0 or not finite, repeat_last_n < -1, penalties not
// finite).
Status ValidateSamplingParams(const SamplingParams& params);

// A distribution over a subset of the vocabulary: `ids` by descending probability (ties: lower id
// first), `probs` summing to 1. Ids not listed have probability 0.
struct TokenDistribution {
  std::vector<int32_t> ids;
  std::vector<double> probs;

  double Prob(int32_t id) const;
  // The token whose cumulative-probability interval contains u in [0, 1) (the last one when
  // rounding leaves u past the total). Requires a non-empty distribution.
  int32_t Draw(double u) const;
  static TokenDistribution PointMass(int32_t id) { return {{id}, {1.0}}; }
  // The distribution with `id` removed and the rest renormalised (speculative tree verification
  // after a rejected draft); unchanged when nothing else has probability.
  TokenDistribution Without(int32_t id) const;
};

class Sampler {
 public:
  explicit Sampler(SamplingParams params) : params_(params) {}
  const SamplingParams& params() const { return params_; }

  // In place: the penalties of the chain, from the tokens of `history`.
  void ApplyPenalties(std::span<float> logits, std::span<const int32_t> history) const;
  // The chain's distribution for one row of logits [vocab] after `history` (point mass when
  // greedy). NaN logits never receive probability; an all -inf/NaN row gives the point mass on 0.
  TokenDistribution Distribution(std::span<const float> logits,
                                 std::span<const int32_t> history) const;
  // Draws the token at absolute position `position` of the sequence: the uniform number is
  // rng(seed).Uniform(kSampling, position, 0, 0), so a seed gives the same text whatever the
  // batching or thread count.
  int32_t Sample(std::span<const float> logits, std::span<const int32_t> history,
                 int64_t position) const;

 private:
  SamplingParams params_;
};

}  // namespace unmask

#endif  // UNMASK_SAMPLING_SAMPLER_H_
