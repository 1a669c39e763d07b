// The AVX-512 VNNI tier of the Q4_0 / Q4_1 x int8-activation kernels (the AVX2 tier and the
// dispatch are in linear_quant_i8_cpu.cc). Compiled with AVX-512 F/BW/DQ/VL + VNNI flags
// (src/CMakeLists.txt) and called only on CPUs that have them, so this file includes no project
// header with inline code and instantiates no library template: everything it compiles stays in
// its anonymous namespace.
//
// Two blocks A, B per pair, as the AVX2 tier: their 16 + 16 bytes of nibbles in one ymm register,
// the low nibbles (A[0, 16) B[0, 16)) in the low 256 bits of a zmm register and the high ones
// (A[16, 32) B[16, 32)) in the high 256 bits, which is QuantizedX::q_pairs' layout of the x pair.
// The 4-bit codes are unsigned 0..15, so they are vpdpbusd's u8 operand as they are: one vpdpbusd
// per pair and x row sums 4 products per int32 lane (lanes 0-3 and 8-11: A, 4-7 and 12-15: B).
// Q4_0's -8 offset enters exactly in integers as the lanes' start value, -(pair_offsets summed per
// int32 lane) (vpmaddwd), which is -8 times the x sum of lanes r and r + 8; Q4_1's m in f32 through
// the x block sums (m d_x sum(q_x)), as the AVX2 tier. |lane| <= 4 * 15 * 127 + 8 * 8 * 127 < 2^24,
// so the lane and its conversion to f32 are exact. One FMA per pair then applies d_w d_x of A and
// of B; two pairs per step share the f16 conversion of their 4 scales (and Q4_1's 4 m) and one
// product with d_x (in cache, 1 thread: 8-20% faster than the AVX2 tier; one pair per step measured
// 2-12% in an earlier run). A last odd block goes alone with ymm vpdpbusd in x's natural layout.
#include "ops/linear_q4_vnni.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)
#define UNMASK_Q4_VNNI_COMPILED 1
#include "ops/immintrin_quiet.h"
#endif

