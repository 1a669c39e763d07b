#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sampling/stop_strings.h"

namespace unmask {
namespace {

SamplingParams Plain(double temperature) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0;
  p.min_p = 0.0;
  return p;
}

TEST(SamplerTest, GreedyIsArgmaxAfterPenalties) {
  const std::vector<float> l = {1.0f, 3.0f, 2.9f, -1.0f};
  SamplingParams p = Plain(0);
  EXPECT_EQ(Sampler(p).Distribution(l, {}).ids, std::vector<int32_t>{1});
  p.repeat_penalty = 2.0;  // 3.0 -> 1.5: token 2 wins
  const std::vector<int32_t> hist = {1};
  EXPECT_EQ(Sampler(p).Distribution(l, hist).ids, std::vector<int32_t>{2});
  EXPECT_EQ(Sampler(p).Sample(l, hist, 7), 2);
}

TEST(SamplerTest, TemperatureGivesTheSoftmax) {
  const std::vector<float> l = {0.0f, 1.0f, 2.0f};
  const TokenDistribution d = Sampler(Plain(2.0)).Distribution(l, {});
  ASSERT_EQ(d.ids, (std::vector<int32_t>{2, 1, 0}));
  const double z = 1 + std::exp(0.5) + std::exp(1.0);
  EXPECT_NEAR(d.probs[0], std::exp(1.0) / z, 1e-12);
  EXPECT_NEAR(d.probs[1], std::exp(0.5) / z, 1e-12);
  EXPECT_NEAR(d.probs[2], 1 / z, 1e-12);
}

TEST(SamplerTest, TopKTopPMinPCutInChainOrder) {
  // softmax at T=1 of {3, 2, 1, 0, -inf, NaN}: .6439, .2369, .0871, .0321.
  const std::vector<float> l = {0.0f, 3.0f, 1.0f, 2.0f, -INFINITY, NAN};
  SamplingParams p = Plain(1.0);
  p.top_k = 3;
  EXPECT_EQ(Sampler(p).Distribution(l, {}).ids, (std::vector<int32_t>{1, 3, 2}));
  p.top_k = 0;
  p.top_p = 0.85;  // .6439 + .2369 = .8808 >= .85
  EXPECT_EQ(Sampler(p).Distribution(l, {}).ids, (std::vector<int32_t>{1, 3}));
  p.top_p = 1.0;
  p.min_p = 0.1;  // keeps p >= .0644: ids 1, 3, 2
  EXPECT_EQ(Sampler(p).Distribution(l, {}).ids, (std::vector<int32_t>{1, 3, 2}));
  p.min_p = 0.5;  // keeps p >= .32: id 1 only
  EXPECT_EQ(Sampler(p).Distribution(l, {}).ids, (std::vector<int32_t>{1}));
  // top-p after top-k renormalizes over the k candidates: {3, 2} -> .731, .269.
  p = Plain(1.0);
  p.top_k = 2;
  p.top_p = 0.72;
  EXPECT_EQ(Sampler(p).Distribution(l, {}).ids, (std::vector<int32_t>{1}));
}

TEST(SamplerTest, TiesKeepLowerIdsFirst) {
  const std::vector<float> l = {1.0f, 1.0f, 1.0f, 1.0f};
  SamplingParams p = Plain(1.0);
  p.top_k = 2;
  EXPECT_EQ(Sampler(p).Distribution(l, {}).ids, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(Sampler(Plain(0)).Distribution(l, {}).ids, std::vector<int32_t>{0});
}

TEST(SamplerTest, PenaltiesFollowLlamaCppAndOpenAi) {
  std::vector<float> l = {2.0f, -2.0f, 1.0f, 5.0f};
  SamplingParams p = Plain(1.0);
  p.repeat_penalty = 2.0;
  p.frequency_penalty = 0.5;
  p.presence_penalty = 0.25;
  p.repeat_last_n = 3;  // window: the last three tokens {1, 0, 0}; token 3 is outside
  const std::vector<int32_t> hist = {3, 1, 0, 0};
  Sampler(p).ApplyPenalties(l, hist);
  EXPECT_FLOAT_EQ(l[0], 2.0f / 2 - 2 * 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(l[1], -2.0f * 2 - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(l[2], 1.0f);
  EXPECT_FLOAT_EQ(l[3], 5.0f);
}

TEST(SamplerTest, DegenerateRowsGiveAPointMass) {
  const std::vector<float> all_inf = {-INFINITY, -INFINITY};
  EXPECT_EQ(Sampler(Plain(1.0)).Distribution(all_inf, {}).ids, std::vector<int32_t>{0});
  const std::vector<float> pos_inf = {0.0f, INFINITY, 1.0f};
  EXPECT_EQ(Sampler(Plain(1.0)).Distribution(pos_inf, {}).ids, std::vector<int32_t>{1});
}

TEST(SamplerTest, SamplingFrequenciesMatchTheDistribution) {
  const std::vector<float> l = {0.0f, 1.0f, 2.0f, 0.5f};
  SamplingParams p = Plain(1.0);
  p.seed = 42;
  const Sampler s(p);
  const TokenDistribution d = s.Distribution(l, {});
  std::vector<int> counts(4, 0);
  constexpr int kN = 20000;
  for (int i = 0; i < kN; ++i) ++counts[static_cast<size_t>(s.Sample(l, {}, i))];
  for (int v = 0; v < 4; ++v) {
    const double want = d.Prob(v);
    // 5 standard deviations of a binomial proportion.
    EXPECT_NEAR(counts[static_cast<size_t>(v)] / double{kN}, want,
                5 * std::sqrt(want * (1 - want) / kN))
        << v;
  }
  // Same seed and position: same token.
  EXPECT_EQ(s.Sample(l, {}, 123), s.Sample(l, {}, 123));
}

TEST(SamplerTest, DrawWalksTheCumulativeSum) {
  const TokenDistribution d{{5, 7, 9}, {0.5, 0.3, 0.2}};
  EXPECT_EQ(d.Draw(0.0), 5);
  EXPECT_EQ(d.Draw(0.49), 5);
  EXPECT_EQ(d.Draw(0.5), 7);
  EXPECT_EQ(d.Draw(0.85), 9);
  EXPECT_EQ(d.Draw(0.9999999), 9);
  EXPECT_DOUBLE_EQ(d.Prob(7), 0.3);
  EXPECT_DOUBLE_EQ(d.Prob(8), 0.0);
}

TEST(SamplerTest, InvalidParametersAreErrors) {
  SamplingParams p;
  EXPECT_TRUE(ValidateSamplingParams(p).ok());
  p.top_p = 0;
  EXPECT_FALSE(ValidateSamplingParams(p).ok());
  p = SamplingParams{};
  p.min_p = 1.5;
  EXPECT_FALSE(ValidateSamplingParams(p).ok());
  p = SamplingParams{};
  p.repeat_penalty = 0;
  EXPECT_FALSE(ValidateSamplingParams(p).ok());
  p = SamplingParams{};
  p.temperature = NAN;
  EXPECT_FALSE(ValidateSamplingParams(p).ok());
  p = SamplingParams{};
  p.repeat_last_n = -2;
  EXPECT_FALSE(ValidateSamplingParams(p).ok());
  p = SamplingParams{};
  p.presence_penalty = INFINITY;
  EXPECT_FALSE(ValidateSamplingParams(p).ok());
}

TEST(StopStringsTest, EarliestThenLongestMatch) {
  size_t len = 0;
  EXPECT_EQ(FindStopString("abc\nUser: hi", {"User:", "\n"}, &len), 3u);
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(FindStopString("xx ab", {"ab", " ab"}, &len), 2u);
  EXPECT_EQ(len, 3u);
  EXPECT_EQ(FindStopString("nothing", {"zz", ""}, &len), std::string_view::npos);
  EXPECT_EQ(len, 0u);
}

TEST(StopStringsTest, PartialSuffixIsHeldBack) {
  EXPECT_EQ(PartialStopSuffix("Hello Us", {"User:"}), 2u);
  EXPECT_EQ(PartialStopSuffix("Hello", {"User:"}), 0u);
  EXPECT_EQ(PartialStopSuffix("a<|im", {"<|im_end|>", "<"}), 4u);
  EXPECT_EQ(PartialStopSuffix("", {"abc"}), 0u);
  EXPECT_EQ(PartialStopSuffix("abc", {}), 0u);
}

}  // namespace
}  // namespace unmask
