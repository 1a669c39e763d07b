// Fused small-M Linear for Q8_0 / Q4_0 / Q4_1 / Q4_K / Q6_K weights with int8 activations
// (QuantActivations::kInt8): x is quantized per 32 elements once per call (QuantizeX below), and
// each weight block meets its x block in integer dot products, 32 products per instruction pair:
//   vpmaddubsw (unsigned weight nibbles/6-bit values x signed int8 x, adjacent pairs summed to
//   int16) and vpmaddwd (pairs summed to int32, times 1 or the Q6_K sub-block scale),
// then one f32 FMA per block with the product of the scales. Offsets of the weight codes are
// applied exactly in integers through the x pair sums (Q4_0: q - 8, Q6_K: q - 32) or in f32 through
// the x block sums (Q4_1: + m, Q4_K: - dmin * mn). Every integer stays exact: |int16| <= 2 * 63 *
// 127 = 16002 and |int32| < 2^24, so the int32 -> f32 conversion is exact too. Q8_0's signed
// weights use the sign trick (|w| x sign(w) q_x; |int16| <= 2 * 128 * 127 = 32512), and on CPUs
// with AVX-512 VNNI run a kernel of their own with vpdpbusd (linear_q8_vnni_cpu.cc), as do Q4_0 and
// Q4_1 (linear_q4_vnni_cpu.cc: the nibbles are vpdpbusd's unsigned operand directly).
//
// Per block of 32 and x row this is ~8 vector operations instead of ~18 for decoding the weights
// to f32, which is what makes the batch-1 product memory-bound. AVX2 instructions (also used by the
// AVX-512 build: 32 bytes are one block). The portable build runs the same integer arithmetic one
// element at a time, so that kInt8 means the same numbers (up to f32 rounding) in every build.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include "backend/cpu/cpu_isa.h"
#include "core/half.h"
#include "ops/linear_impl.h"
#include "ops/linear_packed_quant.h"
#include "ops/linear_q4_vnni.h"
#include "ops/linear_q8_vnni.h"
#include "ops/quant_simd.h"
#include "ops/ref/quant_ref.h"
#include "ops/simd_math.h"

namespace unmask::cpu {
namespace {

// q = x * (1 / d) rounded to nearest even (x / d when 1 / d would overflow, 0 when d is 0 or NaN),
// in [-127, 127]; the SIMD version below computes the same numbers.
inline int8_t QuantizeValue(float v, float d) {
  float r = 0.0f;
  if (d >= std::numeric_limits<float>::min()) {
    r = std::nearbyint(v * (1.0f / d));
  } else if (d > 0.0f) {
    r = std::nearbyint(v / d);
  }
  return static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
}

// One block of 32: q, the pair sums and returns sum(q).
int QuantizeBlockScalar(const float* v, float d, int8_t* q, int16_t* pairs) {
  int sum = 0;
  for (int t = 0; t < 32; ++t) {
    q[t] = QuantizeValue(v[t], d);
    sum += q[t];
  }
  for (int l = 0; l < 16; ++l) pairs[l] = static_cast<int16_t>(q[2 * l] + q[2 * l + 1]);
  return sum;
}

// max |v| of a block, NaN when it holds a NaN (the block's d becomes NaN).
float BlockAbsMax(const float* v) {
#if defined(UNMASK_QUANT_SIMD)
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 amax = _mm256_setzero_ps(), nan = _mm256_setzero_ps();
  for (int t = 0; t < 32; t += 8) {
    const __m256 x = _mm256_loadu_ps(v + t);
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, x));
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  }
  if (_mm256_movemask_ps(nan) != 0) return std::numeric_limits<float>::quiet_NaN();
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
#else
  float amax = 0.0f;
  for (int t = 0; t < 32; ++t) {
    const float a = std::fabs(v[t]);
    if (a > amax || std::isnan(a)) amax = a;
    if (std::isnan(amax)) break;
  }
  return amax;
#endif
}

