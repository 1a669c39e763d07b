// Each CUDA kernel (backend/cuda/cuda_kernels.h) against the CPU op it mirrors (src/ops), on the
// same random inputs, with the tolerance each test states. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backend/cuda/cuda_kernels.h"
#include "core/half.h"
#include "gpu_test_util.h"
#include "ops/activation.h"
#include "ops/convert.h"
#include "ops/norm.h"
#include "ops/rope.h"
#include "ops/softmax.h"

namespace unmask {
namespace {

std::vector<float> Random(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

TensorView View(std::vector<float>& v, Shape shape) { return {v.data(), DType::kF32, shape}; }

// |a - b| <= rel * |b| + abs, element by element.
void ExpectClose(const std::vector<float>& a, const std::vector<float>& b, double rel, double abs,
                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], rel * std::fabs(b[i]) + abs) << what << " at " << i;
  }
}

// Sum of squares in another order (a tree of 256 partial sums against the CPU's 32 SIMD lanes):
// the sum's relative error is at most d * 2^-24, which the scale 1/sqrt passes on halved, so
// rel 1e-6 * (d / 16) for d up to 8192, at least 1e-6.
TEST(CudaKernelsTest, RmsNormMatchesTheCpuOp) {
  UNMASK_REQUIRE_GPU();
  for (auto [m, d] : {std::pair<int64_t, int64_t>{1, 7}, {3, 576}, {5, 4097}}) {
    std::vector<float> x = Random(size_t(m * d), 1), w = Random(size_t(d), 2), y(x.size());
    ASSERT_TRUE(RmsNorm(View(x, {m, d}), View(w, {d}), 1e-5f, View(y, {m, d})).ok());
    auto dx = testing::Upload(x), dw = testing::Upload(w), dy = testing::Upload(y);
    ASSERT_EQ(
        cuda::RmsNormRows(dx.as<float>(), dw.as<float>(), m, d, 1e-5f, dy.as<float>(), nullptr), 0);
    ExpectClose(testing::Download<float>(dy, y.size()), y,
                std::max(1e-6, 1e-6 * static_cast<double>(d) / 16), 1e-7, "RmsNorm");
  }
}

// expf on the device (at most 2 ulp) against the CPU's vector Exp: rel 1e-6, abs 1e-7 near 0.
TEST(CudaKernelsTest, SwiGluMatchesTheCpuOp) {
  UNMASK_REQUIRE_GPU();
  const int64_t m = 4, f = 1536;
  std::vector<float> gu = Random(size_t(m * 2 * f), 3, 4.0f), out(size_t(m * f));
  ASSERT_TRUE(SwiGlu(View(gu, {m, 2 * f}), View(out, {m, f})).ok());
  auto dgu = testing::Upload(gu), dout = testing::Upload(out);
  ASSERT_EQ(cuda::SwiGluRows(dgu.as<float>(), m, f, dout.as<float>(), nullptr), 0);
  ExpectClose(testing::Download<float>(dout, out.size()), out, 1e-6, 1e-7, "SwiGlu");
}

// Softmax rows, one fully masked and one partly: expf and the sum in another order, rel 1e-5.
TEST(CudaKernelsTest, SoftmaxMatchesTheCpuOp) {
  UNMASK_REQUIRE_GPU();
  const int64_t m = 4, n = 49152;
  std::vector<float> x = Random(size_t(m * n), 4, 3.0f);
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) x[size_t(n + i)] = -inf;         // row 1: all -inf
  for (int64_t i = 0; i < n; i += 3) x[size_t(2 * n + i)] = -inf;  // row 2: partly
  std::vector<float> ref = x;
  ASSERT_TRUE(SoftmaxInPlace(View(ref, {m, n})).ok());
  auto dx = testing::Upload(x);
  ASSERT_EQ(cuda::SoftmaxRows(dx.as<float>(), m, n, nullptr), 0);
  const std::vector<float> got = testing::Download<float>(dx, x.size());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[size_t(n + i)], 0.0f) << i;
  ExpectClose(got, ref, 1e-5, 1e-9, "Softmax");
}

