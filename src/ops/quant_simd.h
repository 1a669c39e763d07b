// Ops-internal: in-register decoders of the Q4_0, Q4_1, Q4_K and Q6_K blocks (core/dtype.h) to f32
// vectors, shared by the converters (quant_cpu.cc) and the fused Linear kernels
// (linear_quant_cpu.cc). Each Decode* call hands every kLanes-wide slice of one block to
// `fn(offset, w)`, offset = index of the slice's first element inside the block, in an order
// chosen for the loads (not ascending).
//
// The values are bit-identical to ops/ref/quant_ref.h: the integers are widened to 32-bit lanes
// and converted exactly, every product of the reference formula is exact in f32, and where the
// reference rounds once (Q4_1's + m, Q4_K's - m1) an FMA on the exact product rounds the same way.
// Tiers: AVX-512 (16 lanes), AVX2 (8 lanes); none in the portable build (callers use the
// reference there). The loops are fully unrolled so that every offset is a constant where fn is
// inlined (the fused kernels pick their accumulator from it).
#ifndef UNMASK_OPS_QUANT_SIMD_H_
#define UNMASK_OPS_QUANT_SIMD_H_

#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "core/half.h"
#include "ops/simd_math.h"

namespace unmask::cpu::quant {

// f16 -> f32 of one scale; vcvtph2ps where available (identical except that a signalling NaN
// comes out quiet, which no product of the formulas can tell apart).
inline float HalfToFloat(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  return F16ToF32(h);
#endif
}

// Q4_K scale/min unpacking for all 8 sub-blocks at once (ref::Q4KScaleMin per byte): returns the
// 6-bit scales (bytes 0..7) in *sc and the mins in *mn. With the 12 bytes read as little-endian
// words w0, w1, w2: sub-blocks 0..3 take bits 0..5 of w0 (scales) and w1 (mins); sub-blocks
// 4..7 take their low 4 bits from the nibbles of w2 and their top 2 bits from bits 6..7 of the
// bytes of w0 (scales) and w1 (mins).
inline void Q4KUnpackScales(const uint8_t* scales, uint64_t* sc, uint64_t* mn) {
  uint32_t w[3];
  std::memcpy(w, scales, sizeof(w));
  const uint32_t sc_lo = w[0] & 0x3F3F3F3Fu;
  const uint32_t mn_lo = w[1] & 0x3F3F3F3Fu;
  const uint32_t sc_hi = (w[2] & 0x0F0F0F0Fu) | ((w[0] >> 2) & 0x30303030u);
  const uint32_t mn_hi = ((w[2] >> 4) & 0x0F0F0F0Fu) | ((w[1] >> 2) & 0x30303030u);
  *sc = sc_lo | (static_cast<uint64_t>(sc_hi) << 32);
  *mn = mn_lo | (static_cast<uint64_t>(mn_hi) << 32);
}

#if defined(UNMASK_HAVE_AVX512) || defined(UNMASK_HAVE_AVX2)
// The 6-bit values of one Q6_K half (128 elements: ql = 64 bytes, qh = 32 bytes) as 4 x 32 bytes:
// q[g] byte l = element 32 g + l, in [0, 63]. 16-bit shifts are safe: the masks drop what
// crosses a byte.
inline void Q6KAssemble(const uint8_t* ql, const uint8_t* qh, __m256i* q) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
  const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
  const __m256i low4 = _mm256_set1_epi8(0x0F), top2 = _mm256_set1_epi8(0x30);
  q[0] =
      _mm256_or_si256(_mm256_and_si256(a, low4), _mm256_and_si256(_mm256_slli_epi16(h, 4), top2));
  q[1] =
      _mm256_or_si256(_mm256_and_si256(c, low4), _mm256_and_si256(_mm256_slli_epi16(h, 2), top2));
  q[2] =
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), low4), _mm256_and_si256(h, top2));
  q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(c, 4), low4),
                         _mm256_and_si256(_mm256_srli_epi16(h, 2), top2));
}
#endif

#if defined(UNMASK_HAVE_AVX512)
#define UNMASK_QUANT_SIMD 1
inline constexpr int kLanes = 16;
using VecF = __m512;