#if defined(UNMASK_QUANT_SIMD)
// The same numbers as QuantizeBlockScalar for d >= FLT_MIN: vcvtps2dq rounds to nearest even
// (the default MXCSR mode), and |x / d| <= 127 (1 + 2 u) never saturates the packs.
int QuantizeBlockSimd(const float* v, float d, int8_t* q, int16_t* pairs) {
  const __m256 id = _mm256_set1_ps(1.0f / d);
  __m256i i32[4];
  for (int t = 0; t < 4; ++t)
    i32[t] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(v + 8 * t), id));
  const __m256i i16_lo =
      _mm256_packs_epi32(i32[0], i32[1]);  // per 128-bit lane: 0-3 8-11 | 4-7 12-15
  const __m256i i16_hi = _mm256_packs_epi32(i32[2], i32[3]);
  // Dwords now hold elements 0-3 8-11 16-19 24-27 | 4-7 12-15 20-23 28-31: restore the order.
  const __m256i i8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(i16_lo, i16_hi),
                                                 _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), i8);
  const __m256i pair_sums = _mm256_maddubs_epi16(_mm256_set1_epi8(1), i8);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(pairs), pair_sums);
  const __m256i sums = _mm256_madd_epi16(pair_sums, _mm256_set1_epi16(1));
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}
#endif

}  // namespace

void QuantizeX(const float* x, int64_t m, int64_t k, QuantizedX* out, bool pair_layout) {
  const int64_t num_blocks = m * (k / 32);
  out->m = m;
  out->k = k;
  out->q.resize(static_cast<size_t>(m * k));
  out->d.resize(static_cast<size_t>(num_blocks));
  out->d_sum.resize(static_cast<size_t>(num_blocks));
  out->pair_sum.resize(static_cast<size_t>(num_blocks * 16));
  out->sum.resize(static_cast<size_t>(num_blocks));
  for (int64_t b = 0; b < num_blocks; ++b) {  // rows are contiguous: block b of the flat x
    const float* v = x + 32 * b;
    const float d = BlockAbsMax(v) / 127.0f;
    int8_t* q = out->q.data() + 32 * b;
    int16_t* pairs = out->pair_sum.data() + 16 * b;
#if defined(UNMASK_QUANT_SIMD)
    const int sum = d >= std::numeric_limits<float>::min() ? QuantizeBlockSimd(v, d, q, pairs)
                                                           : QuantizeBlockScalar(v, d, q, pairs);
#else
    const int sum = QuantizeBlockScalar(v, d, q, pairs);
#endif
    out->d[static_cast<size_t>(b)] = d;
    out->d_sum[static_cast<size_t>(b)] = d * static_cast<float>(sum);
    out->sum[static_cast<size_t>(b)] = sum;
  }
  // The pair layout of the Q4_0 / Q4_1 kernels.
  if (!pair_layout) return;
  const int64_t row_blocks = k / 32, row_pairs = row_blocks / 2;
  out->q_pairs.resize(static_cast<size_t>(m * k));
  out->pair_offsets.resize(static_cast<size_t>(m * row_pairs * 16));
  for (int64_t i = 0; i < m; ++i) {
    const int8_t* q = out->q.data() + i * k;
    int8_t* qp = out->q_pairs.data() + i * k;
    for (int64_t t = 0; t < row_pairs; ++t) {
      const int8_t* a = q + 64 * t;
      std::memcpy(qp + 64 * t, a, 16);
      std::memcpy(qp + 64 * t + 16, a + 32, 16);
      std::memcpy(qp + 64 * t + 32, a + 16, 16);
      std::memcpy(qp + 64 * t + 48, a + 48, 16);
      const int16_t* pa = out->pair_sum.data() + (i * row_blocks + 2 * t) * 16;
      const int16_t* pb = pa + 16;
      int16_t* off = out->pair_offsets.data() + (i * row_pairs + t) * 16;
      for (int l = 0; l < 8; ++l) {
        off[l] = static_cast<int16_t>(8 * (pa[l] + pa[l + 8]));
        off[l + 8] = static_cast<int16_t>(8 * (pb[l] + pb[l + 8]));
      }
    }
    if (row_blocks % 2 != 0) std::memcpy(qp + 64 * row_pairs, q + 64 * row_pairs, 32);
  }
}

