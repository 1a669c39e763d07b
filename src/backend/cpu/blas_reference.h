// Scalar reference GEMM (GemmProvider::kReference): plain loops, double accumulation. Slow; for
// tests and as an oracle.
#ifndef UNMASK_BACKEND_CPU_BLAS_REFERENCE_H_
#define UNMASK_BACKEND_CPU_BLAS_REFERENCE_H_

#include <cstdint>

namespace unmask::cpu::reference {

// Row-major C[m,n] = alpha op(A) op(B) + beta C; beta == 0 overwrites C (NaNs in C are ignored).
// Each C element is accumulated in double over k and rounded once. Runs on the calling thread.
void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace unmask::cpu::reference

#endif  // UNMASK_BACKEND_CPU_BLAS_REFERENCE_H_
