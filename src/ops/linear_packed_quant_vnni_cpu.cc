// The AVX512-VNNI kernel of Q4_0 / Q4_1 / Q8_0 weights packed in groups of 16 rows
// (linear_packed_quant.h), every x row of a call at once. Compiled with AVX-512 F/BW/DQ/VL + VNNI
// flags (src/CMakeLists.txt) and called only on CPUs that have them, so this file includes no
// project header with inline code.
//
// Per unit (16 rows x 1 block, read in order): the registers of codes give the u8 operands once
// (Q4: low and high nibbles, 8 registers; Q8_0: the 8 registers of codes + 128), and each x row
// costs 8 vpdpbusd with a broadcast dword of its block (4 products per lane, lane n = weight row
// n) and 2-3 f32 operations on all 16 rows, where the row-major kernels (linear_q4_vnni_cpu.cc,
// linear_q8_vnni_cpu.cc) pay the unpacking and the scale products per weight row and x row.
// Measured on SmolLM2 (docs/benchmarks.md, "Packed quantized weights").
#include "ops/linear_packed_quant.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)
#define UNMASK_PACKED_QUANT_COMPILED 1
#include "ops/immintrin_quiet.h"
#endif

namespace unmask::cpu {

#if defined(UNMASK_PACKED_QUANT_COMPILED)
namespace {

// Units requested ahead of the one being read (the stream is sequential; 2.3-4.4 KB ahead).
constexpr int64_t kPrefetchUnits = 8;

template <PackedQuant kType, int kM>
void Rows(const PackedQuantArgs& a) {
  constexpr bool kQ4 = kType != PackedQuant::kQ8_0;
  constexpr size_t kUnit = kType == PackedQuant::kQ4_0 ? 288 : kQ4 ? 320 : 544;  // PackedUnitBytes
  constexpr size_t kScales = kQ4 ? 256 : 512;
  const int64_t nb = a.num_blocks, k = 32 * nb;
  const int64_t groups = (a.rows + 15) / 16;
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  const uint8_t* const end = a.packed + static_cast<size_t>(groups * nb) * kUnit;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t live_rows = a.rows - 16 * g < 16 ? a.rows - 16 * g : 16;
    const __mmask16 live = static_cast<__mmask16>((1u << live_rows) - 1u);
    __m512 acc[kM];
    for (int i = 0; i < kM; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* u = a.packed + static_cast<size_t>(g * nb + b) * kUnit;
      const uint8_t* ahead = u + kPrefetchUnits * kUnit;
      if (ahead < end) {
        for (size_t off = 0; off < kUnit; off += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(ahead + off), _MM_HINT_T0);
        }
      }
      // bq[r]: elements 4 r .. 4 r + 3 of the 16 rows, as u8.
      __m512i bq[8];
      if constexpr (kQ4) {
        for (int q = 0; q < 4; ++q) {
          const __m512i v = _mm512_loadu_si512(u + 64 * q);
          bq[q] = _mm512_and_si512(v, low4);
          bq[q + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
        }
      } else {
        for (int r = 0; r < 8; ++r) bq[r] = _mm512_xor_si512(_mm512_loadu_si512(u + 64 * r), bias);
      }
      const __m512 dw =
          _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(u + kScales)));
      __m512 mw = _mm512_setzero_ps();
      if constexpr (kType == PackedQuant::kQ4_1) {
        mw =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(u + kScales + 32)));
      }
      for (int i = 0; i < kM; ++i) {
        const int8_t* x = a.xq + i * k + 32 * b;
        __m512i dot = _mm512_setzero_si512();
        for (int r = 0; r < 8; ++r) {
          int32_t xr;
          __builtin_memcpy(&xr, x + 4 * r, 4);
          dot = _mm512_dpbusd_epi32(dot, bq[r], _mm512_set1_epi32(xr));
        }
        const int64_t xb = i * nb + b;
        // The codes' offset out, in integers: Q4_0's 8 (weights q - 8), Q8_0's bias of 128.
        if constexpr (kType == PackedQuant::kQ4_0) {
          dot = _mm512_sub_epi32(dot, _mm512_set1_epi32(8 * a.x_sum[xb]));
        } else if constexpr (kType == PackedQuant::kQ8_0) {
          dot = _mm512_sub_epi32(dot, _mm512_set1_epi32(128 * a.x_sum[xb]));
        }
        acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot),
                                 _mm512_mul_ps(dw, _mm512_set1_ps(a.xd[xb])), acc[i]);
        if constexpr (kType == PackedQuant::kQ4_1) {
          acc[i] = _mm512_fmadd_ps(mw, _mm512_set1_ps(a.xd_sum[xb]), acc[i]);
        }
      }
    }
    for (int i = 0; i < kM; ++i) _mm512_mask_storeu_ps(a.y + i * a.y_stride + 16 * g, live, acc[i]);
  }
}

template <PackedQuant kType, int kM>
void RowsUpTo(const PackedQuantArgs& a) {
  if constexpr (kM > 1) {
    if (a.m < kM) return RowsUpTo<kType, kM - 1>(a);
  }
  Rows<kType, kM>(a);
}

}  // namespace

bool PackedQuantCompiled() { return true; }

void RowsPackedVnni(const PackedQuantArgs& args) {
  if (args.m < 1 || args.m > 16 || args.rows < 1) return;
  switch (args.type) {
    case PackedQuant::kQ4_0:
      return RowsUpTo<PackedQuant::kQ4_0, 16>(args);
    case PackedQuant::kQ4_1:
      return RowsUpTo<PackedQuant::kQ4_1, 16>(args);
    case PackedQuant::kQ8_0:
      return RowsUpTo<PackedQuant::kQ8_0, 16>(args);
  }
}
#else
bool PackedQuantCompiled() { return false; }
void RowsPackedVnni(const PackedQuantArgs&) {}  // never called: PackedQuantCompiled() is false
#endif

}  // namespace unmask::cpu