namespace {
std::atomic<Int8Tier> g_int8_tier_limit{Int8Tier::kAvx512Vnni};

Int8Tier DetectInt8KernelTier() {
#if defined(UNMASK_QUANT_SIMD)
  const CpuFeatures& f = GetCpuFeatures();
  if (Q8_0VnniCompiled() && Q4VnniCompiled() && f.avx512f && f.avx512bw && f.avx512vl &&
      f.avx512vnni) {
    return Int8Tier::kAvx512Vnni;
  }
  return Int8Tier::kAvx2;
#else
  return Int8Tier::kScalar;
#endif
}
}  // namespace

Int8Tier Int8KernelTier() {
  static const Int8Tier detected = DetectInt8KernelTier();
  return std::min(detected, g_int8_tier_limit.load(std::memory_order_relaxed));
}

void LimitInt8KernelTier(Int8Tier max) { g_int8_tier_limit.store(max, std::memory_order_relaxed); }

#if defined(UNMASK_QUANT_SIMD)
namespace {

inline float Sum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m256i Load256(const void* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Views of one QuantizedX for the kernels: block b of row i.
struct XView {
  const QuantizedX& x;
  int64_t num_blocks;  // per row
  const int8_t* q(int i, int64_t b) const { return x.q.data() + (i * num_blocks + b) * 32; }
  float d(int i, int64_t b) const { return x.d[static_cast<size_t>(i * num_blocks + b)]; }
  const float* d_ptr(int i, int64_t b) const { return x.d.data() + i * num_blocks + b; }
  const float* d_sum(int i, int64_t b) const { return x.d_sum.data() + i * num_blocks + b; }
  const int8_t* q_pairs(int i, int64_t b) const {
    return x.q_pairs.data() + (i * num_blocks + b) * 32;
  }
  const int16_t* pair_offsets(int i, int64_t t) const {
    return x.pair_offsets.data() + (i * (num_blocks / 2) + t) * 16;
  }
  const int16_t* pairs(int i, int64_t b) const {
    return x.pair_sum.data() + (i * num_blocks + b) * 16;
  }
};

// Requests the weight bytes kPrefetchBytes past the row about to be read (rows are contiguous;
// a prefetch past the end of the data is harmless): with the weights streamed from memory this
// measured 10-15% faster than the hardware prefetchers alone (Q4_0, 2 threads; 1 KB and 4 KB
// ahead alike).
constexpr size_t kPrefetchBytes = 1024;
inline void PrefetchAhead(const uint8_t* row, size_t row_bytes) {
  for (size_t off = 0; off < row_bytes; off += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(row + kPrefetchBytes + off), _MM_HINT_T0);
  }
}

// Accumulator chains per x row: two for every M, so that a row is summed in the same order
// whatever the number of rows in the call (speculative verification must reproduce one-token
// decoding bit for bit; M = 3, 4 may spill a register on AVX2).
constexpr int ChainsFor(int) { return 2; }

// sum over pairs (q[2l] x[2l] + q[2l+1] x[2l+1]) for 32 unsigned q and signed x, as 8 int32 lanes
// (lanes 0-3: elements 0-15, lanes 4-7: elements 16-31) after subtracting (offset * pair sums of
// x).
template <int kOffsetShift>
inline __m256i DotU8S8(__m256i q, const int8_t* x, const int16_t* pairs, __m256i weights16) {
  __m256i p = _mm256_maddubs_epi16(q, Load256(x));
  if constexpr (kOffsetShift > 0)
    p = _mm256_sub_epi16(p, _mm256_slli_epi16(Load256(pairs), kOffsetShift));
  return _mm256_madd_epi16(p, weights16);
}

// 32 nibbles of a Q4_0/Q4_1 block as bytes in element order (low nibbles first).
inline __m256i Nibbles32(const uint8_t* qs) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0x0F));
}

