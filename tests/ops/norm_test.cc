// RmsNorm against the double-precision reference (ops/ref/norm_ref).
//
// Tolerance: the kernel sums d non-negative squares in f32 (any order: relative error
// <= gamma_d), divides by d and adds eps (2u), takes sqrt (halves the relative error, +u) and
// 1/x (+u), then two products (2u). So |y - y_ref| <= (gamma_d / 2 + 8u) |y_ref| (rounded up
// from 6u for the second-order terms); we check that bound.
#include "ops/norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "op_test_util.h"
#include "ops/ref/norm_ref.h"

namespace unmask {
namespace {

using testing::Gamma;
using testing::kU;

TEST(RmsNormTest, MatchesReference) {
  uint64_t seed = 1;
  for (int64_t m : {0, 1, 3, 7, 33}) {
    for (int64_t d : {1, 15, 16, 17, 64, 100, 768, 4099}) {
      for (float eps : {1e-5f, 1e-6f, 0.0f}) {
        SCOPED_TRACE("m=" + std::to_string(m) + " d=" + std::to_string(d) +
                     " eps=" + std::to_string(eps));
        const std::vector<float> x =
            testing::RandomFloats(static_cast<size_t>(m * d), seed++, -3.0f, 3.0f);
        const std::vector<float> w =
            testing::RandomFloats(static_cast<size_t>(d), seed++, 0.5f, 2.0f);
        std::vector<float> y(x.size(), std::numeric_limits<float>::quiet_NaN()), want(x.size());
        ASSERT_TRUE(RmsNorm(testing::View(x, Shape{m, d}), testing::View(w, Shape{d}), eps,
                            testing::View(y, Shape{m, d}))
                        .ok());
        ref::RmsNorm(x.data(), w.data(), m, d, eps, want.data());
        const double rel = Gamma(d) / 2 + 8 * kU;
        for (size_t i = 0; i < y.size(); ++i) {
          ASSERT_LE(std::fabs(static_cast<double>(y[i]) - want[i]), rel * std::fabs(want[i]))
              << "i=" << i << " got " << y[i] << " want " << want[i];
        }
      }
    }
  }
}

TEST(RmsNormTest, InPlaceAliasGivesTheSameResult) {
  const int64_t m = 5, d = 100;
  std::vector<float> x = testing::RandomFloats(static_cast<size_t>(m * d), 3);
  const std::vector<float> w = testing::RandomFloats(static_cast<size_t>(d), 4);
  std::vector<float> out_of_place(x.size());
  ASSERT_TRUE(RmsNorm(testing::View(x, Shape{m, d}), testing::View(w, Shape{d}), 1e-5f,
                      testing::View(out_of_place, Shape{m, d}))
                  .ok());
  ASSERT_TRUE(RmsNorm(testing::View(x, Shape{m, d}), testing::View(w, Shape{d}), 1e-5f,
                      testing::View(x, Shape{m, d}))
                  .ok());
  EXPECT_EQ(x, out_of_place);
}

TEST(RmsNormTest, ZeroRowWithEpsIsZeroAndKnownValue) {
  // x = [3, 4]: mean(x^2) = 12.5, y = x / sqrt(12.5) * w.
  std::vector<float> x = {3.0f, 4.0f, 0.0f, 0.0f}, w = {1.0f, 2.0f}, y(4);
  ASSERT_TRUE(RmsNorm(testing::View(x, Shape{2, 2}), testing::View(w, Shape{2}), 1e-6f,
                      testing::View(y, Shape{2, 2}))
                  .ok());
  EXPECT_NEAR(y[0], 3.0 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(y[1], 8.0 / std::sqrt(12.5), 1e-6);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], 0.0f);
}

TEST(RmsNormTest, Errors) {
  std::vector<float> x(12, 1.0f), w(4, 1.0f), y(12), big(32);
  const TensorView xv = testing::View(x, Shape{3, 4});
  const TensorView wv = testing::View(w, Shape{4});
  const TensorView yv = testing::View(y, Shape{3, 4});
  auto expect_invalid = [](const Status& s, const std::string& needle) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  expect_invalid(RmsNorm(testing::View(x, Shape{12}), wv, 1e-5f, yv), "rank 2");
  expect_invalid(RmsNorm(xv, testing::View(w, Shape{3}), 1e-5f, yv), "w [3] f32 must be [4]");
  expect_invalid(RmsNorm(xv, testing::View(w, Shape{2, 2}), 1e-5f, yv), "rank 1");
  expect_invalid(RmsNorm(xv, wv, 1e-5f, testing::View(y, Shape{4, 3})), "shape of x");
  expect_invalid(RmsNorm(TensorView{x.data(), DType::kF16, Shape{3, 4}}, wv, 1e-5f, yv), "f32");
  expect_invalid(RmsNorm(xv, TensorView{w.data(), DType::kBF16, Shape{4}}, 1e-5f, yv), "f32");
  expect_invalid(RmsNorm(xv, wv, -1.0f, yv), "eps");
  expect_invalid(RmsNorm(xv, wv, std::numeric_limits<float>::quiet_NaN(), yv), "eps");
  expect_invalid(RmsNorm(xv, wv, std::numeric_limits<float>::infinity(), yv), "eps");
  expect_invalid(RmsNorm(TensorView{nullptr, DType::kF32, Shape{3, 4}}, wv, 1e-5f, yv),
                 "null data");
  expect_invalid(RmsNorm(testing::View(big, Shape{3, 4}), wv, 1e-5f,
                         TensorView{big.data() + 2, DType::kF32, Shape{3, 4}}),
                 "overlaps");
  EXPECT_TRUE(RmsNorm(TensorView{nullptr, DType::kF32, Shape{0, 4}}, wv, 1e-5f,
                      TensorView{nullptr, DType::kF32, Shape{0, 4}})
                  .ok());
}

}  // namespace
}  // namespace unmask
