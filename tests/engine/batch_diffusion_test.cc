// Batched diffusion (engine/step.h StepBatch, driven by engine/engine.h RunToCompletion): requests
// with ragged prompt lengths and different decoding modes denoised in one forward per step give, at
// temperature 0, exactly the tokens of running each alone — for the exact reference and the cached
// / parallel modes. Model: the diffusion twin (models/unmask-tinystories-llada.gguf).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/engine.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

class BatchDiffusionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto lm =
        LoadModel(testing::SourceDir() + "/models/unmask-tinystories-llada.gguf", LoadOptions{});
    ASSERT_TRUE(lm.ok()) << lm.status().ToString();
    lm_ = std::move(lm).value();
  }
  std::unique_ptr<DiffusionDecoder> Make(const std::string& text, const DiffusionParams& p) {
    const auto& tok = *lm_.tokenizer;
    const std::vector<int32_t> ids = tok.Encode(text, true, false);
    auto d = DiffusionDecoder::Create(p, {tok.special().mask, tok.special().eos, tok.special().eot},
                                      ids, lm_.model->config().context_length,
                                      lm_.model->config().vocab_size);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return std::make_unique<DiffusionDecoder>(std::move(d).value());
  }

  LoadedModel lm_;
};

TEST_F(BatchDiffusionTest, EachRequestMatchesItsSoloRun) {
  const std::vector<std::string> prompts = {
      "Once upon a time", "Tom had a red ball. He liked to throw it high in the sky and",
      "The cat sat"};
  std::vector<DiffusionParams> modes(3);
  for (DiffusionParams& p : modes) {
    p.gen_length = 32;
    p.block_length = 16;
    p.steps = 32;
  }
  modes[1].cache = CacheMode::kDual;
  modes[1].commit = CommitRule::kThreshold;
  modes[1].threshold = 0.5;
  modes[2].cache = CacheMode::kVicinity;
  modes[2].commit = CommitRule::kCredit;
  modes[2].threshold = 0.6;
  modes[2].early_stop = true;
  for (size_t m = 0; m < modes.size(); ++m) {
    std::vector<std::vector<int32_t>> solo;
    for (const std::string& text : prompts) {
      auto d = Make(text, modes[m]);
      Decoder* const one[1] = {d.get()};
      ASSERT_TRUE(RunToCompletion(*lm_.model, one, nullptr).ok());
      solo.emplace_back(d->canvas().begin(), d->canvas().end());
    }
    std::vector<std::unique_ptr<DiffusionDecoder>> owned;
    std::vector<Decoder*> batch;
    for (const std::string& text : prompts) {
      owned.push_back(Make(text, modes[m]));
      batch.push_back(owned.back().get());
    }
    auto stats = RunToCompletion(*lm_.model, batch, nullptr);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    int64_t max_nfe = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(std::vector<int32_t>(owned[i]->canvas().begin(), owned[i]->canvas().end()), solo[i])
          << "mode " << m << " request " << i;
      max_nfe = std::max(max_nfe, batch[i]->nfe());
    }
    EXPECT_EQ(stats->nfe, max_nfe);  // one batched forward per step of the longest request
    EXPECT_EQ(stats->generated_tokens, 3 * 32);
  }
}

TEST_F(BatchDiffusionTest, MixedModesInOneBatch) {
  DiffusionParams a, b;
  a.gen_length = b.gen_length = 32;
  a.block_length = b.block_length = 32;
  a.steps = 32;
  b.cache = CacheMode::kPrefix;
  b.commit = CommitRule::kFactor;
  std::vector<std::vector<int32_t>> solo;
  for (const DiffusionParams& p : {a, b}) {
    auto d = Make("Lily went to the park", p);
    Decoder* const one[1] = {d.get()};
    ASSERT_TRUE(RunToCompletion(*lm_.model, one, nullptr).ok());
    solo.emplace_back(d->canvas().begin(), d->canvas().end());
  }
  auto da = Make("Lily went to the park", a);
  auto db = Make("Lily went to the park", b);
  Decoder* const batch[] = {da.get(), db.get()};
  ASSERT_TRUE(RunToCompletion(*lm_.model, batch, nullptr).ok());
  EXPECT_EQ(std::vector<int32_t>(da->canvas().begin(), da->canvas().end()), solo[0]);
  EXPECT_EQ(std::vector<int32_t>(db->canvas().begin(), db->canvas().end()), solo[1]);
}

TEST_F(BatchDiffusionTest, EmptyOrNullBatchIsAnError) {
  EXPECT_EQ(RunToCompletion(*lm_.model, {}, nullptr).status().code(), StatusCode::kInvalidArgument);
  Decoder* const null_batch[] = {nullptr};
  EXPECT_EQ(RunToCompletion(*lm_.model, null_batch, nullptr).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace unmask
