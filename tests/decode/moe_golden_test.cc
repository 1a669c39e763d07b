// MoE decoding token for token against the Python references (scripts/make_moe_goldens.py):
// LLaDA-MoE (LLaDA `generate` over the numpy MoE forward) on the tiny random LLaDA-MoE folders in
// tests/data/hf, with 1 and 2 threads and both weight modes; LLaDA 2.0 (its generate's
// threshold-with-fallback rule, reference/llada2_generate.py) on the tiny LLaDA 2.x folders. Cases
// were kept only with decision margins >= 1e-4 and routing margins >= 1e-4 (router probabilities),
// far above f32 rounding, so a mismatch is a bug.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/parallel.h"
#include "decode/decoder_block_diffusion.h"
#include "decode/decoder_diffusion.h"
#include "decode/decoder_factory.h"
#include "engine/engine.h"
#include "golden_util.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

const LoadedModel& Folder(const std::string& name, WeightMode mode) {
  static std::map<std::pair<std::string, WeightMode>, std::unique_ptr<LoadedModel>> cache;
  auto key = std::make_pair(name, mode);
  auto it = cache.find(key);
  if (it == cache.end()) {
    LoadOptions o;
    o.weight_mode = mode;
    auto m = LoadModel(testing::TestDataPath("hf/" + name), o);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    it = cache.emplace(key, std::make_unique<LoadedModel>(std::move(m).value())).first;
  }
  return *it->second;
}

class MoeGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MoeGoldenTest, LladaMoeMatchesThePythonReference) {
  const nlohmann::json g = testing::ReadJson(testing::TestDataPath("golden/moe/" + GetParam()));
  DiffusionParams p;
  p.gen_length = g.at("gen_length");
  p.steps = g.at("steps");
  p.block_length = g.at("block_length");
  p.temperature = g.at("temperature");
  p.cfg_scale = g.at("cfg_scale");
  p.remasking = *RemaskingFromName(g.at("remasking").get<std::string>());
  p.logits_eos_inf = g.at("logits_eos_inf");
  p.confidence_eos_eot_inf = g.at("confidence_eos_eot_inf");
  p.seed = g.at("seed");
  const std::vector<int32_t> prompt = g.at("prompt_ids");
  const std::vector<int32_t> expected = g.at("output_ids");
  for (WeightMode mode : {WeightMode::kPacked, WeightMode::kOnTheFly}) {
    const LoadedModel& lm = Folder(g.at("checkpoint"), mode);
    ASSERT_EQ(lm.model->config().architecture, "llada-moe");
    for (int threads : {1, 2}) {
      SetNumThreads(threads);
      const SpecialTokens& sp = lm.tokenizer->special();
      auto dec = DiffusionDecoder::Create(p, {sp.mask, sp.eos, sp.eot}, prompt,
                                          lm.model->config().context_length,
                                          lm.model->config().vocab_size);
      ASSERT_TRUE(dec.ok()) << dec.status().ToString();
      Decoder* const one[1] = {&*dec};
      auto stats = RunToCompletion(*lm.model, one, nullptr);
      ASSERT_TRUE(stats.ok()) << stats.status().ToString();
      EXPECT_EQ(std::vector<int32_t>(dec->generated().begin(), dec->generated().end()), expected)
          << GetParam() << " with " << threads << " thread(s)";
      EXPECT_EQ(stats->nfe, g.at("nfe").get<int64_t>());
    }
  }
  SetNumThreads(0);
}

// The LLaDA-MoE files (a_*, b_*); l2_* are LLaDA 2.0's (Llada2GoldenTest), j21_* LLaDA 2.1's.
std::vector<std::string> LladaMoeGoldens() {
  std::vector<std::string> out;
  for (const std::string& f : testing::GoldenFiles("moe")) {
    if (f.rfind("l2_", 0) != 0 && f.rfind("j21_", 0) != 0) out.push_back(f);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Goldens, MoeGoldenTest, ::testing::ValuesIn(LladaMoeGoldens()),
                         testing::GoldenCaseName);

TEST(MoeGoldenSetTest, GoldenFilesArePresent) {
  EXPECT_GE(testing::GoldenFiles("moe").size(), 8u) << "tests/data/golden/moe is missing";
}

}  // namespace
}  // namespace unmask

