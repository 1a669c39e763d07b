// Linear with Q8_0 / Q4_0 / Q4_1 / Q4_K / Q6_K weights, both weight modes and both
// QuantActivations, M = 1..5 and 17 (Q8_0: 1..17; M <= 16 runs the fused kernels of
// linear_quant_cpu.cc / linear_quant_i8_cpu.cc / linear_q{8,4}_vnni_cpu.cc on the fly, in groups of
// 4 rows; M = 17 the dequantized panels), against a float64 dot product of the
// reference-dequantized weights (ops/ref/quant_ref) and the exact x. Q8_0 / Q4_0 / Q4_1 with int8 x
// run each instruction tier the CPU has (AVX-512 VNNI, AVX2; Int8Tier).
//
// Tolerance per element y_i = sum_k w_k x_k (float64 reference y_ref):
//  * exact weights and activations (kPacked, M = 5, QuantActivations::kF32): only f32
//    dot-product rounding, |y - y_ref| <= gamma_K * sum_k |w_k| |x_k| + u |y_ref| (gamma_K =
//    K u / (1 - K u), any summation order, with or without FMA).
//  * int8 activations (kOnTheFly, M <= 16, kInt8): x_k is replaced by d_b q_k with
//    |x_k - d_b q_k| <= 0.51 d_b, d_b = max_{k in block b} |x_k| / 127 (round to nearest, plus the
//    f32 rounding of d_b and x_k / d_b), which adds sum_b 0.51 d_b sum_{k in b} |w_k|. The integer
//    dot products are exact; the f32 part (block scale products, FMAs, the offset terms of Q4_1 and
//    Q4_K computed apart from the d * q terms) is bounded by gamma_K * sum_k (|w_k| + 2 |m_k|)
//    (|x_k| + 0.51 d_b), m_k the block offset (m, or dmin * mn) of the types that have one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_isa.h"
#include "core/half.h"
#include "op_test_util.h"
#include "ops/linear.h"
#include "ops/linear_impl.h"
#include "ops/linear_packed_quant.h"
#include "ops/linear_q4_vnni.h"
#include "ops/linear_q8_vnni.h"
#include "ops/ref/convert_ref.h"
#include "ops/ref/quant_ref.h"
#include "quant_test_util.h"

