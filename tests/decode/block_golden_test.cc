// SDAR block-diffusion decoding on the tiny HF checkpoints, token for token against the
// independent numpy reference (scripts/reference/sdar_generate.py; goldens tests/data/golden/block
// a_* and b_*, scripts/make_block_goldens.py): every strategy, blocks 4 and 8, prompts shorter,
// equal to and longer than a block, the over-commit edge case, stop ids, F32 single-file and
// BF16 sharded checkpoints. Output ids, NFE and the positions each step commits must be equal;
// every case has a decision margin >= 1e-4 (the reference checks it), far above f32 rounding.
// Also the greedy AR goldens of the Qwen2 / Qwen3 checkpoints (golden/hf_ar).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "decode/decoder_ar.h"
#include "decode/decoder_block_diffusion.h"
#include "decode/decoder_fast_dllm_v2.h"
#include "golden_util.h"

namespace unmask {
namespace {

std::vector<std::string> SdarGoldens() {
  std::vector<std::string> out;
  for (const std::string& f : testing::GoldenFiles("block")) {
    // a_, b_: SDAR; m_: SDAR-MoE (f_ files are Fast-dLLM v2).
    if (f.rfind("a_", 0) == 0 || f.rfind("b_", 0) == 0 || f.rfind("m_", 0) == 0) {
      out.push_back(f);
    }
  }
  return out;
}

const Model& HfModel(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Model>> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    auto m = testing::LoadHfModel(name, WeightMode::kAuto);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    it = cache.emplace(name, std::move(m).value()).first;
  }
  return *it->second;
}

// Runs a decoder to the end on `m` with a one-sequence KV cache; returns the steps' reports.
std::vector<DecodeStep> RunToEnd(const Model& m, Decoder& d) {
  auto kv = m.MakeKvCache(1);
  EXPECT_TRUE(kv.ok());
  d.set_kv_seq(0);
  Workspace ws;
  std::vector<DecodeStep> steps;
  while (!d.Done()) {
    auto plan = d.Plan();
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (!plan.ok()) break;
    Tensor logits(DType::kF32,
                  {std::max<int64_t>((*plan)->num_logit_rows(), 1), m.config().vocab_size});
    TensorView view = logits.view();
    view.shape = Shape{(*plan)->num_logit_rows(), m.config().vocab_size};
    const Status st = m.Forward(**plan, &*kv, ws, view, nullptr);
    EXPECT_TRUE(st.ok()) << st.ToString();
    DecodeStep step;
    EXPECT_TRUE(d.Update(view, &step).ok());
    steps.push_back(step);
    if (steps.size() > 10000) break;
  }
  return steps;
}

class SdarGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SdarGoldenTest, MatchesTheReference) {
  const nlohmann::json g = testing::ReadJson(testing::TestDataPath("golden/block/" + GetParam()));
  const Model& m = HfModel(g["checkpoint"].get<std::string>());
  BlockParams p;
  p.gen_length = g["gen_length"];
  p.block_length = g["block_length"];
  p.denoising_steps = g["denoising_steps"];
  p.remasking = *BlockRemaskingFromName(g["remasking_strategy"].get<std::string>());
  p.confidence_threshold = g["confidence_threshold"];
  p.eb_threshold = g["eb_threshold"];
  p.temperature = g["temperature"];
  p.top_k = g["top_k"];
  p.top_p = g["top_p"];
  if (!g["stopping_criteria_idx"].is_null()) {
    p.stop_ids = g["stopping_criteria_idx"].get<std::vector<int32_t>>();
  }
  const std::vector<int32_t> prompt = g["prompt_ids"].get<std::vector<int32_t>>();
  std::vector<nlohmann::json> want_trace;
  for (const auto& t : g["trace"]) want_trace.push_back(t[2]);
  // SDAR's schedule (its NFE: prefill and store forwards counted), then the fused one (the same
  // commits; one forward per denoising step).
  for (const bool separate : {true, false}) {
    SCOPED_TRACE(separate ? "separate_store" : "fused");
    p.separate_store = separate;
    auto d = BlockDiffusionDecoder::Create(p, g["mask_id"], prompt, m.config().context_length,
                                           m.config().vocab_size);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    const std::vector<DecodeStep> steps = RunToEnd(m, *d);
    // The denoising steps' commits, positions ascending, as the reference traces them.
    std::vector<nlohmann::json> trace;
    for (const DecodeStep& s : steps) {
      if (s.committed_positions.empty()) continue;
      std::vector<int32_t> pos = s.committed_positions;
      std::sort(pos.begin(), pos.end());
      trace.push_back(nlohmann::json(pos));
    }
    EXPECT_EQ(trace, want_trace);
    EXPECT_EQ(std::vector<int32_t>(d->generated().begin(), d->generated().end()),
              g["output_ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(d->nfe(),
              separate ? g["nfe"].get<int64_t>() : static_cast<int64_t>(want_trace.size()));
    EXPECT_EQ(d->finish(),
              g["first_stop_index"].is_null() ? DecodeFinish::kLength : DecodeFinish::kEos);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, SdarGoldenTest, ::testing::ValuesIn(SdarGoldens()),
                         testing::GoldenCaseName);

std::vector<std::string> FastDllmGoldens() {
  std::vector<std::string> out;
  for (const std::string& f : testing::GoldenFiles("block")) {
    if (f.rfind("f_", 0) == 0) out.push_back(f);
  }
  return out;
}

class FastDllmV2GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FastDllmV2GoldenTest, MatchesTheReference) {
  const nlohmann::json g = testing::ReadJson(testing::TestDataPath("golden/block/" + GetParam()));
  const Model& m = HfModel(g["checkpoint"].get<std::string>());
  FastDllmV2Params p;
  p.max_new_tokens = g["max_new_tokens"];
  p.block_size = g["block_size"];
  p.small_block_size = g["small_block_size"];
  p.threshold = g["threshold"];
  p.temperature = g["temperature"];
  p.top_p = g["top_p"];
  p.stop_token = g["stop_token"];
  p.pad_token = g["pad_token_id"];
  const std::vector<int32_t> prompt = g["prompt_ids"].get<std::vector<int32_t>>();
  auto d = FastDllmV2Decoder::Create(p, g["mask_id"], prompt, m.config().context_length,
                                     m.config().vocab_size);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const std::vector<DecodeStep> steps = RunToEnd(m, *d);
  // Denoising steps' commits (ascending), as traced; the appended AR tokens are checked by the
  // output ids.
  std::vector<nlohmann::json> trace;
  for (const auto& t : g["trace"]) trace.push_back(t[2]);
  std::vector<nlohmann::json> got_trace;
  std::set<int32_t> appended;
  for (const auto& a : g["ar_tokens"]) appended.insert(a[0].get<int32_t>());
  for (const DecodeStep& s : steps) {
    std::vector<int32_t> pos;
    for (int32_t q : s.committed_positions) {
      if (appended.count(q) == 0) pos.push_back(q);
    }
    if (pos.empty()) continue;
    std::sort(pos.begin(), pos.end());
    got_trace.push_back(nlohmann::json(pos));
  }
  EXPECT_EQ(got_trace, trace);
  EXPECT_EQ(std::vector<int32_t>(d->generated().begin(), d->generated().end()),
            g["output_ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(d->nfe(), g["nfe"].get<int64_t>());
  EXPECT_EQ(d->finish(), g["finished"].get<bool>() ? DecodeFinish::kEos : DecodeFinish::kLength);
}

INSTANTIATE_TEST_SUITE_P(Cases, FastDllmV2GoldenTest, ::testing::ValuesIn(FastDllmGoldens()),
                         testing::GoldenCaseName);

class HfArGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HfArGoldenTest, GreedyTokensMatchTheReference) {
  const nlohmann::json g = testing::ReadJson(testing::TestDataPath("golden/hf_ar/" + GetParam()));
  const Model& m = HfModel(g["checkpoint"].get<std::string>());
  ArParams p;
  p.sampling.temperature = 0;
  p.n_predict = g["max_new_tokens"];
  p.ignore_eos = true;  // the reference generates max_new_tokens; the stop index is checked below
  const std::vector<int32_t> prompt = g["prompt_ids"].get<std::vector<int32_t>>();
  const auto stops = g["stop_ids"].get<std::vector<int32_t>>();
  auto d = ArDecoder::Create(p, ArTokenIds{stops[0], stops[1]}, prompt, m.config().context_length,
                             m.config().vocab_size, nullptr, 0);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  RunToEnd(m, *d);
  const std::vector<int32_t> got(d->generated().begin(), d->generated().end());
  EXPECT_EQ(got, g["output_ids"].get<std::vector<int32_t>>());
  if (!g["first_stop_index"].is_null()) {
    const auto first = std::find_first_of(got.begin(), got.end(), stops.begin(), stops.end());
    EXPECT_EQ(first - got.begin(), g["first_stop_index"].get<int64_t>());
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, HfArGoldenTest, ::testing::ValuesIn(testing::GoldenFiles("hf_ar")),
                         testing::GoldenCaseName);

}  // namespace
}  // namespace unmask
