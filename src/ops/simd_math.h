// Ops-internal SIMD helpers (AVX-512 or AVX2 when the compiler targets them, scalar otherwise):
// exp, dot, horizontal reductions. Not part of the public op API.
#ifndef UNMASK_OPS_SIMD_MATH_H_
#define UNMASK_OPS_SIMD_MATH_H_

#include <cmath>
#include <cstdint>

// Three tiers, chosen at compile time:
//   UNMASK_HAVE_AVX512: AVX-512 F/BW/DQ/VL (masked 16-bit loads, reductions). Built only with
//                       -DUNMASK_CPU_BASELINE=x86-64-v4 or -DUNMASK_NATIVE=ON on an AVX-512 CPU;
//                       the default portable build (x86-64-v3, cmake/cpu_flags.cmake) runs the
//                       AVX2 tier on every CPU.
//   UNMASK_HAVE_AVX2:   AVX2 + FMA (+ F16C where used), 8 lanes.
//   neither:            portable scalar loops.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#define UNMASK_HAVE_AVX512 1
#elif defined(__AVX2__) && defined(__FMA__)
#define UNMASK_HAVE_AVX2 1
#endif

#if defined(UNMASK_HAVE_AVX512) || defined(UNMASK_HAVE_AVX2) || defined(__F16C__)
#include "ops/immintrin_quiet.h"
#endif

namespace unmask::cpu {

#if defined(UNMASK_HAVE_AVX512)
// Mask selecting the first `n` (0..16) lanes.
inline __mmask16 TailMask(int64_t n) {
  return static_cast<__mmask16>(n >= 16 ? 0xFFFFu : ((1u << n) - 1u));
}

// exp(x) for 16 lanes, about 1-2 ulp (Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, then a
// degree-7 Taylor polynomial: truncation r^8/8! < 0.12 ulp, and _mm512_scalef_ps for 2^n, which
// gives +inf above ~88.7 and rounds gradually to 0 below ~-87.3). NaN stays NaN, -inf gives 0.
inline __m512 Exp(__m512 x) {
  // Clamp first so that r is finite for +-inf; operand order keeps NaN (max/min return the
  // second operand when either is NaN).
  x = _mm512_max_ps(_mm512_set1_ps(-110.0f), x);
  x = _mm512_min_ps(_mm512_set1_ps(100.0f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln2 = kLn2Hi + kLn2Lo; kLn2Hi has 16 significant bits so n * kLn2Hi is exact for |n| < 256.
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723212e-6f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// Sum over the dot products of a[0, n) and b[0, n) in f32 (four 16-lane accumulators).
inline float Dot(const float* a, const float* b, int64_t n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  __m512 acc2 = _mm512_setzero_ps(), acc3 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), acc1);
    acc2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), acc2);
    acc3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), acc3);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    acc0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
}

#elif defined(UNMASK_HAVE_AVX2)

inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float HorizontalMax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// exp(x) for 8 lanes, about 1-2 ulp: the same reduction and polynomial as the AVX-512 version;
// 2^n is applied as two factors 2^(n/2) and 2^(n - n/2), each a normal number built from its
// exponent bits, so that results in the subnormal range round gradually instead of flushing.
// x is clamped to [-104, 89]: +inf above ~88.7, 0 below ~-103.9. NaN stays NaN, -inf gives 0.
inline __m256 Exp(__m256 x) {
  x = _mm256_max_ps(_mm256_set1_ps(-104.0f), x);  // operand order keeps NaN
  x = _mm256_min_ps(_mm256_set1_ps(89.0f), x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860682030941723212e-6f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);     // in [-150, 129]
  const __m256i n1 = _mm256_srai_epi32(ni, 1);  // in [-75, 64]
  const __m256i n2 = _mm256_sub_epi32(ni, n1);  // in [-75, 65]
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

// Sum over the dot products of a[0, n) and b[0, n) in f32 (four 8-lane accumulators).
inline float Dot(const float* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  }
  float sum = HorizontalSum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

#else  // portable scalar fallbacks

inline float Dot(const float* a, const float* b, int64_t n) {
  float acc = 0.0f;
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

#endif

}  // namespace unmask::cpu

#endif  // UNMASK_OPS_SIMD_MATH_H_