namespace unmask {
namespace {

using testing::Gamma;
using testing::kU;

// W [n, k] in `dtype`: random bytes with random finite scales (every nibble value, negative and
// zero scales; `random_bytes`), or quantized from uniform values (realistic weights).
struct QuantWeight {
  std::vector<uint8_t> bytes;
  std::vector<float> f32;  // reference dequantization, [n, k]
  TensorView view;
};

QuantWeight MakeQuantWeight(DType dtype, int64_t n, int64_t k, uint64_t seed, bool random_bytes) {
  QuantWeight w;
  const int64_t block = GetDTypeInfo(dtype).block_size;
  if (random_bytes) {
    w.bytes = testing::RandomBlocks(dtype, n * k / block, seed, /*non_finite=*/false);
  } else {
    const testing::Table t = testing::MakeTable(dtype, n, k, seed);
    w.bytes = t.bytes;
  }
  w.f32.resize(static_cast<size_t>(n * k));
  EXPECT_TRUE(ref::ConvertRowToF32(dtype, w.bytes.data(), n * k, w.f32.data()));
  w.view = TensorView{w.bytes.data(), dtype, Shape{n, k}};
  return w;
}

// |m_k| of each element of W [n, k] (Q4_1: the block's m, Q4_K: dmin * mn of the sub-block; 0 for
// the other types): the offset terms the int8 kernels add apart from the d * q terms.
std::vector<float> OffsetMagnitudes(DType dtype, const uint8_t* bytes, int64_t count) {
  std::vector<float> out(static_cast<size_t>(count), 0.0f);
  if (dtype == DType::kQ4_1) {
    const auto* blocks = reinterpret_cast<const BlockQ4_1*>(bytes);
    for (int64_t e = 0; e < count; ++e) {
      out[static_cast<size_t>(e)] = std::fabs(F16ToF32(blocks[e / kQ4_1BlockSize].m));
    }
  } else if (dtype == DType::kQ4_K) {
    const auto* blocks = reinterpret_cast<const BlockQ4_K*>(bytes);
    for (int64_t e = 0; e < count; ++e) {
      const BlockQ4_K& b = blocks[e / kQkK];
      uint8_t sc = 0, mn = 0;
      ref::Q4KScaleMin(b.scales, static_cast<int>(e % kQkK / 32), &sc, &mn);
      out[static_cast<size_t>(e)] = std::fabs(F16ToF32(b.dmin) * static_cast<float>(mn));
    }
  }
  return out;
}

// The int8 image d_b q_k of x [m, k] that the kernels multiply (ops QuantizeX: d_b = max |x| / 127
// in f32, q_k = x_k * (1 / d_b) rounded to nearest even), recomputed here with the same f32
// operations.
std::vector<float> Int8Image(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0.0f;
    for (size_t t = 0; t < 32; ++t) amax = std::max(amax, std::fabs(x[32 * b + t]));
    const float d = amax / 127.0f;
    for (size_t t = 0; t < 32; ++t) {
      const float v = x[32 * b + t];
      out[32 * b + t] = d >= std::numeric_limits<float>::min() ? d * std::nearbyint(v * (1.0f / d))
                        : d > 0.0f                             ? d * std::nearbyint(v / d)
                                                               : 0.0f;
    }
  }
  return out;
}

// Checks y [m, n] against the float64 dot products of x [m, k] and w_f32 [n, k] with the bounds
// above. With int8 activations also against the dot products with Int8Image(x), where only the
// f32 rounding bound applies (this pins the kernels' arithmetic, the first check the promise of
// linear.h); `offsets` (|m_k|, [n, k]) is used there only.
// `exact_rows`: rows of W without an int8 kernel (F32/F16/BF16: exact x even in int8 mode).
void ExpectMatchesFloat64Dot(const std::vector<float>& x, const std::vector<float>& w_f32,
                             int64_t m, int64_t k, int64_t n, const std::vector<float>& y,
                             bool int8_x, const std::vector<float>& offsets,
                             const std::vector<bool>& exact_rows = {}) {
  const std::vector<float> x_hat = int8_x ? Int8Image(x) : x;
  int failures = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const bool int8_activations =
          int8_x && (exact_rows.empty() || !exact_rows[static_cast<size_t>(j)]);
      double dot = 0.0, abs_dot = 0.0, quant_err = 0.0, dot_hat = 0.0, parts = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const auto idx = static_cast<size_t>(i * k + p);
        const double xv = x[idx], xh = x_hat[idx];
        const double wv = w_f32[static_cast<size_t>(j * k + p)];
        dot += xv * wv;
        abs_dot += std::fabs(xv * wv);
        if (int8_activations) {
          double amax = 0.0;  // of x's block
          for (int64_t t = p / 32 * 32; t < p / 32 * 32 + 32; ++t) {
            amax =
                std::max(amax, std::fabs(static_cast<double>(x[static_cast<size_t>(i * k + t)])));
          }
          quant_err += 0.51 * amax / 127.0 * std::fabs(wv);
          dot_hat += xh * wv;
          parts += (std::fabs(wv) + 2.0 * offsets[static_cast<size_t>(j * k + p)]) * std::fabs(xh);
        }
      }
      const double got = y[static_cast<size_t>(i * n + j)];
      const double bound = int8_activations ? quant_err + Gamma(k) * parts + kU * std::fabs(dot)
                                            : Gamma(k) * abs_dot + kU * std::fabs(dot);
      const double bound_hat = Gamma(k) * parts + kU * std::fabs(dot_hat);
      const bool ok = std::fabs(got - dot) <= bound &&
                      (!int8_activations || std::fabs(got - dot_hat) <= bound_hat);
      if (!ok && failures++ < 5) {  // !(<=) also catches NaN
        ADD_FAILURE() << "y[" << i << ", " << j << "] = " << got << ", float64 dot " << dot
                      << " (bound " << bound << ")"
                      << (int8_activations ? ", with the int8 x " + std::to_string(dot_hat) +
                                                 " (bound " + std::to_string(bound_hat) + ")"
                                           : std::string())
                      << " (m=" << m << " k=" << k << " n=" << n << ")";
      }
    }
  }
}

std::string ModeName(WeightMode mode) {
  return mode == WeightMode::kOnTheFly ? "onthefly" : "packed";
}

std::string ActivationsName(QuantActivations a) {
  return a == QuantActivations::kInt8 ? "int8x" : "f32x";
}

using QuantParam = std::tuple<DType, WeightMode, QuantActivations>;

// The types with an AVX-512 VNNI tier of their int8 kernel.
bool HasVnniTier(DType dtype) {
  return dtype == DType::kQ8_0 || dtype == DType::kQ4_0 || dtype == DType::kQ4_1;
}

// The int8 kernel's tiers to run for Q8_0 / Q4_0 / Q4_1 (each capped by LimitInt8KernelTier; on a
// CPU without AVX-512 VNNI both caps run the AVX2 tier); one pass for the other types.
std::vector<cpu::Int8Tier> TiersFor(DType dtype) {
  if (!HasVnniTier(dtype)) return {cpu::Int8Tier::kAvx512Vnni};
  return {cpu::Int8Tier::kAvx512Vnni, cpu::Int8Tier::kAvx2};
}

std::string TierName(cpu::Int8Tier tier) {
  switch (tier) {
    case cpu::Int8Tier::kAvx512Vnni:
      return "avx512vnni";
    case cpu::Int8Tier::kAvx2:
      return "avx2";
    default:
      return "scalar";
  }
}

