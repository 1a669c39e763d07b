// The bf16 and int8 packed GEMMs (backend/cpu/packed_gemm.h, blas_onednn.h) against float64
// references of what they are defined to compute, over the M of real forwards (one token to a
// whole canvas), with the error bounds against the exact f32 product; their errors; and the
// backend's compute-type resolution (backend/backend.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/blas_onednn.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/gemm_convert.h"
#include "backend/cpu/packed_gemm.h"
#include "core/half.h"
#include "core/tensor.h"

namespace unmask::cpu {
namespace {

struct Problem {
  int64_t m, k, n;
  std::vector<float> x, w;  // [m, k], [n, k]
};

Problem MakeProblem(int64_t m, int64_t k, int64_t n, uint32_t seed) {
  Problem p{m, k, n, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  p.x.resize(static_cast<size_t>(m * k));
  p.w.resize(static_cast<size_t>(n * k));
  for (float& v : p.x) v = g(rng);
  for (float& v : p.w) v = 0.05f * g(rng);
  return p;
}

StatusOr<PackedGemm> PackCopy(const Problem& p, ComputeType type) {
  auto w = AllocateAligned(p.w.size() * sizeof(float));
  std::copy(p.w.begin(), p.w.end(), static_cast<float*>(w.get()));
  return PackedGemm::Pack(std::move(w), p.n, p.k, type);
}

// M from one position to beyond the layout's representative M (kPackM = 256), K and N not
// multiples of the kernels' blocks among them.
const int64_t kMs[] = {1, 2, 3, 5, 16, 17, 32, 160, 257, 600};

TEST(PackedGemmComputeTest, Bf16IsTheF32ProductOfBf16RoundedOperands) {
  for (int64_t k : {7, 64, 768}) {
    for (int64_t n : {1, 33, 512}) {
      for (int64_t m : kMs) {
        const Problem p = MakeProblem(m, k, n, static_cast<uint32_t>(m * 131 + k * 7 + n));
        auto g = PackCopy(p, ComputeType::kBf16);
        ASSERT_TRUE(g.ok()) << g.status().ToString();
        EXPECT_EQ(g->type(), ComputeType::kBf16);
        std::vector<float> y(static_cast<size_t>(m * n));
        ASSERT_TRUE(g->Run(p.x.data(), m, y.data()).ok());
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double rounded = 0, exact = 0, abs_sum = 0;
            for (int64_t t = 0; t < k; ++t) {
              const float xv = p.x[i * k + t], wv = p.w[j * k + t];
              rounded += static_cast<double>(BF16ToF32(F32ToBF16(xv))) *
                         static_cast<double>(BF16ToF32(F32ToBF16(wv)));
              exact += static_cast<double>(xv) * wv;
              abs_sum += std::fabs(static_cast<double>(xv) * wv);
            }
            const double got = y[i * n + j];
            // f32 accumulation of k products (oneDNN's order): |err| <= k * 2^-24 * sum |x w|.
            ASSERT_NEAR(got, rounded, k * 0x1p-24 * abs_sum * 1.05 + 1e-30)
                << "m " << m << " k " << k << " n " << n << " at " << i << "," << j;
            // Against the exact product: each operand rounds by <= 2^-8 relative (bf16 keeps 8
            // significant bits).
            ASSERT_NEAR(got, exact, (2 * 0x1p-8 + 0x1p-16 + k * 0x1p-24) * abs_sum * 1.05 + 1e-30);
          }
        }
      }
    }
  }
}

TEST(PackedGemmComputeTest, Int8IsTheRescaledIntegerProduct) {
  const bool exact_ints = onednn::HasNativeKernels(ComputeType::kInt8);
  for (int64_t k : {7, 64, 768}) {
    for (int64_t n : {1, 33, 512}) {
      for (int64_t m : kMs) {
        Problem p = MakeProblem(m, k, n, static_cast<uint32_t>(m * 17 + k * 3 + n));
        if (m > 2) {
          for (int64_t t = 0; t < k; ++t) p.x[1 * k + t] = 0.0f;  // a row of zeros
        }
        auto g = PackCopy(p, ComputeType::kInt8);
        ASSERT_TRUE(g.ok()) << g.status().ToString();
        EXPECT_EQ(g->type(), ComputeType::kInt8);
        std::vector<float> y(static_cast<size_t>(m * n));
        ASSERT_TRUE(g->Run(p.x.data(), m, y.data()).ok());
        std::vector<int8_t> xq(static_cast<size_t>(k)), wq(static_cast<size_t>(n * k));
        std::vector<float> dw(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) {
          dw[j] = QuantizeRowS8Reference(p.w.data() + j * k, k, wq.data() + j * k);
        }
        for (int64_t i = 0; i < m; ++i) {
          const float dx = QuantizeRowS8Reference(p.x.data() + i * k, k, xq.data());
          for (int64_t j = 0; j < n; ++j) {
            int64_t acc = 0;
            double exact = 0, sum_x = 0, sum_w = 0;
            for (int64_t t = 0; t < k; ++t) {
              acc += int64_t{xq[t]} * wq[j * k + t];
              exact += static_cast<double>(p.x[i * k + t]) * p.w[j * k + t];
              sum_x += std::fabs(p.x[i * k + t]);
              sum_w += std::fabs(p.w[j * k + t]);
            }
            const float want = static_cast<float>(acc) * (dx * dw[j]);
            const float got = y[i * n + j];
            if (exact_ints) {
              // int32 accumulation is exact: the result is the rescaled integer, bit for bit.
              ASSERT_EQ(got, want)
                  << "m " << m << " k " << k << " n " << n << " at " << i << "," << j;
            } else {
              ASSERT_NEAR(got, want, 1e-3 * std::fabs(want) + 1e-6);
            }
            // Each quantized operand is within half a step: |err| <= dx/2 sum|w| + dw/2 sum|x|
            // + k dx dw / 4, plus f32 rounding.
            const double bound = 0.5 * dx * sum_w + 0.5 * dw[j] * sum_x + k * dx * dw[j] / 4.0;
            ASSERT_NEAR(got, exact, bound * 1.01 + 1e-6) << i << "," << j;
          }
        }
      }
    }
  }
}

TEST(PackedGemmComputeTest, Int8NonFiniteRowsAndWeights) {
  Problem p = MakeProblem(4, 64, 40, 5);
  p.x[2 * 64 + 10] = std::numeric_limits<float>::quiet_NaN();
  p.x[3 * 64 + 0] = std::numeric_limits<float>::infinity();
  auto g = PackCopy(p, ComputeType::kInt8);
  ASSERT_TRUE(g.ok());
  std::vector<float> y(4 * 40);
  ASSERT_TRUE(g->Run(p.x.data(), 4, y.data()).ok());
  for (int64_t j = 0; j < 40; ++j) {
    EXPECT_TRUE(std::isfinite(y[0 * 40 + j]));
    EXPECT_TRUE(std::isfinite(y[1 * 40 + j]));
    EXPECT_TRUE(std::isnan(y[2 * 40 + j]));
    EXPECT_TRUE(std::isnan(y[3 * 40 + j]));
  }
  p.w[7 * 64 + 3] = std::numeric_limits<float>::infinity();
  auto bad = PackCopy(p, ComputeType::kInt8);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("row 7"), std::string::npos) << bad.status().message();
}

