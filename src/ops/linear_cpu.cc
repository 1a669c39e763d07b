// On-the-fly Linear: W stays in its stored dtype.
//  * M <= kFusedMaxM (decode-like): a fused kernel converts each 16-element slice of a weight row
//    in registers and multiplies it with every x row (no f32 copy of W is written), rows of W in
//    parallel. This reads W once in its stored width, which is what bounds small-M speed. The 4-
//    and 6-bit block types (Q4_0, Q4_1, Q4_K, Q6_K) have their own kernels (linear_quant_cpu.cc,
//    linear_quant_i8_cpu.cc), by default with x quantized to int8 once per call; so has Q8_0 with
//    int8 x (linear_quant_i8_cpu.cc, linear_q8_vnni_cpu.cc; with f32 x the kernels below).
//  * Otherwise panels of rows are dequantized to f32 into a per-thread buffer and multiplied with
//    cpu::Sgemm (y[:, panel] = x * panel^T, ldc = N). Providers that allow nested calls (oneDNN,
//    reference) process panels in parallel, one thread each; OpenBLAS processes them in sequence
//    with a threaded Sgemm, dequantizing on the calling thread (OpenMP workers spinning next to
//    OpenBLAS's own spinning pthreads made the mixed version 5x slower on 2 cores).
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/half.h"
#include "core/parallel.h"
#include "ops/kernels_cpu.h"
#include "ops/linear_impl.h"
#include "ops/parallel_util.h"
#include "ops/simd_math.h"

namespace unmask::cpu {
namespace {

// Up to 16 rows (a speculative verification of up to 15 drafts) take the fused kernels, 4 rows
// per pass over the weights.
constexpr int64_t kFusedMaxM = 16;

struct Panel {
  const LinearWeight::Impl::Segment* seg;
  int64_t first;  // first row inside the segment
  int64_t rows;
};

std::vector<Panel> MakePanels(const LinearWeight::Impl& w, int64_t panel_rows) {
  std::vector<Panel> panels;
  for (const auto& seg : w.segments) {
    for (int64_t r = 0; r < seg.rows; r += panel_rows) {
      panels.push_back(Panel{&seg, r, std::min(panel_rows, seg.rows - r)});
    }
  }
  return panels;
}

#if defined(UNMASK_HAVE_AVX512)
#define UNMASK_FUSED_SIMD 1
// Converts 16 stored weights to f32 (lanes past the mask are zero).
template <DType kDType>
inline __m512 Load16(const uint8_t* row, int64_t k0, __mmask16 m) {
  if constexpr (kDType == DType::kF16) {
    return _mm512_cvtph_ps(
        _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + k0));
  } else if constexpr (kDType == DType::kBF16) {
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(
                              m, reinterpret_cast<const uint16_t*>(row) + k0)),
                          16));
  } else {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + k0);
  }
}

// y[i, j] for i < kM and kR rows j0 .. j0 + kR - 1 of one segment: kR * kM independent
// accumulators hide the FMA latency, and each x slice is loaded once for kR rows.
template <DType kDType, int kM, int kR>
void FusedRowGroup(const LinearWeight::Impl::Segment& seg, int64_t j0, const float* x, int64_t k,
                   int64_t n, float* y) {
  const uint8_t* rows[kR];
  for (int r = 0; r < kR; ++r) rows[r] = seg.data + static_cast<size_t>(j0 + r) * seg.row_bytes;
  __m512 acc[kR][kM];
  for (int r = 0; r < kR; ++r) {
    for (int i = 0; i < kM; ++i) acc[r][i] = _mm512_setzero_ps();
  }
  if constexpr (kDType == DType::kQ8_0) {
    // k is a multiple of 32: one block (two 16-lane halves) per step, scale applied per half.
    for (int64_t b = 0; b < k / kQ8_0BlockSize; ++b) {
      const int64_t k0 = b * kQ8_0BlockSize;
      __m512 xs0[kM], xs1[kM];
      for (int i = 0; i < kM; ++i) {
        xs0[i] = _mm512_loadu_ps(x + i * k + k0);
        xs1[i] = _mm512_loadu_ps(x + i * k + k0 + 16);
      }
      for (int r = 0; r < kR; ++r) {
        const auto* block = reinterpret_cast<const BlockQ8_0*>(rows[r]) + b;
        const __m512 d = _mm512_set1_ps(_cvtsh_ss(block->d));
        const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block->qs));
        const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block->qs + 16));
        const __m512 w0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q0)), d);
        const __m512 w1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q1)), d);
        for (int i = 0; i < kM; ++i) {
          acc[r][i] = _mm512_fmadd_ps(w0, xs0[i], acc[r][i]);
          acc[r][i] = _mm512_fmadd_ps(w1, xs1[i], acc[r][i]);
        }
      }
    }
  } else {
    for (int64_t k0 = 0; k0 < k; k0 += 16) {
      const __mmask16 m = TailMask(k - k0);
      __m512 xs[kM];
      for (int i = 0; i < kM; ++i) xs[i] = _mm512_maskz_loadu_ps(m, x + i * k + k0);
      for (int r = 0; r < kR; ++r) {
        const __m512 w = Load16<kDType>(rows[r], k0, m);
        for (int i = 0; i < kM; ++i) acc[r][i] = _mm512_fmadd_ps(w, xs[i], acc[r][i]);
      }
    }
  }
  for (int r = 0; r < kR; ++r) {
    for (int i = 0; i < kM; ++i) y[i * n + seg.row0 + j0 + r] = _mm512_reduce_add_ps(acc[r][i]);
  }
}