// Q4_0 / Q4_1: two blocks A, B per step. Their nibbles in one register, A's bytes in the low
// 128-bit lane and B's in the high one: the low nibbles are A[0, 16) | B[0, 16), the high ones
// A[16, 32) | B[16, 32), matching the pair layout of QuantizedX::q_pairs. One vpmaddwd, conversion
// and FMA then serve both blocks (int32 lanes 0-3: A, 4-7: B), with the scale vector
// (d_A d_xA) x 4 | (d_B d_xB) x 4. A last odd block goes alone (natural x layout).
template <class Block, int kM>
void RowsQ4Pairs(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1, const XView& x,
                 int64_t n, float* y) {
  constexpr bool kQ4_1 = std::is_same_v<Block, BlockQ4_1>;
  constexpr int kOffsetShift = kQ4_1 ? 0 : 3;  // Q4_0: subtract 8 * pair sums
  constexpr int kChains = ChainsFor(kM);
  const __m256i ones = _mm256_set1_epi16(1), low4 = _mm256_set1_epi8(0x0F);
  const __m256i lanes01 = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  const int64_t num_pairs = x.num_blocks / 2;
  for (int64_t j = j0; j < j1; ++j) {
    const auto* row =
        reinterpret_cast<const Block*>(seg.data + static_cast<size_t>(j) * seg.row_bytes);
    PrefetchAhead(reinterpret_cast<const uint8_t*>(row), seg.row_bytes);
    __m256 acc[kM][kChains];
    __m128 mins[kM];  // Q4_1, lanes 0-1: sum of m * d_x * sum(q_x) of the A and B blocks
    for (int i = 0; i < kM; ++i) {
      for (int c = 0; c < kChains; ++c) acc[i][c] = _mm256_setzero_ps();
      mins[i] = _mm_setzero_ps();
    }
    auto pair_step = [&](int64_t t, int chain) {
      const Block& a = row[2 * t];
      const Block& b = row[2 * t + 1];
      const __m256i v = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs)),
                                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.qs)));
      const __m256i lo = _mm256_and_si256(v, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      // f16 fields of A and B converted together: Q4_0 [dA, dB], Q4_1 [dA, mA, dB, mB].
      uint32_t fa = 0, fb = 0;
      std::memcpy(&fa, &a, kQ4_1 ? 4 : 2);
      std::memcpy(&fb, &b, kQ4_1 ? 4 : 2);
      const __m128 f = _mm_cvtph_ps(
          kQ4_1
              ? _mm_insert_epi32(_mm_cvtsi32_si128(static_cast<int>(fa)), static_cast<int>(fb), 1)
              : _mm_insert_epi16(_mm_cvtsi32_si128(static_cast<int>(fa)), static_cast<int>(fb), 1));
      const __m128 d2 = kQ4_1 ? _mm_shuffle_ps(f, f, _MM_SHUFFLE(2, 0, 2, 0)) : f;
      for (int i = 0; i < kM; ++i) {
        const int8_t* xp = x.q_pairs(i, 2 * t);
        __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, Load256(xp)),
                                     _mm256_maddubs_epi16(hi, Load256(xp + 32)));
        if constexpr (!kQ4_1) p = _mm256_sub_epi16(p, Load256(x.pair_offsets(i, t)));  // q - 8
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
        const __m128 s2 = _mm_mul_ps(
            d2,
            _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x.d_ptr(i, 2 * t)))));
        const __m256 scale = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(s2), lanes01);
        acc[i][chain] = _mm256_fmadd_ps(dot, scale, acc[i][chain]);
        if constexpr (kQ4_1) {
          const __m128 m2 = _mm_shuffle_ps(f, f, _MM_SHUFFLE(3, 1, 3, 1));
          mins[i] = _mm_fmadd_ps(m2,
                                 _mm_castsi128_ps(_mm_loadl_epi64(
                                     reinterpret_cast<const __m128i*>(x.d_sum(i, 2 * t)))),
                                 mins[i]);
        }
      }
    };
    int64_t t = 0;
    for (; t + kChains <= num_pairs; t += kChains) {
#pragma GCC unroll 2
      for (int c = 0; c < kChains; ++c) pair_step(t + c, c);
    }
    for (; t < num_pairs; ++t) pair_step(t, 0);
    float tail[kM] = {};
    if (x.num_blocks % 2 != 0) {  // the last block alone, x in its natural layout
      const int64_t b = x.num_blocks - 1;
      const Block& blk = row[b];
      const __m256i q = Nibbles32(blk.qs);
      const float d = quant::HalfToFloat(blk.d);
      for (int i = 0; i < kM; ++i) {
        const __m256i dot = DotU8S8<kOffsetShift>(q, x.q(i, b), x.pairs(i, b), ones);
        tail[i] = Sum8(_mm256_mul_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(d * x.d(i, b))));
        if constexpr (kQ4_1) tail[i] += quant::HalfToFloat(blk.m) * *x.d_sum(i, b);
      }
    }
    for (int i = 0; i < kM; ++i) {
      __m256 total = acc[i][0];
      for (int c = 1; c < kChains; ++c) total = _mm256_add_ps(total, acc[i][c]);
      const float offset = _mm_cvtss_f32(_mm_add_ss(mins[i], _mm_movehdup_ps(mins[i])));
      y[i * n + seg.row0 + j] = Sum8(total) + offset + tail[i];
    }
  }
}

