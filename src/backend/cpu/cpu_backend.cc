#include "backend/cpu/cpu_backend.h"

#include <omp.h>

#include <atomic>
#include <cassert>
#include <climits>
#include <mutex>
#include <string>

#include "backend/cpu/blas_onednn.h"
#include "backend/cpu/blas_openblas.h"
#include "backend/cpu/blas_reference.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/gemm_dispatch.h"
#include "core/parallel.h"

namespace unmask::cpu {
namespace {

std::atomic<GemmProvider> g_provider{GemmProvider::kOneDnn};

CpuBackendOptions& Options() {
  static CpuBackendOptions* options = new CpuBackendOptions();
  return *options;
}

bool FitsInt(int64_t v) { return v >= 0 && v <= INT_MAX; }

}  // namespace

std::string_view GemmProviderName(GemmProvider p) {
  switch (p) {
    case GemmProvider::kOneDnn:
      return "onednn";
    case GemmProvider::kOpenBlas:
      return "openblas";
    case GemmProvider::kReference:
      return "reference";
  }
  return "unknown";
}

Status InitCpuBackend(const CpuBackendOptions& options) {
  if (options.gemm != GemmProvider::kOneDnn && options.gemm != GemmProvider::kOpenBlas &&
      options.gemm != GemmProvider::kReference) {
    return InvalidArgumentError("InitCpuBackend: unknown GemmProvider value " +
                                std::to_string(static_cast<int>(options.gemm)));
  }
  const int threads = options.num_threads <= 0 ? HardwareThreads() : options.num_threads;
  if (options.gemm == GemmProvider::kOpenBlas) {
    UNMASK_RETURN_IF_ERROR(openblas::Load(options.openblas_library));
  }
  SetNumThreads(threads);  // OpenMP: our loops and oneDNN
  if (openblas::IsLoaded()) openblas::SetNumThreads(threads);
  Options() = options;
  g_provider.store(options.gemm, std::memory_order_release);
  return Status::Ok();
}

const CpuBackendOptions& GetCpuBackendOptions() { return Options(); }

GemmProvider ActiveGemmProvider() { return g_provider.load(std::memory_order_acquire); }

bool SgemmRunsNested() { return ActiveGemmProvider() != GemmProvider::kOpenBlas; }

std::string DescribeCpuBackend() {
  const int n = GetNumThreads();
  const std::string threads = std::to_string(n) + (n == 1 ? " thread" : " threads");
  const std::string isa(CpuIsaName(GetCpuFeatures()));
  switch (ActiveGemmProvider()) {
    case GemmProvider::kOneDnn:
      return "onednn " + onednn::Version() + " (" + onednn::EffectiveIsaName() + "), " + threads +
             ", " + isa;
    case GemmProvider::kOpenBlas: {
      const std::string version = openblas::Version();
      return "openblas " + (version.empty() ? std::string("?") : version) + " (core " +
             openblas::CoreName() + ", " + openblas::CoreTypeSource() + "), " + threads + ", " +
             isa;
    }
    case GemmProvider::kReference:
      return "reference (scalar loops), " + threads + ", " + isa;
  }
  return "unknown";
}

void EnsureOmpThreads() {
  if (omp_in_parallel()) return;
  const int wanted = GetNumThreads();
  if (omp_get_max_threads() != wanted) omp_set_num_threads(wanted);
}

void SgemmWith(GemmProvider provider, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
               float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    }
    return;
  }
  EnsureOmpThreads();
  if (provider == GemmProvider::kOpenBlas &&
      !(openblas::IsLoaded() && FitsInt(m) && FitsInt(n) && FitsInt(k) && FitsInt(lda) &&
        FitsInt(ldb) && FitsInt(ldc))) {
    provider = GemmProvider::kOneDnn;
  }
  switch (provider) {
    case GemmProvider::kOpenBlas:
      openblas::Sgemm(trans_a, trans_b, static_cast<int>(m), static_cast<int>(n),
                      static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
                      static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
      return;
    case GemmProvider::kReference:
      reference::Sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    case GemmProvider::kOneDnn:
      break;
  }
  [[maybe_unused]] const bool ok =
      onednn::Sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  assert(ok && "dnnl_sgemm rejected arguments validated by the caller");
}

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  SgemmWith(ActiveGemmProvider(), trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace unmask::cpu