template <DType kDType, int kM>
void FusedRowsTyped(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1, const float* x,
                    int64_t k, int64_t n, float* y) {
  constexpr int kGroup = 4;
  int64_t j = j0;
  for (; j + kGroup <= j1; j += kGroup) FusedRowGroup<kDType, kM, kGroup>(seg, j, x, k, n, y);
  for (; j < j1; ++j) FusedRowGroup<kDType, kM, 1>(seg, j, x, k, n, y);
}

template <int kM>
void FusedRows(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1, const float* x,
               int64_t k, int64_t n, float* y) {
  switch (seg.dtype) {
    case DType::kF16:
      return FusedRowsTyped<DType::kF16, kM>(seg, j0, j1, x, k, n, y);
    case DType::kBF16:
      return FusedRowsTyped<DType::kBF16, kM>(seg, j0, j1, x, k, n, y);
    case DType::kQ8_0:
      return FusedRowsTyped<DType::kQ8_0, kM>(seg, j0, j1, x, k, n, y);
    default:
      return FusedRowsTyped<DType::kF32, kM>(seg, j0, j1, x, k, n, y);
  }
}
#elif defined(UNMASK_HAVE_AVX2) && defined(__F16C__)
#define UNMASK_FUSED_SIMD 1
// Converts 8 stored weights to f32.
template <DType kDType>
inline __m256 Load8(const uint8_t* row, int64_t k0) {
  if constexpr (kDType == DType::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(
        reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(row) + k0)));
  } else if constexpr (kDType == DType::kBF16) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_cvtepu16_epi32(_mm_loadu_si128(
            reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(row) + k0))),
        16));
  } else {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + k0);
  }
}

template <DType kDType>
inline float LoadOne(const uint8_t* row, int64_t k0) {
  if constexpr (kDType == DType::kF16) {
    return F16ToF32(reinterpret_cast<const uint16_t*>(row)[k0]);
  } else if constexpr (kDType == DType::kBF16) {
    return BF16ToF32(reinterpret_cast<const uint16_t*>(row)[k0]);
  } else {
    return reinterpret_cast<const float*>(row)[k0];
  }
}

