#include "core/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>

namespace unmask {
namespace {

// The compiler's _Float16 conversions (IEEE round-to-nearest-even) are the oracle.
TEST(HalfTest, F16ToF32MatchesCompilerForAllBitPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const _Float16 ref = std::bit_cast<_Float16>(static_cast<uint16_t>(h));
    const float expected = static_cast<float>(ref);
    const float got = F16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(got)) << h;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(expected)) << h;
    }
  }
}

TEST(HalfTest, F32ToF16MatchesCompilerOnASweep) {
  // Every 97th f32 bit pattern (covers all exponents, subnormals, ties) plus edge values.
  for (uint64_t x = 0; x < (1ull << 32); x += 97) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(x));
    const uint16_t got = F32ToF16(f);
    const uint16_t expected = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
    if (std::isnan(f)) {
      ASSERT_TRUE((got & 0x7C00u) == 0x7C00u && (got & 0x3FFu) != 0) << x;
    } else {
      ASSERT_EQ(got, expected) << "bits " << x;
    }
  }
  for (float f : {65504.0f, 65519.0f, 65520.0f, 1e-8f, 2.9802322e-08f, 5.9604645e-08f, -0.0f}) {
    EXPECT_EQ(F32ToF16(f), std::bit_cast<uint16_t>(static_cast<_Float16>(f))) << f;
  }
}

TEST(HalfTest, BF16RoundTripAndRounding) {
  EXPECT_EQ(BF16ToF32(F32ToBF16(1.0f)), 1.0f);
  EXPECT_EQ(F32ToBF16(1.0f + std::ldexp(1.0f, -8)), F32ToBF16(1.0f));  // tie -> even
  EXPECT_EQ(BF16ToF32(F32ToBF16(1.0f + 3 * std::ldexp(1.0f, -9))), 1.0f + std::ldexp(1.0f, -7));
  EXPECT_TRUE(std::isnan(BF16ToF32(F32ToBF16(std::nanf("")))));
}

}  // namespace
}  // namespace unmask