TEST(PackedGemmComputeTest, Bf16AndInt8PackSmallerWeights) {
  const Problem p = MakeProblem(1, 768, 2048, 9);
  auto f32 = PackCopy(p, ComputeType::kF32);
  auto bf16 = PackCopy(p, ComputeType::kBf16);
  auto int8 = PackCopy(p, ComputeType::kInt8);
  ASSERT_TRUE(f32.ok() && bf16.ok() && int8.ok());
  EXPECT_GE(f32->bytes(), 768u * 2048 * 4);
  EXPECT_LT(bf16->bytes(), f32->bytes() * 0.52);
  EXPECT_LT(int8->bytes(), f32->bytes() * 0.27);
}

TEST(PackedGemmComputeTest, LowPrecisionNeedsOneDnn) {
  CpuBackendOptions o;
  o.gemm = GemmProvider::kReference;
  ASSERT_TRUE(InitCpuBackend(o).ok());
  const Problem p = MakeProblem(1, 8, 8, 1);
  for (ComputeType t : {ComputeType::kBf16, ComputeType::kInt8}) {
    auto g = PackCopy(p, t);
    EXPECT_EQ(g.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(g.status().message().find("oneDNN"), std::string::npos) << g.status().message();
  }
  EXPECT_TRUE(PackCopy(p, ComputeType::kF32).ok());
  ASSERT_TRUE(InitCpuBackend({}).ok());
}

TEST(BackendComputeTest, ResolvesTheComputeType) {
  BackendOptions o;
  auto automatic = CreateBackend(o);
  ASSERT_TRUE(automatic.ok());
  EXPECT_EQ((*automatic)->compute(), ComputeType::kF32);
  EXPECT_TRUE((*automatic)->compute_note().empty());
  EXPECT_NE((*automatic)->Describe().find("f32 compute"), std::string::npos);
  for (ComputeType t : {ComputeType::kF32, ComputeType::kBf16, ComputeType::kInt8}) {
    o.compute = std::string(ComputeTypeName(t));
    auto b = CreateBackend(o);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    if (onednn::HasNativeKernels(t)) {
      EXPECT_EQ((*b)->compute(), t);
      EXPECT_TRUE((*b)->compute_note().empty());
      EXPECT_NE((*b)->Describe().find(o.compute + " compute"), std::string::npos);
    } else {
      EXPECT_EQ((*b)->compute(), ComputeType::kF32);
      EXPECT_NE((*b)->compute_note().find("using f32"), std::string::npos);
    }
    auto peak = (*b)->MeasureGemmPeakGflops(1, (*b)->compute());
    ASSERT_TRUE(peak.ok()) << peak.status().ToString();
    EXPECT_GT(*peak, 0.0);
  }
  ASSERT_TRUE(CreateBackend({}).ok());
}

TEST(BackendComputeTest, BadComputeRequests) {
  BackendOptions o;
  o.compute = "fp8";
  auto bad = CreateBackend(o);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("auto, f32, bf16, int8"), std::string::npos);
  o.compute = "bf16";
  o.gemm = "reference";
  auto wrong_provider = CreateBackend(o);
  EXPECT_EQ(wrong_provider.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_provider.status().message().find("oneDNN"), std::string::npos);
  EXPECT_EQ(ComputeTypeFromName("auto"), std::nullopt);
  EXPECT_EQ(ComputeTypeFromName("int8"), ComputeType::kInt8);
  ASSERT_TRUE(CreateBackend({}).ok());
}

}  // namespace
}  // namespace unmask::cpu
