// Greedy AR generation of the speculative-decoding tests on the twins: one decoder with an
// optional drafter, run to completion; the generated tokens and the run's statistics.
#ifndef UNMASK_TESTS_DECODE_TWIN_GENERATE_H_
#define UNMASK_TESTS_DECODE_TWIN_GENERATE_H_

#include <gtest/gtest.h>

#include <vector>

#include "decode/decoder_ar.h"
#include "engine/engine.h"
#include "model/loader.h"

namespace unmask {

struct GenRun {
  std::vector<int32_t> tokens;
  GenerationStats stats;
};

// `n` tokens at temperature 0 after `prompt`, drafting up to `draft_max` tokens per step with
// `drafter` (null: plain decoding).
inline GenRun GreedyGenerate(const LoadedModel& lm, const std::vector<int32_t>& prompt,
                             Drafter* drafter, int32_t draft_max, int64_t n = 48) {
  ArParams p;
  p.sampling.temperature = 0;
  p.n_predict = n;
  p.draft_max = draft_max;
  const ModelConfig& c = lm.model->config();
  auto dec = ArDecoder::Create(p, {lm.tokenizer->special().eos, lm.tokenizer->special().eot},
                               prompt, c.context_length, c.vocab_size, drafter);
  EXPECT_TRUE(dec.ok()) << dec.status().ToString();
  if (!dec.ok()) return {};
  Decoder* const one[1] = {&*dec};
  auto stats = RunToCompletion(*lm.model, one, nullptr);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  if (!stats.ok()) return {};
  return {std::vector<int32_t>(dec->generated().begin(), dec->generated().end()), *stats};
}

}  // namespace unmask

#endif  // UNMASK_TESTS_DECODE_TWIN_GENERATE_H_
