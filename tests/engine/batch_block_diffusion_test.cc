// Batched block diffusion (engine/step.h StepBatch via RunToCompletion): SDAR and Fast-dLLM v2
// requests at different blocks and steps - ragged prompts, different strategies, block lengths
// and step counts - share one forward per step, each with its own KV cache rows, and each gives
// exactly the tokens (and NFE) of running alone at temperature 0, and the same commit-time
// log-probabilities. Models: the tiny HF checkpoints of tests/data/hf
// (scripts/make_hf_checkpoints.py).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "decode/decoder_block_diffusion.h"
#include "decode/decoder_fast_dllm_v2.h"
#include "engine/engine.h"
#include "golden_util.h"

namespace unmask {
namespace {

constexpr int32_t kMask = 1003;

std::vector<int32_t> Prompt(size_t n, int32_t seed) {
  std::vector<int32_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>((seed * 131 + i * 37) % 1000);
  return p;
}

// Runs each decoder alone, then all together; expects identical outputs and NFE.
void ExpectBatchEqualsSolo(const Model& m,
                           const std::function<std::vector<std::unique_ptr<Decoder>>()>& make) {
  std::vector<std::vector<int32_t>> solo;
  std::vector<int64_t> solo_nfe;
  std::vector<std::vector<TokenLogprob>> solo_lp;
  for (auto& d : make()) {
    Decoder* const one[1] = {d.get()};
    ASSERT_TRUE(RunToCompletion(m, one, nullptr).ok());
    solo.emplace_back(d->generated().begin(), d->generated().end());
    solo_nfe.push_back(d->nfe());
    solo_lp.emplace_back(d->logprobs().begin(), d->logprobs().end());
    // Every committed position has its entry: its token, a log-probability <= 0, and two
    // alternatives most likely first.
    ASSERT_GE(d->logprobs().size(), d->generated().size());
    for (size_t i = 0; i < d->generated().size(); ++i) {
      const TokenLogprob& lp = d->logprobs()[i];
      if (d->generated()[i] == kMask) continue;
      EXPECT_EQ(lp.token, d->generated()[i]) << i;
      EXPECT_LE(lp.logprob, 0.0f);
      ASSERT_EQ(lp.top.size(), 2u);
      EXPECT_GE(lp.top[0].second, lp.top[1].second);
      EXPECT_GE(lp.top[0].second, lp.logprob);
    }
  }
  std::vector<std::unique_ptr<Decoder>> owned = make();
  std::vector<Decoder*> batch;
  for (auto& d : owned) batch.push_back(d.get());
  auto stats = RunToCompletion(m, batch, nullptr);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  int64_t max_nfe = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    EXPECT_EQ(std::vector<int32_t>(batch[i]->generated().begin(), batch[i]->generated().end()),
              solo[i])
        << "request " << i;
    EXPECT_EQ(batch[i]->nfe(), solo_nfe[i]) << "request " << i;
    ASSERT_EQ(batch[i]->logprobs().size(), solo_lp[i].size());
    for (size_t k = 0; k < solo_lp[i].size(); ++k) {
      EXPECT_EQ(batch[i]->logprobs()[k].token, solo_lp[i][k].token);
      // The batched forward's logits equal the solo ones up to GEMM rounding.
      EXPECT_NEAR(batch[i]->logprobs()[k].logprob, solo_lp[i][k].logprob, 1e-3);
    }
    max_nfe = std::max(max_nfe, batch[i]->nfe());
  }
  EXPECT_EQ(stats->nfe, max_nfe);  // one batched forward per step of the longest request
}

TEST(BatchBlockDiffusionTest, SdarRequestsAtDifferentBlocksAndStepsMatchTheirSoloRuns) {
  auto m = testing::LoadHfModel("sdar-tiny-f32", WeightMode::kAuto);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = (*m)->config();
  auto make = [&]() {
    std::vector<std::unique_ptr<Decoder>> out;
    const BlockRemasking strategies[] = {
        BlockRemasking::kLowConfidenceDynamic, BlockRemasking::kLowConfidenceStatic,
        BlockRemasking::kSequential, BlockRemasking::kEntropyBounded,
        BlockRemasking::kLowConfidenceDynamic};
    const int64_t blocks[] = {4, 4, 8, 4, 8};
    const int64_t steps[] = {4, 2, 3, 4, 8};
    const size_t prompts[] = {3, 9, 4, 13, 16};
    for (size_t i = 0; i < 5; ++i) {
      BlockParams p;
      p.gen_length = 12 + 4 * static_cast<int64_t>(i);
      p.block_length = blocks[i];
      p.denoising_steps = steps[i];
      p.remasking = strategies[i];
      p.confidence_threshold = i == 4 ? 0.3 : 0.85;
      p.eb_threshold = 1.0;
      p.stop_ids = {1002};
      auto d = BlockDiffusionDecoder::Create(p, kMask, Prompt(prompts[i], static_cast<int32_t>(i)),
                                             c.context_length, c.vocab_size);
      EXPECT_TRUE(d.ok()) << d.status().ToString();
      out.push_back(std::make_unique<BlockDiffusionDecoder>(std::move(d).value()));
      EXPECT_TRUE(out.back()->EnableLogprobs(2).ok());
    }
    return out;
  };
  ExpectBatchEqualsSolo(**m, make);
}

TEST(BatchBlockDiffusionTest, FastDllmV2RequestsMatchTheirSoloRuns) {
  auto m = testing::LoadHfModel("fastdllm-v2-tiny", WeightMode::kAuto);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = (*m)->config();
  auto make = [&]() {
    std::vector<std::unique_ptr<Decoder>> out;
    const size_t prompts[] = {5, 8, 11, 16};
    const int64_t subs[] = {4, 8, 2, 4};
    for (size_t i = 0; i < 4; ++i) {
      FastDllmV2Params p;
      p.max_new_tokens = 16 + 8 * static_cast<int64_t>(i % 2);
      p.block_size = 8;
      p.small_block_size = subs[i];
      p.threshold = 0.5;
      p.stop_token = 1002;
      p.pad_token = 1000;
      auto d = FastDllmV2Decoder::Create(p, kMask, Prompt(prompts[i], static_cast<int32_t>(i)),
                                         c.context_length, c.vocab_size);
      EXPECT_TRUE(d.ok()) << d.status().ToString();
      out.push_back(std::make_unique<FastDllmV2Decoder>(std::move(d).value()));
      EXPECT_TRUE(out.back()->EnableLogprobs(2).ok());
    }
    return out;
  };
  ExpectBatchEqualsSolo(**m, make);
}

}  // namespace
}  // namespace unmask