// Caps the int8 kernel tier for one scope.
class ScopedTier {
 public:
  explicit ScopedTier(cpu::Int8Tier max) { cpu::LimitInt8KernelTier(max); }
  ~ScopedTier() { cpu::LimitInt8KernelTier(cpu::Int8Tier::kAvx512Vnni); }
  ScopedTier(const ScopedTier&) = delete;
  ScopedTier& operator=(const ScopedTier&) = delete;
};

class LinearQuantTest : public ::testing::TestWithParam<QuantParam> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::SelectProvider(cpu::GemmProvider::kOneDnn).ok());
    SetQuantActivations(std::get<2>(GetParam()));
  }
  void TearDown() override {
    SetQuantActivations(QuantActivations::kInt8);
    testing::RestoreDefaultProvider();
  }
};

TEST_P(LinearQuantTest, MatchesFloat64DotForM1To5And17) {
  const auto [dtype, mode, activations] = GetParam();
  struct Dims {
    int64_t k, n;
  };
  // SmolLM2-135M's K (576 = 18 blocks of 32; its K-quant tensors have K = 1536) and odd N.
  // Q8_0 / Q4_0 / Q4_1 also with odd numbers of blocks (1, 3, 7: the kernels take blocks in pairs)
  // and every M of the fused path.
  const std::vector<Dims> dims =
      GetDTypeInfo(dtype).block_size == kQkK ? std::vector<Dims>{{256, 1}, {512, 37}, {1536, 70}}
      : HasVnniTier(dtype)
          ? std::vector<Dims>{{32, 1}, {64, 37}, {96, 13}, {224, 11}, {576, 70}, {1536, 9}}
          : std::vector<Dims>{{32, 1}, {64, 37}, {576, 70}, {1536, 9}};
  std::vector<int64_t> ms = {1, 2, 3, 4, 5, 17};
  if (HasVnniTier(dtype)) ms = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
  uint64_t seed = 1;
  for (const cpu::Int8Tier tier : TiersFor(dtype)) {
    const ScopedTier scoped(tier);
    for (const Dims& d : dims) {
      for (bool random_bytes : {true, false}) {
        const QuantWeight w = MakeQuantWeight(dtype, d.n, d.k, seed++, random_bytes);
        const std::vector<float> offsets = OffsetMagnitudes(dtype, w.bytes.data(), d.n * d.k);
        auto weight = LinearWeight::Prepare({&w.view, 1}, mode);
        ASSERT_TRUE(weight.ok()) << weight.status().ToString();
        for (int64_t m : ms) {
          SCOPED_TRACE("m=" + std::to_string(m) + " k=" + std::to_string(d.k) + " n=" +
                       std::to_string(d.n) + (random_bytes ? " random bytes" : " quantized") +
                       " tier " + TierName(cpu::Int8KernelTier()));
          const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(m * d.k), seed++);
          std::vector<float> y(static_cast<size_t>(m * d.n),
                               std::numeric_limits<float>::quiet_NaN());
          const Status s =
              Linear(testing::View(x, Shape{m, d.k}), *weight, testing::View(y, Shape{m, d.n}));
          ASSERT_TRUE(s.ok()) << s.ToString();
          const bool int8 =
              activations == QuantActivations::kInt8 && mode == WeightMode::kOnTheFly && m <= 16;
          ExpectMatchesFloat64Dot(x, w.f32, m, d.k, d.n, y, int8, offsets);
        }
      }
    }
  }
}

// With weights kept native, a row of y does not depend on how many rows share the call (up to the
// 16 of the fused path): speculative verification must reproduce one-token decoding bit for bit.
TEST_P(LinearQuantTest, RowsDoNotDependOnM) {
  const auto [dtype, mode, activations] = GetParam();
  if (mode != WeightMode::kOnTheFly) GTEST_SKIP() << "packed GEMM rows may depend on M";
  const int64_t k = GetDTypeInfo(dtype).block_size == kQkK ? 512 : 576, n = 45;
  const QuantWeight w = MakeQuantWeight(dtype, n, k, 99, false);
  auto weight = LinearWeight::Prepare({&w.view, 1}, mode);
  ASSERT_TRUE(weight.ok());
  for (const cpu::Int8Tier tier : TiersFor(dtype)) {
    const ScopedTier scoped(tier);
    for (int64_t m : {2, 3, 4, 5, 9, 16}) {
      const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(m * k), 7);
      std::vector<float> y(static_cast<size_t>(m * n)), y1(static_cast<size_t>(n));
      ASSERT_TRUE(
          Linear(testing::View(x, Shape{m, k}), *weight, testing::View(y, Shape{m, n})).ok());
      for (int64_t i = 0; i < m; ++i) {
        const std::vector<float> xi(x.begin() + i * k, x.begin() + (i + 1) * k);
        ASSERT_TRUE(
            Linear(testing::View(xi, Shape{1, k}), *weight, testing::View(y1, Shape{1, n})).ok());
        for (int64_t j = 0; j < n; ++j) {
          ASSERT_EQ(y[static_cast<size_t>(i * n + j)], y1[static_cast<size_t>(j)])
              << "m=" << m << " row " << i << " col " << j << " tier "
              << TierName(cpu::Int8KernelTier());
        }
      }
    }
  }
}

