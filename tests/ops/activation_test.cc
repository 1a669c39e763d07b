// SwiGlu and AddInPlace against the double-precision references (ops/ref/activation_ref).
//
// SwiGlu tolerance: exp is ~1-2 ulp (simd_math.h), 1 + e, the division and two products add one
// rounding each, so |out - ref| <= 16u |ref| (a 2x margin over ~8u), plus 2^-149 * |up| for
// results in the subnormal range, where relative precision is lost by construction.
// AddInPlace is one correctly rounded f32 addition per element: bit-exact.
#include "ops/activation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "op_test_util.h"
#include "ops/ref/activation_ref.h"

namespace unmask {
namespace {

using testing::kU;

void ExpectSwiGluMatches(const std::vector<float>& gate_up, int64_t m, int64_t f) {
  std::vector<float> out(static_cast<size_t>(m * f), std::numeric_limits<float>::quiet_NaN());
  std::vector<float> want(out.size());
  ASSERT_TRUE(
      SwiGlu(testing::View(gate_up, Shape{m, 2 * f}), testing::View(out, Shape{m, f})).ok());
  ref::SwiGlu(gate_up.data(), m, f, want.data());
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t i = 0; i < f; ++i) {
      const size_t o = static_cast<size_t>(r * f + i);
      const double up = gate_up[static_cast<size_t>(r * 2 * f + f + i)];
      const double gate = gate_up[static_cast<size_t>(r * 2 * f + i)];
      const double tol =
          16 * kU * std::fabs(want[o]) + 1.5e-45 * (1.0 + std::fabs(gate)) * std::fabs(up);
      ASSERT_LE(std::fabs(static_cast<double>(out[o]) - want[o]), tol)
          << "gate " << gate << " up " << up << " got " << out[o] << " want " << want[o];
    }
  }
}

TEST(SwiGluTest, MatchesReference) {
  uint64_t seed = 1;
  for (int64_t m : {0, 1, 3, 33}) {
    for (int64_t f : {1, 15, 16, 17, 100, 2048}) {
      SCOPED_TRACE("m=" + std::to_string(m) + " f=" + std::to_string(f));
      ExpectSwiGluMatches(
          testing::RandomFloats(static_cast<size_t>(m * 2 * f), seed++, -8.0f, 8.0f), m, f);
    }
  }
}

TEST(SwiGluTest, ExtremeGates) {
  const std::vector<float> gates = {0.0f,    -0.0f,  1e-30f,  -1e-30f, 1e-3f,  -1e-3f,
                                    20.0f,   -20.0f, 87.0f,   -87.0f,  -88.5f, -90.0f,
                                    -100.0f, 100.0f, -103.0f, 1e30f,   -1e30f};
  const int64_t f = static_cast<int64_t>(gates.size());
  std::vector<float> gate_up(gates);
  for (int64_t i = 0; i < f; ++i) gate_up.push_back(1.5f);
  ExpectSwiGluMatches(gate_up, 1, f);
  // Known values: silu(0) = 0, silu(large) = large, silu(-large) = -0.
  std::vector<float> out(static_cast<size_t>(f));
  ASSERT_TRUE(
      SwiGlu(testing::View(gate_up, Shape{1, 2 * f}), testing::View(out, Shape{1, f})).ok());
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[15], 1e30f * 1.5f);
  EXPECT_EQ(out[16], 0.0f);
}

TEST(SwiGluTest, Errors) {
  std::vector<float> gu(24, 1.0f), out(12);
  auto expect_invalid = [](const Status& s, const std::string& needle) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  expect_invalid(SwiGlu(testing::View(gu, Shape{3, 7}), testing::View(out, Shape{3, 3})), "even");
  expect_invalid(SwiGlu(testing::View(gu, Shape{3, 8}), testing::View(out, Shape{3, 3})),
                 "must be [3, 4]");
  expect_invalid(SwiGlu(testing::View(gu, Shape{3, 8}), testing::View(out, Shape{2, 4})),
                 "must be [3, 4]");
  expect_invalid(SwiGlu(testing::View(gu, Shape{24}), testing::View(out, Shape{12})), "rank 2");
  expect_invalid(
      SwiGlu(TensorView{gu.data(), DType::kF16, Shape{3, 8}}, testing::View(out, Shape{3, 4})),
      "f32");
  expect_invalid(
      SwiGlu(testing::View(gu, Shape{3, 8}), TensorView{gu.data(), DType::kF32, Shape{3, 4}}),
      "overlaps");
  EXPECT_TRUE(SwiGlu(TensorView{nullptr, DType::kF32, Shape{0, 8}},
                     TensorView{nullptr, DType::kF32, Shape{0, 4}})
                  .ok());
}

TEST(AddInPlaceTest, BitExactVsReferenceAndAliasing) {
  for (int64_t n : {0, 1, 17, 1000, 100000}) {
    std::vector<float> y = testing::RandomFloats(static_cast<size_t>(n), 1);
    const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(n), 2);
    std::vector<float> want(y);
    ref::AddInPlace(want.data(), x.data(), n);
    ASSERT_TRUE(AddInPlace(testing::View(y, Shape{n}), testing::View(x, Shape{n})).ok());
    EXPECT_EQ(y, want) << "n=" << n;
  }
  std::vector<float> y = {1.0f, -2.0f, 3.5f, 0.25f};
  ASSERT_TRUE(AddInPlace(testing::View(y, Shape{2, 2}), testing::View(y, Shape{2, 2})).ok());
  EXPECT_EQ(y, (std::vector<float>{2.0f, -4.0f, 7.0f, 0.5f}));
}

TEST(AddInPlaceTest, Errors) {
  std::vector<float> y(12), x(12);
  auto expect_invalid = [](const Status& s, const std::string& needle) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  expect_invalid(AddInPlace(testing::View(y, Shape{3, 4}), testing::View(x, Shape{4, 3})),
                 "shape of y");
  expect_invalid(
      AddInPlace(testing::View(y, Shape{3, 4}), TensorView{x.data(), DType::kF16, Shape{3, 4}}),
      "f32");
  expect_invalid(
      AddInPlace(testing::View(y, Shape{6}), TensorView{y.data() + 3, DType::kF32, Shape{6}}),
      "overlaps");
  expect_invalid(AddInPlace(TensorView{}, TensorView{}), "rank");
}

}  // namespace
}  // namespace unmask
