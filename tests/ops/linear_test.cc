// Linear (ops/linear.h) against the scalar reference (ops/ref/linear_ref) for every GEMM
// provider x weight dtype x weight mode, over odd shapes and M = 0..100.
//
// Tolerance (rigorous, per element): the weight is dequantized exactly (f16/bf16 -> f32 is exact;
// a Q8_0 value d * q has <= 11 + 8 significant bits, exact in f32; Q4_0/Q4_1/Q4_K/Q6_K weights
// are the f32 values of ops/ref/quant_ref.h, which every kernel reproduces bit for bit), so the
// optimized result and the double-accumulated reference differ only by f32 dot-product rounding:
//   |y - y_ref| <= gamma_K * sum_k |x_ik| |w_jk| + u |y_ref|
// (gamma_K = K u / (1 - K u) for any summation order, with or without FMA; the second term is the
// reference's own final rounding). This is gemma's matmul_test idea (tolerance from input
// magnitudes), with sum |x||w| in place of the looser Cauchy-Schwarz bound |x|_2 |w|_2.
// Second check: NMSE <= 1e-7, llama.cpp test-backend-ops' default max_nmse_err.
#include "ops/linear.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "backend/cpu/blas_onednn.h"
#include "op_test_util.h"
#include "ops/linear_impl.h"
#include "ops/ref/linear_ref.h"

namespace unmask {
namespace {

using cpu::GemmProvider;
using testing::Gamma;
using testing::kU;

// 4 and 5 straddle the on-the-fly fused small-M kernel's limit (M <= 4).
constexpr int64_t kMs[] = {0, 1, 2, 3, 4, 5, 7, 31, 33, 100};

// Checks y = x * w^T against the reference, with the bound above. w_f32: [n, k] exact image.
void ExpectLinearMatches(const std::vector<float>& x, const std::vector<float>& w_f32, int64_t m,
                         int64_t k, int64_t n, const std::vector<float>& y) {
  std::vector<float> want(static_cast<size_t>(m * n)), abs_dot(static_cast<size_t>(m * n));
  ref::Linear(x.data(), m, k, w_f32.data(), n, want.data());
  std::vector<float> abs_x(x.size()), abs_w(w_f32.size());
  for (size_t i = 0; i < x.size(); ++i) abs_x[i] = std::fabs(x[i]);
  for (size_t i = 0; i < w_f32.size(); ++i) abs_w[i] = std::fabs(w_f32[i]);
  ref::Linear(abs_x.data(), m, k, abs_w.data(), n, abs_dot.data());
  int failures = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double bound = Gamma(k) * abs_dot[i] + kU * std::fabs(want[i]);
    const double err = std::fabs(static_cast<double>(y[i]) - want[i]);
    if (!(err <= bound) && failures++ < 5) {  // !(<=) also catches NaN
      ADD_FAILURE() << "y[" << i / static_cast<size_t>(n) << ", " << i % static_cast<size_t>(n)
                    << "] = " << y[i] << ", reference " << want[i] << ", |err| " << err
                    << " > bound " << bound << " (m=" << m << " k=" << k << " n=" << n << ")";
    }
  }
  if (m > 0) {
    EXPECT_LE(testing::Nmse(y, want), 1e-7);
  }
}

std::string ModeName(WeightMode mode) {
  switch (mode) {
    case WeightMode::kAuto:
      return "auto";
    case WeightMode::kPacked:
      return "packed";
    case WeightMode::kOnTheFly:
      return "onthefly";
  }
  return "unknown";
}

using LinearParam = std::tuple<GemmProvider, DType, WeightMode>;

// Exact activations for the 4-/6-bit types here; their int8 kernels (QuantActivations::kInt8,
// the default) have their own bound in linear_quant_test.cc.
class LinearTest : public ::testing::TestWithParam<LinearParam> {
 protected:
  void SetUp() override {
    SetQuantActivations(QuantActivations::kF32);
    UNMASK_SELECT_PROVIDER_OR_SKIP(std::get<0>(GetParam()));
  }
  void TearDown() override {
    SetQuantActivations(QuantActivations::kInt8);
    testing::RestoreDefaultProvider();
  }
};

TEST_P(LinearTest, MatchesReferenceOverShapes) {
  const auto [provider, dtype, mode] = GetParam();
  struct Dims {
    int64_t k, n;
  };
  // K and N deliberately not multiples of 16/64 (Q8_0/Q4_0/Q4_1 need K % 32 == 0, Q4_K/Q6_K
  // K % 256 == 0).
  const int64_t block = GetDTypeInfo(dtype).block_size;
  const std::vector<Dims> dims = block == kQkK ? std::vector<Dims>{{256, 1}, {512, 33}, {768, 257}}
                                 : block == 32
                                     ? std::vector<Dims>{{32, 1}, {96, 33}, {800, 257}}
                                     : std::vector<Dims>{{1, 1}, {17, 33}, {100, 130}, {771, 257}};
  uint64_t seed = 100;
  for (const Dims& d : dims) {
    const testing::Table w = testing::MakeTable(dtype, d.n, d.k, seed++);
    auto weight = LinearWeight::Prepare({&w.view, 1}, mode);
    ASSERT_TRUE(weight.ok()) << weight.status().ToString();
    ASSERT_EQ(weight->out_features(), d.n);
    ASSERT_EQ(weight->in_features(), d.k);
    for (int64_t m : kMs) {
      SCOPED_TRACE("m=" + std::to_string(m) + " k=" + std::to_string(d.k) +
                   " n=" + std::to_string(d.n));
      const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(m * d.k), seed++);
      std::vector<float> y(static_cast<size_t>(m * d.n), std::numeric_limits<float>::quiet_NaN());
      const Status s =
          Linear(testing::View(x, Shape{m, d.k}), *weight, testing::View(y, Shape{m, d.n}));
      ASSERT_TRUE(s.ok()) << s.ToString();
      ExpectLinearMatches(x, w.f32, m, d.k, d.n, y);
    }
  }
}