// Activations of very different magnitudes from block to block (each 32-element x block has its
// own scale) and blocks of zeros.
TEST_P(LinearQuantTest, ActivationScalesPerBlock) {
  const auto [dtype, mode, activations] = GetParam();
  const int64_t k = 512, n = 45, m = 3;
  const QuantWeight w = MakeQuantWeight(dtype, n, k, 77, true);
  const std::vector<float> offsets = OffsetMagnitudes(dtype, w.bytes.data(), n * k);
  auto weight = LinearWeight::Prepare({&w.view, 1}, mode);
  ASSERT_TRUE(weight.ok());
  std::vector<float> x = testing::RandomFloats(static_cast<size_t>(m * k), 78);
  for (int64_t b = 0; b < m * k / 32; ++b) {
    // Zero blocks, 2^-18 .. 2^18, and blocks so small that 1 / d overflows (d < FLT_MIN).
    const float scale = b % 5 == 0    ? 0.0f
                        : b % 11 == 1 ? 1e-37f
                                      : std::ldexp(1.0f, static_cast<int>(b % 7) * 6 - 18);
    for (int64_t t = 0; t < 32; ++t) x[static_cast<size_t>(32 * b + t)] *= scale;
  }
  std::vector<float> y(static_cast<size_t>(m * n));
  ASSERT_TRUE(Linear(testing::View(x, Shape{m, k}), *weight, testing::View(y, Shape{m, n})).ok());
  const bool int8 = activations == QuantActivations::kInt8 && mode == WeightMode::kOnTheFly;
  ExpectMatchesFloat64Dot(x, w.f32, m, k, n, y, int8, offsets);
}

// A NaN in x reaches y (with int8 activations its block scale becomes NaN).
TEST_P(LinearQuantTest, NaNInXPropagates) {
  const auto [dtype, mode, activations] = GetParam();
  const int64_t k = 256, n = 5;
  const QuantWeight w = MakeQuantWeight(dtype, n, k, 5, false);
  auto weight = LinearWeight::Prepare({&w.view, 1}, mode);
  ASSERT_TRUE(weight.ok());
  std::vector<float> x = testing::RandomFloats(static_cast<size_t>(2 * k), 6);
  x[static_cast<size_t>(k + 100)] = std::numeric_limits<float>::quiet_NaN();  // row 1 only
  std::vector<float> y(static_cast<size_t>(2 * n));
  ASSERT_TRUE(Linear(testing::View(x, Shape{2, k}), *weight, testing::View(y, Shape{2, n})).ok());
  for (int64_t j = 0; j < n; ++j) {
    EXPECT_FALSE(std::isnan(y[static_cast<size_t>(j)])) << j;
    EXPECT_TRUE(std::isnan(y[static_cast<size_t>(n + j)])) << j;
  }
}

TEST_P(LinearQuantTest, KNotAWholeNumberOfBlocksIsRejected) {
  const auto [dtype, mode, activations] = GetParam();
  const int64_t block = GetDTypeInfo(dtype).block_size;
  std::vector<uint8_t> buf(64 * 1024);
  // 576 is SmolLM2's hidden size: fine for Q4_0/Q4_1, not for the 256-element K-quants.
  for (int64_t k : {block / 2, block + 32, int64_t{576}}) {
    if (k % block == 0) continue;
    const TensorView part{buf.data(), dtype, Shape{4, k}};
    auto w = LinearWeight::Prepare({&part, 1}, mode);
    ASSERT_FALSE(w.ok()) << "k=" << k;
    EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument) << w.status().ToString();
    const std::string want = "in_features " + std::to_string(k) + " is not a multiple of the " +
                             std::string(DTypeName(dtype)) + " block size " + std::to_string(block);
    EXPECT_NE(w.status().message().find(want), std::string::npos) << w.status().message();
  }
}

INSTANTIATE_TEST_SUITE_P(
    QuantTypesAndModes, LinearQuantTest,
    ::testing::Combine(::testing::Values(DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ4_K,
                                         DType::kQ6_K),
                       ::testing::Values(WeightMode::kPacked, WeightMode::kOnTheFly),
                       ::testing::Values(QuantActivations::kInt8, QuantActivations::kF32)),
    [](const ::testing::TestParamInfo<QuantParam>& p) {
      return std::string(DTypeName(std::get<0>(p.param))) + "_" + ModeName(std::get<1>(p.param)) +
             "_" + ActivationsName(std::get<2>(p.param));
    });

class LinearQuantMixedTest : public ::testing::TestWithParam<QuantActivations> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::SelectProvider(cpu::GemmProvider::kOneDnn).ok());
    SetQuantActivations(GetParam());
  }
  void TearDown() override {
    SetQuantActivations(QuantActivations::kInt8);
    testing::RestoreDefaultProvider();
  }
};

