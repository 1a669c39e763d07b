// Shared helpers for the op tests: deterministic random data, error metrics, GEMM-provider
// parameters. Header-only (only *_test.cc files are compiled into unmask_ops_test).
#ifndef UNMASK_TESTS_OPS_OP_TEST_UTIL_H_
#define UNMASK_TESTS_OPS_OP_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/half.h"
#include "core/tensor.h"
#include "ops/linear.h"
#include "ops/ref/convert_ref.h"
#include "quant_test_util.h"

namespace unmask::testing {

// Unit roundoff of f32 (half an ulp of 1): 2^-24.
inline constexpr double kU = 5.9604644775390625e-08;

// gamma_n = n u / (1 - n u): the classic bound on the relative error of an n-term f32 sum or dot
// product in any order, with or without FMA (Higham, "Accuracy and Stability of Numerical
// Algorithms", 2nd ed., Lemma 3.1 / eq. 3.5).
inline double Gamma(int64_t n) {
  const double nu = static_cast<double>(n) * kU;
  return nu / (1.0 - nu);
}

inline std::vector<float> RandomFloats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline TensorView View(std::vector<float>& v, Shape shape) {
  return TensorView{v.data(), DType::kF32, shape};
}
inline TensorView View(const std::vector<float>& v, Shape shape) {
  return TensorView{const_cast<float*>(v.data()), DType::kF32, shape};
}

// Normalized mean squared error sum (got - ref)^2 / sum ref^2, as llama.cpp's test-backend-ops
// (its default acceptance threshold is 1e-7).
inline double Nmse(const float* got, const float* ref, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return den == 0.0 ? num : num / den;
}
inline double Nmse(const std::vector<float>& got, const std::vector<float>& ref) {
  return Nmse(got.data(), ref.data(), got.size());
}

// Bit equality that treats any two NaNs as equal.
inline bool SameBits(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

inline const std::vector<cpu::GemmProvider>& AllProviders() {
  static const std::vector<cpu::GemmProvider> providers = {
      cpu::GemmProvider::kOneDnn, cpu::GemmProvider::kOpenBlas, cpu::GemmProvider::kReference};
  return providers;
}

inline std::string ProviderName(const ::testing::TestParamInfo<cpu::GemmProvider>& info) {
  return std::string(cpu::GemmProviderName(info.param));
}

// Selects a GEMM provider (InitCpuBackend with default threads).
inline Status SelectProvider(cpu::GemmProvider provider) {
  cpu::CpuBackendOptions options;
  options.gemm = provider;
  return cpu::InitCpuBackend(options);
}

// For SetUp(): selects `provider`, skipping the test with a message when OpenBLAS cannot be loaded.
#define UNMASK_SELECT_PROVIDER_OR_SKIP(provider)                                         \
  do {                                                                                   \
    const ::unmask::Status unmask_select_ = ::unmask::testing::SelectProvider(provider); \
    if (!unmask_select_.ok() && (provider) == ::unmask::cpu::GemmProvider::kOpenBlas &&  \
        unmask_select_.code() == ::unmask::StatusCode::kFailedPrecondition) {            \
      GTEST_SKIP() << "SKIPPED: OpenBLAS not available: " << unmask_select_.ToString();  \
    }                                                                                    \
    ASSERT_TRUE(unmask_select_.ok()) << unmask_select_.ToString();                       \
  } while (0)

// Restores the default provider (oneDNN) after a test.
inline void RestoreDefaultProvider() { ASSERT_TRUE(cpu::InitCpuBackend({}).ok()); }

// A test parametrized by the GEMM provider alone.
class ProviderTest : public ::testing::TestWithParam<cpu::GemmProvider> {
 protected:
  void SetUp() override { UNMASK_SELECT_PROVIDER_OR_SKIP(GetParam()); }
  void TearDown() override { RestoreDefaultProvider(); }
};

// A [V, D] table in `dtype` built from random f32 values, and its exact f32 image.
struct Table {
  std::vector<uint8_t> bytes;
  std::vector<float> f32;  // [V, D] as the reference converter sees it
  TensorView view;
};

inline Table MakeTable(DType dtype, int64_t vocab, int64_t dim, uint64_t seed) {
  Table t;
  const std::vector<float> values =
      RandomFloats(static_cast<size_t>(vocab * dim), seed, -2.0f, 2.0f);
  const size_t row_bytes = *RowBytes(dtype, dim);
  t.bytes.resize(row_bytes * static_cast<size_t>(vocab));
  for (int64_t r = 0; r < vocab; ++r) {
    uint8_t* row = t.bytes.data() + static_cast<size_t>(r) * row_bytes;
    const float* v = values.data() + r * dim;
    if (dtype == DType::kF32) {
      std::memcpy(row, v, row_bytes);
    } else if (dtype == DType::kF16 || dtype == DType::kBF16) {
      for (int64_t i = 0; i < dim; ++i) {
        const uint16_t h = dtype == DType::kF16 ? F32ToF16(v[i]) : F32ToBF16(v[i]);
        std::memcpy(row + 2 * i, &h, 2);
      }
    } else if (dtype != DType::kQ8_0) {  // Q4_0, Q4_1, Q4_K, Q6_K
      QuantizeRow(dtype, v, dim, row);
    } else {  // Q8_0 as ggml quantize_row_q8_0: d = amax / 127, q = round(x / d)
      for (int64_t b = 0; b < dim / kQ8_0BlockSize; ++b) {
        BlockQ8_0 blk{};
        float amax = 0.0f;
        for (int j = 0; j < kQ8_0BlockSize; ++j) {
          amax = std::max(amax, std::fabs(v[b * kQ8_0BlockSize + j]));
        }
        const float d = amax / 127.0f;
        blk.d = F32ToF16(d);
        for (int j = 0; j < kQ8_0BlockSize; ++j) {
          blk.qs[j] =
              static_cast<int8_t>(d == 0.0f ? 0 : std::lround(v[b * kQ8_0BlockSize + j] / d));
        }
        std::memcpy(row + static_cast<size_t>(b) * sizeof(BlockQ8_0), &blk, sizeof(blk));
      }
    }
  }
  t.f32.resize(static_cast<size_t>(vocab * dim));
  for (int64_t r = 0; r < vocab; ++r) {
    EXPECT_TRUE(ref::ConvertRowToF32(dtype, t.bytes.data() + static_cast<size_t>(r) * row_bytes,
                                     dim, t.f32.data() + r * dim));
  }
  t.view = TensorView{t.bytes.data(), dtype, Shape{vocab, dim}};
  return t;
}

}  // namespace unmask::testing

// gtest value printers: readable parameters in test names and ctest listings (instead of raw
// "4-byte object <01-00 00-00>").
namespace unmask {
inline void PrintTo(DType d, std::ostream* os) { *os << DTypeName(d); }
inline void PrintTo(WeightMode m, std::ostream* os) {
  *os << (m == WeightMode::kOnTheFly ? "on_the_fly"
          : m == WeightMode::kAuto   ? "auto"
                                     : "packed_f32");
}
namespace cpu {
inline void PrintTo(GemmProvider p, std::ostream* os) { *os << GemmProviderName(p); }
}  // namespace cpu
}  // namespace unmask

#endif  // UNMASK_TESTS_OPS_OP_TEST_UTIL_H_