// y[i, j] for i < kM and kR rows j0 .. j0 + kR - 1 of one segment: kR * kM independent
// accumulators hide the FMA latency, and each x slice is loaded once for kR rows.
template <DType kDType, int kM, int kR>
void FusedRowGroup(const LinearWeight::Impl::Segment& seg, int64_t j0, const float* x, int64_t k,
                   int64_t n, float* y) {
  const uint8_t* rows[kR];
  for (int r = 0; r < kR; ++r) rows[r] = seg.data + static_cast<size_t>(j0 + r) * seg.row_bytes;
  __m256 acc[kR][kM];
  for (int r = 0; r < kR; ++r) {
    for (int i = 0; i < kM; ++i) acc[r][i] = _mm256_setzero_ps();
  }
  float tail[kR][kM] = {};
  if constexpr (kDType == DType::kQ8_0) {
    // k is a multiple of 32: one block per step, four 8-lane quarters.
    for (int64_t b = 0; b < k / kQ8_0BlockSize; ++b) {
      const BlockQ8_0* blocks[kR];
      __m256 d[kR];
      for (int r = 0; r < kR; ++r) {
        blocks[r] = reinterpret_cast<const BlockQ8_0*>(rows[r]) + b;
        d[r] = _mm256_set1_ps(_cvtsh_ss(blocks[r]->d));
      }
      for (int q = 0; q < kQ8_0BlockSize; q += 8) {
        __m256 xs[kM];
        for (int i = 0; i < kM; ++i) xs[i] = _mm256_loadu_ps(x + i * k + b * kQ8_0BlockSize + q);
        for (int r = 0; r < kR; ++r) {
          const __m128i qs = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blocks[r]->qs + q));
          const __m256 w = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(qs)), d[r]);
          for (int i = 0; i < kM; ++i) acc[r][i] = _mm256_fmadd_ps(w, xs[i], acc[r][i]);
        }
      }
    }
  } else {
    int64_t k0 = 0;
    for (; k0 + 8 <= k; k0 += 8) {
      __m256 xs[kM];
      for (int i = 0; i < kM; ++i) xs[i] = _mm256_loadu_ps(x + i * k + k0);
      for (int r = 0; r < kR; ++r) {
        const __m256 w = Load8<kDType>(rows[r], k0);
        for (int i = 0; i < kM; ++i) acc[r][i] = _mm256_fmadd_ps(w, xs[i], acc[r][i]);
      }
    }
    for (; k0 < k; ++k0) {
      for (int r = 0; r < kR; ++r) {
        const float w = LoadOne<kDType>(rows[r], k0);
        for (int i = 0; i < kM; ++i) tail[r][i] += w * x[i * k + k0];
      }
    }
  }
  for (int r = 0; r < kR; ++r) {
    for (int i = 0; i < kM; ++i) {
      y[i * n + seg.row0 + j0 + r] = HorizontalSum(acc[r][i]) + tail[r][i];
    }
  }
}

template <DType kDType, int kM>
void FusedRowsTyped(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1, const float* x,
                    int64_t k, int64_t n, float* y) {
  constexpr int kGroup = kM <= 2 ? 4 : 2;  // 16 ymm registers: kGroup * kM + kM + 1 <= 13
  int64_t j = j0;
  for (; j + kGroup <= j1; j += kGroup) FusedRowGroup<kDType, kM, kGroup>(seg, j, x, k, n, y);
  for (; j < j1; ++j) FusedRowGroup<kDType, kM, 1>(seg, j, x, k, n, y);
}

template <int kM>
void FusedRows(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1, const float* x,
               int64_t k, int64_t n, float* y) {
  switch (seg.dtype) {
    case DType::kF16:
      return FusedRowsTyped<DType::kF16, kM>(seg, j0, j1, x, k, n, y);
    case DType::kBF16:
      return FusedRowsTyped<DType::kBF16, kM>(seg, j0, j1, x, k, n, y);
    case DType::kQ8_0:
      return FusedRowsTyped<DType::kQ8_0, kM>(seg, j0, j1, x, k, n, y);
    default:
      return FusedRowsTyped<DType::kF32, kM>(seg, j0, j1, x, k, n, y);
  }
}
#else
// Portable: convert one row at a time into `buffer` (k floats), then dot it with each x row.
template <int kM>
void FusedRows(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1, const float* x,
               int64_t k, int64_t n, float* y, float* buffer) {
  for (int64_t j = j0; j < j1; ++j) {
    ConvertRow(seg.dtype, seg.data + static_cast<size_t>(j) * seg.row_bytes, k, buffer);
    for (int i = 0; i < kM; ++i) y[i * n + seg.row0 + j] = Dot(buffer, x + i * k, k);
  }
}
#endif

// Rows of W handed out in chunks: a chunk is one sequential read, and for the prefetchers the
// longer the better (measured: chunks of 32 rows of 4-bit weights with K = 576, i.e. 10 KB, read
// at 12 GB/s on 2 threads; 128 KB chunks at 24-28 GB/s). So about kFusedChunkBytes per chunk,
// but at least kFusedChunkRows rows and, while that allows, 2 chunks per thread for balance.
constexpr int64_t kFusedChunkRows = 32;
constexpr int64_t kFusedChunkBytes = 128 * 1024;

