// CPU backend set-up: thread count and the GEMM provider.
//   kOneDnn:   oneDNN (libdnnl) matmul with weights prepacked once into its blocked layout
//   (default). kOpenBlas: OpenBLAS cblas_sgemm, loaded with dlopen after its core type is fixed:
//   Debian's
//              OpenBLAS 0.3.21 misdetects recent AVX-512 CPUs (e.g. AMD Zen 4) as "Prescott"
//              (~60 GFLOP/s instead of ~260); unless the user set OPENBLAS_CORETYPE, unmask sets it
//              from CPUID (SkylakeX with AVX-512, Haswell with AVX2) before the library loads.
//   kReference: the scalar reference loops (tests only; very slow).
#ifndef UNMASK_BACKEND_CPU_CPU_BACKEND_H_
#define UNMASK_BACKEND_CPU_CPU_BACKEND_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace unmask::cpu {

enum class GemmProvider { kOneDnn, kOpenBlas, kReference };
std::string_view GemmProviderName(GemmProvider p);  // "onednn" | "openblas" | "reference"

struct CpuBackendOptions {
  int num_threads = 0;  // <= 0: all hardware threads
  GemmProvider gemm = GemmProvider::kOneDnn;
  // dlopen name or path of OpenBLAS (used with kOpenBlas only).
  std::string openblas_library = "libopenblas.so.0";
};

// Applies the options (thread counts of OpenMP, oneDNN and OpenBLAS; provider selection).
// May be called again to change them. Errors: FailedPrecondition when the provider's library
// cannot be loaded (e.g. libopenblas.so.0 missing), with the dlopen error text.
// InvalidArgument for a GemmProvider value outside the enum. On error nothing changes.
// Not thread-safe against concurrent InitCpuBackend/GetCpuBackendOptions calls (call it at start-up
// or between forwards).
Status InitCpuBackend(const CpuBackendOptions& options);
const CpuBackendOptions& GetCpuBackendOptions();

// The provider selected now (kOneDnn before any InitCpuBackend); safe to call from any thread.
GemmProvider ActiveGemmProvider();

// True when Sgemm may be called from inside ParallelFor workers and then runs on the calling
// thread only (oneDNN detects the enclosing OpenMP region; the reference is single-threaded).
// False for OpenBLAS: its pthread pool cannot be limited per call, and concurrent threaded calls
// measured 55-86 GFLOP/s instead of ~190; callers then loop sequentially and let Sgemm thread.
bool SgemmRunsNested();

// A one-line description, e.g. "onednn 2.6.3 (avx512_core_bf16), 2 threads, avx512" (oneDNN's
// JIT ISA in parentheses, unmask's kernel ISA last) or
// "openblas 0.3.21 (core SkylakeX, OPENBLAS_CORETYPE set by unmask), 2 threads".
std::string DescribeCpuBackend();

// Row-major single-precision GEMM through the selected provider:
// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, with leading dimensions lda/ldb/ldc in
// elements. op(X) = X or X^T per trans_a/trans_b. Used for attention scores and small products.
// m == 0 or n == 0: nothing happens; k == 0: C = beta * C. beta == 0 overwrites C. Dims are not
// validated (the calling op has checked them). OpenBLAS takes int dims; larger ones go to oneDNN.
void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace unmask::cpu

#endif  // UNMASK_BACKEND_CPU_CPU_BACKEND_H_