template <int kM>
void RowsQ4_K(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1, const XView& x,
              int64_t n, float* y) {
  const __m256i ones = _mm256_set1_epi16(1), low4 = _mm256_set1_epi8(0x0F);
  const int64_t num_super = x.num_blocks / 8;
  for (int64_t j = j0; j < j1; ++j) {
    const auto* row =
        reinterpret_cast<const BlockQ4_K*>(seg.data + static_cast<size_t>(j) * seg.row_bytes);
    PrefetchAhead(reinterpret_cast<const uint8_t*>(row), seg.row_bytes);
    __m256 acc[kM][2], mins[kM];  // mins: lane s = sum over super-blocks of -m1[s] * d_x * sum(q_x)
    for (int i = 0; i < kM; ++i) acc[i][0] = acc[i][1] = mins[i] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < num_super; ++sb) {
      const BlockQ4_K& blk = row[sb];
      alignas(32) float d1[8], neg_m1[8];
      quant::Q4KScales(blk, d1, neg_m1);
      const int64_t b0 = 8 * sb;  // x block of sub-block 0
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {  // sub-blocks 2p (low nibbles) and 2p + 1 (high nibbles)
        const __m256i v = Load256(blk.qs + 32 * p);
        const __m256i lo = _mm256_and_si256(v, low4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
        for (int i = 0; i < kM; ++i) {
          const __m256i dot_lo = DotU8S8<0>(lo, x.q(i, b0 + 2 * p), nullptr, ones);
          const __m256i dot_hi = DotU8S8<0>(hi, x.q(i, b0 + 2 * p + 1), nullptr, ones);
          acc[i][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_lo),
                                      _mm256_set1_ps(d1[2 * p] * x.d(i, b0 + 2 * p)), acc[i][0]);
          acc[i][1] =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_hi),
                              _mm256_set1_ps(d1[2 * p + 1] * x.d(i, b0 + 2 * p + 1)), acc[i][1]);
        }
      }
      const __m256 neg_m = _mm256_load_ps(neg_m1);
      for (int i = 0; i < kM; ++i) {
        mins[i] = _mm256_fmadd_ps(neg_m, _mm256_loadu_ps(x.d_sum(i, b0)), mins[i]);
      }
    }
    for (int i = 0; i < kM; ++i) {
      y[i * n + seg.row0 + j] = Sum8(_mm256_add_ps(_mm256_add_ps(acc[i][0], acc[i][1]), mins[i]));
    }
  }
}

// pshufb masks: for sub-block pair t (Q6_K scales 2t and 2t + 1), bytes 0-7 select scale 2t and
// bytes 8-15 scale 2t + 1.
alignas(16) constexpr uint8_t kPairMasks[8][16] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
    {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3},
    {4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5},
    {6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7},
    {8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9},
    {10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11},
    {12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13},
    {14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15}};