int64_t FusedChunkRows(const LinearWeight::Impl& w) {
  int64_t min_row_bytes = 0;
  for (const auto& seg : w.segments) {
    const auto bytes = static_cast<int64_t>(seg.row_bytes);
    if (min_row_bytes == 0 || bytes < min_row_bytes) min_row_bytes = bytes;
  }
  if (min_row_bytes == 0) return kFusedChunkRows;
  const int64_t threads = GetNumThreads();
  const int64_t balanced = (w.n + 2 * threads - 1) / (2 * threads);
  const int64_t rows =
      std::max(kFusedChunkRows, std::min(kFusedChunkBytes / min_row_bytes, balanced));
  // A whole number of chunks per thread (3072 rows of 364 were 9 chunks: 5 on one thread, 4 on the
  // other), unless the chunks would fall below kFusedChunkRows.
  int64_t chunks = (w.n + rows - 1) / rows;
  chunks = (chunks + threads - 1) / threads * threads;
  // A multiple of 16: chunks start on a group of the packed layout (linear_packed_quant.h).
  return std::max(kFusedChunkRows, ((w.n + chunks - 1) / chunks + 15) / 16 * 16);
}

// The thread policy's measure of one matrix-vector product: W's size in f32 (4 n k bytes), not
// as stored, since 4-bit weights cost more arithmetic per stored byte (unpacking, scales): measured
// on SmolLM2 Q4_1, its 576 x 576 projections (190 KB stored) still gain from 2 threads.
int64_t WorkBytes(const LinearWeight::Impl& w) { return 4 * w.n * w.k; }

// Rows [c.first, c.first + c.rows) of W times the kM rows of x (xq: their int8 image, or null).
template <int kM>
void FusedChunk(const LinearWeight::Impl& w, const Panel& c, const float* x, const QuantizedX* xq,
                float* y) {
  if (xq != nullptr && HasInt8Kernel(c.seg->dtype)) {
    return FusedQuantRowsInt8(*c.seg, c.first, c.first + c.rows, *xq, w.n, y);
  }
  if (IsFusedQuantDType(c.seg->dtype)) {
    return FusedQuantRows(*c.seg, c.first, c.first + c.rows, x, xq, kM, w.k, w.n, y);
  }
#if defined(UNMASK_FUSED_SIMD)
  FusedRows<kM>(*c.seg, c.first, c.first + c.rows, x, w.k, w.n, y);
#else
  thread_local std::vector<float> buffer;
  if (buffer.size() < static_cast<size_t>(w.k)) buffer.resize(static_cast<size_t>(w.k));
  FusedRows<kM>(*c.seg, c.first, c.first + c.rows, x, w.k, w.n, y, buffer.data());
#endif
}

// y = x W^T for m <= kFusedMaxM rows of x, in groups of up to 4 rows (the kernels' widths). A
// chunk of W's rows is read from memory once for all groups: each thread takes a chunk (about
// 128 KB, L2-resident) and runs every group over it before the next, so a verification of up to
// 16 tokens streams the weights once, as one token does. Each y[i, j] is computed by its group's
// kernel the same way whatever the group size, so a row's result does not depend on m
// (speculative verification of k drafts in one call gives the logits of k + 1 one-token calls).
void LinearFusedGroups(const LinearWeight::Impl& w, const float* x, int64_t m, float* y) {
  const std::vector<Panel> chunks = MakePanels(w, FusedChunkRows(w));
  // m rows share each weight read but multiply the arithmetic: m x the work of one row.
  const int workers = ThreadsForBytes(m * WorkBytes(w));
  const int64_t groups = (m + 3) / 4;
  // Segments whose kernel takes every row at once (packed Q4_0 / Q4_1 / Q8_0) and the others.
  bool all_rows = false, grouped = false;
  for (const auto& seg : w.segments) (TakesPackedKernel(seg) ? all_rows : grouped) = true;
  // x quantized once per call and group when segments of the Q8_0 / 4-/6-bit types take int8
  // activations, and once whole for the packed kernel (null with f32 activations: then every
  // segment takes the grouped f32 kernels).
  const QuantizedX* xq_all = all_rows ? PrepareQuantizedX(w, x, m, 4) : nullptr;
  if (all_rows && xq_all == nullptr) grouped = true;
  const QuantizedX* xq[4] = {};
  for (int64_t g = 0; grouped && g < groups; ++g) {
    xq[g] =
        PrepareQuantizedX(w, x + 4 * g * w.k, std::min<int64_t>(4, m - 4 * g), static_cast<int>(g));
  }
  ops_internal::ParallelForDynamic(static_cast<int64_t>(chunks.size()), workers, [&](int64_t i) {
    const Panel& c = chunks[static_cast<size_t>(i)];
    if (xq_all != nullptr && TakesPackedKernel(*c.seg)) {
      return FusedQuantRowsPacked(*c.seg, c.first, c.first + c.rows, *xq_all, w.n, y);
    }
    for (int64_t g = 0; g < groups; ++g) {
      const float* xg = x + 4 * g * w.k;
      float* yg = y + 4 * g * w.n;
      switch (std::min<int64_t>(4, m - 4 * g)) {
        case 1:
          FusedChunk<1>(w, c, xg, xq[g], yg);
          break;
        case 2:
          FusedChunk<2>(w, c, xg, xq[g], yg);
          break;
        case 3:
          FusedChunk<3>(w, c, xg, xq[g], yg);
          break;
        default:
          FusedChunk<4>(w, c, xg, xq[g], yg);
          break;
      }
    }
  });
}