// One fused weight whose parts are all four quantized types plus F16 and Q8_0: the fused kernel
// switches kernels per segment, with segment row offsets that are not multiples of the chunk size.
TEST_P(LinearQuantMixedTest, PartsOfEveryQuantizedType) {
  const int64_t k = 512;
  const DType dtypes[] = {DType::kQ4_0, DType::kQ6_K, DType::kF16,
                          DType::kQ4_K, DType::kQ8_0, DType::kQ4_1};
  const int64_t rows[] = {37, 5, 40, 66, 3, 33};
  std::vector<QuantWeight> quant;
  std::vector<testing::Table> plain;
  std::vector<TensorView> parts;
  std::vector<float> w_f32, offsets;
  std::vector<bool> exact_rows;
  quant.reserve(std::size(dtypes));
  plain.reserve(std::size(dtypes));
  for (size_t p = 0; p < std::size(dtypes); ++p) {
    const std::vector<float>* f32 = nullptr;
    if (testing::IsQuantType(dtypes[p])) {
      quant.push_back(MakeQuantWeight(dtypes[p], rows[p], k, 100 + p, p % 2 == 0));
      parts.push_back(quant.back().view);
      f32 = &quant.back().f32;
      const std::vector<float> o =
          OffsetMagnitudes(dtypes[p], quant.back().bytes.data(), rows[p] * k);
      offsets.insert(offsets.end(), o.begin(), o.end());
    } else {
      plain.push_back(testing::MakeTable(dtypes[p], rows[p], k, 100 + p));
      parts.push_back(plain.back().view);
      f32 = &plain.back().f32;
      offsets.insert(offsets.end(), static_cast<size_t>(rows[p] * k), 0.0f);
    }
    w_f32.insert(w_f32.end(), f32->begin(), f32->end());
    exact_rows.insert(exact_rows.end(), static_cast<size_t>(rows[p]),
                      !cpu::HasInt8Kernel(dtypes[p]));
  }
  const int64_t n = static_cast<int64_t>(w_f32.size()) / k;
  for (WeightMode mode : {WeightMode::kOnTheFly, WeightMode::kPacked}) {
    auto weight = LinearWeight::Prepare(parts, mode);
    ASSERT_TRUE(weight.ok()) << weight.status().ToString();
    ASSERT_EQ(weight->out_features(), n);
    for (int64_t m : {1, 2, 3, 4, 5, 9}) {
      SCOPED_TRACE(ModeName(mode) + " m=" + std::to_string(m));
      const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(m * k), 7 + m);
      std::vector<float> y(static_cast<size_t>(m * n), std::numeric_limits<float>::quiet_NaN());
      ASSERT_TRUE(
          Linear(testing::View(x, Shape{m, k}), *weight, testing::View(y, Shape{m, n})).ok());
      const bool int8 =
          GetParam() == QuantActivations::kInt8 && mode == WeightMode::kOnTheFly && m <= 16;
      ExpectMatchesFloat64Dot(x, w_f32, m, k, n, y, int8, offsets, exact_rows);
    }
  }
}

// The kernels skip nothing: a weight whose only non-zero element sits in the last block of the last
// row, at each position of that block, is seen in y.
TEST_P(LinearQuantMixedTest, EveryPositionOfTheLastBlockCounts) {
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ4_K, DType::kQ6_K}) {
    const int64_t block = GetDTypeInfo(dtype).block_size;
    const int64_t k = 2 * block, n = 3;
    for (int64_t pos = 0; pos < block; ++pos) {
      std::vector<float> values(static_cast<size_t>(n * k), 0.0f);
      values[static_cast<size_t>((n - 1) * k + block + pos)] = 1.0f;
      std::vector<uint8_t> bytes(*RowBytes(dtype, k) * static_cast<size_t>(n));
      for (int64_t r = 0; r < n; ++r) {
        testing::QuantizeRow(dtype, values.data() + r * k, k,
                             bytes.data() + static_cast<size_t>(r) * *RowBytes(dtype, k));
      }
      std::vector<float> w_f32(values.size());
      ASSERT_TRUE(ref::ConvertRowToF32(dtype, bytes.data(), n * k, w_f32.data()));
      ASSERT_NE(w_f32[static_cast<size_t>(2 * k + block + pos)], 0.0f) << DTypeName(dtype);
      const TensorView view{bytes.data(), dtype, Shape{n, k}};
      auto weight = LinearWeight::Prepare({&view, 1}, WeightMode::kOnTheFly);
      ASSERT_TRUE(weight.ok());
      std::vector<float> x(static_cast<size_t>(k));
      for (int64_t p = 0; p < k; ++p) x[static_cast<size_t>(p)] = static_cast<float>(p + 1);
      std::vector<float> y(static_cast<size_t>(n));
      ASSERT_TRUE(
          Linear(testing::View(x, Shape{1, k}), *weight, testing::View(y, Shape{1, n})).ok());
      SCOPED_TRACE(std::string(DTypeName(dtype)) + " pos " + std::to_string(pos));
      ExpectMatchesFloat64Dot(x, w_f32, 1, k, n, y, GetParam() == QuantActivations::kInt8,
                              OffsetMagnitudes(dtype, bytes.data(), n * k));
      EXPECT_GT(std::fabs(y[2]), 0.5f * static_cast<float>(block + pos + 1));
    }
  }
}

