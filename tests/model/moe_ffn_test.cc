// The expert-grouped MoE FFN (model/moe_ffn.h) against the dense double reference
// (ops/ref/moe_ref.h: every token's slots one by one) over row counts, expert counts, top-k,
// shared expert on and off, weight modes and bf16 compute.
//
// Tolerance: the op computes the router, gate/up and down products in f32 (dot products of
// length hidden = 32 and expert width <= 24 of O(1) values) and sums <= 4 weighted slots; its
// error against double is a few gamma_64 ~ 4e-6 relative to the magnitudes involved. The bound
// 2e-5 * max|out| + 1e-6 leaves ~5x headroom; a wrong slot weight, a missing expert or a row
// sent to the wrong expert moves outputs by O(max|out|). bf16 compute rounds weights and
// activations to 8 significant bits: 2e-2 * max|out|.
#include "model/moe_ffn.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "../ops/op_test_util.h"
#include "ops/ref/moe_ref.h"

namespace unmask {
namespace {

struct FfnCase {
  int64_t rows, experts, top_k, expert_ffn, shared_ffn;
  WeightMode mode;
  ComputeType compute;
};

std::string Name(const FfnCase& c) {
  return "n" + std::to_string(c.rows) + "_e" + std::to_string(c.experts) + "_k" +
         std::to_string(c.top_k) + "_f" + std::to_string(c.expert_ffn) + "_s" +
         std::to_string(c.shared_ffn) + (c.mode == WeightMode::kPacked ? "_packed" : "_native") +
         (c.compute == ComputeType::kBf16 ? "_bf16" : "");
}

class MoeFfnTest : public ::testing::TestWithParam<FfnCase> {};

TEST_P(MoeFfnTest, MatchesTheDenseReference) {
  const FfnCase& c = GetParam();
  const int64_t d = 32, fe = c.expert_ffn, fs = c.shared_ffn;
  uint64_t seed = 100;
  auto rnd = [&](int64_t n, float scale) {
    return testing::RandomFloats(static_cast<size_t>(n), seed++, -scale, scale);
  };
  const std::vector<float> x = rnd(c.rows * d, 1.0f);
  const std::vector<float> router = rnd(c.experts * d, 0.8f);
  std::vector<std::vector<float>> gate, up, down;
  for (int64_t e = 0; e < c.experts; ++e) {
    gate.push_back(rnd(fe * d, 0.3f));
    up.push_back(rnd(fe * d, 0.3f));
    down.push_back(rnd(d * fe, 0.3f));
  }
  const std::vector<float> sg = rnd(fs * d, 0.3f), su = rnd(fs * d, 0.3f), sd = rnd(d * fs, 0.3f);

  MoeFfnWeights w;
  auto prepare = [&](std::vector<TensorView> parts, WeightMode mode, ComputeType compute) {
    auto lw = LinearWeight::Prepare(parts, mode, compute);
    EXPECT_TRUE(lw.ok()) << lw.status().ToString();
    return std::move(lw).value();
  };
  {
    auto lw =
        LinearWeight::Prepare(std::vector<TensorView>{testing::View(router, Shape{c.experts, d})},
                              WeightMode::kPacked, ComputeType::kF32);
    ASSERT_TRUE(lw.ok());
    w.router = std::move(lw).value();
  }
  for (int64_t e = 0; e < c.experts; ++e) {
    auto gu = LinearWeight::Prepare(std::vector<TensorView>{testing::View(gate[e], Shape{fe, d}),
                                                            testing::View(up[e], Shape{fe, d})},
                                    c.mode, c.compute);
    if (!gu.ok() && c.compute != ComputeType::kF32) {
      GTEST_SKIP() << "SKIPPED: " << gu.status().ToString();
    }
    ASSERT_TRUE(gu.ok()) << gu.status().ToString();
    w.gate_up.push_back(std::move(gu).value());
    w.down.push_back(prepare({testing::View(down[e], Shape{d, fe})}, c.mode, c.compute));
  }
  if (fs > 0) {
    w.has_shared = true;
    w.shared_gate_up = prepare({testing::View(sg, Shape{fs, d}), testing::View(su, Shape{fs, d})},
                               c.mode, c.compute);
    w.shared_down = prepare({testing::View(sd, Shape{d, fs})}, c.mode, c.compute);
  }
  MoeRouting r;
  r.num_experts = c.experts;
  r.top_k = c.top_k;
  r.normalize = c.top_k > 1;

  ModelConfig cfg;
  cfg.hidden_size = d;
  cfg.num_heads = 1;
  cfg.num_kv_heads = 1;
  cfg.head_dim = d;
  cfg.ffn_size = 8;
  cfg.num_experts = c.experts;
  cfg.expert_ffn_size = fe;
  cfg.shared_expert_ffn_size = fs;
  cfg.routing = r;
  Workspace ws;
  ws.Reserve(cfg, c.rows, 1);
  std::vector<float> out(static_cast<size_t>(c.rows * d), -1.0f);
  MoeFfnCounters counters;
  const Status st = MoeFfn(testing::View(x, Shape{c.rows, d}), w, r, ws,
                           testing::View(out, Shape{c.rows, d}), &counters);
  ASSERT_TRUE(st.ok()) << st.ToString();

  // The reference routes the same f32 router logits (x W^T in double, rounded to f32).
  std::vector<float> logits(static_cast<size_t>(c.rows * c.experts));
  for (int64_t t = 0; t < c.rows; ++t) {
    for (int64_t e = 0; e < c.experts; ++e) {
      double s = 0;
      for (int64_t j = 0; j < d; ++j) s += static_cast<double>(x[t * d + j]) * router[e * d + j];
      logits[t * c.experts + e] = static_cast<float>(s);
    }
  }
  std::vector<int32_t> ids(static_cast<size_t>(c.rows * c.top_k));
  std::vector<float> weights(ids.size());
  ref::RouteExperts(logits.data(), c.rows, nullptr, r, ids.data(), weights.data());
  std::vector<ref::ExpertRef> experts;
  for (int64_t e = 0; e < c.experts; ++e) {
    experts.push_back({gate[e].data(), up[e].data(), down[e].data(), fe});
  }
  const ref::ExpertRef shared{sg.data(), su.data(), sd.data(), fs};
  std::vector<float> want(out.size());
  ref::MoeFfn(x.data(), c.rows, d, experts, ids.data(), weights.data(), c.top_k, shared,
              want.data());
  double max_abs = 0;
  for (float v : want) max_abs = std::max(max_abs, std::abs(static_cast<double>(v)));
  const double bound = (c.compute == ComputeType::kF32 ? 2e-5 : 2e-2) * max_abs + 1e-6;
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_NEAR(out[i], want[i], bound) << "row " << i / d << " col " << i % d;
  }
  EXPECT_EQ(counters.experts_hit,
            static_cast<int64_t>(std::set<int32_t>(ids.begin(), ids.end()).size()));
  EXPECT_EQ(counters.expert_rows, c.rows * c.top_k);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MoeFfnTest,
    ::testing::Values(FfnCase{1, 4, 1, 16, 0, WeightMode::kPacked, ComputeType::kF32},
                      FfnCase{5, 8, 2, 16, 0, WeightMode::kPacked, ComputeType::kF32},
                      FfnCase{33, 16, 4, 24, 0, WeightMode::kPacked, ComputeType::kF32},
                      FfnCase{17, 8, 2, 16, 24, WeightMode::kPacked, ComputeType::kF32},
                      FfnCase{3, 8, 8, 16, 16, WeightMode::kOnTheFly, ComputeType::kF32},
                      FfnCase{40, 4, 2, 16, 0, WeightMode::kOnTheFly, ComputeType::kF32},
                      FfnCase{21, 8, 2, 32, 32, WeightMode::kPacked, ComputeType::kBf16}),
    [](const ::testing::TestParamInfo<FfnCase>& p) { return Name(p.param); });

}  // namespace
}  // namespace unmask
