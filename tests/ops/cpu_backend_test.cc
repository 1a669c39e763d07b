// CPU backend: provider selection, OpenBLAS loading and its core-type fix, thread counts, and
// Sgemm per provider against the reference loops.
#include "backend/cpu/cpu_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/blas_onednn.h"
#include "backend/cpu/blas_openblas.h"
#include "backend/cpu/blas_reference.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/packed_gemm.h"
#include "core/parallel.h"
#include "op_test_util.h"

namespace unmask {
namespace {

using cpu::GemmProvider;
using testing::Gamma;
using testing::kU;

TEST(CpuBackendTest, ProviderNames) {
  EXPECT_EQ(cpu::GemmProviderName(GemmProvider::kOneDnn), "onednn");
  EXPECT_EQ(cpu::GemmProviderName(GemmProvider::kOpenBlas), "openblas");
  EXPECT_EQ(cpu::GemmProviderName(GemmProvider::kReference), "reference");
}

TEST(CpuBackendTest, DefaultIsOneDnnAndDescribeNamesIt) {
  ASSERT_TRUE(cpu::InitCpuBackend({}).ok());
  EXPECT_EQ(cpu::ActiveGemmProvider(), GemmProvider::kOneDnn);
  EXPECT_TRUE(cpu::SgemmRunsNested());
  const std::string d = cpu::DescribeCpuBackend();
  EXPECT_EQ(d.rfind("onednn 2.", 0), 0u) << d;
  EXPECT_NE(d.find(std::to_string(GetNumThreads()) + " threads"), std::string::npos) << d;
}

TEST(CpuBackendTest, ThreadCountIsApplied) {
  cpu::CpuBackendOptions options;
  options.num_threads = 1;
  ASSERT_TRUE(cpu::InitCpuBackend(options).ok());
  EXPECT_EQ(GetNumThreads(), 1);
  EXPECT_EQ(cpu::GetCpuBackendOptions().num_threads, 1);
  EXPECT_NE(cpu::DescribeCpuBackend().find("1 thread"), std::string::npos);
  ASSERT_TRUE(cpu::InitCpuBackend({}).ok());
  EXPECT_EQ(GetNumThreads(), HardwareThreads());
}

TEST(CpuBackendTest, InvalidProviderIsRejectedAndNothingChanges) {
  ASSERT_TRUE(cpu::InitCpuBackend({}).ok());
  cpu::CpuBackendOptions options;
  options.gemm = static_cast<GemmProvider>(17);
  const Status s = cpu::InitCpuBackend(options);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("17"), std::string::npos);
  EXPECT_EQ(cpu::ActiveGemmProvider(), GemmProvider::kOneDnn);
}

TEST(CpuBackendTest, MissingOpenBlasLibraryIsAFailedPrecondition) {
  ASSERT_TRUE(cpu::InitCpuBackend({}).ok());
  cpu::CpuBackendOptions options;
  options.gemm = GemmProvider::kOpenBlas;
  options.openblas_library = "libunmask-no-such-blas.so.0";
  const Status s = cpu::InitCpuBackend(options);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("libunmask-no-such-blas.so.0"), std::string::npos) << s.message();
  EXPECT_EQ(cpu::ActiveGemmProvider(), GemmProvider::kOneDnn);  // unchanged
  EXPECT_EQ(cpu::GetCpuBackendOptions().gemm, GemmProvider::kOneDnn);
}