// Q8_0 with int8 x, per tier: a weight block with a NaN scale makes its row NaN (as the f32 path
// does), zero-scale and all-zero blocks add nothing, and q = -128 (never written by ggml, valid in
// a file) is multiplied exactly.
TEST(LinearQ8_0Int8Test, NaNZeroAndMinusOneTwentyEightBlocks) {
  ASSERT_TRUE(testing::SelectProvider(cpu::GemmProvider::kOneDnn).ok());
  SetQuantActivations(QuantActivations::kInt8);
  const int64_t k = 224, n = 6, nb = k / 32;  // 7 blocks: pairs and a last odd one
  std::vector<BlockQ8_0> blocks(static_cast<size_t>(n * nb));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ8_0& blk = blocks[static_cast<size_t>(r * nb + b)];
      blk.d = F32ToF16(0.25f * static_cast<float>(b + 1));
      for (int t = 0; t < 32; ++t)
        blk.qs[t] = static_cast<int8_t>((r * 37 + b * 11 + t * 5) % 255 - 127);
    }
  }
  blocks[static_cast<size_t>(0 * nb + 3)].d = 0x7E00;  // row 0: NaN scale in a paired block
  blocks[static_cast<size_t>(1 * nb + 6)].d = 0x7E00;  // row 1: NaN scale in the last block
  for (int64_t b = 0; b < nb; ++b) blocks[static_cast<size_t>(2 * nb + b)].d = 0;  // row 2: d = 0
  for (int64_t b = 0; b < nb; ++b) {                                               // row 3: q = 0
    std::fill(std::begin(blocks[static_cast<size_t>(3 * nb + b)].qs),
              std::end(blocks[static_cast<size_t>(3 * nb + b)].qs), int8_t{0});
  }
  for (int64_t b = 0; b < nb; ++b) {  // row 4: every q = -128
    std::fill(std::begin(blocks[static_cast<size_t>(4 * nb + b)].qs),
              std::end(blocks[static_cast<size_t>(4 * nb + b)].qs), int8_t{-128});
  }
  const TensorView view{blocks.data(), DType::kQ8_0, Shape{n, k}};
  std::vector<float> w_f32(static_cast<size_t>(n * k));
  ASSERT_TRUE(ref::ConvertRowToF32(DType::kQ8_0, blocks.data(), n * k, w_f32.data()));
  auto weight = LinearWeight::Prepare({&view, 1}, WeightMode::kOnTheFly);
  ASSERT_TRUE(weight.ok());
  for (const cpu::Int8Tier tier : TiersFor(DType::kQ8_0)) {
    const ScopedTier scoped(tier);
    SCOPED_TRACE("tier " + TierName(cpu::Int8KernelTier()));
    for (int64_t m : {1, 3, 4, 6}) {
      const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(m * k), 40 + m);
      std::vector<float> y(static_cast<size_t>(m * n));
      ASSERT_TRUE(
          Linear(testing::View(x, Shape{m, k}), *weight, testing::View(y, Shape{m, n})).ok());
      for (int64_t i = 0; i < m; ++i) {
        EXPECT_TRUE(std::isnan(y[static_cast<size_t>(i * n + 0)])) << "m=" << m << " i=" << i;
        EXPECT_TRUE(std::isnan(y[static_cast<size_t>(i * n + 1)])) << "m=" << m << " i=" << i;
        EXPECT_EQ(y[static_cast<size_t>(i * n + 2)], 0.0f) << "m=" << m << " i=" << i;
        EXPECT_EQ(y[static_cast<size_t>(i * n + 3)], 0.0f) << "m=" << m << " i=" << i;
      }
      // Rows 4 and 5 against the float64 products (rows 0-3 are not finite or trivially 0).
      std::vector<float> w45(w_f32.begin() + 4 * k, w_f32.end()), y45;
      for (int64_t i = 0; i < m; ++i) {
        y45.push_back(y[static_cast<size_t>(i * n + 4)]);
        y45.push_back(y[static_cast<size_t>(i * n + 5)]);
      }
      ExpectMatchesFloat64Dot(x, w45, m, k, 2, y45, true,
                              std::vector<float>(static_cast<size_t>(2 * k), 0.0f));
    }
  }
  testing::RestoreDefaultProvider();
}