namespace unmask::cpu {

#if defined(UNMASK_Q4_VNNI_COMPILED)
namespace {

// As the other int8 kernels (linear_quant_i8_cpu.cc, kPrefetchBytes): the bytes 1 KB past the
// row about to be read are requested before it is read.
constexpr int64_t kPrefetchBytes = 1024;

inline uint32_t LoadBytes(const uint8_t* p, int n) {  // n = 2 or 4 little-endian bytes
  uint32_t v = 0;
  __builtin_memcpy(&v, p, static_cast<size_t>(n));
  return v;
}

inline float Sum16(__m512 v) {
  __m256 s = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

inline float Sum8(__m256 v) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

// Two accumulator chains per x row, alternating between block pairs; each x row is summed in the
// same order whatever kM (a row's result must not depend on how many rows share the call).
template <bool kQ4_1, int kM>
void Rows(const Q4Int8Args& a) {
  constexpr int64_t kBlockBytes = kQ4_1 ? 20 : 18;  // BlockQ4_1 / BlockQ4_0
  constexpr int kHeader = kQ4_1 ? 4 : 2;            // f16 d (and m) before the 16 bytes of qs
  const int64_t nb = a.num_blocks, k = 32 * nb, num_pairs = nb / 2;
  const __m512i pair_lanes = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1);
  const __m512i pair_lanes_hi = _mm512_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3, 2, 2, 2, 2, 3, 3, 3, 3);
  const __m256i even_lanes = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  const __m256i odd_lanes = _mm256_setr_epi32(1, 3, 5, 7, 1, 3, 5, 7);
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m256i minus_one16 = _mm256_set1_epi16(-1);
  for (int64_t j = 0; j < a.rows; ++j) {
    const uint8_t* row = a.w + static_cast<size_t>(j) * a.row_bytes;
    for (size_t off = 0; off < a.row_bytes; off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(row + kPrefetchBytes + off), _MM_HINT_T0);
    }
    __m512 acc[kM][2];
    __m128 mins[kM];  // Q4_1: sums of m * d_x * sum(q_x), lane r over blocks 4u + r (pair: 2u + r)
    for (int i = 0; i < kM; ++i) {
      acc[i][0] = acc[i][1] = _mm512_setzero_ps();
      mins[i] = _mm_setzero_ps();
    }
    // The 64 nibbles of pair t (blocks 2t, 2t + 1) in q_pairs' layout.
    auto load_pair = [&](int64_t t) {
      const uint8_t* blk_a = row + 2 * kBlockBytes * t;
      const __m256i v = _mm256_inserti128_si256(
          _mm256_castsi128_si256(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk_a + kHeader))),
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk_a + kBlockBytes + kHeader)), 1);
      return _mm512_and_si512(
          _mm512_inserti64x4(_mm512_castsi256_si512(v), _mm256_srli_epi16(v, 4), 1), low4);
    };
    // The exact integer dot products of pair t with x row i (Q4_0: minus 8 x sums).
    auto pair_dot = [&](int64_t t, int i, __m512i w) {
      __m512i start = _mm512_setzero_si512();
      if constexpr (!kQ4_1) {  // -8 (x sums) per lane: lanes 0-7, covering lanes 8-15 too
        const __m256i offsets = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(a.x_pair_offsets + (i * num_pairs + t) * 16));
        start = _mm512_zextsi256_si512(_mm256_madd_epi16(offsets, minus_one16));
      }
      const __m512i xq = _mm512_loadu_si512(a.xq_pairs + i * k + 64 * t);
      return _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(start, w, xq));
    };
    // Pairs t (chain 0) and t + 1 (chain 1): the f16 fields of their 4 blocks converted together
    // (Q4_0 [d0..d3], Q4_1 [d0, m0, .., d3, m3]) and d_w d_x of the 4 blocks in one product.
    auto quad_step = [&](int64_t t) {
      const uint8_t* blk = row + 2 * kBlockBytes * t;
      const __m512i w0 = load_pair(t), w1 = load_pair(t + 1);
      __m128 d4, m4 = _mm_setzero_ps();
      if constexpr (kQ4_1) {
        __m128i h = _mm_cvtsi32_si128(static_cast<int>(LoadBytes(blk, 4)));
        h = _mm_insert_epi32(h, static_cast<int>(LoadBytes(blk + kBlockBytes, 4)), 1);
        h = _mm_insert_epi32(h, static_cast<int>(LoadBytes(blk + 2 * kBlockBytes, 4)), 2);
        h = _mm_insert_epi32(h, static_cast<int>(LoadBytes(blk + 3 * kBlockBytes, 4)), 3);
        const __m256 f = _mm256_cvtph_ps(h);
        d4 = _mm256_castps256_ps128(_mm256_permutevar8x32_ps(f, even_lanes));
        m4 = _mm256_castps256_ps128(_mm256_permutevar8x32_ps(f, odd_lanes));
      } else {
        __m128i h = _mm_cvtsi32_si128(static_cast<int>(LoadBytes(blk, 2)));
        h = _mm_insert_epi16(h, static_cast<int>(LoadBytes(blk + kBlockBytes, 2)), 1);
        h = _mm_insert_epi16(h, static_cast<int>(LoadBytes(blk + 2 * kBlockBytes, 2)), 2);
        h = _mm_insert_epi16(h, static_cast<int>(LoadBytes(blk + 3 * kBlockBytes, 2)), 3);
        d4 = _mm_cvtph_ps(h);
      }
      for (int i = 0; i < kM; ++i) {
        const __m512 s4 =
            _mm512_castps128_ps512(_mm_mul_ps(d4, _mm_loadu_ps(a.xd + i * nb + 2 * t)));
        acc[i][0] =
            _mm512_fmadd_ps(pair_dot(t, i, w0), _mm512_permutexvar_ps(pair_lanes, s4), acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(pair_dot(t + 1, i, w1),
                                    _mm512_permutexvar_ps(pair_lanes_hi, s4), acc[i][1]);
        if constexpr (kQ4_1) {
          mins[i] = _mm_fmadd_ps(m4, _mm_loadu_ps(a.xd_sum + i * nb + 2 * t), mins[i]);
        }
      }
    };
    // A last pair without a partner (chain 0).
    auto pair_step = [&](int64_t t) {
      const uint8_t* blk_a = row + 2 * kBlockBytes * t;
      const __m512i w = load_pair(t);
      const int fa = static_cast<int>(LoadBytes(blk_a, kHeader));
      const int fb = static_cast<int>(LoadBytes(blk_a + kBlockBytes, kHeader));
      const __m128 f = _mm_cvtph_ps(kQ4_1 ? _mm_insert_epi32(_mm_cvtsi32_si128(fa), fb, 1)
                                          : _mm_insert_epi16(_mm_cvtsi32_si128(fa), fb, 1));
      const __m128 d2 = kQ4_1 ? _mm_shuffle_ps(f, f, _MM_SHUFFLE(2, 0, 2, 0)) : f;
      for (int i = 0; i < kM; ++i) {
        const __m128 s2 = _mm_mul_ps(
            d2, _mm_castsi128_ps(
                    _mm_loadl_epi64(reinterpret_cast<const __m128i*>(a.xd + i * nb + 2 * t))));
        const __m512 scale = _mm512_permutexvar_ps(pair_lanes, _mm512_castps128_ps512(s2));
        acc[i][0] = _mm512_fmadd_ps(pair_dot(t, i, w), scale, acc[i][0]);
        if constexpr (kQ4_1) {
          const __m128 m2 = _mm_shuffle_ps(f, f, _MM_SHUFFLE(3, 1, 3, 1));
          mins[i] = _mm_fmadd_ps(m2,
                                 _mm_castsi128_ps(_mm_loadl_epi64(
                                     reinterpret_cast<const __m128i*>(a.xd_sum + i * nb + 2 * t))),
                                 mins[i]);
        }
      }
    };
    int64_t t = 0;
    for (; t + 2 <= num_pairs; t += 2) quad_step(t);
    if (t < num_pairs) pair_step(t);
    float tail[kM] = {};
    if (nb % 2 != 0) {  // the last block alone, x in its natural layout
      const int64_t b = nb - 1;
      const uint8_t* blk = row + kBlockBytes * b;
      const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kHeader));
      const __m256i q = _mm256_and_si256(
          _mm256_inserti128_si256(_mm256_castsi128_si256(qs), _mm_srli_epi16(qs, 4), 1),
          _mm256_set1_epi8(0x0F));
      const uint32_t fields = LoadBytes(blk, kHeader);
      const float d = _cvtsh_ss(static_cast<uint16_t>(fields & 0xFFFF));
      for (int i = 0; i < kM; ++i) {
        __m256i start = _mm256_setzero_si256();
        if constexpr (!kQ4_1) {  // -8 (q[4r] + ... + q[4r + 3]) in lane r
          start = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                        a.x_pair_sum + (i * nb + b) * 16)),
                                    _mm256_set1_epi16(-8));
        }
        const __m256i xq =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xq + i * k + 32 * b));
        const __m256i dot = _mm256_dpbusd_epi32(start, q, xq);
        tail[i] =
            Sum8(_mm256_mul_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(d * a.xd[i * nb + b])));
        if constexpr (kQ4_1) {
          tail[i] += _cvtsh_ss(static_cast<uint16_t>(fields >> 16)) * a.xd_sum[i * nb + b];
        }
      }
    }
    for (int i = 0; i < kM; ++i) {
      __m128 h = _mm_add_ps(mins[i], _mm_movehl_ps(mins[i], mins[i]));
      const float offset = _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
      a.y[i * a.y_stride + j] = Sum16(_mm512_add_ps(acc[i][0], acc[i][1])) + offset + tail[i];
    }
  }
}

template <bool kQ4_1>
void RowsM(const Q4Int8Args& args) {
  switch (args.m) {
    case 1:
      return Rows<kQ4_1, 1>(args);
    case 2:
      return Rows<kQ4_1, 2>(args);
    case 3:
      return Rows<kQ4_1, 3>(args);
    default:
      return Rows<kQ4_1, 4>(args);
  }
}

}  // namespace

bool Q4VnniCompiled() { return true; }

void RowsQ4Vnni(const Q4Int8Args& args) {
  if (args.q4_1) return RowsM<true>(args);
  return RowsM<false>(args);
}
#else
bool Q4VnniCompiled() { return false; }
void RowsQ4Vnni(const Q4Int8Args&) {}  // never called: Q4VnniCompiled() is false
#endif

}  // namespace unmask::cpu