// Debian's OpenBLAS 0.3.21 reports some AVX-512 CPUs as "Prescott" (SSE3 kernels) unless
// OPENBLAS_CORETYPE is set; InitCpuBackend sets it from CPUID before loading the library.
TEST(CpuBackendTest, OpenBlasCoreTypeIsNotPrescottOnAvx2OrAvx512) {
  cpu::CpuBackendOptions options;
  options.gemm = GemmProvider::kOpenBlas;
  const Status s = cpu::InitCpuBackend(options);
  if (!s.ok()) {
    ASSERT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
    GTEST_SKIP() << "SKIPPED: libopenblas.so.0 is not available: " << s.message();
  }
  const std::string core = cpu::openblas::CoreName();
  const std::string describe = cpu::DescribeCpuBackend();
  ASSERT_TRUE(cpu::InitCpuBackend({}).ok());
  EXPECT_EQ(describe.rfind("openblas 0.", 0), 0u) << describe;
  EXPECT_NE(describe.find("(core " + core), std::string::npos) << describe;
  const std::string source = cpu::openblas::CoreTypeSource();
  if (source != "OPENBLAS_CORETYPE set by unmask" && source != "auto-detected") {
    GTEST_SKIP() << "SKIPPED: core type not chosen by unmask (" << source << "): " << describe;
  }
  const std::string_view wanted = cpu::OpenBlasCoreTypeFor(cpu::GetCpuFeatures());
  if (wanted.empty()) GTEST_SKIP() << "SKIPPED: this CPU has neither AVX2 nor AVX-512";
  EXPECT_NE(core, "Prescott") << describe;
  EXPECT_NE(core, "prescott") << describe;
  EXPECT_EQ(cpu::openblas::CoreTypeSource(), "OPENBLAS_CORETYPE set by unmask") << describe;
  EXPECT_STREQ(std::getenv("OPENBLAS_CORETYPE"), std::string(wanted).c_str());
}

struct GemmCase {
  bool ta, tb;
  int64_t m, n, k, lda_pad, ldb_pad, ldc_pad;
  float alpha, beta;
};

// C = alpha op(A) op(B) + beta C through the active provider vs the double-accumulating
// reference. Bound: gamma_{k+2} (sum |alpha a b| + |beta c|) + u |ref| (k products, the alpha and
// beta scalings; the reference rounds once).
void CheckSgemm(const GemmCase& g, uint64_t seed) {
  SCOPED_TRACE("ta=" + std::to_string(g.ta) + " tb=" + std::to_string(g.tb) + " m=" +
               std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k));
  const int64_t a_rows = g.ta ? g.k : g.m, a_cols = g.ta ? g.m : g.k;
  const int64_t b_rows = g.tb ? g.n : g.k, b_cols = g.tb ? g.k : g.n;
  const int64_t lda = a_cols + g.lda_pad, ldb = b_cols + g.ldb_pad, ldc = g.n + g.ldc_pad;
  const auto a =
      testing::RandomFloats(static_cast<size_t>(std::max<int64_t>(1, a_rows * lda)), seed);
  const auto b =
      testing::RandomFloats(static_cast<size_t>(std::max<int64_t>(1, b_rows * ldb)), seed + 1);
  const auto c0 =
      testing::RandomFloats(static_cast<size_t>(std::max<int64_t>(1, g.m * ldc)), seed + 2);
  std::vector<float> c(c0), want(c0);
  cpu::Sgemm(g.ta, g.tb, g.m, g.n, g.k, g.alpha, a.data(), lda, b.data(), ldb, g.beta, c.data(),
             ldc);
  cpu::reference::Sgemm(g.ta, g.tb, g.m, g.n, g.k, g.alpha, a.data(), lda, b.data(), ldb, g.beta,
                        want.data(), ldc);
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const size_t o = static_cast<size_t>(i * ldc + j);
      if (j >= g.n) {
        ASSERT_EQ(c[o], c0[o]) << "padding column " << j << " was written";
        continue;
      }
      double abs_sum = std::fabs(g.beta * c0[o]);
      for (int64_t p = 0; p < g.k; ++p) {
        const float av =
            g.ta ? a[static_cast<size_t>(p * lda + i)] : a[static_cast<size_t>(i * lda + p)];
        const float bv =
            g.tb ? b[static_cast<size_t>(j * ldb + p)] : b[static_cast<size_t>(p * ldb + j)];
        abs_sum += std::fabs(static_cast<double>(g.alpha) * av * bv);
      }
      const double bound = Gamma(g.k + 2) * abs_sum + kU * std::fabs(want[o]);
      ASSERT_LE(std::fabs(static_cast<double>(c[o]) - want[o]), bound)
          << "c[" << i << ", " << j << "]";
    }
  }
}

class SgemmTest : public testing::ProviderTest {};

