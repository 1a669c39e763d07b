// The parallel commit rules on constructed confidences (decode/commit_rules.h): which candidates
// each rule commits, in which order, and the reference quirks they reproduce.
#include "decode/commit_rules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace unmask {
namespace {

using V = std::vector<int32_t>;

TEST(SelectThresholdTest, TopOneAlwaysPlusEverythingAtOrAboveThreshold) {
  const std::vector<double> conf = {0.5, 0.95, 0.9, 0.2};
  EXPECT_EQ(SelectThreshold(conf, 0.9), (V{1, 2}));  // >= tau, ordered by confidence
  EXPECT_EQ(SelectThreshold(conf, 0.99), (V{1}));    // nothing passes: the top-1 anyway
  EXPECT_EQ(SelectThreshold(conf, 0.1), (V{1, 2, 0, 3}));
  EXPECT_EQ(SelectThreshold(std::vector<double>{0.3, 0.3}, 0.9), (V{0}));  // tie: lower index
  EXPECT_TRUE(SelectThreshold(std::vector<double>{}, 0.9).empty());
}

TEST(SelectFactorTest, LargestPrefixWithinTheFactorBound) {
  // factor 1: rank r (0-based) needs c >= 1 - 1/(r + 2): r1 0.667, r2 0.75, r3 0.8.
  EXPECT_EQ(SelectFactor(std::vector<double>{0.6, 0.99, 0.7, 0.1}, 1.0), (V{1, 2}));
  // Only the last rank fails: the reference still commits it (top_i == N - 1 is bumped).
  EXPECT_EQ(SelectFactor(std::vector<double>{0.9, 0.99, 0.9, 0.1}, 1.0), (V{1, 0, 2, 3}));
  // Every rank passes: all N.
  EXPECT_EQ(SelectFactor(std::vector<double>{0.99, 0.99, 0.99}, 1.0), (V{0, 1, 2}));
  // N == 1: one.
  EXPECT_EQ(SelectFactor(std::vector<double>{0.01}, 1.0), (V{0}));
  // N == 2 with rank 1 failing: top_i = 1 = N - 1 is bumped to 2 (quirk); N == 3: stays 1.
  EXPECT_EQ(SelectFactor(std::vector<double>{0.5, 0.4}, 1.0), (V{0, 1}));
  EXPECT_EQ(SelectFactor(std::vector<double>{0.5, 0.4, 0.3}, 1.0), (V{0}));
  // A larger factor admits more: factor 2 -> r1 needs 1/3, r2 0.5.
  EXPECT_EQ(SelectFactor(std::vector<double>{0.5, 0.4, 0.3, 0.2}, 2.0), (V{0, 1}));
  EXPECT_TRUE(SelectFactor(std::vector<double>{}, 1.0).empty());
}

TEST(SelectHierarchyTest, BestOfEachMaskedRunAboveLowThresholdPlusAboveThreshold) {
  const std::vector<int32_t> pos = {4, 5, 6, 9, 10};
  const std::vector<double> conf = {0.3, 0.7, 0.5, 0.65, 0.2};
  // Runs [4, 5, 6] -> position 5 (0.7), [9, 10] -> position 9 (0.65); both > 0.6.
  EXPECT_EQ(SelectHierarchy(conf, pos, 0.9, 0.6), (V{1, 3}));
  // low 0.68: only the first run's best passes.
  EXPECT_EQ(SelectHierarchy(conf, pos, 0.9, 0.68), (V{1}));
  // tau 0.4 adds 0.5 (strictly above); 0.3 and 0.2 stay.
  EXPECT_EQ(SelectHierarchy(conf, pos, 0.4, 0.6), (V{1, 3, 2}));
  // Maximum below low_threshold: the top-1 only.
  EXPECT_EQ(SelectHierarchy(std::vector<double>{0.1, 0.2}, std::vector<int32_t>{0, 5}, 0.9, 0.6),
            (V{1}));
  // Maximum exactly at low_threshold: the reference would commit nothing; unmask the top-1.
  EXPECT_EQ(SelectHierarchy(std::vector<double>{0.6, 0.1}, std::vector<int32_t>{0, 1}, 0.9, 0.6),
            (V{0}));
  EXPECT_TRUE(SelectHierarchy({}, {}, 0.9, 0.6).empty());
}

TEST(CreditTrackerTest, AccumulatesDecaysAndFusesTopOneCredit) {
  CreditTracker credit(/*alpha=*/0.5, /*beta=*/0.5, /*gamma=*/1.0);
  credit.StartBlock(2);
  credit.StartStep();
  std::vector<float> row = {0.0f, std::log(3.0f), 0.0f};  // softmax: 0.2, 0.6, 0.2
  credit.Fuse(0, row);
  EXPECT_NEAR(credit.credit(0, 1), 0.6, 1e-6);
  EXPECT_EQ(credit.credit(0, 0), 0.0);
  EXPECT_EQ(credit.credit(1, 1), 0.0);
  EXPECT_NEAR(row[1], std::log(3.0) + 0.5 * std::log1p(0.6), 1e-5);
  EXPECT_EQ(row[0], 0.0f);
  // Second step: decay by beta, then add the new top-1's probability.
  credit.StartStep();
  std::vector<float> row2 = {0.0f, std::log(3.0f), 0.0f};
  credit.Fuse(0, row2);
  EXPECT_NEAR(credit.credit(0, 1), 0.6 * 0.5 + 0.6, 1e-6);
  // A new block forgets everything.
  credit.StartBlock(2);
  EXPECT_EQ(credit.credit(0, 1), 0.0);
}

}  // namespace
}  // namespace unmask