// Q/K/V-style fusion of parts with different dtypes and row counts; with K = 64 (256 for the
// K-quants) the on-the-fly panels are 256 rows, so the 300-row parts straddle panel boundaries.
TEST_P(LinearTest, FusedPartsOfMixedDTypes) {
  const auto [provider, dtype, mode] = GetParam();
  const int64_t k = std::max<int64_t>(64, GetDTypeInfo(dtype).block_size);
  const testing::Table a = testing::MakeTable(dtype, 300, k, 1);
  const testing::Table b = testing::MakeTable(DType::kQ8_0, 5, k, 2);
  const testing::Table c = testing::MakeTable(DType::kF16, 290, k, 3);
  const TensorView parts[] = {a.view, b.view, c.view};
  auto weight = LinearWeight::Prepare(parts, mode);
  ASSERT_TRUE(weight.ok()) << weight.status().ToString();
  ASSERT_EQ(weight->out_features(), 595);
  ASSERT_EQ(cpu::OnTheFlyPanelRows(k), 256);
  std::vector<float> w_f32(a.f32);
  w_f32.insert(w_f32.end(), b.f32.begin(), b.f32.end());
  w_f32.insert(w_f32.end(), c.f32.begin(), c.f32.end());
  for (int64_t m : {1, 7, 33}) {
    SCOPED_TRACE("m=" + std::to_string(m));
    const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(m * k), 9);
    std::vector<float> y(static_cast<size_t>(m * 595), std::numeric_limits<float>::quiet_NaN());
    ASSERT_TRUE(
        Linear(testing::View(x, Shape{m, k}), *weight, testing::View(y, Shape{m, 595})).ok());
    ExpectLinearMatches(x, w_f32, m, k, 595, y);
  }
}

