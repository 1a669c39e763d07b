// The AVX-512 VNNI tier of the Q8_0 x int8-activation kernel (the AVX2 tier and the dispatch are in
// linear_quant_i8_cpu.cc). Compiled with AVX-512 F/BW/DQ/VL + VNNI flags (src/CMakeLists.txt) and
// called only on CPUs that have them, so this file includes no project header with inline code
// and instantiates no library template: everything it compiles stays in its anonymous namespace.
//
// Two Q8_0 blocks per step, A in the low 256 bits and B in the high 256 bits of a zmm register,
// matching two consecutive x blocks (one 64-byte load). vpdpbusd multiplies unsigned by signed
// bytes, so the weights' signs move to x (the sign trick of ggml's AVX-512 VNNI path, with a masked
// negation because AVX-512 has no vpsignb): |w| (as u8: |-128| = 128) times sign(w) * q_x, 4
// products summed per int32 lane, |lane| <= 4 * 128 * 127 < 2^24, so the lane and its conversion
// to f32 are exact. One FMA per step then applies d_w d_x of A (lanes 0-7) and of B (lanes 8-15).
#include "ops/linear_q8_vnni.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)
#define UNMASK_Q8_VNNI_COMPILED 1
#include "ops/immintrin_quiet.h"
#endif

namespace unmask::cpu {

#if defined(UNMASK_Q8_VNNI_COMPILED)
namespace {

constexpr int64_t kBlockBytes = 34;  // f16 d + 32 int8 (BlockQ8_0)
// As the other int8 kernels (linear_quant_i8_cpu.cc, kPrefetchBytes): the bytes 1 KB past the
// row about to be read are requested before it is read.
constexpr int64_t kPrefetchBytes = 1024;

inline uint16_t LoadU16(const uint8_t* p) {
  uint16_t v = 0;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}

inline __m512i Load2Blocks(const uint8_t* a) {  // the 32 qs of blocks a and a + 1
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 2));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + kBlockBytes + 2));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
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
template <int kM>
void Rows(const Q8_0Int8Args& a) {
  const int64_t nb = a.num_blocks, k = 32 * nb, num_pairs = nb / 2;
  const __m512i pair_lanes = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t j = 0; j < a.rows; ++j) {
    const uint8_t* row = a.w + static_cast<size_t>(j) * a.row_bytes;
    for (size_t off = 0; off < a.row_bytes; off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(row + kPrefetchBytes + off), _MM_HINT_T0);
    }
    __m512 acc[kM][2];
    for (int i = 0; i < kM; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    auto pair_step = [&](int64_t t, int chain) {
      const uint8_t* blk = row + 2 * kBlockBytes * t;
      const __m512i w = Load2Blocks(blk);
      const __m512i w_abs = _mm512_abs_epi8(w);
      const __mmask64 w_neg = _mm512_movepi8_mask(w);
      const __m128 dw = _mm_cvtph_ps(_mm_insert_epi16(
          _mm_cvtsi32_si128(LoadU16(blk)), static_cast<int>(LoadU16(blk + kBlockBytes)), 1));
      for (int i = 0; i < kM; ++i) {
        const __m512i xq = _mm512_loadu_si512(a.xq + i * k + 64 * t);
        const __m512i xs = _mm512_mask_sub_epi8(xq, w_neg, zero, xq);  // sign(w) * q_x
        const __m512i dot = _mm512_dpbusd_epi32(zero, w_abs, xs);
        const __m128 s2 = _mm_mul_ps(
            dw, _mm_castsi128_ps(
                    _mm_loadl_epi64(reinterpret_cast<const __m128i*>(a.xd + i * nb + 2 * t))));
        const __m512 scale = _mm512_permutexvar_ps(pair_lanes, _mm512_zextps128_ps512(s2));
        acc[i][chain] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[i][chain]);
      }
    };
    int64_t t = 0;
    for (; t + 2 <= num_pairs; t += 2) {
      pair_step(t, 0);
      pair_step(t + 1, 1);
    }
    for (; t < num_pairs; ++t) pair_step(t, 0);
    float tail[kM] = {};
    if (nb % 2 != 0) {  // the last block alone
      const uint8_t* blk = row + kBlockBytes * (nb - 1);
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
      const __m256i w_abs = _mm256_abs_epi8(w);
      const __mmask32 w_neg = _mm256_movepi8_mask(w);
      const float dw = _cvtsh_ss(LoadU16(blk));
      for (int i = 0; i < kM; ++i) {
        const __m256i xq =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xq + i * k + 32 * (nb - 1)));
        const __m256i xs = _mm256_mask_sub_epi8(xq, w_neg, _mm256_setzero_si256(), xq);
        const __m256i dot = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w_abs, xs);
        tail[i] = Sum8(
            _mm256_mul_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(dw * a.xd[i * nb + nb - 1])));
      }
    }
    for (int i = 0; i < kM; ++i) {
      a.y[i * a.y_stride + j] = Sum16(_mm512_add_ps(acc[i][0], acc[i][1])) + tail[i];
    }
  }
}

}  // namespace

bool Q8_0VnniCompiled() { return true; }

void RowsQ8_0Vnni(const Q8_0Int8Args& args) {
  switch (args.m) {
    case 1:
      return Rows<1>(args);
    case 2:
      return Rows<2>(args);
    case 3:
      return Rows<3>(args);
    default:
      return Rows<4>(args);
  }
}
#else
bool Q8_0VnniCompiled() { return false; }
void RowsQ8_0Vnni(const Q8_0Int8Args&) {}  // never called: Q8_0VnniCompiled() is false
#endif

}  // namespace unmask::cpu
