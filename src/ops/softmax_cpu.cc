// Row softmax: max, exp(x - max) with the running sum, then one multiply by 1 / sum.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/parallel.h"
#include "ops/kernels_cpu.h"
#include "ops/simd_math.h"

namespace unmask::cpu {

void SoftmaxRow(float* x, int64_t n) {
  if (n <= 0) return;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float max = kNegInf;
  int64_t i = 0;
#if defined(UNMASK_HAVE_AVX512)
  const __m512 neg_inf = _mm512_set1_ps(kNegInf);
  __m512 vmax = neg_inf;
  for (; i < n; i += 16) {
    vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(neg_inf, TailMask(n - i), x + i));
  }
  max = _mm512_reduce_max_ps(vmax);
#elif defined(UNMASK_HAVE_AVX2)
  __m256 vmax = _mm256_set1_ps(kNegInf);
  for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
  max = HorizontalMax(vmax);
#endif
  for (; i < n; ++i) max = std::max(max, x[i]);
  if (max == kNegInf) {  // every entry is -inf (fully masked): all zero, not NaN
    std::fill(x, x + n, 0.0f);
    return;
  }
  float sum = 0.0f;
  i = 0;
#if defined(UNMASK_HAVE_AVX512)
  const __m512 vm = _mm512_set1_ps(max);
  __m512 vsum = _mm512_setzero_ps();
  for (; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    const __m512 e = Exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm));
    vsum = _mm512_add_ps(vsum, _mm512_maskz_mov_ps(m, e));
    _mm512_mask_storeu_ps(x + i, m, e);
  }
  sum = _mm512_reduce_add_ps(vsum);
#elif defined(UNMASK_HAVE_AVX2)
  const __m256 vm = _mm256_set1_ps(max);
  __m256 vsum = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    const __m256 e = Exp(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    vsum = _mm256_add_ps(vsum, e);
    _mm256_storeu_ps(x + i, e);
  }
  sum = HorizontalSum(vsum);
#endif
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (i = 0; i < n; ++i) x[i] *= inv;  // auto-vectorized
}

double SumExpShifted(const float* x, int64_t n, float shift) {
  double sum = 0.0;
  int64_t i = 0;
#if defined(UNMASK_HAVE_AVX512)
  const __m512 vs = _mm512_set1_ps(shift);
  __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
  for (; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    // Masked-off lanes load -inf: exp gives 0.
    const __m512 xv =
        _mm512_mask_loadu_ps(_mm512_set1_ps(-std::numeric_limits<float>::infinity()), m, x + i);
    const __m512 e = Exp(_mm512_sub_ps(xv, vs));
    acc0 = _mm512_add_pd(acc0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    acc1 = _mm512_add_pd(
        acc1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  sum = _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
#elif defined(UNMASK_HAVE_AVX2)
  const __m256 vs = _mm256_set1_ps(shift);
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  for (; i + 8 <= n; i += 8) {
    const __m256 e = Exp(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs));
    acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  double lanes[4];
  _mm256_storeu_pd(lanes, _mm256_add_pd(acc0, acc1));
  sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
#endif
  for (; i < n; ++i) sum += static_cast<double>(std::exp(x[i] - shift));
  return sum;
}

void SoftmaxRows(float* x, int64_t m, int64_t n) {
  const int64_t grain = GrainForBytes(8 * n);
  ParallelFor(m, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) SoftmaxRow(x + r * n, n);
  });
}

}  // namespace unmask::cpu
