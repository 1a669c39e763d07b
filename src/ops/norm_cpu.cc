// RMSNorm rows: sum of squares in f32 with 32 SIMD lanes (2 x 16 AVX-512 or 4 x 8 AVX2
// accumulators), then y = (x * inv_rms) * w. Rows in parallel.
#include <algorithm>
#include <cmath>

#include "core/parallel.h"
#include "ops/kernels_cpu.h"
#include "ops/simd_math.h"

namespace unmask::cpu {
namespace {

float SumSquares(const float* x, int64_t d) {
#if defined(UNMASK_HAVE_AVX512)
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= d; i += 32) {
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    acc0 = _mm512_fmadd_ps(a, a, acc0);
    acc1 = _mm512_fmadd_ps(b, b, acc1);
  }
  for (; i < d; i += 16) {
    const __m512 a = _mm512_maskz_loadu_ps(TailMask(d - i), x + i);
    acc0 = _mm512_fmadd_ps(a, a, acc0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
#elif defined(UNMASK_HAVE_AVX2)
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= d; i += 32) {
    const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
    const __m256 c = _mm256_loadu_ps(x + i + 16), e = _mm256_loadu_ps(x + i + 24);
    acc0 = _mm256_fmadd_ps(a, a, acc0);
    acc1 = _mm256_fmadd_ps(b, b, acc1);
    acc2 = _mm256_fmadd_ps(c, c, acc2);
    acc3 = _mm256_fmadd_ps(e, e, acc3);
  }
  for (; i + 8 <= d; i += 8) {
    const __m256 a = _mm256_loadu_ps(x + i);
    acc0 = _mm256_fmadd_ps(a, a, acc0);
  }
  float sum = HorizontalSum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < d; ++i) sum += x[i] * x[i];
  return sum;
#else
  return Dot(x, x, d);
#endif
}

void RmsNormRow(const float* x, const float* w, int64_t d, float eps, float* y) {
  const float mean = SumSquares(x, d) / static_cast<float>(d);
  const float inv = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < d; ++i) y[i] = (x[i] * inv) * w[i];  // auto-vectorized
}

}  // namespace

void RmsNormRows(const float* x, const float* w, int64_t m, int64_t d, float eps, float* y) {
  // Rows read and written: 8 bytes per element (thread policy of core/parallel.h).
  const int64_t grain = GrainForBytes(8 * d);
  ParallelFor(m, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) RmsNormRow(x + r * d, w, d, eps, y + r * d);
  });
}

}  // namespace unmask::cpu
