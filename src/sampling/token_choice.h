// Choosing a token from one row of logits, and its confidence.
#ifndef UNMASK_SAMPLING_TOKEN_CHOICE_H_
#define UNMASK_SAMPLING_TOKEN_CHOICE_H_

#include <cstdint>
#include <span>

#include "core/rng.h"

namespace unmask {

// Index of the largest value; the first one on ties (torch.argmax). NaN is never chosen over a
// number. Returns 0 for an empty row or a row of NaN.
int32_t ArgMax(std::span<const float> logits);

// Gumbel-max sampling from softmax(logits / temperature) (temperature > 0), the LLaDA reference's
// `add_gumbel_noise` (ML-GSAI/LLaDA generate.py) in float64:
//   argmax_v exp(l_v) / (-log u_v)^T  ==  argmax_v ( l_v - T * log(-log u_v) ),
// evaluated in the log form (no overflow of exp for large logits). u_v = rng.Uniform(kGumbel,
// step, position, v); u = 0 gives a score of -inf. Ties: first index.
int32_t SampleGumbelMax(std::span<const float> logits, double temperature, const CounterRng& rng,
                        uint32_t step, uint32_t position);

// softmax(logits)[index] in float64, with the ids in `excluded` treated as -inf (the LLaDA
// `confidence_eos_eot_inf` switch). Returns 0 when logits[index] is -inf or excluded, and 0 for a
// row that is entirely -inf.
double SoftmaxProbability(std::span<const float> logits, int32_t index,
                          std::span<const int32_t> excluded);

}  // namespace unmask

#endif  // UNMASK_SAMPLING_TOKEN_CHOICE_H_
