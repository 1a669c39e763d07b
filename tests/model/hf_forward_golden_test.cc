// Forwards of the tiny Hugging Face checkpoints (tests/data/hf/, scripts/make_hf_checkpoints.py)
// loaded from their folders against the float64 numpy reference (scripts/reference/hf_model.py;
// goldens in tests/data/golden/hf_forward, scripts/make_block_goldens.py): Qwen2 (biases, tied),
// Qwen3 (q/k norm, head_dim apart from hidden / heads, BF16, GQA 4/1), SDAR (block-causal, F32
// untied; BF16 tied in three shards) and the Fast-dLLM v2 body. Each file's logits are checked
// twice, from one uncached forward and from the cached procedure (prefill `prefill_length`
// positions, then the rest against the cache), with both weight modes, within the file's
// atol / rtol (1e-3 / 1e-4: float32 against float64; the files give the reasoning).
#include <gtest/gtest.h>

#include "golden_util.h"

namespace unmask {
namespace {

class HfForwardGoldenTest : public ::testing::TestWithParam<std::string> {};

// Logits of `rows` (indices into the fed tokens) from one forward.
std::vector<float> Forward(const Model& m, std::span<const int32_t> tokens, int32_t pos0,
                           const std::vector<int32_t>& rows, KvCache* kv) {
  const int64_t v = m.config().vocab_size;
  BatchPlan plan;
  plan.sequences.push_back(SequenceInput{tokens, pos0, rows, kv != nullptr ? 0 : -1});
  std::vector<float> out(rows.size() * static_cast<size_t>(v));
  Workspace ws;
  const Status st = m.Forward(
      plan, kv, ws,
      TensorView{out.data(), DType::kF32, Shape{static_cast<int64_t>(rows.size()), v}}, nullptr);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

TEST_P(HfForwardGoldenTest, LogitsMatchTheReference) {
  const nlohmann::json g =
      testing::ReadJson(testing::TestDataPath("golden/hf_forward/" + GetParam()));
  const std::vector<int32_t> ids = g["input_ids"].get<std::vector<int32_t>>();
  const std::vector<int32_t> positions = g["positions"].get<std::vector<int32_t>>();
  const auto want = g["logits"].get<std::vector<std::vector<double>>>();
  const int32_t prefill = g["prefill_length"].get<int32_t>();
  const double atol = g["atol"].get<double>(), rtol = g["rtol"].get<double>();
  for (WeightMode mode : {WeightMode::kPacked, WeightMode::kOnTheFly}) {
    auto m = testing::LoadHfModel(g["checkpoint"].get<std::string>(), mode);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    const int64_t v = (*m)->config().vocab_size;
    if (g["mask"] == "block") {
      EXPECT_TRUE((*m)->config().is_block_diffusion());
      EXPECT_EQ((*m)->config().block_length, g["block_length"].get<int64_t>());
    }
    if (g["mask"] == "full") {
      EXPECT_TRUE((*m)->config().is_diffusion());
    }
    if (g.contains("experts_hit_per_layer")) {
      // Routing statistics of a forward with every position's logits (no layer pruned) against
      // the reference's distinct experts per layer.
      std::vector<int32_t> all_rows(ids.size());
      for (size_t i = 0; i < all_rows.size(); ++i) all_rows[i] = static_cast<int32_t>(i);
      BatchPlan plan;
      plan.sequences.push_back(SequenceInput{ids, 0, all_rows});
      std::vector<float> out(ids.size() * static_cast<size_t>(v));
      Workspace ws;
      ForwardStats fs;
      ASSERT_TRUE((*m)->Forward(plan, ws,
                                TensorView{out.data(), DType::kF32,
                                           Shape{static_cast<int64_t>(ids.size()), v}},
                                &fs)
                      .ok());
      const auto per_layer = g["experts_hit_per_layer"].get<std::vector<int64_t>>();
      int64_t hit = 0;
      for (int64_t h : per_layer) hit += h;
      EXPECT_EQ(fs.moe_layers, static_cast<int64_t>(per_layer.size()));
      EXPECT_EQ(fs.experts_hit, hit);
      EXPECT_EQ(fs.expert_rows,
                static_cast<int64_t>(ids.size() * per_layer.size()) * (*m)->config().routing.top_k);
      EXPECT_GT(fs.expert_bytes, 0);
      // Unrouted experts are not read: the forward's weight bytes are below the resident ones
      // exactly when some expert of some layer got no row.
      const int64_t all = (*m)->config().num_experts * static_cast<int64_t>(per_layer.size());
      if (hit < all) {
        EXPECT_LT(fs.weight_bytes, static_cast<double>((*m)->weight_bytes()));
      }
    }
    auto check = [&](const std::vector<float>& got, size_t got_row, size_t want_row,
                     const std::string& what) {
      for (int64_t j = 0; j < v; ++j) {
        const double w = want[want_row][static_cast<size_t>(j)];
        ASSERT_NEAR(got[got_row * static_cast<size_t>(v) + static_cast<size_t>(j)], w,
                    atol + rtol * std::abs(w))
            << what << " position " << positions[want_row] << " id " << j;
      }
    };
    // One uncached forward.
    const std::vector<float> full = Forward(**m, ids, 0, positions, nullptr);
    for (size_t r = 0; r < positions.size(); ++r) check(full, r, r, "uncached");
    // Prefill, then the rest against the cache.
    auto kv = (*m)->MakeKvCache(1);
    ASSERT_TRUE(kv.ok());
    const std::span<const int32_t> all(ids);
    std::vector<int32_t> first_rows, rest_rows;
    std::vector<size_t> first_idx, rest_idx;
    for (size_t r = 0; r < positions.size(); ++r) {
      if (positions[r] < prefill) {
        first_rows.push_back(positions[r]);
        first_idx.push_back(r);
      } else {
        rest_rows.push_back(positions[r] - prefill);
        rest_idx.push_back(r);
      }
    }
    const std::vector<float> a =
        Forward(**m, all.first(static_cast<size_t>(prefill)), 0, first_rows, &*kv);
    for (size_t i = 0; i < first_idx.size(); ++i) check(a, i, first_idx[i], "prefill");
    const std::vector<float> b =
        Forward(**m, all.subspan(static_cast<size_t>(prefill)), prefill, rest_rows, &*kv);
    for (size_t i = 0; i < rest_idx.size(); ++i) check(b, i, rest_idx[i], "cached");
  }
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, HfForwardGoldenTest,
                         ::testing::ValuesIn(testing::GoldenFiles("hf_forward")),
                         testing::GoldenCaseName);

}  // namespace
}  // namespace unmask
