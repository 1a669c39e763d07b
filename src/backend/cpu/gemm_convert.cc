#include "backend/cpu/gemm_convert.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/half.h"

namespace unmask::cpu {
namespace {

#if defined(__AVX2__)
// 8 floats -> 8 bf16 bit patterns (as F32ToBF16).
inline __m128i Bf16x8(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r =
      _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
  const __m256i nan_bits = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  r = _mm256_blendv_epi8(r, nan_bits, is_nan);
  // Values are in [0, 0xFFFF]: unsigned saturation keeps them; then lanes 0-3 and 4-7 together.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0b1000);
  return _mm256_castsi256_si128(packed);
}
#endif

}  // namespace

void ConvertToBf16Reference(const float* x, int64_t count, uint16_t* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = F32ToBF16(x[i]);
}

void ConvertToBf16(const float* x, int64_t count, uint16_t* out) {
  int64_t i = 0;
#if defined(__AVX2__)
  for (; i + 8 <= count; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), Bf16x8(_mm256_loadu_ps(x + i)));
  }
#endif
  for (; i < count; ++i) out[i] = F32ToBF16(x[i]);
}

float QuantizeRowS8Reference(const float* x, int64_t k, int8_t* q) {
  float amax = 0.0f;
  for (int64_t i = 0; i < k; ++i) {
    if (!std::isfinite(x[i])) return std::numeric_limits<float>::quiet_NaN();
    amax = std::max(amax, std::fabs(x[i]));
  }
  const float d = amax / 127.0f;
  const float id = d > 0.0f ? 1.0f / d : 0.0f;
  for (int64_t i = 0; i < k; ++i) {
    q[i] = static_cast<int8_t>(std::nearbyint(x[i] * id));
  }
  return d;
}

float QuantizeRowS8(const float* x, int64_t k, int8_t* q) {
#if defined(__AVX2__)
  if (k < 32) return QuantizeRowS8Reference(x, k, q);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  __m256 vmax = _mm256_setzero_ps();
  __m256 bad = _mm256_setzero_ps();  // lanes that saw a NaN or an infinity
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    const __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask);
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, inf, _CMP_NLT_UQ));  // NaN or |x| >= inf
    vmax = _mm256_max_ps(vmax, a);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  float amax = 0.0f;
  bool finite = _mm256_movemask_ps(bad) == 0;
  for (float v : lanes) amax = std::max(amax, v);
  for (; i < k; ++i) {
    finite = finite && std::isfinite(x[i]);
    amax = std::max(amax, std::fabs(x[i]));
  }
  if (!finite) return std::numeric_limits<float>::quiet_NaN();
  const float d = amax / 127.0f;
  const float id = d > 0.0f ? 1.0f / d : 0.0f;
  const __m256 vid = _mm256_set1_ps(id);
  i = 0;
  for (; i + 32 <= k; i += 32) {
    // cvtps_epi32 rounds to nearest even (the default MXCSR mode, as nearbyint).
    const __m256i a = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), vid));
    const __m256i b = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8), vid));
    const __m256i c = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 16), vid));
    const __m256i e = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 24), vid));
    // packs work within 128-bit lanes: [a0-3 b0-3 | a4-7 b4-7], then bytes of (ab, ce) likewise;
    // the final permute restores the order a b c e.
    const __m256i ab = _mm256_packs_epi32(a, b);
    const __m256i ce = _mm256_packs_epi32(c, e);
    const __m256i bytes = _mm256_packs_epi16(ab, ce);
    const __m256i ordered =
        _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), ordered);
  }
  for (; i < k; ++i) q[i] = static_cast<int8_t>(std::nearbyint(x[i] * id));
  return d;
#else
  return QuantizeRowS8Reference(x, k, q);
#endif
}

// acc may alias y (in place), so each int32 is copied out before its float is stored.
static inline int32_t LoadS32(const int32_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void RescaleRowS32Reference(const int32_t* acc, int64_t n, float d_row, const float* d_col,
                            float* y) {
  for (int64_t j = 0; j < n; ++j) y[j] = static_cast<float>(LoadS32(acc + j)) * (d_row * d_col[j]);
}

void RescaleRowS32(const int32_t* acc, int64_t n, float d_row, const float* d_col, float* y) {
  int64_t j = 0;
#if defined(__AVX2__)
  const __m256 vd = _mm256_set1_ps(d_row);
  for (; j + 8 <= n; j += 8) {
    const __m256 a =
        _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + j)));
    _mm256_storeu_ps(y + j, _mm256_mul_ps(a, _mm256_mul_ps(vd, _mm256_loadu_ps(d_col + j))));
  }
#endif
  for (; j < n; ++j) y[j] = static_cast<float>(LoadS32(acc + j)) * (d_row * d_col[j]);
}

}  // namespace unmask::cpu