// Q4_0 / Q4_1 with int8 x, per tier: a NaN scale in a paired block or in the last (odd) block makes
// its row NaN, zero-scale blocks and blocks whose value is 0 (Q4_0 codes 8, Q4_1 codes 0 with m =
// 0) add nothing, and the extreme codes 0 and 15 are multiplied exactly.
template <class Block>
void CheckQ4NaNAndZeroBlocks(DType dtype) {
  constexpr bool kQ4_1 = std::is_same_v<Block, BlockQ4_1>;
  const int64_t k = 224, n = 6, nb = k / 32;  // 7 blocks: pairs and a last odd one
  std::vector<Block> blocks(static_cast<size_t>(n * nb));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      Block& blk = blocks[static_cast<size_t>(r * nb + b)];
      blk.d = F32ToF16(0.25f * static_cast<float>(b + 1));
      if constexpr (kQ4_1) blk.m = F32ToF16(-0.5f * static_cast<float>(b));
      for (int t = 0; t < 16; ++t)
        blk.qs[t] = static_cast<uint8_t>((r * 37 + b * 11 + t * 5) % 256);
    }
  }
  blocks[static_cast<size_t>(0 * nb + 3)].d = 0x7E00;  // row 0: NaN scale in a paired block
  blocks[static_cast<size_t>(1 * nb + 6)].d = 0x7E00;  // row 1: NaN scale in the last block
  for (int64_t b = 0; b < nb; ++b) {                   // row 2: d = 0 (and m = 0)
    blocks[static_cast<size_t>(2 * nb + b)].d = 0;
    if constexpr (kQ4_1) blocks[static_cast<size_t>(2 * nb + b)].m = 0;
  }
  for (int64_t b = 0; b < nb; ++b) {  // row 3: every weight 0
    Block& blk = blocks[static_cast<size_t>(3 * nb + b)];
    std::fill(std::begin(blk.qs), std::end(blk.qs), static_cast<uint8_t>(kQ4_1 ? 0x00 : 0x88));
    if constexpr (kQ4_1) blk.m = 0;
  }
  for (int64_t b = 0; b < nb; ++b) {  // row 4: codes 15 / 0, row 5: 0 / 15
    std::fill(std::begin(blocks[static_cast<size_t>(4 * nb + b)].qs),
              std::end(blocks[static_cast<size_t>(4 * nb + b)].qs), uint8_t{0x0F});
    std::fill(std::begin(blocks[static_cast<size_t>(5 * nb + b)].qs),
              std::end(blocks[static_cast<size_t>(5 * nb + b)].qs), uint8_t{0xF0});
  }
  const TensorView view{blocks.data(), dtype, Shape{n, k}};
  std::vector<float> w_f32(static_cast<size_t>(n * k));
  ASSERT_TRUE(ref::ConvertRowToF32(dtype, blocks.data(), n * k, w_f32.data()));
  const std::vector<float> offsets =
      OffsetMagnitudes(dtype, reinterpret_cast<const uint8_t*>(blocks.data() + 4 * nb), 2 * k);
  auto weight = LinearWeight::Prepare({&view, 1}, WeightMode::kOnTheFly);
  ASSERT_TRUE(weight.ok());
  for (const cpu::Int8Tier tier : TiersFor(dtype)) {
    const ScopedTier scoped(tier);
    SCOPED_TRACE("tier " + TierName(cpu::Int8KernelTier()));
    for (int64_t m : {1, 3, 4, 6}) {
      const std::vector<float> x = testing::RandomFloats(static_cast<size_t>(m * k), 40 + m);
      std::vector<float> y(static_cast<size_t>(m * n));
      ASSERT_TRUE(
          Linear(testing::View(x, Shape{m, k}), *weight, testing::View(y, Shape{m, n})).ok());
      for (int64_t i = 0; i < m; ++i) {
        EXPECT_TRUE(std::isnan(y[static_cast<size_t>(i * n + 0)])) << "m=" << m << " i=" << i;
        EXPECT_TRUE(std::isnan(y[static_cast<size_t>(i * n + 1)])) << "m=" << m << " i=" << i;
        EXPECT_EQ(y[static_cast<size_t>(i * n + 2)], 0.0f) << "m=" << m << " i=" << i;
        EXPECT_EQ(y[static_cast<size_t>(i * n + 3)], 0.0f) << "m=" << m << " i=" << i;
      }
      std::vector<float> w45(w_f32.begin() + 4 * k, w_f32.end()), y45;
      for (int64_t i = 0; i < m; ++i) {
        y45.push_back(y[static_cast<size_t>(i * n + 4)]);
        y45.push_back(y[static_cast<size_t>(i * n + 5)]);
      }
      ExpectMatchesFloat64Dot(x, w45, m, k, 2, y45, true, offsets);
    }
  }
}