inline __m512i Widen16(const uint8_t* p) {  // 16 bytes -> 16 uint32 lanes
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

template <bool kSignedZeros = true, class Fn>
inline void DecodeQ4_0(const BlockQ4_0& b, Fn&& fn) {
  const float d = HalfToFloat(b.d);
  const __m512i v = Widen16(b.qs);
  const __m512i lo = _mm512_and_si512(v, _mm512_set1_epi32(0x0F));
  const __m512i hi = _mm512_srli_epi32(v, 4);
  if constexpr (kSignedZeros) {
    const __m512i eight = _mm512_set1_epi32(8);
    fn(0, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(lo, eight)), _mm512_set1_ps(d)));
    fn(16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(hi, eight)), _mm512_set1_ps(d)));
  } else {  // q * d - 8 d: the exact product rounded once, so the same value up to a zero's sign
    const __m512 dv = _mm512_set1_ps(d), off = _mm512_set1_ps(-8.0f * d);
    fn(0, _mm512_fmadd_ps(_mm512_cvtepi32_ps(lo), dv, off));
    fn(16, _mm512_fmadd_ps(_mm512_cvtepi32_ps(hi), dv, off));
  }
}

template <class Fn>
inline void DecodeQ4_1(const BlockQ4_1& b, Fn&& fn) {
  const __m512 d = _mm512_set1_ps(HalfToFloat(b.d));
  const __m512 m = _mm512_set1_ps(HalfToFloat(b.m));
  const __m512i v = Widen16(b.qs);
  const __m512i lo = _mm512_and_si512(v, _mm512_set1_epi32(0x0F));
  const __m512i hi = _mm512_srli_epi32(v, 4);
  fn(0, _mm512_fmadd_ps(_mm512_cvtepi32_ps(lo), d, m));
  fn(16, _mm512_fmadd_ps(_mm512_cvtepi32_ps(hi), d, m));
}

// d1[s] = d * sc[s], neg_m1[s] = -(dmin * mn[s]) for the 8 sub-blocks.
inline void Q4KScales(const BlockQ4_K& b, float* d1, float* neg_m1) {
  uint64_t sc = 0, mn = 0;
  Q4KUnpackScales(b.scales, &sc, &mn);
  const __m512i both = _mm512_cvtepu8_epi32(
      _mm_set_epi64x(static_cast<int64_t>(mn), static_cast<int64_t>(sc)));  // sc 0..7, mn 8..15
  const __m512 mul =
      _mm512_insertf32x8(_mm512_set1_ps(HalfToFloat(b.d)), _mm256_set1_ps(-HalfToFloat(b.dmin)), 1);
  alignas(64) float out[16];
  _mm512_store_ps(out, _mm512_mul_ps(_mm512_cvtepi32_ps(both), mul));
  std::memcpy(d1, out, 8 * sizeof(float));
  std::memcpy(neg_m1, out + 8, 8 * sizeof(float));
}

template <class Fn>
inline void DecodeQ4_K(const BlockQ4_K& b, Fn&& fn) {
  alignas(32) float d1[8], neg_m1[8];
  Q4KScales(b, d1, neg_m1);
  const __m512i nibble = _mm512_set1_epi32(0x0F);
#pragma GCC unroll 8
  for (int p = 0; p < 4; ++p) {  // sub-blocks 2p (low nibbles) and 2p + 1 (high nibbles)
    const __m512 d_lo = _mm512_set1_ps(d1[2 * p]), m_lo = _mm512_set1_ps(neg_m1[2 * p]);
    const __m512 d_hi = _mm512_set1_ps(d1[2 * p + 1]), m_hi = _mm512_set1_ps(neg_m1[2 * p + 1]);
#pragma GCC unroll 8
    for (int c = 0; c < 2; ++c) {
      const __m512i v = Widen16(b.qs + 32 * p + 16 * c);
      const __m512 lo = _mm512_cvtepi32_ps(_mm512_and_si512(v, nibble));
      const __m512 hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 4));
      fn(64 * p + 16 * c, _mm512_fmadd_ps(lo, d_lo, m_lo));
      fn(64 * p + 32 + 16 * c, _mm512_fmadd_ps(hi, d_hi, m_hi));
    }
  }
}