// Top-1 ids exactly (the first index on ties), the probability against float64: rel 1e-5.
TEST(CudaKernelsTest, ArgmaxGivesTheFirstMaximumAndItsProbability) {
  UNMASK_REQUIRE_GPU();
  const int64_t m = 5, n = 3072;
  std::vector<float> x = Random(size_t(m * n), 5, 2.0f);
  x[size_t(0 * n + 100)] = 9.0f;                          // row 0: one clear maximum
  x[size_t(1 * n + 7)] = x[size_t(1 * n + 2000)] = 9.5f;  // row 1: a tie, the first index wins
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) x[size_t(2 * n + i)] = -inf;  // row 2: fully masked
  x[size_t(3 * n + n - 1)] = 50.0f;                             // row 3: the last index
  auto dx = testing::Upload(x);
  auto ids = cuda::DeviceBuffer::Allocate(size_t(m) * 4);
  auto prob = cuda::DeviceBuffer::Allocate(size_t(m) * 4);
  ASSERT_TRUE(ids.ok() && prob.ok());
  ASSERT_EQ(cuda::ArgmaxRows(dx.as<float>(), m, n, ids->as<int32_t>(), prob->as<float>(), nullptr),
            0);
  const auto got_ids = testing::Download<int32_t>(*ids, size_t(m));
  const auto got_prob = testing::Download<float>(*prob, size_t(m));
  for (int64_t r = 0; r < m; ++r) {
    const float* row = x.data() + r * n;
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i) {
      if (row[i] > row[best]) best = i;
    }
    EXPECT_EQ(got_ids[size_t(r)], best) << "row " << r;
    if (row[best] == -inf) {
      EXPECT_EQ(got_prob[size_t(r)], 0.0f);
      continue;
    }
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += std::exp(double(row[i]) - row[best]);
    EXPECT_NEAR(got_prob[size_t(r)], 1.0 / s, 1e-5 / s) << "row " << r;
  }
  EXPECT_EQ(got_ids[1], 7);
  EXPECT_EQ(got_ids[3], n - 1);
}

// The same fma and products as the CPU kernel: bit-identical, both layouts, partial rotation.
TEST(CudaKernelsTest, RopeIsBitIdenticalToTheCpuOp) {
  UNMASK_REQUIRE_GPU();
  const int64_t m = 6, heads = 3, head_dim = 64, max_pos = 4096;
  for (int64_t rope_dim : {int64_t{64}, int64_t{32}}) {
    auto table = RopeTable::Create(rope_dim, 10000.0, max_pos);
    ASSERT_TRUE(table.ok());
    const std::vector<int32_t> pos = {0, 1, 17, 511, 4095, 3};
    std::vector<float> cos_t, sin_t;
    for (int64_t p = 0; p < max_pos; ++p) {
      cos_t.insert(cos_t.end(), table->cos(p), table->cos(p) + rope_dim / 2);
      sin_t.insert(sin_t.end(), table->sin(p), table->sin(p) + rope_dim / 2);
    }
    for (RopeLayout layout : {RopeLayout::kInterleaved, RopeLayout::kNeox}) {
      std::vector<float> x = Random(size_t(m * heads * head_dim), 6), ref = x;
      ASSERT_TRUE(ApplyRope(View(ref, {m, heads, head_dim}), pos, *table, layout).ok());
      auto dx = testing::Upload(x), dpos = testing::Upload(pos);
      auto dcos = testing::Upload(cos_t), dsin = testing::Upload(sin_t);
      ASSERT_EQ(
          cuda::RopeRows(dx.as<float>(), m, heads, head_dim, rope_dim, dpos.as<int32_t>(),
                         dcos.as<float>(), dsin.as<float>(), layout == RopeLayout::kNeox, nullptr),
          0);
      EXPECT_EQ(testing::Download<float>(dx, x.size()), ref)
          << "rope_dim " << rope_dim << (layout == RopeLayout::kNeox ? " neox" : " interleaved");
    }
  }
}

// Embedding rows from f32, f16 and bf16 tables: exact conversions, bit-identical to GetRows.
TEST(CudaKernelsTest, GetRowsIsBitIdenticalToTheCpuOp) {
  UNMASK_REQUIRE_GPU();
  const int64_t rows = 50, d = 576;
  const std::vector<float> f32 = Random(size_t(rows * d), 7);
  std::vector<uint16_t> f16, bf16;
  for (float v : f32) f16.push_back(F32ToF16(v)), bf16.push_back(F32ToBF16(v));
  const std::vector<int32_t> ids = {3, 0, 49, 3, 17};
  const auto n = static_cast<int64_t>(ids.size());
  const void* hosts[] = {f32.data(), f16.data(), bf16.data()};
  const DType types[] = {DType::kF32, DType::kF16, DType::kBF16};
  for (int t = 0; t < 3; ++t) {
    std::vector<float> ref(size_t(n * d));
    const TensorView table{const_cast<void*>(hosts[t]), types[t], Shape{rows, d}};
    ASSERT_TRUE(GetRows(table, ids, View(ref, {n, d})).ok());
    cuda::DeviceBuffer dt = t == 0 ? testing::Upload(f32) : testing::Upload(t == 1 ? f16 : bf16);
    auto dids = testing::Upload(ids);
    auto dout = cuda::DeviceBuffer::Allocate(ref.size() * 4);
    ASSERT_TRUE(dout.ok());
    ASSERT_EQ(cuda::GetRows(dt.data(), t, d, dids.as<int32_t>(), n, dout->as<float>(), nullptr), 0);
    EXPECT_EQ(testing::Download<float>(*dout, ref.size()), ref) << "dtype " << t;
  }
}

}  // namespace
}  // namespace unmask
