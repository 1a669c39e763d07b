// LLaDA-MoE decoding token for token against the Python reference (scripts/make_moe_goldens.py:
// LLaDA `generate` over the numpy MoE forward) on the tiny random LLaDA-MoE folders in
// tests/data/hf, with 1 and 2 threads and both weight modes. Cases were kept only with decision
// margins >= 1e-4 and routing margins >= 1e-4 (router probabilities), far above f32 rounding, so
// a mismatch is a bug.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/parallel.h"
#include "decode/decoder_diffusion.h"
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

INSTANTIATE_TEST_SUITE_P(Goldens, MoeGoldenTest,
                         ::testing::ValuesIn(testing::GoldenFiles("moe")),
                         testing::GoldenCaseName);

TEST(MoeGoldenSetTest, GoldenFilesArePresent) {
  EXPECT_GE(testing::GoldenFiles("moe").size(), 8u) << "tests/data/golden/moe is missing";
}

}  // namespace
}  // namespace unmask