template <int kM>
void RowsQ6_K(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1, const XView& x,
              int64_t n, float* y) {
  const int64_t num_super = x.num_blocks / 8;
  for (int64_t j = j0; j < j1; ++j) {
    const auto* row =
        reinterpret_cast<const BlockQ6_K*>(seg.data + static_cast<size_t>(j) * seg.row_bytes);
    PrefetchAhead(reinterpret_cast<const uint8_t*>(row), seg.row_bytes);
    __m256 acc[kM][2];
    for (int i = 0; i < kM; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < num_super; ++sb) {
      const BlockQ6_K& blk = row[sb];
      const float d = quant::HalfToFloat(blk.d);
      const __m128i scales = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales));
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        __m256i q[4];
        quant::Q6KAssemble(blk.ql + 64 * h, blk.qh + 32 * h, q);
#pragma GCC unroll 4
        for (int g = 0; g < 4; ++g) {  // 32 elements: sub-blocks 8h + 2g and 8h + 2g + 1
          const int t = 4 * h + g;
          const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(
              scales, _mm_load_si128(reinterpret_cast<const __m128i*>(kPairMasks[t]))));
          const int64_t b = 8 * sb + t;  // x block
          for (int i = 0; i < kM; ++i) {
            const __m256i dot =
                DotU8S8<5>(q[g], x.q(i, b), x.pairs(i, b), sc16);  // sum sc (q - 32) x
            acc[i][g & 1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(d * x.d(i, b)),
                                            acc[i][g & 1]);
          }
        }
      }
    }
    for (int i = 0; i < kM; ++i)
      y[i * n + seg.row0 + j] = Sum8(_mm256_add_ps(acc[i][0], acc[i][1]));
  }
}

// Q8_0, AVX2 tier: vpmaddubsw takes unsigned x signed bytes, so the weights' signs move to x
// (vpsignb): |w| (as u8: |-128| = 128) times sign(w) * q_x, pairs summed to int16 (<= 32512 in
// magnitude: exact), then vpmaddwd to int32.
template <int kM>
void RowsQ8_0(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1, const XView& x,
              int64_t n, float* y) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t j = j0; j < j1; ++j) {
    const auto* row =
        reinterpret_cast<const BlockQ8_0*>(seg.data + static_cast<size_t>(j) * seg.row_bytes);
    PrefetchAhead(reinterpret_cast<const uint8_t*>(row), seg.row_bytes);
    __m256 acc[kM][2];
    for (int i = 0; i < kM; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    auto step = [&](int64_t b, int chain) {
      const __m256i w = Load256(row[b].qs);
      const __m256i w_abs = _mm256_sign_epi8(w, w);
      const float dw = quant::HalfToFloat(row[b].d);
      for (int i = 0; i < kM; ++i) {
        const __m256i xs = _mm256_sign_epi8(Load256(x.q(i, b)), w);
        const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(w_abs, xs), ones);
        acc[i][chain] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(dw * x.d(i, b)), acc[i][chain]);
      }
    };
    int64_t b = 0;
    for (; b + 2 <= x.num_blocks; b += 2) {
      step(b, 0);
      step(b + 1, 1);
    }
    if (b < x.num_blocks) step(b, 0);
    for (int i = 0; i < kM; ++i)
      y[i * n + seg.row0 + j] = Sum8(_mm256_add_ps(acc[i][0], acc[i][1]));
  }
}

template <int kM>
void RowsInt8(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1, const XView& x,
              int64_t n, float* y) {
  switch (seg.dtype) {
    case DType::kQ8_0:
      return RowsQ8_0<kM>(seg, j0, j1, x, n, y);
    case DType::kQ4_0:
      return RowsQ4Pairs<BlockQ4_0, kM>(seg, j0, j1, x, n, y);
    case DType::kQ4_1:
      return RowsQ4Pairs<BlockQ4_1, kM>(seg, j0, j1, x, n, y);
    case DType::kQ4_K:
      return RowsQ4_K<kM>(seg, j0, j1, x, n, y);
    case DType::kQ6_K:
      return RowsQ6_K<kM>(seg, j0, j1, x, n, y);
    default:
      return;  // FusedQuantRows dispatches only these types here
  }
}

}  // namespace

