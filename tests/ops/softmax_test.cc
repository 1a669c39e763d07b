// SoftmaxInPlace against the double-precision reference (ops/ref/softmax_ref).
//
// Tolerance: x_i - max is exact when both are within a factor 2 (Sterbenz) and otherwise has
// relative error u, i.e. an absolute error u |x_i - max| in the exponent: p_i changes by
// p_i |x_i - max| u <= u / e. exp adds ~2u, the f32 sum of n terms gamma_n, 1/sum and the product
// 2u. So |p - p_ref| <= u + (n + 16) u p_ref (the constant 16 rounds up ~5u of exp/product error
// with a 3x margin).
#include "ops/softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "op_test_util.h"
#include "ops/ref/softmax_ref.h"

namespace unmask {
namespace {

using testing::kU;
constexpr float kInf = std::numeric_limits<float>::infinity();

void ExpectSoftmaxMatches(std::vector<float> x, int64_t m, int64_t n) {
  std::vector<float> want(x);
  ref::SoftmaxInPlace(want.data(), m, n);
  ASSERT_TRUE(SoftmaxInPlace(testing::View(x, Shape{m, n})).ok());
  for (size_t i = 0; i < x.size(); ++i) {
    const double tol = kU + static_cast<double>(n + 16) * kU * want[i];
    ASSERT_LE(std::fabs(static_cast<double>(x[i]) - want[i]), tol)
        << "i=" << i << " got " << x[i] << " want " << want[i];
  }
  for (int64_t r = 0; r < m; ++r) {
    double sum = 0.0;
    for (int64_t j = 0; j < n; ++j) sum += x[static_cast<size_t>(r * n + j)];
    EXPECT_NEAR(sum, 1.0, static_cast<double>(2 * n + 16) * kU) << "row " << r;
  }
}

TEST(SoftmaxTest, MatchesReference) {
  uint64_t seed = 1;
  for (int64_t m : {0, 1, 3, 17}) {
    for (int64_t n : {1, 2, 15, 16, 17, 100, 1000, 8192}) {
      SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n));
      ExpectSoftmaxMatches(testing::RandomFloats(static_cast<size_t>(m * n), seed++, -20.0f, 20.0f),
                           m, n);
    }
  }
}

TEST(SoftmaxTest, LargeMagnitudesDoNotOverflow) {
  ExpectSoftmaxMatches({1e30f, -1e30f, 3e38f, 0.0f, 88.0f, 89.0f, -1e4f, 100.0f}, 2, 4);
}

TEST(SoftmaxTest, AllNegativeInfinityRowBecomesZeros) {
  std::vector<float> x = {-kInf, -kInf, -kInf, 1.0f, 2.0f, -kInf};
  ASSERT_TRUE(SoftmaxInPlace(testing::View(x, Shape{2, 3})).ok());
  EXPECT_EQ(x[0], 0.0f);
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_EQ(x[2], 0.0f);
  // Second row: partially masked; exp(1) / (exp(1) + exp(2)) and 0 for -inf.
  EXPECT_NEAR(x[3], 1.0 / (1.0 + std::exp(1.0)), 1e-7);
  EXPECT_NEAR(x[4], std::exp(1.0) / (1.0 + std::exp(1.0)), 1e-7);
  EXPECT_EQ(x[5], 0.0f);
  // Long all -inf row (vector path + tail).
  std::vector<float> long_row(37, -kInf);
  ASSERT_TRUE(SoftmaxInPlace(testing::View(long_row, Shape{1, 37})).ok());
  for (float v : long_row) EXPECT_EQ(v, 0.0f);
}

TEST(SoftmaxTest, Errors) {
  std::vector<float> x(6);
  Status s = SoftmaxInPlace(TensorView{x.data(), DType::kF16, Shape{2, 3}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("f32"), std::string::npos);
  s = SoftmaxInPlace(testing::View(x, Shape{6}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  s = SoftmaxInPlace(TensorView{x.data(), DType::kF32, Shape{-2, 3}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("negative dim"), std::string::npos);
  s = SoftmaxInPlace(TensorView{nullptr, DType::kF32, Shape{2, 3}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_TRUE(SoftmaxInPlace(TensorView{nullptr, DType::kF32, Shape{0, 3}}).ok());
}

// SumExpShifted: f32 terms (x_i - shift rounded to f32: relative error |x_i - shift| u in the
// term; exp ~2 u) summed in f64 (n * 2^-53, negligible): relative error of the sum below
// (4 + max_i |x_i - shift|) u.
TEST(SumExpShiftedTest, MatchesTheDoubleReference) {
  uint32_t state = 12345;
  auto uniform = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / static_cast<float>(1u << 24);
  };
  for (int64_t n : {0, 1, 7, 8, 15, 16, 17, 33, 3072, 32000}) {
    for (float spread : {0.5f, 8.0f, 40.0f}) {
      std::vector<float> x(static_cast<size_t>(n));
      float max = -kInf;
      for (float& v : x) {
        v = (uniform() - 0.5f) * 2 * spread;
        max = std::max(max, v);
      }
      for (float shift : {max, max - 1.0f}) {
        const double want = ref::SumExpShifted(x.data(), n, shift);
        const double got = SumExpShifted(x.data(), n, shift);
        if (n == 0) {
          EXPECT_EQ(got, 0.0);
          continue;
        }
        const double tol = (4.0 + 2.0 * spread + 1.0) * kU * want;
        EXPECT_NEAR(got, want, tol) << "n " << n << " spread " << spread;
      }
    }
  }
}

TEST(SumExpShiftedTest, MinusInfinityContributesNothingAndNanPropagates) {
  std::vector<float> x = {0.0f, -kInf, -kInf, 0.0f, -kInf, -kInf, -kInf, -kInf, -kInf, 0.0f};
  EXPECT_NEAR(SumExpShifted(x.data(), static_cast<int64_t>(x.size()), 0.0f), 3.0, 3 * 4 * kU);
  x[8] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(SumExpShifted(x.data(), static_cast<int64_t>(x.size()), 0.0f)));
}

}  // namespace
}  // namespace unmask