namespace unmask {
namespace {

// Runs a block decoder to the end against a one-sequence KV cache (the fused schedule: one
// forward per denoising step); returns the committed positions of each step that committed.
std::vector<std::vector<int32_t>> RunBlockDecoder(const Model& m, Decoder& d) {
  auto kv = m.MakeKvCache(1);
  EXPECT_TRUE(kv.ok());
  d.set_kv_seq(0);
  Workspace ws;
  std::vector<std::vector<int32_t>> trace;
  for (int guard = 0; !d.Done() && guard < 10000; ++guard) {
    auto plan = d.Plan();
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (!plan.ok()) break;
    const int64_t rows = (*plan)->num_logit_rows();
    Tensor logits(DType::kF32, {std::max<int64_t>(rows, 1), m.config().vocab_size});
    TensorView view = logits.view();
    view.shape = Shape{rows, m.config().vocab_size};
    EXPECT_TRUE(m.Forward(**plan, &*kv, ws, view, nullptr).ok());
    DecodeStep step;
    EXPECT_TRUE(d.Update(view, &step).ok());
    if (step.committed_positions.empty()) continue;
    std::vector<int32_t> pos = step.committed_positions;
    std::sort(pos.begin(), pos.end());
    trace.push_back(pos);
  }
  return trace;
}

std::vector<std::string> Llada2Goldens() {
  std::vector<std::string> out;
  for (const std::string& f : testing::GoldenFiles("moe")) {
    if (f.rfind("l2_", 0) == 0) out.push_back(f);
  }
  return out;
}

class Llada2GoldenTest : public ::testing::TestWithParam<std::string> {};

// The block decoder with the LLaDA 2.x settings the factory gives llada2-moe models (below)
// reproduces LLaDA 2.0's generate: the commits of every step, the output, and one forward per
// denoising step (the reference's NFE: it keeps no cache and never stores).
TEST_P(Llada2GoldenTest, LowConfidenceWithFallbackMatchesTheReference) {
  const nlohmann::json g = testing::ReadJson(testing::TestDataPath("golden/moe/" + GetParam()));
  const LoadedModel& lm = Folder(g.at("checkpoint"), WeightMode::kAuto);
  ASSERT_EQ(lm.model->config().architecture, "llada2-moe");
  BlockParams p;
  p.gen_length = g.at("gen_length");
  p.block_length = g.at("block_length");
  p.denoising_steps =
      std::min(g.at("steps").get<int64_t>(), p.gen_length / g.at("minimal_topk").get<int64_t>());
  p.remasking = BlockRemasking::kLowConfidenceDynamic;
  p.confidence_threshold = g.at("threshold");
  p.overcommit = false;
  p.stop_ids = g.at("stop_ids").get<std::vector<int32_t>>();
  const std::vector<int32_t> prompt = g.at("prompt_ids");
  auto d = BlockDiffusionDecoder::Create(
      p, g.at("mask_id"), prompt, lm.model->config().context_length, lm.model->config().vocab_size);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const auto trace = RunBlockDecoder(*lm.model, *d);
  std::vector<std::vector<int32_t>> want;
  for (const auto& t : g.at("trace")) want.push_back(t[2].get<std::vector<int32_t>>());
  EXPECT_EQ(trace, want);
  EXPECT_EQ(std::vector<int32_t>(d->generated().begin(), d->generated().end()),
            g.at("output_ids").get<std::vector<int32_t>>());
  EXPECT_EQ(d->nfe(), g.at("nfe").get<int64_t>());
  EXPECT_EQ(d->finish(),
            g.at("first_stop_index").is_null() ? DecodeFinish::kLength : DecodeFinish::kEos);
}

INSTANTIATE_TEST_SUITE_P(Goldens, Llada2GoldenTest, ::testing::ValuesIn(Llada2Goldens()),
                         testing::GoldenCaseName);

std::vector<std::string> JointGoldens() {
  std::vector<std::string> out;
  for (const std::string& f : testing::GoldenFiles("moe")) {
    if (f.rfind("j21_", 0) == 0) out.push_back(f);
  }
  return out;
}

class Llada21GoldenTest : public ::testing::TestWithParam<std::string> {};

// remasking joint_threshold (LLaDA 2.1's M2T + T2T editing) reproduces the reference: every
// step's written positions (mask fills and edits), the output and the forward count, under the
// fused schedule; and the same tokens under SDAR's separate-store schedule.
TEST_P(Llada21GoldenTest, TokenEditingMatchesTheReference) {
  const nlohmann::json g = testing::ReadJson(testing::TestDataPath("golden/moe/" + GetParam()));
  const LoadedModel& lm = Folder(g.at("checkpoint"), WeightMode::kAuto);
  BlockParams p;
  p.gen_length = g.at("gen_length");
  p.block_length = g.at("block_length");
  p.denoising_steps = p.block_length;
  p.remasking = BlockRemasking::kJointThreshold;
  p.confidence_threshold = g.at("threshold");
  p.edit_threshold = g.at("edit_threshold");
  p.max_post_edit_steps = g.at("max_post_edit_steps");
  p.stop_ids = g.at("stop_ids").get<std::vector<int32_t>>();
  const std::vector<int32_t> prompt = g.at("prompt_ids");
  std::vector<std::vector<int32_t>> want;
  for (const auto& t : g.at("trace")) want.push_back(t[2].get<std::vector<int32_t>>());
  for (const bool separate : {false, true}) {
    SCOPED_TRACE(separate ? "separate_store" : "fused");
    p.separate_store = separate;
    auto d =
        BlockDiffusionDecoder::Create(p, g.at("mask_id"), prompt, lm.model->config().context_length,
                                      lm.model->config().vocab_size);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(RunBlockDecoder(*lm.model, *d), want);
    EXPECT_EQ(std::vector<int32_t>(d->generated().begin(), d->generated().end()),
              g.at("output_ids").get<std::vector<int32_t>>());
    if (!separate) {
      EXPECT_EQ(d->nfe(), g.at("nfe").get<int64_t>());
    }
    EXPECT_EQ(d->finish(),
              g.at("first_stop_index").is_null() ? DecodeFinish::kLength : DecodeFinish::kEos);
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, Llada21GoldenTest, ::testing::ValuesIn(JointGoldens()),
                         testing::GoldenCaseName);

TEST(Llada21ParamsTest, JointThresholdRefusesSamplingAndBadBudgets) {
  BlockParams p;
  p.gen_length = 8;
  p.block_length = 8;
  p.denoising_steps = 8;
  p.remasking = BlockRemasking::kJointThreshold;
  const std::vector<int32_t> prompt = {1, 2};
  EXPECT_TRUE(ValidateBlockParams(p, 2, 64).ok());
  p.temperature = 0.7;
  EXPECT_EQ(ValidateBlockParams(p, 2, 64).code(), StatusCode::kInvalidArgument);
  p.temperature = 0;
  p.edit_threshold = 1.5;
  EXPECT_NE(ValidateBlockParams(p, 2, 64).message().find("edit_threshold"), std::string::npos);
  p.edit_threshold = 0;
  p.max_post_edit_steps = -1;
  EXPECT_NE(ValidateBlockParams(p, 2, 64).message().find("max_post_edit_steps"), std::string::npos);
  EXPECT_EQ(*BlockRemaskingFromName("joint_threshold"), BlockRemasking::kJointThreshold);
}

TEST(Llada2DefaultsTest, FactoryGivesTheFamilysRule) {
  const LoadedModel& lm = Folder("llada2-tiny-bf16", WeightMode::kAuto);
  DecoderModel dm{&lm.model->config(), {}, "llada2"};
  DecodeOptions o;
  o.max_tokens = 64;
  auto p = SettleBlockParams(dm, o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->block_length, 32);
  EXPECT_EQ(p->denoising_steps, 32);
  EXPECT_DOUBLE_EQ(p->confidence_threshold, 0.95);
  EXPECT_FALSE(p->overcommit);
  EXPECT_EQ(p->remasking, BlockRemasking::kLowConfidenceDynamic);
  // SDAR keeps its reference's over-commit.
  const LoadedModel& sdar = Folder("sdar-moe-tiny-bf16", WeightMode::kAuto);
  DecoderModel sm{&sdar.model->config(), {}, "sdar"};
  auto sp = SettleBlockParams(sm, o);
  ASSERT_TRUE(sp.ok());
  EXPECT_TRUE(sp->overcommit);
  EXPECT_DOUBLE_EQ(sp->confidence_threshold, 0.85);
}

}  // namespace
}  // namespace unmask

namespace unmask {
namespace {

// A model whose argmax is the mask token everywhere must still finish every block (the references
// write the mask back and never finish); the slot gets the best other token and selection is
// unchanged. Driven with synthetic logits, for every strategy the block decoder has.
TEST(BlockDecoderMaskArgmaxTest, EveryStrategyFinishesWithoutWritingTheMask) {
  const int32_t mask = 7;
  const int64_t vocab = 10;
  for (BlockRemasking r : {BlockRemasking::kLowConfidenceDynamic,
                           BlockRemasking::kLowConfidenceStatic, BlockRemasking::kSequential,
                           BlockRemasking::kEntropyBounded, BlockRemasking::kJointThreshold}) {
    SCOPED_TRACE(std::string(BlockRemaskingName(r)));
    BlockParams p;
    p.gen_length = 8;
    p.block_length = 4;
    p.denoising_steps = 4;
    p.remasking = r;
    p.overcommit = false;
    const std::vector<int32_t> prompt = {1, 2, 3};
    auto d = BlockDiffusionDecoder::Create(p, mask, prompt, 64, vocab);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    int forwards = 0;
    while (!d->Done() && forwards < 200) {
      auto plan = d->Plan();
      ASSERT_TRUE(plan.ok());
      const int64_t rows = (*plan)->num_logit_rows();
      std::vector<float> logits(static_cast<size_t>(rows * vocab));
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t v = 0; v < vocab; ++v) {
          logits[static_cast<size_t>(i * vocab + v)] =
              v == mask ? 5.0f : 0.1f * static_cast<float>(v % 4);
        }
      }
      DecodeStep step;
      ASSERT_TRUE(
          d->Update(TensorView{logits.data(), DType::kF32, Shape{rows, vocab}}, &step).ok());
      ++forwards;
    }
    EXPECT_TRUE(d->Done()) << "still decoding after " << forwards << " forwards";
    for (int32_t t : d->generated()) EXPECT_NE(t, mask);
  }
}

}  // namespace
}  // namespace unmask
