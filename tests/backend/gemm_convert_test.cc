// The activation conversions of the bf16 / int8 packed GEMMs (backend/cpu/gemm_convert.h): the
// AVX2 loops equal their scalar definitions bit for bit, on random data, rounding ties, special
// values and every tail length.
#include "backend/cpu/gemm_convert.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/half.h"

namespace unmask::cpu {
namespace {

std::vector<float> RandomRow(int64_t n, uint32_t seed, float scale = 3.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, scale);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = g(rng);
  return x;
}

TEST(GemmConvertTest, Bf16MatchesReferenceForEveryLength) {
  for (int64_t n = 0; n <= 41; ++n) {
    std::vector<float> x = RandomRow(n, static_cast<uint32_t>(n) + 1);
    std::vector<uint16_t> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    ConvertToBf16(x.data(), n, a.data());
    ConvertToBf16Reference(x.data(), n, b.data());
    EXPECT_EQ(a, b) << "n = " << n;
  }
}

TEST(GemmConvertTest, Bf16RoundsTiesToEvenAndKeepsSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {
      std::bit_cast<float>(0x3F808000u),  // tie, even below: rounds down to 0x3F80
      std::bit_cast<float>(0x3F818000u),  // tie, odd below: rounds up to 0x3F82
      std::bit_cast<float>(0x3F808001u),  // above the tie: up
      inf,
      -inf,
      std::numeric_limits<float>::quiet_NaN(),
      -0.0f,
      std::bit_cast<float>(0x00000001u),  // smallest denormal
      std::bit_cast<float>(0x7F7FFFFFu),  // largest finite: rounds to inf
      std::bit_cast<float>(0x7F800001u),  // signalling NaN: stays NaN
  };
  std::vector<uint16_t> a(x.size());
  ConvertToBf16(x.data(), static_cast<int64_t>(x.size()), a.data());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(a[i], F32ToBF16(x[i])) << i;
  EXPECT_EQ(a[0], 0x3F80);
  EXPECT_EQ(a[1], 0x3F82);
  EXPECT_EQ(a[2], 0x3F81);
  EXPECT_EQ(a[8], 0x7F80);
  EXPECT_TRUE(std::isnan(BF16ToF32(a[9])));
}

TEST(GemmConvertTest, QuantizeRowMatchesReferenceAndBoundsTheError) {
  for (int64_t k : {1, 7, 31, 32, 33, 64, 100, 768, 1000}) {
    std::vector<float> x = RandomRow(k, static_cast<uint32_t>(k));
    std::vector<int8_t> a(static_cast<size_t>(k)), b(static_cast<size_t>(k));
    const float da = QuantizeRowS8(x.data(), k, a.data());
    const float db = QuantizeRowS8Reference(x.data(), k, b.data());
    EXPECT_EQ(std::bit_cast<uint32_t>(da), std::bit_cast<uint32_t>(db)) << k;
    EXPECT_EQ(a, b) << "k = " << k;
    float amax = 0.0f;
    for (float v : x) amax = std::max(amax, std::fabs(v));
    EXPECT_FLOAT_EQ(da, amax / 127.0f);
    for (int64_t i = 0; i < k; ++i) {
      EXPECT_LE(std::abs(static_cast<int>(a[i])), 127);
      // |x - d q| <= d / 2 (rounding to nearest), plus the rounding of x * (1 / d).
      EXPECT_LE(std::fabs(x[i] - da * a[i]), 0.5f * da * 1.0001f + 1e-30f) << i;
    }
  }
}

TEST(GemmConvertTest, QuantizeRowZerosAndNonFinite) {
  for (int64_t k : {5, 64}) {
    std::vector<float> zeros(static_cast<size_t>(k), 0.0f);
    std::vector<int8_t> q(static_cast<size_t>(k), 9);
    EXPECT_EQ(QuantizeRowS8(zeros.data(), k, q.data()), 0.0f);
    for (int8_t v : q) EXPECT_EQ(v, 0);
    for (float bad :
         {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
          -std::numeric_limits<float>::infinity()}) {
      for (int64_t at : {int64_t{0}, k / 2, k - 1}) {
        std::vector<float> x = RandomRow(k, 3);
        x[static_cast<size_t>(at)] = bad;
        EXPECT_TRUE(std::isnan(QuantizeRowS8(x.data(), k, q.data()))) << k << " " << at;
        EXPECT_TRUE(std::isnan(QuantizeRowS8Reference(x.data(), k, q.data())));
      }
    }
  }
}

TEST(GemmConvertTest, RescaleMatchesReferenceInPlace) {
  for (int64_t n : {1, 8, 13, 2048}) {
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::uniform_int_distribution<int32_t> acc_d(-2000000, 2000000);
    std::vector<int32_t> acc(static_cast<size_t>(n));
    for (int32_t& v : acc) v = acc_d(rng);
    std::vector<float> d_col = RandomRow(n, 7, 0.01f);
    std::vector<float> expected(static_cast<size_t>(n));
    RescaleRowS32Reference(acc.data(), n, 0.02f, d_col.data(), expected.data());
    for (int64_t j = 0; j < n; ++j) {
      EXPECT_EQ(expected[j], static_cast<float>(acc[j]) * (0.02f * d_col[j]));
    }
    // In place: the int32 values in the float buffer, as the int8 GEMM leaves them.
    std::vector<float> y(static_cast<size_t>(n));
    std::memcpy(y.data(), acc.data(), acc.size() * sizeof(int32_t));
    RescaleRowS32(reinterpret_cast<const int32_t*>(y.data()), n, 0.02f, d_col.data(), y.data());
    for (int64_t j = 0; j < n; ++j) {
      EXPECT_EQ(std::bit_cast<uint32_t>(y[j]), std::bit_cast<uint32_t>(expected[j])) << j;
    }
    std::vector<float> nan_row(static_cast<size_t>(n));
    RescaleRowS32(acc.data(), n, std::numeric_limits<float>::quiet_NaN(), d_col.data(),
                  nan_row.data());
    for (float v : nan_row) EXPECT_TRUE(std::isnan(v));
  }
}

}  // namespace
}  // namespace unmask::cpu