// K = 16384 makes on-the-fly panels 16 rows (the minimum): N = 40 -> 16 + 16 + 8.
TEST_P(LinearTest, LargeKSmallPanels) {
  const auto [provider, dtype, mode] = GetParam();
  const testing::Table w = testing::MakeTable(dtype, 40, 16384, 4);
  ASSERT_EQ(cpu::OnTheFlyPanelRows(16384), 16);
  auto weight = LinearWeight::Prepare({&w.view, 1}, mode);
  ASSERT_TRUE(weight.ok()) << weight.status().ToString();
  for (int64_t m : {1, 5}) {  // fused kernel and panels
    const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(m * 16384), 5);
    std::vector<float> y(static_cast<size_t>(m * 40));
    ASSERT_TRUE(
        Linear(testing::View(x, Shape{m, 16384}), *weight, testing::View(y, Shape{m, 40})).ok());
    ExpectLinearMatches(x, w.f32, m, 16384, 40, y);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllProvidersDTypesModes, LinearTest,
    ::testing::Combine(::testing::ValuesIn(testing::AllProviders()),
                       ::testing::Values(DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0,
                                         DType::kQ4_0, DType::kQ4_1, DType::kQ4_K, DType::kQ6_K),
                       ::testing::Values(WeightMode::kPacked, WeightMode::kOnTheFly)),
    [](const ::testing::TestParamInfo<LinearParam>& p) {
      return std::string(cpu::GemmProviderName(std::get<0>(p.param))) + "_" +
             std::string(DTypeName(std::get<1>(p.param))) + "_" + ModeName(std::get<2>(p.param));
    });

TEST(LinearWeightTest, ModesAndOwnedBytes) {
  const testing::Table f16 = testing::MakeTable(DType::kF16, 48, 64, 1);
  auto automatic = LinearWeight::Prepare({&f16.view, 1}, WeightMode::kAuto);
  ASSERT_TRUE(automatic.ok());
  EXPECT_EQ(automatic->mode(), WeightMode::kPacked);
  EXPECT_GE(automatic->owned_bytes(), size_t{48 * 64 * 4});  // f32 (maybe padded when packed)

  auto single = LinearWeight::Prepare({&f16.view, 1}, WeightMode::kOnTheFly);
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->mode(), WeightMode::kOnTheFly);
  EXPECT_EQ(single->owned_bytes(), 0u);  // referenced

  const TensorView two[] = {f16.view, f16.view};
  auto fused = LinearWeight::Prepare(two, WeightMode::kOnTheFly);
  ASSERT_TRUE(fused.ok());
  EXPECT_EQ(fused->out_features(), 96);
  EXPECT_EQ(fused->owned_bytes(), 0u);  // every part referenced, none copied

  LinearWeight empty;
  EXPECT_EQ(empty.out_features(), 0);
  EXPECT_EQ(empty.owned_bytes(), 0u);
}

TEST(LinearWeightTest, OnTheFlySinglePartReferencesTheData) {
  std::vector<float> w(4 * 8, 0.0f);
  const TensorView wv = testing::View(w, Shape{4, 8});
  auto weight = LinearWeight::Prepare({&wv, 1}, WeightMode::kOnTheFly);
  ASSERT_TRUE(weight.ok());
  std::vector<float> x(8, 1.0f), y(4);
  w[2 * 8 + 5] = 3.0f;  // changed after Prepare: visible through the reference
  ASSERT_TRUE(Linear(testing::View(x, Shape{1, 8}), *weight, testing::View(y, Shape{1, 4})).ok());
  EXPECT_EQ(y, (std::vector<float>{0.0f, 0.0f, 3.0f, 0.0f}));
}

