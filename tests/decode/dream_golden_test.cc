// Token-for-token (and commit-order) agreement of the Dream sampler with the independent Python
// reference (scripts/reference/dream_generate.py) on the tiny random Dream models, cases in
// tests/data/golden/dream (made by scripts/make_dream_goldens.py; see the README there). Every
// case was kept only when its smallest decision margin is >= 1e-4 and a float32 forward gives the
// same result, so a mismatch is a bug, not rounding. The prompts were encoded by the HuggingFace
// `tokenizers` build of the same vocabulary; unmask's tokenizer must give the same ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "core/parallel.h"
#include "decode/decoder_dream.h"
#include "engine/engine.h"
#include "golden_util.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::CachedModel;

std::vector<std::string> GoldenFiles() { return testing::GoldenFiles("dream"); }

DreamParams ParamsOf(const nlohmann::json& g) {
  DreamParams p;
  p.gen_length = g.at("gen_length");
  p.steps = g.at("steps");
  p.eps = g.at("eps");
  p.alg = *DreamAlgFromName(g.at("alg").get<std::string>());
  p.alg_temp = g.at("alg_temp");
  p.temperature = g.at("temperature");
  p.top_p = g.at("top_p");
  p.top_k = g.at("top_k");
  p.seed = g.at("seed");
  return p;
}

class DreamGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DreamGoldenTest, MatchesPythonReferenceOnAnyThreadCount) {
  std::ifstream in(testing::TestDataPath("golden/dream/" + GetParam()));
  const nlohmann::json g = nlohmann::json::parse(in);
  const LoadedModel& lm = CachedModel(g.at("model").get<std::string>());
  const std::vector<int32_t> prompt = g.at("prompt_ids");
  // unmask's tokenizer == HF tokenizers (specials parsed, no BOS) on the case's prompt.
  EXPECT_EQ(lm.tokenizer->Encode(g.at("prompt_text").get<std::string>(), false, true), prompt);
  // Infilling cases: the suffix text, tokenized without specials, after the masks.
  const std::vector<int32_t> suffix = g.contains("suffix_ids")
                                          ? g.at("suffix_ids").get<std::vector<int32_t>>()
                                          : std::vector<int32_t>{};
  if (!suffix.empty()) {
    EXPECT_EQ(lm.tokenizer->Encode(g.at("suffix_text").get<std::string>(), false, false), suffix);
  }
  const std::vector<int32_t> expected = g.at("output_ids");
  const std::vector<std::vector<int32_t>> trace = g.at("trace");
  const std::vector<int64_t> num_transfer = g.at("num_transfer");
  for (int threads : {1, 2}) {
    SetNumThreads(threads);
    auto dec = DreamDecoder::Create(
        ParamsOf(g), lm.tokenizer->special().mask, lm.model->config().shift_logits, prompt,
        lm.model->config().context_length, lm.model->config().vocab_size, suffix);
    ASSERT_TRUE(dec.ok()) << dec.status().ToString();
    std::vector<std::vector<int32_t>> got_trace;
    std::vector<int64_t> got_k;
    Decoder* const one[1] = {&*dec};
    auto stats = RunToCompletion(*lm.model, one, [&](const Decoder&, const DecodeStep& r) {
      got_trace.push_back(r.committed_positions);
      got_k.push_back(r.num_transfer);
      return true;
    });
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_EQ(std::vector<int32_t>(dec->generated().begin(), dec->generated().end()), expected)
        << GetParam() << " with " << threads << " thread(s)";
    EXPECT_EQ(got_trace, trace) << GetParam();
    EXPECT_EQ(got_k, num_transfer) << GetParam();
    EXPECT_EQ(stats->nfe, g.at("nfe").get<int64_t>());
    EXPECT_EQ(stats->generated_tokens, g.at("gen_length").get<int64_t>());
  }
  SetNumThreads(0);
}

INSTANTIATE_TEST_SUITE_P(Goldens, DreamGoldenTest, ::testing::ValuesIn(GoldenFiles()),
                         testing::GoldenCaseName);

TEST(DreamGoldenSetTest, CoversEveryAlgorithm) {
  std::set<std::string> algs;
  for (const std::string& f : GoldenFiles()) {
    std::ifstream in(testing::TestDataPath("golden/dream/" + f));
    algs.insert(nlohmann::json::parse(in).at("alg").get<std::string>());
  }
  EXPECT_EQ(algs, (std::set<std::string>{"origin", "maskgit_plus", "topk_margin", "entropy"}));
}

}  // namespace
}  // namespace unmask