void FusedQuantRowsInt8(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1,
                        const QuantizedX& xq, int64_t n, float* y) {
  if (seg.dtype == DType::kQ8_0 && Int8KernelTier() == Int8Tier::kAvx512Vnni) {
    Q8_0Int8Args args;
    args.w = seg.data + static_cast<size_t>(j0) * seg.row_bytes;
    args.row_bytes = seg.row_bytes;
    args.rows = j1 - j0;
    args.num_blocks = xq.k / 32;
    args.m = static_cast<int>(xq.m);
    args.xq = xq.q.data();
    args.xd = xq.d.data();
    args.y = y + seg.row0 + j0;
    args.y_stride = n;
    return RowsQ8_0Vnni(args);
  }
  if ((seg.dtype == DType::kQ4_0 || seg.dtype == DType::kQ4_1) &&
      Int8KernelTier() == Int8Tier::kAvx512Vnni) {
    Q4Int8Args args;
    args.w = seg.data + static_cast<size_t>(j0) * seg.row_bytes;
    args.row_bytes = seg.row_bytes;
    args.q4_1 = seg.dtype == DType::kQ4_1;
    args.rows = j1 - j0;
    args.num_blocks = xq.k / 32;
    args.m = static_cast<int>(xq.m);
    args.xq = xq.q.data();
    args.xq_pairs = xq.q_pairs.data();
    args.xd = xq.d.data();
    args.xd_sum = xq.d_sum.data();
    args.x_pair_sum = xq.pair_sum.data();
    args.x_pair_offsets = xq.pair_offsets.data();
    args.y = y + seg.row0 + j0;
    args.y_stride = n;
    return RowsQ4Vnni(args);
  }
  const XView x{xq, xq.k / 32};
  switch (xq.m) {
    case 1:
      return RowsInt8<1>(seg, j0, j1, x, n, y);
    case 2:
      return RowsInt8<2>(seg, j0, j1, x, n, y);
    case 3:
      return RowsInt8<3>(seg, j0, j1, x, n, y);
    default:
      return RowsInt8<4>(seg, j0, j1, x, n, y);
  }
}
#else   // portable: the same integer arithmetic, one element at a time

namespace {

// Adds sum_{k in x block b} code_k * q_x[k] for codes produced by `code(e)` (e: element index in
// the row) to an int64.
template <class Code>
int64_t BlockDot(const int8_t* xq, int64_t first, Code&& code) {
  int64_t sum = 0;
  for (int64_t t = 0; t < 32; ++t) sum += static_cast<int64_t>(code(first + t)) * xq[t];
  return sum;
}

float RowInt8(DType dtype, const uint8_t* row, const QuantizedX& x, int64_t i) {
  const int64_t num_blocks = x.k / 32;
  const int8_t* xq = x.q.data() + i * x.k;
  const float* xd = x.d.data() + i * num_blocks;
  const float* xd_sum = x.d_sum.data() + i * num_blocks;
  float acc = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    const int8_t* xb = xq + 32 * b;
    if (dtype == DType::kQ8_0) {
      const BlockQ8_0& blk = reinterpret_cast<const BlockQ8_0*>(row)[b];
      const int64_t dot = BlockDot(xb, 0, [&](int64_t t) { return blk.qs[t]; });
      acc += static_cast<float>(dot) * (F16ToF32(blk.d) * xd[b]);
    } else if (dtype == DType::kQ4_0 || dtype == DType::kQ4_1) {
      const uint8_t* qs = dtype == DType::kQ4_0 ? reinterpret_cast<const BlockQ4_0*>(row)[b].qs
                                                : reinterpret_cast<const BlockQ4_1*>(row)[b].qs;
      const int offset = dtype == DType::kQ4_0 ? 8 : 0;
      const int64_t dot = BlockDot(
          xb, 0, [&](int64_t t) { return (t < 16 ? (qs[t] & 0x0F) : (qs[t - 16] >> 4)) - offset; });
      if (dtype == DType::kQ4_0) {
        const float d = F16ToF32(reinterpret_cast<const BlockQ4_0*>(row)[b].d);
        acc += static_cast<float>(dot) * (d * xd[b]);
      } else {
        const BlockQ4_1& blk = reinterpret_cast<const BlockQ4_1*>(row)[b];
        acc += static_cast<float>(dot) * (F16ToF32(blk.d) * xd[b]);
        acc += F16ToF32(blk.m) * xd_sum[b];
      }
    } else if (dtype == DType::kQ4_K) {
      const BlockQ4_K& blk = reinterpret_cast<const BlockQ4_K*>(row)[b / 8];
      const int sub = static_cast<int>(b % 8);
      uint8_t sc = 0, mn = 0;
      ref::Q4KScaleMin(blk.scales, sub, &sc, &mn);
      const uint8_t* qs = blk.qs + 32 * (sub / 2);
      const int64_t dot =
          BlockDot(xb, 0, [&](int64_t t) { return sub % 2 == 0 ? (qs[t] & 0x0F) : (qs[t] >> 4); });
      acc += static_cast<float>(dot) * (F16ToF32(blk.d) * static_cast<float>(sc) * xd[b]);
      acc -= F16ToF32(blk.dmin) * static_cast<float>(mn) * xd_sum[b];
    } else {  // Q6_K: x block b = elements 32 (b % 8) .. + 31 of super-block b / 8
      const BlockQ6_K& blk = reinterpret_cast<const BlockQ6_K*>(row)[b / 8];
      const int64_t e0 = 32 * (b % 8);
      const int64_t dot = BlockDot(xb, e0, [&](int64_t e) {
        const int64_t h = e / 128, g = e % 128 / 32, l = e % 32;
        const uint8_t low = blk.ql[64 * h + l + 32 * (g % 2)];
        const int nibble = g < 2 ? (low & 0x0F) : (low >> 4);
        const int q = nibble | (((blk.qh[32 * h + l] >> (2 * g)) & 3) << 4);
        return blk.scales[8 * h + l / 16 + 2 * g] * (q - 32);
      });
      acc += static_cast<float>(dot) * (F16ToF32(blk.d) * xd[b]);
    }
  }
  return acc;
}

}  // namespace

