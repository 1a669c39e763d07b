// SwiGLU and residual add. silu(g) = g * sigmoid(g) with sigmoid computed from e = exp(-|g|)
// (never overflows): sigmoid = 1 / (1 + e) for g >= 0 and e / (1 + e) for g < 0, so that the
// result keeps full relative precision for large negative g instead of rounding to 0 early.
#include <algorithm>
#include <cmath>

#include "core/parallel.h"
#include "ops/kernels_cpu.h"
#include "ops/simd_math.h"

namespace unmask::cpu {
namespace {

void SwiGluRow(const float* gate, const float* up, int64_t f, float* out) {
  int64_t i = 0;
#if defined(UNMASK_HAVE_AVX512)
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 sign_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  for (; i < f; i += 16) {
    const __mmask16 m = TailMask(f - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 u = _mm512_maskz_loadu_ps(m, up + i);
    const __m512 neg_abs = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_and_ps(g, sign_mask));
    const __m512 e = Exp(neg_abs);
    const __m512 denom = _mm512_add_ps(one, e);
    const __mmask16 negative = _mm512_cmp_ps_mask(g, _mm512_setzero_ps(), _CMP_LT_OQ);
    const __m512 numer = _mm512_mask_blend_ps(negative, one, e);
    const __m512 sig = _mm512_div_ps(numer, denom);
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(_mm512_mul_ps(g, sig), u));
  }
#elif defined(UNMASK_HAVE_AVX2)
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  for (; i + 8 <= f; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 u = _mm256_loadu_ps(up + i);
    const __m256 e = Exp(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_and_ps(g, abs_mask)));
    const __m256 negative = _mm256_cmp_ps(g, _mm256_setzero_ps(), _CMP_LT_OQ);
    const __m256 sig = _mm256_div_ps(_mm256_blendv_ps(one, e, negative), _mm256_add_ps(one, e));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(g, sig), u));
  }
#endif
  for (; i < f; ++i) {
    const float g = gate[i];
    const float e = std::exp(-std::fabs(g));
    const float sig = (g < 0.0f ? e : 1.0f) / (1.0f + e);
    out[i] = (g * sig) * up[i];
  }
}

}  // namespace

void SwiGluRows(const float* gate_up, int64_t m, int64_t f, float* out) {
  const int64_t grain = GrainForBytes(12 * f);  // gate and up read, out written
  ParallelFor(m, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      SwiGluRow(gate_up + r * 2 * f, gate_up + r * 2 * f + f, f, out + r * f);
    }
  });
}

void AddInPlace(float* y, const float* x, int64_t n) {
  ParallelFor(n, GrainForBytes(12), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] += x[i];  // auto-vectorized
  });
}

}  // namespace unmask::cpu
