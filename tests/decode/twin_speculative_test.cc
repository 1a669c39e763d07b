// Speculative decoding on the project's twins (models/): the AR twin verifies drafts from the
// diffusion twin (same tokenizer), from prompt lookup, from its draft model, and from itself. At
// temperature 0 every mode must give the plain greedy tokens; the self-drafter must have every
// draft accepted.
#include <gtest/gtest.h>

#include "decode/decoder_ar.h"
#include "engine/engine.h"
#include "model/loader.h"
#include "test_util.h"
#include "twin_generate.h"

namespace unmask {
namespace {

TEST(TwinSpeculativeTest, EveryDrafterIsLosslessAtTemperatureZero) {
  auto ar = LoadModel(testing::SourceDir() + "/models/unmask-tinystories-ar.gguf", LoadOptions{});
  auto dif =
      LoadModel(testing::SourceDir() + "/models/unmask-tinystories-llada.gguf", LoadOptions{});
  auto self = LoadModel(testing::SourceDir() + "/models/unmask-tinystories-ar.gguf", LoadOptions{});
  ASSERT_TRUE(ar.ok() && dif.ok() && self.ok());
  const std::vector<int32_t> prompt =
      ar->tokenizer->Encode("Once upon a time, there was a little girl named", true, false);
  const GenRun plain = GreedyGenerate(*ar, prompt, nullptr, 1);
  ASSERT_FALSE(plain.tokens.empty());
  EXPECT_EQ(plain.stats.nfe, static_cast<int64_t>(plain.tokens.size()));

  auto lookup = MakeLookupDrafter({});
  ASSERT_TRUE(lookup.ok());
  EXPECT_EQ(GreedyGenerate(*ar, prompt, lookup->get(), 6).tokens, plain.tokens);

  for (int32_t steps : {1, 2}) {
    DiffusionDrafterParams dp;
    dp.mask_token = dif->tokenizer->special().mask;
    dp.steps = steps;
    auto diffusion = MakeDiffusionDrafter(dif->model.get(), dp);
    ASSERT_TRUE(diffusion.ok());
    const GenRun r = GreedyGenerate(*ar, prompt, diffusion->get(), 4);
    EXPECT_EQ(r.tokens, plain.tokens) << "diffusion drafter, steps " << steps;
    EXPECT_GT(r.stats.speculative.drafted, 0);
    // `steps` forwards per draft (fewer when the budget leaves fewer than `steps` tokens).
    EXPECT_LE(r.stats.drafter.forwards, r.stats.drafter.calls * steps);
    EXPECT_GT(r.stats.drafter.forwards, r.stats.drafter.calls * (steps - 1));
  }

  // The shipped draft model (models/unmask-tinystories-ar-draft.gguf, 0.50M parameters).
  auto small =
      LoadModel(testing::SourceDir() + "/models/unmask-tinystories-ar-draft.gguf", LoadOptions{});
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  auto small_drafter = MakeModelDrafter(small->model.get(), {});
  ASSERT_TRUE(small_drafter.ok());
  const GenRun drafted = GreedyGenerate(*ar, prompt, small_drafter->get(), 4);
  EXPECT_EQ(drafted.tokens, plain.tokens);
  EXPECT_GT(drafted.stats.speculative.accepted, 0);

  auto model = MakeModelDrafter(self->model.get(), {});
  ASSERT_TRUE(model.ok());
  const GenRun r = GreedyGenerate(*ar, prompt, model->get(), 5);
  EXPECT_EQ(r.tokens, plain.tokens);
  EXPECT_EQ(r.stats.speculative.accepted, r.stats.speculative.drafted);
  EXPECT_LT(r.stats.nfe, plain.stats.nfe / 3);
}

TEST(TwinSpeculativeTest, DrafterFactoriesCheckTheirModels) {
  auto ar = LoadModel(testing::SourceDir() + "/models/unmask-tinystories-ar.gguf", LoadOptions{});
  auto dif =
      LoadModel(testing::SourceDir() + "/models/unmask-tinystories-llada.gguf", LoadOptions{});
  ASSERT_TRUE(ar.ok() && dif.ok());
  EXPECT_FALSE(MakeModelDrafter(dif->model.get(), {}).ok());  // bidirectional
  EXPECT_FALSE(MakeModelDrafter(ar->model.get(), {1.5}).ok());
  EXPECT_FALSE(MakeDiffusionDrafter(ar->model.get(), {3, 1, 0.0}).ok());  // causal
  EXPECT_FALSE(MakeDiffusionDrafter(dif->model.get(), {-1, 1, 0.0}).ok());
  EXPECT_FALSE(MakeDiffusionDrafter(dif->model.get(), {3, 0, 0.0}).ok());
  EXPECT_FALSE(MakeLookupDrafter({0, 2}).ok());
  EXPECT_FALSE(MakeLookupDrafter({3, 2}).ok());
}

TEST(LookupDrafterTest, CopiesWhatFollowedTheLastMatch) {
  auto d = MakeLookupDrafter({1, 3});
  ASSERT_TRUE(d.ok());
  DraftProposal out;
  // Suffix [7, 8] occurred at index 1 (followed by 9, 4) and index 5 (followed by 5, 7, 8).
  const std::vector<int32_t> ctx = {1, 7, 8, 9, 4, 7, 8, 5, 7, 8};
  ASSERT_TRUE((*d)->Propose(ctx, 2, &out).ok());
  EXPECT_EQ(out.tokens, (std::vector<int32_t>{5, 7}));
  ASSERT_TRUE((*d)->Propose(std::vector<int32_t>{1, 2, 3}, 4, &out).ok());
  EXPECT_TRUE(out.tokens.empty());
}

}  // namespace
}  // namespace unmask