void FusedQuantRowsInt8(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1,
                        const QuantizedX& xq, int64_t n, float* y) {
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t* row = seg.data + static_cast<size_t>(j) * seg.row_bytes;
    for (int64_t i = 0; i < xq.m; ++i) y[i * n + seg.row0 + j] = RowInt8(seg.dtype, row, xq, i);
  }
}
#endif  // UNMASK_QUANT_SIMD

namespace {
PackedQuant PackedQuantOf(DType dtype) {
  return dtype == DType::kQ4_0   ? PackedQuant::kQ4_0
         : dtype == DType::kQ4_1 ? PackedQuant::kQ4_1
                                 : PackedQuant::kQ8_0;
}
}  // namespace

bool PackQuantWeights(DType dtype) {
  // UNMASK_PACKED_QUANT=0 keeps the weights in their stored layout only (measurements, memory).
  static const bool allowed = [] {
    const char* v = std::getenv("UNMASK_PACKED_QUANT");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return (dtype == DType::kQ4_0 || dtype == DType::kQ4_1 || dtype == DType::kQ8_0) && allowed &&
         PackedQuantCompiled() && Int8KernelTier() == Int8Tier::kAvx512Vnni;
}

bool TakesPackedKernel(const LinearWeight::Impl::Segment& seg) {
  return seg.packed != nullptr && Int8KernelTier() == Int8Tier::kAvx512Vnni;
}

void FusedQuantRowsPacked(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1,
                          const QuantizedX& xq, int64_t n, float* y) {
  PackedQuantArgs args;
  args.type = PackedQuantOf(seg.dtype);
  args.num_blocks = xq.k / 32;
  args.packed = seg.packed + PackedBytes(args.type, j0, args.num_blocks);
  args.rows = j1 - j0;
  args.m = static_cast<int>(xq.m);
  args.xq = xq.q.data();
  args.xd = xq.d.data();
  args.xd_sum = xq.d_sum.data();
  args.x_sum = xq.sum.data();
  args.y = y + seg.row0 + j0;
  args.y_stride = n;
  RowsPackedVnni(args);
}

void PackSegment(LinearWeight::Impl::Segment* seg, int64_t k, uint8_t* out) {
  const PackedQuant t = PackedQuantOf(seg->dtype);
  PackRows(t, seg->data, seg->row_bytes, seg->rows, k / 32, out);
  seg->packed = out;
}

void UnpackSegmentRow(const LinearWeight::Impl::Segment& seg, int64_t row, int64_t k,
                      uint8_t* out) {
  UnpackRow(PackedQuantOf(seg.dtype), seg.packed, row, k / 32, out);
}

size_t PackedSegmentBytes(DType dtype, int64_t rows, int64_t k) {
  return PackedBytes(PackedQuantOf(dtype), rows, k / 32);
}

}  // namespace unmask::cpu
