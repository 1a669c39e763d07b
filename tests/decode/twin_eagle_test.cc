// EAGLE drafting on the AR twin (models/unmask-tinystories-ar.gguf): the drafter's EAGLE-2 trees
// against the Python reference (scripts/reference/eagle_tree.py, tests/data/golden/eagle), and
// tree verification at temperature 0 giving the plain greedy tokens whatever the drafts, with a
// random draft layer and with the one the project trained (models/unmask-tinystories-ar.eagle.gguf,
// when present), alone and two requests in one batch.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "decode/decoder_ar.h"
#include "decode/decoder_factory.h"
#include "engine/engine.h"
#include "model/eagle_head.h"
#include "model/loader.h"
#include "test_util.h"
#include "twin_generate.h"

namespace unmask {
namespace {

const char* const kPrompts[] = {
    "Once upon a time, there was a little girl named",
    "Tom and his dog went to the park. They",
    "The sun was shining and the birds were singing.",
};

std::string Base() { return testing::SourceDir() + "/models/unmask-tinystories-ar.gguf"; }
std::string RandomHead() {
  return testing::SourceDir() + "/tests/data/golden/eagle/random-twin.eagle.gguf";
}

// The Python reference's trees (scripts/make_eagle_goldens.py).
nlohmann::json GoldenTrees() {
  std::ifstream in(testing::SourceDir() + "/tests/data/golden/eagle/golden.json");
  return nlohmann::json::parse(in)["trees"];
}

// A golden tree's target features, flattened [rows, hidden].
std::vector<float> Features(const nlohmann::json& tree) {
  std::vector<float> feats;
  for (const auto& row : tree["features"]) {
    for (double x : row) feats.push_back(static_cast<float>(x));
  }
  return feats;
}

TEST(EagleDrafterTest, TreesMatchTheReference) {
  auto lm = LoadModel(Base(), LoadOptions{});
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  auto head = EagleHead::Load(RandomHead(), lm->model->config());
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  const nlohmann::json trees = GoldenTrees();
  ASSERT_FALSE(trees.empty());
  for (const auto& t : trees) {
    EagleDrafterParams p;
    p.depth = t["depth"];
    p.top_k = t["top_k"];
    p.total_tokens = t["total_tokens"];
    SCOPED_TRACE("depth " + std::to_string(p.depth) + " top_k " + std::to_string(p.top_k) +
                 " total " + std::to_string(p.total_tokens));
    auto drafter = MakeEagleDrafter(head->get(), lm->model.get(), p);
    ASSERT_TRUE(drafter.ok()) << drafter.status().ToString();
    const std::vector<float> feats = Features(t);
    const std::vector<int32_t> ctx = t["context"].get<std::vector<int32_t>>();
    const auto rows = static_cast<int64_t>(ctx.size()) - 1;
    (*drafter)->ObserveFeatures(feats, rows, static_cast<int64_t>(ctx.size()));
    DraftProposal d;
    ASSERT_TRUE((*drafter)->Propose(ctx, p.total_tokens, &d).ok());
    EXPECT_EQ(d.tokens, t["tokens"].get<std::vector<int32_t>>());
    EXPECT_EQ(d.parents, t["parents"].get<std::vector<int32_t>>());
    // Without new features for this context there is nothing to propose.
    DraftProposal again;
    ASSERT_TRUE((*drafter)->Propose(ctx, p.total_tokens, &again).ok());
    EXPECT_TRUE(again.tokens.empty());
    EXPECT_GT((*drafter)->stats().forwards, 0);
  }
}

// --draft-p-min on a tree: a node whose own draft probability is below p_min is not drafted, nor
// its subtree. On a chain (top_k 1) that is the chain drafters' cut, so the cut chain is a prefix
// of the uncut one; p_min 1 drafts nothing from a layer whose probabilities are below 1.
TEST(EagleDrafterTest, PMinCutsBranchesAndKeepsTheGreedyOutput) {
  auto lm = LoadModel(Base(), LoadOptions{});
  ASSERT_TRUE(lm.ok()) << lm.status().ToString();
  auto head = EagleHead::Load(RandomHead(), lm->model->config());
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  const nlohmann::json trees = GoldenTrees();
  ASSERT_FALSE(trees.empty());
  const auto& t = trees[0];
  const std::vector<float> feats = Features(t);
  const std::vector<int32_t> ctx = t["context"].get<std::vector<int32_t>>();
  const auto rows = static_cast<int64_t>(ctx.size()) - 1;
  auto propose = [&](EagleDrafterParams p) {
    auto drafter = MakeEagleDrafter(head->get(), lm->model.get(), p);
    EXPECT_TRUE(drafter.ok()) << drafter.status().ToString();
    DraftProposal d;
    if (!drafter.ok()) return d;
    (*drafter)->ObserveFeatures(feats, rows, static_cast<int64_t>(ctx.size()));
    EXPECT_TRUE((*drafter)->Propose(ctx, p.total_tokens, &d).ok());
    return d;
  };
  const DraftProposal chain = propose(EagleDrafterParams{6, 1, 6, 0.0});
  ASSERT_EQ(chain.tokens.size(), 6u);
  size_t shorter = 0;
  for (double p_min : {1e-4, 0.01, 0.05, 0.2, 0.5}) {
    const DraftProposal cut = propose(EagleDrafterParams{6, 1, 6, p_min});
    ASSERT_LE(cut.tokens.size(), chain.tokens.size()) << p_min;
    EXPECT_TRUE(std::equal(cut.tokens.begin(), cut.tokens.end(), chain.tokens.begin())) << p_min;
    if (cut.tokens.size() < chain.tokens.size()) ++shorter;
  }
  EXPECT_GT(shorter, 0u) << "some p_min should cut the random layer's chain";
  EXPECT_TRUE(propose(EagleDrafterParams{4, 2, 6, 1.0}).tokens.empty());
  // A tree: every drafted node's parent is drafted before it (the cut takes whole subtrees).
  const DraftProposal tree = propose(EagleDrafterParams{4, 3, 10, 0.02});
  for (size_t i = 0; i < tree.parents.size(); ++i) {
    EXPECT_LT(tree.parents[i], static_cast<int32_t>(i));
  }
  for (double bad : {-0.1, 1.5, std::nan("")}) {
    auto d = MakeEagleDrafter(head->get(), lm->model.get(), EagleDrafterParams{4, 2, 6, bad});
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  // Lossless whatever is cut.
  const std::vector<int32_t> prompt = lm->tokenizer->Encode(kPrompts[0], true, false);
  const GenRun plain = GreedyGenerate(*lm, prompt, nullptr, 1, 48);
  auto drafter = MakeEagleDrafter(head->get(), lm->model.get(), EagleDrafterParams{4, 2, 6, 0.1});
  ASSERT_TRUE(drafter.ok());
  EXPECT_EQ(GreedyGenerate(*lm, prompt, drafter->get(), 6, 48).tokens, plain.tokens);
}

TEST(EagleDrafterTest, GreedyOutputIsPlainDecodingWithRandomAndTrainedLayers) {
  auto lm = LoadModel(Base(), LoadOptions{});
  ASSERT_TRUE(lm.ok());
  const ModelConfig& c = lm->model->config();
  std::vector<std::string> heads = {RandomHead()};
  const std::string trained = EagleHeadPathFor(Base());
  if (std::filesystem::exists(trained)) heads.push_back(trained);
  int64_t accepted_trained = 0;
  for (const char* text : kPrompts) {
    const std::vector<int32_t> prompt = lm->tokenizer->Encode(text, true, false);
    const GenRun plain = GreedyGenerate(*lm, prompt, nullptr, 1, 64);
    ASSERT_FALSE(plain.tokens.empty());
    for (const std::string& path : heads) {
      auto head = EagleHead::Load(path, c);
      ASSERT_TRUE(head.ok()) << head.status().ToString();
      for (const EagleDrafterParams& p :
           {EagleDrafterParams{1, 1, 1}, EagleDrafterParams{4, 2, 6}, EagleDrafterParams{3, 4, 15},
            EagleDrafterParams{6, 1, 5}}) {
        auto drafter = MakeEagleDrafter(head->get(), lm->model.get(), p);
        ASSERT_TRUE(drafter.ok());
        const GenRun r = GreedyGenerate(*lm, prompt, drafter->get(), p.total_tokens, 64);
        EXPECT_EQ(r.tokens, plain.tokens) << text << ", " << path << ", depth " << p.depth
                                          << " top_k " << p.top_k << " total " << p.total_tokens;
        EXPECT_GT(r.stats.speculative.drafted, 0);
        EXPECT_GT(r.stats.drafter.forwards, 0);
        if (path == trained) accepted_trained += r.stats.speculative.accepted;
      }
    }
  }
  if (heads.size() > 1) {
    EXPECT_GT(accepted_trained, 0) << "the trained layer should be right some of the time";
  }
}

TEST(EagleDrafterTest, TheFactoryMakesADrafterPerDecoderInOneBatch) {
  auto lm = LoadModel(Base(), LoadOptions{});
  ASSERT_TRUE(lm.ok());
  auto head = EagleHead::Load(RandomHead(), lm->model->config());
  ASSERT_TRUE(head.ok());
  const std::vector<int32_t> p0 = lm->tokenizer->Encode(kPrompts[0], true, false);
  const std::vector<int32_t> p1 = lm->tokenizer->Encode(kPrompts[1], true, false);
  const GenRun plain0 = GreedyGenerate(*lm, p0, nullptr, 1, 40);
  const GenRun plain1 = GreedyGenerate(*lm, p1, nullptr, 1, 40);
  DecodeOptions o;
  o.max_tokens = 40;
  o.ar.sampling.temperature = 0;
  o.ar.draft_max = 6;
  o.eagle_head = head->get();
  o.eagle_base = lm->model.get();
  o.eagle = EagleDrafterParams{4, 3, 6};
  const SpecialTokens& sp = lm->tokenizer->special();
  const DecoderModel dm{&lm->model->config(), {sp.mask, sp.eos, sp.eot, sp.pad}, "ar"};
  std::vector<BuiltDecoder> built;
  for (int32_t seq = 0; seq < 2; ++seq) {
    o.kv_seq = seq;
    auto b = MakeDecoder(dm, seq == 0 ? p0 : p1, o);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    built.push_back(std::move(b).value());
  }
  // A plain decoder in the same batch.
  DecodeOptions plain = o;
  plain.eagle_head = nullptr;
  plain.kv_seq = 2;
  auto third = MakeDecoder(dm, p1, plain);
  ASSERT_TRUE(third.ok());
  Decoder* const all[3] = {built[0].decoder.get(), built[1].decoder.get(), third->decoder.get()};
  auto stats = RunToCompletion(*lm->model, all, nullptr);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  for (int i = 0; i < 3; ++i) {
    const auto& d = static_cast<const ArDecoder&>(*all[i]);
    EXPECT_EQ(std::vector<int32_t>(d.generated().begin(), d.generated().end()),
              i == 0 ? plain0.tokens : plain1.tokens)
        << "decoder " << i;
    if (i < 2) {
      ASSERT_NE(d.drafter(), nullptr);
      EXPECT_EQ(d.drafter()->name(), "eagle");
      EXPECT_GT(d.speculative().drafted, 0);
    }
  }
  // Bad parameters and bases are refused.
  EXPECT_FALSE(MakeEagleDrafter(nullptr, lm->model.get(), {}).ok());
  EXPECT_FALSE(MakeEagleDrafter(head->get(), nullptr, {}).ok());
  EXPECT_FALSE(MakeEagleDrafter(head->get(), lm->model.get(), {0, 2, 6}).ok());
  EXPECT_FALSE(MakeEagleDrafter(head->get(), lm->model.get(), {4, 17, 6}).ok());
  EXPECT_FALSE(MakeEagleDrafter(head->get(), lm->model.get(), {4, 2, 16}).ok());
  auto small =
      LoadModel(testing::SourceDir() + "/models/unmask-tinystories-ar-draft.gguf", LoadOptions{});
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(MakeEagleDrafter(head->get(), small->model.get(), {}).ok());
  auto wrong = EagleHead::Load(RandomHead(), small->model->config());
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("hidden size"), std::string::npos);
}

}  // namespace
}  // namespace unmask
