// Mixture-of-experts routing (ops/moe_routing.h) against the double reference (ops/ref/moe_ref.h)
// over expert counts, top-k values, both gatings, renormalisation, routed scaling, selection
// bias and group-limited selection; exact ties; the dispatch (grouping by expert); bad input.
#include "ops/moe_routing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "op_test_util.h"
#include "ops/ref/moe_ref.h"

namespace unmask {
namespace {

using testing::View;

// Logits on a 1/16 grid in [-4, 4]: two values are either exactly equal (a tie the documented
// rule decides, in f32 and in double alike) or at least 1/16 apart (far above f32 rounding), so
// the op and the reference must choose the same experts.
std::vector<float> GridLogits(int64_t t, int64_t e, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> dist(-64, 64);
  std::vector<float> v(static_cast<size_t>(t * e));
  for (float& x : v) x = static_cast<float>(dist(rng)) / 16.0f;
  return v;
}

struct Route {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

Route RunOp(const std::vector<float>& logits, int64_t t, const std::vector<float>& bias,
            const MoeRouting& r) {
  Route out{std::vector<int32_t>(static_cast<size_t>(t * r.top_k)),
            std::vector<float>(static_cast<size_t>(t * r.top_k))};
  const Status s =
      RouteExperts(View(logits, Shape{t, r.num_experts}), bias, r, out.ids, out.weights);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

Route RunRef(const std::vector<float>& logits, int64_t t, const std::vector<float>& bias,
             const MoeRouting& r) {
  Route out{std::vector<int32_t>(static_cast<size_t>(t * r.top_k)),
            std::vector<float>(static_cast<size_t>(t * r.top_k))};
  ref::RouteExperts(logits.data(), t, bias.empty() ? nullptr : bias.data(), r, out.ids.data(),
                    out.weights.data());
  return out;
}

struct RoutingCase {
  std::string name;
  MoeRouting routing;
  bool bias;
};

class MoeRoutingRefTest : public ::testing::TestWithParam<RoutingCase> {};

TEST_P(MoeRoutingRefTest, MatchesTheReference) {
  const RoutingCase& c = GetParam();
  const MoeRouting& r = c.routing;
  const int64_t t = 37;
  const std::vector<float> logits = GridLogits(t, r.num_experts, 11 + r.num_experts + r.top_k);
  std::vector<float> bias;
  if (c.bias) bias = testing::RandomFloats(static_cast<size_t>(r.num_experts), 5, -0.5f, 0.5f);
  const Route got = RunOp(logits, t, bias, r);
  const Route want = RunRef(logits, t, bias, r);
  ASSERT_EQ(got.ids, want.ids);
  // Weights: a softmax / sigmoid in f32 (a few ulp per term) and a k-term normalisation.
  for (size_t i = 0; i < got.weights.size(); ++i) {
    EXPECT_NEAR(got.weights[i], want.weights[i], 1e-5 * std::abs(want.weights[i]) + 1e-7)
        << "slot " << i;
  }
  // Every token's ids are distinct and in range.
  for (int64_t tok = 0; tok < t; ++tok) {
    std::vector<int32_t> row(got.ids.begin() + tok * r.top_k,
                             got.ids.begin() + (tok + 1) * r.top_k);
    std::sort(row.begin(), row.end());
    EXPECT_EQ(std::adjacent_find(row.begin(), row.end()), row.end());
    EXPECT_GE(row.front(), 0);
    EXPECT_LT(row.back(), r.num_experts);
  }
}

MoeRouting Softmax(int64_t e, int64_t k, bool normalize) {
  MoeRouting r;
  r.num_experts = e;
  r.top_k = k;
  r.normalize = normalize;
  return r;
}
MoeRouting Sigmoid(int64_t e, int64_t k, int64_t groups, int64_t used, float scale) {
  MoeRouting r;
  r.num_experts = e;
  r.top_k = k;
  r.gating = MoeGating::kSigmoid;
  r.normalize = true;
  r.normalize_eps = 1e-20f;
  r.scale = scale;
  r.num_groups = groups;
  r.groups_used = used;
  return r;
}

INSTANTIATE_TEST_SUITE_P(
    Variants, MoeRoutingRefTest,
    ::testing::Values(RoutingCase{"softmax_e4_k1", Softmax(4, 1, false), false},
                      RoutingCase{"softmax_e8_k2_llada_moe", Softmax(8, 2, false), false},
                      RoutingCase{"softmax_e64_k8_renorm_qwen3", Softmax(64, 8, true), false},
                      RoutingCase{"softmax_e128_k8_renorm", Softmax(128, 8, true), false},
                      RoutingCase{"softmax_e8_k8_all", Softmax(8, 8, true), false},
                      RoutingCase{"softmax_bias", Softmax(16, 4, true), true},
                      RoutingCase{"sigmoid_e256_k8_g8_4_llada2", Sigmoid(256, 8, 8, 4, 2.5f), true},
                      RoutingCase{"sigmoid_e64_k6_g8_3", Sigmoid(64, 6, 8, 3, 1.0f), true},
                      RoutingCase{"sigmoid_e16_k1_g4_1", Sigmoid(16, 1, 4, 1, 1.0f), false},
                      RoutingCase{"sigmoid_e8_k2_groups_of_one", Sigmoid(8, 2, 8, 2, 1.0f), true},
                      RoutingCase{"sigmoid_ungrouped", Sigmoid(32, 4, 1, 1, 16.0f), true}),
    [](const ::testing::TestParamInfo<RoutingCase>& p) { return p.param.name; });

TEST(MoeRoutingTest, EqualScoresGoToTheLowerExpertId) {
  const MoeRouting r = Softmax(6, 3, false);
  const std::vector<float> logits = {0, 0, 0, 0, 0, 0,   // all equal
                                     1, 2, 2, 1, 2, 0};  // three tied best
  const Route got = RunOp(logits, 2, {}, r);
  EXPECT_EQ(got.ids, (std::vector<int32_t>{0, 1, 2, 1, 2, 4}));
  for (int j = 0; j < 3; ++j) EXPECT_FLOAT_EQ(got.weights[j], 1.0f / 6.0f);
}

TEST(MoeRoutingTest, EqualGroupScoresKeepTheLowerGroup) {
  // 4 groups of 2; groups 1 and 3 tie for the best top-2 sum, group 2 is second-best alone.
  MoeRouting r = Sigmoid(8, 2, 4, 1, 1.0f);
  const std::vector<float> logits = {-3, -3, 1, 1, 0.5f, 0.5f, 1, 1};
  const Route got = RunOp(logits, 1, {}, r);
  EXPECT_EQ(got.ids, (std::vector<int32_t>{2, 3}));
}

TEST(MoeRoutingTest, GroupLimitExcludesABetterExpertOfAWeakGroup) {
  // Expert 0 has the single best score but its group's top-2 sum is the lowest.
  MoeRouting r = Sigmoid(8, 2, 4, 2, 1.0f);
  const std::vector<float> logits = {5, -5, 2, 2, 1.5f, 1.5f, -1, -1};
  const Route got = RunOp(logits, 1, {}, r);
  EXPECT_EQ(got.ids, (std::vector<int32_t>{2, 3}));
  r.groups_used = 4;  // no limit in effect
  EXPECT_EQ(RunOp(logits, 1, {}, r).ids, (std::vector<int32_t>{0, 2}));
}

TEST(MoeRoutingTest, SelectionBiasChoosesButDoesNotWeigh) {
  MoeRouting r = Sigmoid(4, 1, 1, 1, 1.0f);
  r.normalize = false;
  const std::vector<float> logits = {2, 1, 0, -1};
  const std::vector<float> bias = {0, 0, 0, 1};  // lifts expert 3 from 0.27 to 1.27
  const Route got = RunOp(logits, 1, bias, r);
  EXPECT_EQ(got.ids, (std::vector<int32_t>{3}));
  EXPECT_NEAR(got.weights[0], 1.0 / (1.0 + std::exp(1.0)), 1e-7);  // the unbiased sigmoid
}

TEST(MoeRoutingTest, RenormalisedWeightsSumToTheScale) {
  const MoeRouting r = Sigmoid(256, 8, 8, 4, 2.5f);
  const int64_t t = 9;
  const std::vector<float> logits = testing::RandomFloats(static_cast<size_t>(t * 256), 3, -3, 3);
  const Route got = RunOp(logits, t, {}, r);
  for (int64_t tok = 0; tok < t; ++tok) {
    double sum = 0;
    for (int64_t j = 0; j < 8; ++j) sum += got.weights[static_cast<size_t>(tok * 8 + j)];
    EXPECT_NEAR(sum, 2.5, 1e-5);
    for (int64_t j = 1; j < 8; ++j) {  // descending selection score = descending weight here
      EXPECT_GE(got.weights[tok * 8 + j - 1], got.weights[tok * 8 + j]);
    }
  }
}

TEST(MoeRoutingTest, BadRoutingsAndInputsAreRefused) {
  std::vector<int32_t> ids(4);
  std::vector<float> w(4), logits(8, 0.0f);
  auto route = [&](MoeRouting r, Shape shape, std::vector<float> bias = {}) {
    return RouteExperts(View(logits, shape), bias, r, ids, w);
  };
  auto expect_bad = [](const Status& s, const std::string& needle) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  expect_bad(route(Softmax(4, 0, false), Shape{2, 4}), "top_k");
  expect_bad(route(Softmax(4, 5, false), Shape{2, 4}), "top_k");
  MoeRouting g = Sigmoid(4, 2, 3, 1, 1.0f);
  expect_bad(route(g, Shape{2, 4}), "num_groups");
  g = Sigmoid(8, 3, 4, 1, 1.0f);  // one group of 2 experts cannot supply 3
  expect_bad(ValidateMoeRouting(g), "fewer than top_k");
  g = Sigmoid(4, 2, 2, 3, 1.0f);
  expect_bad(route(g, Shape{2, 4}), "groups_used");
  MoeRouting nan_scale = Softmax(4, 2, false);
  nan_scale.scale = NAN;
  expect_bad(route(nan_scale, Shape{2, 4}), "scale");
  expect_bad(route(Softmax(4, 2, false), Shape{1, 8}), "logits");  // width is not E
  expect_bad(route(Softmax(4, 2, false), Shape{2, 4}, {1, 2}), "selection_bias");
  std::vector<int32_t> short_ids(3);
  EXPECT_EQ(RouteExperts(View(logits, Shape{2, 4}), {}, Softmax(4, 2, false), short_ids, w).code(),
            StatusCode::kInvalidArgument);
  logits[5] = NAN;
  expect_bad(route(Softmax(4, 2, false), Shape{2, 4}), "token 1");
}

TEST(MoeDispatchTest, GroupsSlotsByExpertInTokenOrder) {
  // 3 tokens x top-2.
  const std::vector<int32_t> ids = {2, 0, 0, 2, 3, 0};
  MoeDispatch d;
  ASSERT_TRUE(DispatchExperts(ids, 5, &d).ok());
  EXPECT_EQ(d.offsets, (std::vector<int32_t>{0, 3, 3, 5, 6, 6}));
  EXPECT_EQ(d.order, (std::vector<int32_t>{1, 2, 5, 0, 3, 4}));
  EXPECT_EQ(d.experts_hit(), 3);
  const std::vector<int32_t> bad = {0, 5};
  EXPECT_EQ(DispatchExperts(bad, 5, &d).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace unmask
