#include "core/clock.h"

#include <gtest/gtest.h>

#include <chrono>

namespace unmask {
namespace {

TEST(ClockTest, MsBetweenIsSignedMilliseconds) {
  const auto t = std::chrono::steady_clock::now();
  EXPECT_DOUBLE_EQ(MsBetween(t, t + std::chrono::microseconds(1500)), 1.5);
  EXPECT_DOUBLE_EQ(MsBetween(t + std::chrono::seconds(2), t), -2000.0);
  EXPECT_DOUBLE_EQ(MsBetween(t, t), 0.0);
}

TEST(ClockTest, MsSinceCountsToNow) {
  const auto t = std::chrono::steady_clock::now() - std::chrono::milliseconds(5);
  const double ms = MsSince(t);
  EXPECT_GE(ms, 5.0);
  EXPECT_LT(ms, 5.0 + 60'000.0);
}

}  // namespace
}  // namespace unmask
