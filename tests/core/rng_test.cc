#include "core/rng.h"

#include <gtest/gtest.h>

#include <set>

namespace unmask {
namespace {

// Known-answer vectors for Philox4x32-10 from Random123's kat_vectors.
TEST(PhiloxTest, KnownAnswers) {
  EXPECT_EQ(Philox4x32({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(
      Philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
      (std::array<uint32_t, 4>{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(
      Philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}),
      (std::array<uint32_t, 4>{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(CounterRngTest, UniformIsInUnitIntervalAndDistinct) {
  CounterRng rng(42);
  std::set<double> seen;
  double sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const double u = rng.Uniform(RngStream::kGumbel, 3, 7, static_cast<uint32_t>(i));
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    seen.insert(u);
    sum += u;
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(n));
  EXPECT_NEAR(sum / n, 0.5, 0.01);  // 5 sigma of the mean of n uniforms is ~0.01
}

TEST(CounterRngTest, PureFunctionOfCounterAndSeed) {
  CounterRng a(7), b(7), c(8);
  EXPECT_EQ(a.Uniform(RngStream::kGumbel, 1, 2, 3), b.Uniform(RngStream::kGumbel, 1, 2, 3));
  EXPECT_NE(a.Uniform(RngStream::kGumbel, 1, 2, 3), c.Uniform(RngStream::kGumbel, 1, 2, 3));
  EXPECT_NE(a.Uniform(RngStream::kGumbel, 1, 2, 3), a.Uniform(RngStream::kRemaskRandom, 1, 2, 3));
  EXPECT_NE(a.Uniform(RngStream::kGumbel, 1, 2, 3), a.Uniform(RngStream::kGumbel, 1, 3, 3));
}

}  // namespace
}  // namespace unmask