TEST(LinearWeightTest, MoveLeavesAnEmptyWeightThatLinearRejects) {
  const testing::Table f32 = testing::MakeTable(DType::kF32, 3, 5, 1);
  auto prepared = LinearWeight::Prepare({&f32.view, 1}, WeightMode::kPacked);
  ASSERT_TRUE(prepared.ok());
  LinearWeight a = std::move(prepared).value();
  LinearWeight b = std::move(a);
  std::vector<float> x(5, 1.0f), y(3);
  EXPECT_TRUE(Linear(testing::View(x, Shape{1, 5}), b, testing::View(y, Shape{1, 3})).ok());
  const Status s = Linear(testing::View(x, Shape{1, 5}), a, testing::View(y, Shape{1, 3}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
}

// Several threads run the same packed weight with different M at once (the oneDNN primitive
// cache is shared); each result must match the reference.
TEST(LinearWeightTest, ConcurrentCallsAreThreadSafe) {
  const testing::Table w = testing::MakeTable(DType::kF32, 70, 96, 3);
  for (WeightMode mode : {WeightMode::kPacked, WeightMode::kOnTheFly}) {
    auto weight = LinearWeight::Prepare({&w.view, 1}, mode);
    ASSERT_TRUE(weight.ok());
    std::vector<std::thread> threads;
    std::vector<std::vector<float>> xs(4), ys(4);
    std::vector<Status> statuses(4);
    for (int t = 0; t < 4; ++t) {
      const int64_t m = 5 + 11 * t;
      xs[t] = testing::RandomFloats(static_cast<size_t>(m * 96), 40 + static_cast<uint64_t>(t));
      ys[t].assign(static_cast<size_t>(m * 70), 0.0f);
      threads.emplace_back([&, t, m] {
        for (int rep = 0; rep < 20; ++rep) {
          statuses[t] = Linear(testing::View(xs[t], Shape{m, 96}), *weight,
                               testing::View(ys[t], Shape{m, 70}));
          if (!statuses[t].ok()) return;
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < 4; ++t) {
      ASSERT_TRUE(statuses[t].ok()) << statuses[t].ToString();
      ExpectLinearMatches(xs[t], w.f32, 5 + 11 * t, 96, 70, ys[t]);
    }
  }
}

TEST(LinearWeightTest, OneDnnPrimitiveCacheIsKeyedByShapeAndBounded) {
  ASSERT_TRUE(testing::SelectProvider(GemmProvider::kOneDnn).ok());
  cpu::onednn::ClearPrimitiveCache();
  const testing::Table w = testing::MakeTable(DType::kF32, 16, 16, 1);
  auto weight = LinearWeight::Prepare({&w.view, 1}, WeightMode::kPacked);
  ASSERT_TRUE(weight.ok());
  auto run = [&](int64_t m) {
    std::vector<float> x(static_cast<size_t>(m * 16), 1.0f), y(static_cast<size_t>(m * 16));
    ASSERT_TRUE(
        Linear(testing::View(x, Shape{m, 16}), *weight, testing::View(y, Shape{m, 16})).ok());
  };
  run(3);
  run(3);
  EXPECT_EQ(cpu::onednn::CachedPrimitives(), 1u);
  run(4);
  EXPECT_EQ(cpu::onednn::CachedPrimitives(), 2u);
  // A second weight of the same shape shares the entries.
  auto other = LinearWeight::Prepare({&w.view, 1}, WeightMode::kPacked);
  ASSERT_TRUE(other.ok());
  std::vector<float> x(3 * 16, 1.0f), y(3 * 16);
  ASSERT_TRUE(Linear(testing::View(x, Shape{3, 16}), *other, testing::View(y, Shape{3, 16})).ok());
  EXPECT_EQ(cpu::onednn::CachedPrimitives(), 2u);
  // LRU bound: with capacity 8, 12 distinct M leave 8 entries; M = 12 (most recent) is a hit.
  cpu::onednn::SetPrimitiveCacheCapacity(8);
  for (int64_t m = 1; m <= 12; ++m) run(m);
  EXPECT_EQ(cpu::onednn::CachedPrimitives(), 8u);
  run(12);
  EXPECT_EQ(cpu::onednn::CachedPrimitives(), 8u);
  cpu::onednn::SetPrimitiveCacheCapacity(cpu::onednn::PackedWeight::kDefaultCacheCapacity);
  cpu::onednn::ClearPrimitiveCache();
}

TEST(LinearWeightTest, PrepareErrors) {
  std::vector<float> buf(64 * 64, 0.5f);
  const TensorView ok{buf.data(), DType::kF32, Shape{4, 32}};
  auto expect_invalid = [](std::span<const TensorView> parts, WeightMode mode,
                           const std::string& needle) {
    auto w = LinearWeight::Prepare(parts, mode);
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument) << w.status().ToString();
    EXPECT_NE(w.status().message().find(needle), std::string::npos) << w.status().message();
  };
  expect_invalid({}, WeightMode::kPacked, "no weight parts");
  const TensorView rank1{buf.data(), DType::kF32, Shape{32}};
  expect_invalid({&rank1, 1}, WeightMode::kPacked, "must be [out_i, in]");
  const TensorView rank3{buf.data(), DType::kF32, Shape{2, 2, 8}};
  expect_invalid({&rank3, 1}, WeightMode::kOnTheFly, "must be [out_i, in]");
  const TensorView k_zero{buf.data(), DType::kF32, Shape{4, 0}};
  expect_invalid({&k_zero, 1}, WeightMode::kPacked, "in >= 1");
  const TensorView other_k{buf.data(), DType::kF32, Shape{4, 16}};
  const TensorView mismatch[] = {ok, other_k};
  expect_invalid(mismatch, WeightMode::kPacked, "in_features 16");
  const TensorView q4_k{buf.data(), DType::kQ4_K, Shape{4, 576}};
  expect_invalid({&q4_k, 1}, WeightMode::kOnTheFly, "not a multiple of the q4_k block size 256");
  const TensorView i32{buf.data(), DType::kI32, Shape{4, 32}};
  expect_invalid({&i32, 1}, WeightMode::kOnTheFly, "unsupported dtype");
  const TensorView q8_partial{buf.data(), DType::kQ8_0, Shape{4, 48}};
  expect_invalid({&q8_partial, 1}, WeightMode::kPacked, "block size");
  const TensorView null_data{nullptr, DType::kF16, Shape{4, 32}};
  expect_invalid({&null_data, 1}, WeightMode::kOnTheFly, "null data");
  const TensorView no_rows{buf.data(), DType::kF32, Shape{0, 32}};
  expect_invalid({&no_rows, 1}, WeightMode::kPacked, "no rows");
  expect_invalid({&ok, 1}, static_cast<WeightMode>(42), "WeightMode");
  const TensorView negative_rows{buf.data(), DType::kF32, Shape{-3, 32}};
  expect_invalid({&negative_rows, 1}, WeightMode::kPacked, "must be [out_i, in]");
  // Checked before anything is allocated or read.
  const TensorView huge{buf.data(), DType::kF32, Shape{int64_t{1} << 40, int64_t{1} << 30}};
  expect_invalid({&huge, 1}, WeightMode::kPacked, "too large");
  // A zero-row part among others is fine.
  const TensorView with_empty[] = {ok, no_rows, ok};
  auto w = LinearWeight::Prepare(with_empty, WeightMode::kOnTheFly);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->out_features(), 8);
}

TEST(LinearWeightTest, LinearErrors) {
  const testing::Table w = testing::MakeTable(DType::kF32, 6, 8, 1);
  auto weight = LinearWeight::Prepare({&w.view, 1}, WeightMode::kPacked);
  ASSERT_TRUE(weight.ok());
  std::vector<float> x(2 * 8, 1.0f), y(2 * 6), big(64, 0.0f);
  auto expect_invalid = [&](const TensorView& xv, const TensorView& yv, const std::string& needle) {
    const Status s = Linear(xv, *weight, yv);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  const TensorView xv = testing::View(x, Shape{2, 8});
  const TensorView yv = testing::View(y, Shape{2, 6});
  expect_invalid(testing::View(x, Shape{2, 7}), yv, "8 columns");
  expect_invalid(xv, testing::View(y, Shape{2, 5}), "must be [2, 6]");
  expect_invalid(xv, testing::View(y, Shape{1, 6}), "must be [2, 6]");
  expect_invalid(TensorView{x.data(), DType::kF16, Shape{2, 8}}, yv, "must be f32");
  expect_invalid(xv, TensorView{y.data(), DType::kBF16, Shape{2, 6}}, "must be f32");
  expect_invalid(TensorView{nullptr, DType::kF32, Shape{2, 8}}, yv, "null data");
  expect_invalid(TensorView{}, yv, "rank");  // rank 0
  // y overlapping x.
  expect_invalid(testing::View(big, Shape{2, 8}),
                 TensorView{big.data() + 4, DType::kF32, Shape{2, 6}}, "overlaps");
  // M = 0 is valid and touches nothing.
  EXPECT_TRUE(Linear(TensorView{nullptr, DType::kF32, Shape{0, 8}}, *weight,
                     TensorView{nullptr, DType::kF32, Shape{0, 6}})
                  .ok());
}

}  // namespace
}  // namespace unmask