// d1[s] = d * scales[s] for the 16 sub-blocks.
inline void Q6KScales(const BlockQ6_K& b, float* d1, float* neg32_d1) {
  const __m512i sc =
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
  const __m512 scaled = _mm512_mul_ps(_mm512_cvtepi32_ps(sc), _mm512_set1_ps(HalfToFloat(b.d)));
  _mm512_storeu_ps(d1, scaled);
  _mm512_storeu_ps(neg32_d1, _mm512_mul_ps(scaled, _mm512_set1_ps(-32.0f)));  // exact
}

template <bool kSignedZeros = true, class Fn>
inline void DecodeQ6_K(const BlockQ6_K& b, Fn&& fn) {
  alignas(64) float d1[16], neg32_d1[16];
  Q6KScales(b, d1, neg32_d1);
#pragma GCC unroll 8
  for (int h = 0; h < 2; ++h) {
    __m256i q[4];
    Q6KAssemble(b.ql + 64 * h, b.qh + 32 * h, q);
#pragma GCC unroll 8
    for (int g = 0; g < 4; ++g) {
#pragma GCC unroll 8
      for (int c = 0; c < 2; ++c) {  // 16 elements = one sub-block
        const __m128i bytes =
            c == 0 ? _mm256_castsi256_si128(q[g]) : _mm256_extracti128_si256(q[g], 1);
        const __m512i v = _mm512_cvtepu8_epi32(bytes);
        const int sub = 8 * h + 2 * g + c;
        if constexpr (kSignedZeros) {
          const __m512 w = _mm512_cvtepi32_ps(_mm512_sub_epi32(v, _mm512_set1_epi32(32)));
          fn(128 * h + 32 * g + 16 * c, _mm512_mul_ps(w, _mm512_set1_ps(d1[sub])));
        } else {  // q * d1 - 32 d1: the exact product rounded once (same value up to a zero's sign)
          fn(128 * h + 32 * g + 16 * c,
             _mm512_fmadd_ps(_mm512_cvtepi32_ps(v), _mm512_set1_ps(d1[sub]),
                             _mm512_set1_ps(neg32_d1[sub])));
        }
      }
    }
  }
}

#elif defined(UNMASK_HAVE_AVX2)
#define UNMASK_QUANT_SIMD 1
inline constexpr int kLanes = 8;
using VecF = __m256;

inline __m256i Widen8(const uint8_t* p) {  // 8 bytes -> 8 uint32 lanes
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

template <bool kSignedZeros = true, class Fn>
inline void DecodeQ4_0(const BlockQ4_0& b, Fn&& fn) {
  const float d = HalfToFloat(b.d);
  const __m256 dv = _mm256_set1_ps(d), off = _mm256_set1_ps(-8.0f * d);
  const __m256i nibble = _mm256_set1_epi32(0x0F), eight = _mm256_set1_epi32(8);
#pragma GCC unroll 8
  for (int c = 0; c < 2; ++c) {
    const __m256i v = Widen8(b.qs + 8 * c);
    const __m256i lo = _mm256_and_si256(v, nibble);
    const __m256i hi = _mm256_srli_epi32(v, 4);
    if constexpr (kSignedZeros) {
      fn(8 * c, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(lo, eight)), dv));
      fn(16 + 8 * c, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(hi, eight)), dv));
    } else {  // q * d - 8 d: the exact product rounded once, so the same value up to a zero's sign
      fn(8 * c, _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), dv, off));
      fn(16 + 8 * c, _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), dv, off));
    }
  }
}

template <class Fn>
inline void DecodeQ4_1(const BlockQ4_1& b, Fn&& fn) {
  const __m256 d = _mm256_set1_ps(HalfToFloat(b.d));
  const __m256 m = _mm256_set1_ps(HalfToFloat(b.m));
  const __m256i nibble = _mm256_set1_epi32(0x0F);
#pragma GCC unroll 8
  for (int c = 0; c < 2; ++c) {
    const __m256i v = Widen8(b.qs + 8 * c);
    fn(8 * c, _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(v, nibble)), d, m));
    fn(16 + 8 * c, _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4)), d, m));
  }
}

