#include "backend/cpu/blas_reference.h"

namespace unmask::cpu::reference {

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const float av = trans_a ? a[p * lda + i] : a[i * lda + p];
        const float bv = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        acc += static_cast<double>(av) * static_cast<double>(bv);
      }
      float& out = c[i * ldc + j];
      const double prior = beta == 0.0f ? 0.0 : static_cast<double>(beta) * out;
      out = static_cast<float>(static_cast<double>(alpha) * acc + prior);
    }
  }
}

}  // namespace unmask::cpu::reference
