// Token-for-token agreement with the independent Python reference (scripts/reference/), on the
// tiny random LLaDA models in tests/data/models and the cases in tests/data/golden/llada
// (made by scripts/make_goldens.py; see tests/data/golden/README.md). Every case was kept only
// when its smallest decision margin is >= 1e-4, far above the f32-vs-f64 logit differences, so any
// mismatch is a bug, not rounding.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "core/parallel.h"
#include "decode/decoder_diffusion.h"
#include "engine/engine.h"
#include "golden_util.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::CachedModel;
using testing::ReadJson;

std::vector<std::string> GoldenFiles() { return testing::GoldenFiles("llada"); }

// Runs one golden case with `threads` threads; returns (output ids, nfe).
std::pair<std::vector<int32_t>, int64_t> RunCase(const nlohmann::json& g, int threads) {
  SetNumThreads(threads);
  const LoadedModel& lm = CachedModel(g.at("model").get<std::string>());
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
  // Infilling cases: the canvas is prompt + masks + suffix.
  const std::vector<int32_t> suffix = g.contains("suffix_ids")
                                          ? g.at("suffix_ids").get<std::vector<int32_t>>()
                                          : std::vector<int32_t>{};
  const SpecialTokens& sp = lm.tokenizer->special();
  auto dec = DiffusionDecoder::Create(
      p, {sp.mask, sp.eos, sp.eot}, prompt, lm.model->config().context_length,
      lm.model->config().vocab_size, /*shift_logits=*/false, suffix);
  EXPECT_TRUE(dec.ok()) << dec.status().ToString();
  Decoder* const one[1] = {&*dec};
  auto stats = RunToCompletion(*lm.model, one, nullptr);
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  return {std::vector<int32_t>(dec->generated().begin(), dec->generated().end()), stats->nfe};
}

class LladaGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LladaGoldenTest, MatchesPythonReferenceOnAnyThreadCount) {
  const nlohmann::json g = ReadJson(testing::TestDataPath("golden/llada/" + GetParam()));
  const std::vector<int32_t> expected = g.at("output_ids");
  for (int threads : {1, 2}) {
    const auto [ids, nfe] = RunCase(g, threads);
    EXPECT_EQ(ids, expected) << GetParam() << " with " << threads << " thread(s)";
    EXPECT_EQ(nfe, g.at("nfe").get<int64_t>()) << GetParam();
  }
  SetNumThreads(0);
}

INSTANTIATE_TEST_SUITE_P(Goldens, LladaGoldenTest, ::testing::ValuesIn(GoldenFiles()),
                         testing::GoldenCaseName);

TEST(LladaGoldenSetTest, GoldenFilesArePresent) {
  EXPECT_GE(GoldenFiles().size(), 10u) << "tests/data/golden/llada is missing or nearly empty";
}

// The forward pass itself, against the reference logits (float64 reference, f32 engine).
TEST(LladaForwardGoldenTest, LogitsMatchReference) {
  const std::string dir = testing::TestDataPath("golden/llada_forward");
  ASSERT_TRUE(std::filesystem::exists(dir));
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    const nlohmann::json g = ReadJson(e.path().string());
    const LoadedModel& lm = CachedModel(g.at("model").get<std::string>());
    const double worst =
        testing::ExpectForwardNear(*lm.model, g.at("input_ids"), g.at("logits"), g.at("atol"),
                                   g.at("rtol"), e.path().filename().string());
    ASSERT_GE(worst, 0);
    RecordProperty(e.path().filename().string() + "_max_abs_err", std::to_string(worst));
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

}  // namespace
}  // namespace unmask