TEST(LinearQ4Int8Test, NaNZeroAndExtremeCodeBlocks) {
  ASSERT_TRUE(testing::SelectProvider(cpu::GemmProvider::kOneDnn).ok());
  SetQuantActivations(QuantActivations::kInt8);
  {
    SCOPED_TRACE("q4_0");
    CheckQ4NaNAndZeroBlocks<BlockQ4_0>(DType::kQ4_0);
  }
  {
    SCOPED_TRACE("q4_1");
    CheckQ4NaNAndZeroBlocks<BlockQ4_1>(DType::kQ4_1);
  }
  testing::RestoreDefaultProvider();
}

// The tier follows the CPU: AVX-512 VNNI where it has AVX-512 F/BW/VL + VNNI and the build compiled
// that kernel, and the cap lowers it.
// The 16-row layout of the packed kernel (linear_packed_quant.h): every stored byte of every row
// comes back, for row counts that leave the last group partial, and the layout is the documented
// dword transpose.
TEST(PackedQuantTest, RowsComeBackAndTheLayoutIsTheTranspose) {
  struct Case {
    DType dtype;
    cpu::PackedQuant type;
    size_t block_bytes, header;
  };
  for (const Case& c : {Case{DType::kQ4_0, cpu::PackedQuant::kQ4_0, 18, 2},
                        Case{DType::kQ4_1, cpu::PackedQuant::kQ4_1, 20, 4},
                        Case{DType::kQ8_0, cpu::PackedQuant::kQ8_0, 34, 2}}) {
    for (int64_t rows : {1, 15, 16, 17, 45}) {
      const int64_t nb = 3;
      const size_t row_bytes = nb * c.block_bytes;
      const std::vector<uint8_t> data = testing::RandomBlocks(c.dtype, rows * nb, 5, false);
      std::vector<uint8_t> packed(cpu::PackedBytes(c.type, rows, nb), 0xAB);
      cpu::PackRows(c.type, data.data(), row_bytes, rows, nb, packed.data());
      EXPECT_EQ(packed.size(),
                static_cast<size_t>((rows + 15) / 16 * nb) * cpu::PackedUnitBytes(c.type));
      std::vector<uint8_t> row(row_bytes);
      for (int64_t j = 0; j < rows; ++j) {
        cpu::UnpackRow(c.type, packed.data(), j, nb, row.data());
        ASSERT_TRUE(std::equal(row.begin(), row.end(), data.begin() + j * row_bytes))
            << DTypeName(c.dtype) << " rows " << rows << " row " << j;
      }
      // Block 1 of row 5: dword 2 of its codes is at codes[2][4 * 5] of unit (group 0, block 1).
      if (rows > 5) {
        const uint8_t* unit = packed.data() + 1 * cpu::PackedUnitBytes(c.type);
        EXPECT_TRUE(std::equal(unit + 64 * 2 + 4 * 5, unit + 64 * 2 + 4 * 5 + 4,
                               data.begin() + 5 * row_bytes + c.block_bytes + c.header + 8));
      }
    }
  }
}

// Where the packed kernel runs, a prepared Q4 / Q8_0 weight owns its packed copy.
TEST(PackedQuantTest, PackedWeightsOwnTheirCopy) {
  const QuantWeight w = MakeQuantWeight(DType::kQ4_1, 37, 576, 3, false);
  auto weight = LinearWeight::Prepare({&w.view, 1}, WeightMode::kOnTheFly);
  ASSERT_TRUE(weight.ok());
  if (cpu::PackQuantWeights(DType::kQ4_1)) {
    EXPECT_EQ(weight->owned_bytes(), cpu::PackedBytes(cpu::PackedQuant::kQ4_1, 37, 18));
  } else {
    EXPECT_EQ(weight->owned_bytes(), 0u);
  }
}

TEST(LinearQ8_0Int8Test, TierFollowsTheCpu) {
  const cpu::Int8Tier tier = cpu::Int8KernelTier();
  const cpu::CpuFeatures& f = cpu::GetCpuFeatures();
  const bool vnni = f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni;
  if (tier == cpu::Int8Tier::kAvx512Vnni) {
    EXPECT_TRUE(vnni);
  }
#if defined(__x86_64__) && defined(__AVX2__)
  EXPECT_NE(tier, cpu::Int8Tier::kScalar);
  if (vnni && cpu::Q8_0VnniCompiled() && cpu::Q4VnniCompiled()) {
    EXPECT_EQ(tier, cpu::Int8Tier::kAvx512Vnni);
  }
#endif
  {
    const ScopedTier scoped(cpu::Int8Tier::kAvx2);
    EXPECT_LE(cpu::Int8KernelTier(), cpu::Int8Tier::kAvx2);
  }
  EXPECT_EQ(cpu::Int8KernelTier(), tier);
  std::printf("int8 kernel tier on this CPU: %s\n", TierName(tier).c_str());
}

INSTANTIATE_TEST_SUITE_P(BothActivations, LinearQuantMixedTest,
                         ::testing::Values(QuantActivations::kInt8, QuantActivations::kF32),
                         [](const auto& p) { return ActivationsName(p.param); });

}  // namespace
}  // namespace unmask