TEST_P(SgemmTest, MatchesReference) {
  EXPECT_EQ(cpu::SgemmRunsNested(), GetParam() != GemmProvider::kOpenBlas);
  uint64_t seed = 1;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      CheckSgemm({ta, tb, 1, 1, 1, 0, 0, 0, 1.0f, 0.0f}, seed += 3);
      CheckSgemm({ta, tb, 7, 33, 17, 0, 0, 0, 1.0f, 0.0f}, seed += 3);
      CheckSgemm({ta, tb, 31, 5, 100, 3, 1, 2, 0.5f, 0.0f}, seed += 3);
      CheckSgemm({ta, tb, 64, 130, 257, 0, 5, 7, -1.25f, 0.75f}, seed += 3);
    }
  }
  // k == 0: C = beta C. m == 0 / n == 0: nothing is written.
  CheckSgemm({false, true, 3, 4, 0, 0, 0, 0, 1.0f, 0.5f}, 50);
  CheckSgemm({false, true, 3, 4, 0, 0, 0, 0, 1.0f, 0.0f}, 51);
  std::vector<float> c(4, 9.0f);
  cpu::Sgemm(false, false, 0, 2, 2, 1.0f, nullptr, 2, nullptr, 2, 0.0f, c.data(), 2);
  cpu::Sgemm(false, false, 2, 0, 2, 1.0f, nullptr, 2, nullptr, 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, std::vector<float>(4, 9.0f));
}

// Inside ParallelFor workers (as attention does when SgemmRunsNested()).
TEST_P(SgemmTest, CallsFromParallelForWorkers) {
  if (!cpu::SgemmRunsNested()) {
    GTEST_SKIP() << "OpenBLAS: ops do not call Sgemm from ParallelFor workers (SgemmRunsNested)";
  }
  const int64_t m = 20, n = 24, k = 40, items = 16;
  const auto a = testing::RandomFloats(static_cast<size_t>(items * m * k), 1);
  const auto b = testing::RandomFloats(static_cast<size_t>(n * k), 2);
  std::vector<float> c(static_cast<size_t>(items * m * n)), want(c.size());
  ParallelFor(items, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      cpu::Sgemm(false, true, m, n, k, 1.0f, a.data() + i * m * k, k, b.data(), k, 0.0f,
                 c.data() + i * m * n, n);
    }
  });
  cpu::reference::Sgemm(false, true, items * m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f,
                        want.data(), n);
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_NEAR(c[i], want[i], Gamma(k) * k) << i;  // |a|, |b| <= 1
  }
}

INSTANTIATE_TEST_SUITE_P(AllProviders, SgemmTest, ::testing::ValuesIn(testing::AllProviders()),
                         testing::ProviderName);

TEST(PackedGemmTest, Errors) {
  auto bad = cpu::PackedGemm::Pack(nullptr, 4, 4);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  auto zero = cpu::PackedGemm::Pack(AllocateAligned(64), 0, 4);
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
  auto onednn_bad = cpu::onednn::PackedWeight::Pack(nullptr, 4, 4);
  EXPECT_EQ(onednn_bad.status().code(), StatusCode::kInvalidArgument);
  const float w[4] = {1, 2, 3, 4};
  EXPECT_EQ(cpu::onednn::PackedWeight::Pack(w, 2, 0).status().code(), StatusCode::kInvalidArgument);
  cpu::PackedGemm empty;
  float x = 1.0f, y = 0.0f;
  EXPECT_EQ(empty.Run(&x, 1, &y).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(empty.bytes(), 0u);
}

TEST(CpuIsaTest, FeaturesAreConsistent) {
  const cpu::CpuFeatures& f = cpu::GetCpuFeatures();
  const std::string_view isa = cpu::CpuIsaName(f);
  if (isa == "avx512") {
    EXPECT_TRUE(f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl);
    EXPECT_EQ(cpu::OpenBlasCoreTypeFor(f), "SkylakeX");
  } else if (isa == "avx2") {
    EXPECT_TRUE(f.avx2 && f.fma);
    EXPECT_EQ(cpu::OpenBlasCoreTypeFor(f), "Haswell");
  } else {
    EXPECT_EQ(cpu::OpenBlasCoreTypeFor(f), "");
  }
#if defined(__AVX512F__)
  EXPECT_TRUE(f.avx512f) << "built with -mavx512f, so the CPU running the tests must have it";
#endif
}

}  // namespace
}  // namespace unmask
