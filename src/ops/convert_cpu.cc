// F16/BF16/Q8_0 -> f32 converters. AVX-512 / AVX2 (+F16C): vcvtph2ps (F16), zero-extend + shift
// (BF16), sign-extend + cvt + scale (Q8_0); scalar core/half.h otherwise. The 4- and 6-bit block
// types are in quant_cpu.cc; ConvertRow dispatches to all of them.
#include <cstring>

#include "core/half.h"
#include "ops/kernels_cpu.h"
#include "ops/simd_math.h"

namespace unmask::cpu {

void ConvertF16ToF32(const uint16_t* src, int64_t n, float* dst) {
  int64_t i = 0;
#if defined(UNMASK_HAVE_AVX512)
  // vcvtph2ps quiets signalling NaNs (sets bit 22); F16ToF32 keeps them signalling, so clear that
  // bit again for lanes whose input was a signalling NaN (exponent 31, bit 9 clear, payload != 0).
  const __m512i exp_quiet = _mm512_set1_epi32(0x7E00);
  const __m512i snan_exp = _mm512_set1_epi32(0x7C00);
  const __m512i payload = _mm512_set1_epi32(0x01FF);
  const __m512i clear_quiet = _mm512_set1_epi32(~0x00400000);
  for (; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    const __m256i h = _mm256_maskz_loadu_epi16(m, src + i);
    __m512 f = _mm512_cvtph_ps(h);
    const __m512i h32 = _mm512_cvtepu16_epi32(h);
    const __mmask16 snan = _mm512_mask_cmpeq_epi32_mask(_mm512_test_epi32_mask(h32, payload),
                                                        _mm512_and_si512(h32, exp_quiet), snan_exp);
    if (snan != 0) {
      f = _mm512_castsi512_ps(
          _mm512_mask_and_epi32(_mm512_castps_si512(f), snan, _mm512_castps_si512(f), clear_quiet));
    }
    _mm512_mask_storeu_ps(dst + i, m, f);
  }
#elif defined(UNMASK_HAVE_AVX2) && defined(__F16C__)
  const __m128i exp_quiet = _mm_set1_epi16(0x7E00);
  const __m128i snan_exp = _mm_set1_epi16(0x7C00);
  const __m128i payload = _mm_set1_epi16(0x01FF);
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    // Signalling NaNs (rare) were quieted: redo those lanes with the scalar reference.
    const __m128i is_snan =
        _mm_andnot_si128(_mm_cmpeq_epi16(_mm_and_si128(h, payload), _mm_setzero_si128()),
                         _mm_cmpeq_epi16(_mm_and_si128(h, exp_quiet), snan_exp));
    if (_mm_movemask_epi8(is_snan) != 0) {
      for (int64_t j = i; j < i + 8; ++j) dst[j] = F16ToF32(src[j]);
    }
  }
#endif
  for (; i < n; ++i) dst[i] = F16ToF32(src[i]);
}

void ConvertBF16ToF32(const uint16_t* src, int64_t n, float* dst) {
  int64_t i = 0;
#if defined(UNMASK_HAVE_AVX512)
  for (; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    const __m512i h32 = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, src + i));
    _mm512_mask_storeu_ps(dst + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(h32, 16)));
  }
#elif defined(UNMASK_HAVE_AVX2)
  for (; i + 8 <= n; i += 8) {
    const __m256i h32 =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(h32, 16)));
  }
#endif
  for (; i < n; ++i) dst[i] = BF16ToF32(src[i]);
}

void ConvertQ8_0ToF32(const BlockQ8_0* src, int64_t num_blocks, float* dst) {
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = F16ToF32(src[b].d);
    float* out = dst + b * kQ8_0BlockSize;
#if defined(UNMASK_HAVE_AVX512)
    const __m512 scale = _mm512_set1_ps(d);
    const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src[b].qs));
    const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src[b].qs + 16));
    _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q0)), scale));
    _mm512_storeu_ps(out + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q1)), scale));
#else
    for (int64_t j = 0; j < kQ8_0BlockSize; ++j) out[j] = d * static_cast<float>(src[b].qs[j]);
#endif
  }
}

void ConvertRow(DType dtype, const void* src, int64_t n, float* dst) {
  switch (dtype) {
    case DType::kF32:
      if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kF16:
      ConvertF16ToF32(static_cast<const uint16_t*>(src), n, dst);
      return;
    case DType::kBF16:
      ConvertBF16ToF32(static_cast<const uint16_t*>(src), n, dst);
      return;
    case DType::kQ8_0:
      ConvertQ8_0ToF32(static_cast<const BlockQ8_0*>(src), n / kQ8_0BlockSize, dst);
      return;
    case DType::kQ4_0:
      ConvertQ4_0ToF32(static_cast<const BlockQ4_0*>(src), n / kQ4_0BlockSize, dst);
      return;
    case DType::kQ4_1:
      ConvertQ4_1ToF32(static_cast<const BlockQ4_1*>(src), n / kQ4_1BlockSize, dst);
      return;
    case DType::kQ4_K:
      ConvertQ4_KToF32(static_cast<const BlockQ4_K*>(src), n / kQkK, dst);
      return;
    case DType::kQ6_K:
      ConvertQ6_KToF32(static_cast<const BlockQ6_K*>(src), n / kQkK, dst);
      return;
    default:
      return;  // callers check HasConverter
  }
}

}  // namespace unmask::cpu
