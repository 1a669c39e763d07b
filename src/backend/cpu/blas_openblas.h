// OpenBLAS loaded at run time with dlopen (not linked), so that OPENBLAS_CORETYPE can be set before
// the library's constructor detects the CPU. Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH) misdetects
// some AVX-512 CPUs (e.g. AMD Zen 4) as "Prescott" and then runs SSE3 kernels (~60 instead of
// ~260 GFLOP/s with 2 threads). The library is never unloaded (its thread pool outlives calls).
#ifndef UNMASK_BACKEND_CPU_BLAS_OPENBLAS_H_
#define UNMASK_BACKEND_CPU_BLAS_OPENBLAS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace unmask::cpu::openblas {

inline constexpr std::string_view kDefaultLibrary = "libopenblas.so.0";

// Loads `library` (a dlopen name or path) once and resolves cblas_sgemm, openblas_set_num_threads,
// openblas_get_corename and openblas_get_config. Before the first dlopen, when OPENBLAS_CORETYPE
// is unset, sets it to OpenBlasCoreTypeFor(GetCpuFeatures()) (cpu_isa.h). Idempotent for the same
// name; a different name loads that library and switches to it. Thread-safe.
// Errors: FailedPrecondition with the dlopen/dlsym error text when the library or a symbol is
// missing (the previously loaded library, if any, stays in use).
Status Load(std::string_view library = kDefaultLibrary);
bool IsLoaded();

// All below require IsLoaded(); otherwise they do nothing and return empty values.
// Row-major cblas_sgemm: C[m,n] = alpha op(A) op(B) + beta C. Dims must fit in int (blasint).
void Sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
           const float* b, int ldb, float beta, float* c, int ldc);
void SetNumThreads(int n);
// openblas_get_corename(), e.g. "SkylakeX" (lower/upper case as OpenBLAS reports it).
std::string CoreName();
// openblas_get_config(), e.g. "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY SkylakeX ...".
std::string Config();
// The version parsed from Config() ("0.3.21"), or "" when it has no "OpenBLAS <version>" prefix.
std::string Version();
// Who chose the core type: "OPENBLAS_CORETYPE set by unmask", "OPENBLAS_CORETYPE set by the user",
// "auto-detected" (no AVX2/AVX-512 to ask for) or "library was already loaded" (too late to set).
std::string CoreTypeSource();

}  // namespace unmask::cpu::openblas

#endif  // UNMASK_BACKEND_CPU_BLAS_OPENBLAS_H_
