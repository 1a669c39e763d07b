#include "sampling/token_choice.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "sampling/top_k.h"

namespace unmask {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(ArgMaxTest, FirstMaximumWins) {
  EXPECT_EQ(ArgMax(std::vector<float>{1, 3, 2, 3}), 1);
  EXPECT_EQ(ArgMax(std::vector<float>{-kInf, -kInf, -1}), 2);
  EXPECT_EQ(ArgMax(std::vector<float>{NAN, 0.5f, NAN}), 1);
  EXPECT_EQ(ArgMax(std::vector<float>{}), 0);
}

TEST(SoftmaxProbabilityTest, MatchesDefinition) {
  const std::vector<float> l = {1.0f, 2.0f, 0.5f};
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(0.5);
  EXPECT_NEAR(SoftmaxProbability(l, 1, {}), std::exp(2.0) / z, 1e-15);
  // Excluding id 1 renormalises over the rest; the excluded id itself has probability 0.
  const std::vector<int32_t> ex = {1};
  EXPECT_NEAR(SoftmaxProbability(l, 0, ex), std::exp(1.0) / (std::exp(1.0) + std::exp(0.5)), 1e-15);
  EXPECT_EQ(SoftmaxProbability(l, 1, ex), 0.0);
  EXPECT_EQ(SoftmaxProbability(std::vector<float>{-kInf, 0.0f}, 0, {}), 0.0);
  EXPECT_EQ(SoftmaxProbability(std::vector<float>{-kInf, -kInf}, 0, {}), 0.0);
  EXPECT_EQ(SoftmaxProbability(l, 7, {}), 0.0);
  // Large logits do not overflow.
  EXPECT_NEAR(SoftmaxProbability(std::vector<float>{1000.0f, 1000.0f}, 0, {}), 0.5, 1e-15);
}

TEST(GumbelMaxTest, IsDeterministicPerCounter) {
  const std::vector<float> l = {0.1f, 0.2f, 0.3f, 0.4f};
  CounterRng rng(123);
  EXPECT_EQ(SampleGumbelMax(l, 1.0, rng, 5, 9), SampleGumbelMax(l, 1.0, rng, 5, 9));
}

TEST(GumbelMaxTest, SamplesTheSoftmaxDistribution) {
  // Frequencies over many (step, position) counters match softmax(l / T) within 5 sigma.
  const std::vector<float> l = {0.0f, 1.0f, 2.0f, -1.0f};
  const double t = 0.8;
  std::vector<double> p(l.size());
  double z = 0;
  for (size_t i = 0; i < l.size(); ++i) z += std::exp(l[i] / t);
  for (size_t i = 0; i < l.size(); ++i) p[i] = std::exp(l[i] / t) / z;
  CounterRng rng(7);
  const int n = 40000;
  std::vector<int> count(l.size());
  for (int i = 0; i < n; ++i) {
    ++count[static_cast<size_t>(SampleGumbelMax(l, t, rng, static_cast<uint32_t>(i / 100),
                                                static_cast<uint32_t>(i % 100)))];
  }
  for (size_t i = 0; i < l.size(); ++i) {
    const double sigma = std::sqrt(p[i] * (1 - p[i]) / n);
    EXPECT_NEAR(count[i] / static_cast<double>(n), p[i], 5 * sigma) << "token " << i;
  }
}

TEST(GumbelMaxTest, NeverPicksMinusInfinity) {
  const std::vector<float> l = {-kInf, 0.0f, -kInf};
  CounterRng rng(1);
  for (uint32_t s = 0; s < 200; ++s) EXPECT_EQ(SampleGumbelMax(l, 2.0, rng, s, 0), 1);
}

TEST(TopKTest, OrdersByScoreThenLowerIndex) {
  const std::vector<double> s = {0.5, 0.9, 0.5, 0.9, 0.1};
  EXPECT_EQ(SelectTopK(s, 3), (std::vector<int32_t>{1, 3, 0}));
  EXPECT_EQ(SelectTopK(s, 0), (std::vector<int32_t>{}));
  EXPECT_EQ(SelectTopK(s, 99).size(), 5u);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(SelectTopK(std::vector<double>{-inf, NAN, 0.0, -inf}, 4),
            (std::vector<int32_t>{2, 0, 3, 1}));
  const std::vector<double> zeros(6, 0.0);
  EXPECT_EQ(SelectTopK(zeros, 2), (std::vector<int32_t>{0, 1}));
}

}  // namespace
}  // namespace unmask
