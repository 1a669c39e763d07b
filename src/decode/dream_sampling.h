// Dream's `sample_tokens` (HF Dream generation_utils.py; ALGORITHMS.md §2.3) for one row of
// logits, in float64:
//   l = logits / T (T > 0); top-p filter (top_p < 1); top-k filter (top_k > 0); removed entries
//   become float32's lowest value (torch.finfo(float32).min, not -inf); probs = softmax(l);
//   T > 0: token ~ Categorical(probs), realized as Gumbel-max argmax_v (l_v - log(-log u_v)) with
//          u_v = rng.Uniform(kGumbel, step, position, v) (ties: lowest id); confidence =
//          probs[token];
//   T = 0: token = argmax probs (lowest id on ties), confidence = its probability;
//   kTopKMargin: confidence = top-1 minus top-2 probability; kEntropy: sum_v p_v log(p_v + 1e-10).
// Confidences are computed on the tempered, filtered distribution (unlike LLaDA).
#ifndef UNMASK_DECODE_DREAM_SAMPLING_H_
#define UNMASK_DECODE_DREAM_SAMPLING_H_

#include <cstdint>
#include <span>
#include <vector>

#include "core/rng.h"
#include "decode/dream_params.h"

namespace unmask {

// The value removed logits are set to: torch.finfo(torch.float32).min.
inline constexpr double kDreamFilteredLogit = -3.4028234663852886e38;

// Reusable buffers of one thread (no allocation per row once grown).
struct DreamScratch {
  std::vector<double> logits;  // [vocab] tempered, filtered
  std::vector<double> probs;   // [vocab]
  std::vector<int32_t> order;  // [vocab] sort order for top-p
};

// Temperature (T > 0: divide), then top-p (top_p < 1: sort descending, ties lower id first;
// cum = cumulative softmax of the sorted logits; remove entries whose cum > top_p, shifted right
// by one so the first is always kept), then top-k (top_k > 0: remove l < the k-th largest, k
// clamped to the vocabulary; ties at the k-th value are kept). Result in scratch.logits [vocab].
void DreamFilterLogits(std::span<const float> logits, double temperature, double top_p,
                       int64_t top_k, DreamScratch& scratch);

struct DreamSample {
  int32_t token = 0;
  double confidence = 0;
};

// sample_tokens for one masked position (see the file comment); `params.alg` selects the
// confidence. `logits` is the (already shifted) row [vocab].
DreamSample DreamSampleTokens(std::span<const float> logits, const DreamParams& params,
                              const CounterRng& rng, uint32_t step, uint32_t position,
                              DreamScratch& scratch);

}  // namespace unmask

#endif  // UNMASK_DECODE_DREAM_SAMPLING_H_