float* ThreadPanelBuffer(size_t floats) {
  thread_local std::vector<float> buffer;
  if (buffer.size() < floats) buffer.resize(floats);
  return buffer.data();
}

// Returns the f32 rows of `panel`, dequantized into `buffer` unless they are already f32.
const float* PanelF32(const Panel& panel, int64_t k, float* buffer) {
  const uint8_t* src = panel.seg->data + static_cast<size_t>(panel.first) * panel.seg->row_bytes;
  if (panel.seg->dtype == DType::kF32) return reinterpret_cast<const float*>(src);
  if (panel.seg->packed != nullptr) {
    // From the packed copy, so that the stored one is not read again after the load: each row
    // back in its stored layout (the same bytes), then converted as it would have been.
    thread_local std::vector<uint8_t> row;
    row.resize(panel.seg->row_bytes);
    for (int64_t r = 0; r < panel.rows; ++r) {
      UnpackSegmentRow(*panel.seg, panel.first + r, k, row.data());
      ConvertRow(panel.seg->dtype, row.data(), k, buffer + r * k);
    }
    return buffer;
  }
  for (int64_t r = 0; r < panel.rows; ++r) {
    ConvertRow(panel.seg->dtype, src + static_cast<size_t>(r) * panel.seg->row_bytes, k,
               buffer + r * k);
  }
  return buffer;
}

}  // namespace

int64_t OnTheFlyPanelRows(int64_t k) {
  const int64_t rows =
      (1024 * 1024 / static_cast<int64_t>(sizeof(float))) / std::max<int64_t>(1, k);
  return std::clamp<int64_t>(rows / 16 * 16, 16, 256);
}

void LinearOnTheFly(const LinearWeight::Impl& w, const float* x, int64_t m, float* y) {
  const int64_t k = w.k;
  const int64_t n = w.n;
  if (m <= kFusedMaxM && ActiveGemmProvider() != GemmProvider::kReference) {
    LinearFusedGroups(w, x, m, y);
    return;
  }
  if (SgemmRunsNested()) {
    const int64_t panel_rows = OnTheFlyPanelRows(k);
    const std::vector<Panel> panels = MakePanels(w, panel_rows);
    // m rows through each panel: the panel GEMMs do m x the arithmetic of one row.
    const int workers = ThreadsForBytes(m * WorkBytes(w));
    ops_internal::ParallelForDynamic(static_cast<int64_t>(panels.size()), workers, [&](int64_t i) {
      float* buffer = ThreadPanelBuffer(static_cast<size_t>(panel_rows * k));
      const Panel& p = panels[static_cast<size_t>(i)];
      const float* wp = PanelF32(p, k, buffer);
      Sgemm(false, true, m, p.rows, k, 1.0f, x, k, wp, k, 0.0f, y + p.seg->row0 + p.first, n);
    });
    return;
  }
  // Sequential panels, each large enough for a threaded GEMM (>= 512 rows).
  const int64_t panel_rows = std::max<int64_t>(512, OnTheFlyPanelRows(k));
  float* buffer = ThreadPanelBuffer(static_cast<size_t>(panel_rows * k));  // the caller's
  for (const Panel& p : MakePanels(w, panel_rows)) {
    const float* wp = PanelF32(p, k, buffer);
    Sgemm(false, true, m, p.rows, k, 1.0f, x, k, wp, k, 0.0f, y + p.seg->row0 + p.first, n);
  }
}

}  // namespace unmask::cpu
