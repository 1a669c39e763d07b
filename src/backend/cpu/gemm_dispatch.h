// Backend-internal GEMM entry points shared by cpu_backend.cc and packed_gemm.cc.
#ifndef UNMASK_BACKEND_CPU_GEMM_DISPATCH_H_
#define UNMASK_BACKEND_CPU_GEMM_DISPATCH_H_

#include <cstdint>

#include "backend/cpu/cpu_backend.h"

namespace unmask::cpu {

// Makes this thread's OpenMP team size (which oneDNN follows) equal GetNumThreads(); a no-op
// inside a parallel region. InitCpuBackend sets it only for the thread that called it.
void EnsureOmpThreads();

// Sgemm through a given provider (cpu_backend.h Sgemm uses ActiveGemmProvider()). kOpenBlas falls
// back to oneDNN when OpenBLAS is not loaded or a dim exceeds INT_MAX.
void SgemmWith(GemmProvider provider, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
               float* c, int64_t ldc);

}  // namespace unmask::cpu

#endif  // UNMASK_BACKEND_CPU_GEMM_DISPATCH_H_