// d1[s] = d * sc[s], neg_m1[s] = -(dmin * mn[s]) for the 8 sub-blocks.
inline void Q4KScales(const BlockQ4_K& b, float* d1, float* neg_m1) {
  uint64_t sc = 0, mn = 0;
  Q4KUnpackScales(b.scales, &sc, &mn);
  const __m256 s =
      _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(sc))));
  const __m256 m =
      _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(mn))));
  _mm256_storeu_ps(d1, _mm256_mul_ps(s, _mm256_set1_ps(HalfToFloat(b.d))));
  _mm256_storeu_ps(neg_m1, _mm256_mul_ps(m, _mm256_set1_ps(-HalfToFloat(b.dmin))));
}

template <class Fn>
inline void DecodeQ4_K(const BlockQ4_K& b, Fn&& fn) {
  alignas(32) float d1[8], neg_m1[8];
  Q4KScales(b, d1, neg_m1);
  const __m256i nibble = _mm256_set1_epi32(0x0F);
#pragma GCC unroll 8
  for (int p = 0; p < 4; ++p) {  // sub-blocks 2p (low nibbles) and 2p + 1 (high nibbles)
    const __m256 d_lo = _mm256_broadcast_ss(d1 + 2 * p);
    const __m256 m_lo = _mm256_broadcast_ss(neg_m1 + 2 * p);
    const __m256 d_hi = _mm256_broadcast_ss(d1 + 2 * p + 1);
    const __m256 m_hi = _mm256_broadcast_ss(neg_m1 + 2 * p + 1);
#pragma GCC unroll 8
    for (int c = 0; c < 4; ++c) {
      const __m256i v = Widen8(b.qs + 32 * p + 8 * c);
      const __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(v, nibble));
      const __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4));
      fn(64 * p + 8 * c, _mm256_fmadd_ps(lo, d_lo, m_lo));
      fn(64 * p + 32 + 8 * c, _mm256_fmadd_ps(hi, d_hi, m_hi));
    }
  }
}

// d1[s] = d * scales[s] for the 16 sub-blocks.
inline void Q6KScales(const BlockQ6_K& b, float* d1, float* neg32_d1) {
  const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
  const __m256 d = _mm256_set1_ps(HalfToFloat(b.d)), neg32 = _mm256_set1_ps(-32.0f);
  const __m256 lo = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc)), d);
  const __m256 hi =
      _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8))), d);
  _mm256_storeu_ps(d1, lo);
  _mm256_storeu_ps(d1 + 8, hi);
  _mm256_storeu_ps(neg32_d1, _mm256_mul_ps(lo, neg32));  // exact
  _mm256_storeu_ps(neg32_d1 + 8, _mm256_mul_ps(hi, neg32));
}

template <bool kSignedZeros = true, class Fn>
inline void DecodeQ6_K(const BlockQ6_K& b, Fn&& fn) {
  alignas(32) float d1[16], neg32_d1[16];
  Q6KScales(b, d1, neg32_d1);
#pragma GCC unroll 8
  for (int h = 0; h < 2; ++h) {
    __m256i q[4];
    Q6KAssemble(b.ql + 64 * h, b.qh + 32 * h, q);
#pragma GCC unroll 8
    for (int g = 0; g < 4; ++g) {
      const __m128i half[2] = {_mm256_castsi256_si128(q[g]), _mm256_extracti128_si256(q[g], 1)};
#pragma GCC unroll 8
      for (int c = 0; c < 4; ++c) {  // 8 elements; two slices per 16-element sub-block
        const __m128i bytes = c % 2 == 0 ? half[c / 2] : _mm_srli_si128(half[c / 2], 8);
        const __m256i v = _mm256_cvtepu8_epi32(bytes);
        const int sub = 8 * h + 2 * g + c / 2;
        if constexpr (kSignedZeros) {
          const __m256 w = _mm256_cvtepi32_ps(_mm256_sub_epi32(v, _mm256_set1_epi32(32)));
          fn(128 * h + 32 * g + 8 * c, _mm256_mul_ps(w, _mm256_broadcast_ss(d1 + sub)));
        } else {  // q * d1 - 32 d1: the exact product rounded once (same value up to a zero's sign)
          fn(128 * h + 32 * g + 8 * c,
             _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), _mm256_broadcast_ss(d1 + sub),
                             _mm256_broadcast_ss(neg32_d1 + sub)));
        }
      }
    }
  }
}

#endif

}  // namespace unmask::cpu::quant

#endif  // UNMASK_OPS_QUANT_SIMD_H_
