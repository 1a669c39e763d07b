// Fused small-M Linear for Q4_0 / Q4_1 / Q4_K / Q6_K weights (the kFusedMaxM path of
// linear_cpu.cc): the dispatch between the int8-activation kernels (linear_quant_i8_cpu.cc, the
// default) and the exact-activation ones here (QuantActivations::kF32).
//
// kF32: each block of a weight row is read once in its stored width, decoded in registers to exact
// f32 weights (ops/quant_simd.h) and multiplied into every x row with FMAs; no f32 copy of W is
// written. The result is an f32 dot product of the exactly dequantized weights (the numbers
// ConvertRow produces, up to the sign of zeros). One weight row at a time, streamed from the start
// of the row to its end (rows are contiguous, so a chunk of rows is one sequential read); kAcc
// accumulators per x row keep enough FMA chains in flight to hide their latency behind the
// decoding work. Blocks of 32 are handled two per step so that their slices, too, rotate over the
// accumulators. Decoding costs ~18 vector operations per 32 weights on AVX2, which bounds this path
// at ~8-9 GB/s of Q4 weights per core (see docs/benchmarks.md).
#include <vector>

#include "ops/kernels_cpu.h"
#include "ops/linear.h"
#include "ops/linear_impl.h"
#include "ops/quant_simd.h"
#include "ops/simd_math.h"

namespace unmask::cpu {
namespace {

#if defined(UNMASK_QUANT_SIMD)
using quant::VecF;

#if defined(UNMASK_HAVE_AVX512)
inline VecF Zero() { return _mm512_setzero_ps(); }
inline VecF Load(const float* p) { return _mm512_loadu_ps(p); }
inline VecF Fma(VecF a, VecF b, VecF c) { return _mm512_fmadd_ps(a, b, c); }
inline VecF Add(VecF a, VecF b) { return _mm512_add_ps(a, b); }
inline float Sum(VecF v) { return _mm512_reduce_add_ps(v); }
#else
inline VecF Zero() { return _mm256_setzero_ps(); }
inline VecF Load(const float* p) { return _mm256_loadu_ps(p); }
inline VecF Fma(VecF a, VecF b, VecF c) { return _mm256_fmadd_ps(a, b, c); }
inline VecF Add(VecF a, VecF b) { return _mm256_add_ps(a, b); }
inline float Sum(VecF v) { return HorizontalSum(v); }
#endif

template <class Block>
struct QuantTraits;
template <>
struct QuantTraits<BlockQ4_0> {
  static constexpr int kSize = kQ4_0BlockSize;
  static constexpr int kUnroll = 2;
  template <class Fn>
  static void Decode(const BlockQ4_0& b, Fn&& fn) {
    quant::DecodeQ4_0</*kSignedZeros=*/false>(b, fn);
  }
};
template <>
struct QuantTraits<BlockQ4_1> {
  static constexpr int kSize = kQ4_1BlockSize;
  static constexpr int kUnroll = 2;
  template <class Fn>
  static void Decode(const BlockQ4_1& b, Fn&& fn) {
    quant::DecodeQ4_1(b, fn);
  }
};
template <>
struct QuantTraits<BlockQ4_K> {
  static constexpr int kSize = kQkK;
  static constexpr int kUnroll = 1;
  template <class Fn>
  static void Decode(const BlockQ4_K& b, Fn&& fn) {
    quant::DecodeQ4_K(b, fn);
  }
};
template <>
struct QuantTraits<BlockQ6_K> {
  static constexpr int kSize = kQkK;
  static constexpr int kUnroll = 1;
  template <class Fn>
  static void Decode(const BlockQ6_K& b, Fn&& fn) {
    quant::DecodeQ6_K</*kSignedZeros=*/false>(b, fn);
  }
};

// Accumulators (FMA chains) per x row.
// The same number for every M, so that a row is summed in the same order whatever the number of
// rows in the call (speculative verification must reproduce one-token decoding bit for bit).
constexpr int AccumulatorsFor(int) { return 2; }

// Accumulates blocks [b, b + kCount) of one weight row into acc.
template <class Block, int kM, int kAcc, int kCount>
inline void AccumulateBlocks(const Block* row, int64_t b, const float* x, int64_t k,
                             VecF (&acc)[kM][kAcc]) {
  using T = QuantTraits<Block>;
  constexpr int kSlices = T::kSize / quant::kLanes;
#pragma GCC unroll 4
  for (int u = 0; u < kCount; ++u) {
    const float* xb = x + (b + u) * T::kSize;
    T::Decode(row[b + u], [&](int offset, VecF w) {
      const int a = (u * kSlices + offset / quant::kLanes) % kAcc;
      for (int i = 0; i < kM; ++i) acc[i][a] = Fma(w, Load(xb + i * k + offset), acc[i][a]);
    });
  }
}

template <class Block, int kM>
void QuantRows(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1, const float* x,
               int64_t k, int64_t n, float* y) {
  using T = QuantTraits<Block>;
  constexpr int kAcc = AccumulatorsFor(kM);
  const int64_t num_blocks = k / T::kSize;
  for (int64_t j = j0; j < j1; ++j) {
    const auto* row =
        reinterpret_cast<const Block*>(seg.data + static_cast<size_t>(j) * seg.row_bytes);
    VecF acc[kM][kAcc];
    for (int i = 0; i < kM; ++i) {
      for (int a = 0; a < kAcc; ++a) acc[i][a] = Zero();
    }
    int64_t b = 0;
    for (; b + T::kUnroll <= num_blocks; b += T::kUnroll) {
      AccumulateBlocks<Block, kM, kAcc, T::kUnroll>(row, b, x, k, acc);
    }
    for (; b < num_blocks; ++b) AccumulateBlocks<Block, kM, kAcc, 1>(row, b, x, k, acc);
    for (int i = 0; i < kM; ++i) {
      VecF total = acc[i][0];
      for (int a = 1; a < kAcc; ++a) total = Add(total, acc[i][a]);
      y[i * n + seg.row0 + j] = Sum(total);
    }
  }
}

template <int kM>
void QuantRowsM(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1, const float* x,
                int64_t k, int64_t n, float* y) {
  switch (seg.dtype) {
    case DType::kQ4_0:
      return QuantRows<BlockQ4_0, kM>(seg, j0, j1, x, k, n, y);
    case DType::kQ4_1:
      return QuantRows<BlockQ4_1, kM>(seg, j0, j1, x, k, n, y);
    case DType::kQ4_K:
      return QuantRows<BlockQ4_K, kM>(seg, j0, j1, x, k, n, y);
    case DType::kQ6_K:
      return QuantRows<BlockQ6_K, kM>(seg, j0, j1, x, k, n, y);
    default:
      return;  // the caller dispatches only these types here
  }
}
#endif  // UNMASK_QUANT_SIMD

}  // namespace

bool IsFusedQuantDType(DType dtype) {
  return dtype == DType::kQ4_0 || dtype == DType::kQ4_1 || dtype == DType::kQ4_K ||
         dtype == DType::kQ6_K;
}

bool HasInt8Kernel(DType dtype) { return dtype == DType::kQ8_0 || IsFusedQuantDType(dtype); }

const QuantizedX* PrepareQuantizedX(const LinearWeight::Impl& w, const float* x, int64_t m,
                                    int slot) {
  if (GetQuantActivations() != QuantActivations::kInt8) return nullptr;
  bool any = false, pairs = false;
  for (const auto& seg : w.segments) {
    any = any || HasInt8Kernel(seg.dtype);
    // The pair layout only for Q4 segments of the row-major kernels (not the packed one).
    pairs = pairs ||
            ((seg.dtype == DType::kQ4_0 || seg.dtype == DType::kQ4_1) && !TakesPackedKernel(seg));
  }
  if (!any) return nullptr;
  thread_local QuantizedX buffers[5];
  QuantizedX& buffer = buffers[slot >= 0 && slot < 5 ? slot : 0];
  QuantizeX(x, m, w.k, &buffer, pairs);
  return &buffer;
}

void FusedQuantRows(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1, const float* x,
                    const QuantizedX* xq, int64_t m, int64_t k, int64_t n, float* y) {
  if (xq != nullptr) return FusedQuantRowsInt8(seg, j0, j1, *xq, n, y);
#if defined(UNMASK_QUANT_SIMD)
  switch (m) {
    case 1:
      return QuantRowsM<1>(seg, j0, j1, x, k, n, y);
    case 2:
      return QuantRowsM<2>(seg, j0, j1, x, k, n, y);
    case 3:
      return QuantRowsM<3>(seg, j0, j1, x, k, n, y);
    default:
      return QuantRowsM<4>(seg, j0, j1, x, k, n, y);
  }
#else
  // Portable: one converted row at a time in a per-thread buffer.
  thread_local std::vector<float> buffer;
  if (buffer.size() < static_cast<size_t>(k)) buffer.resize(static_cast<size_t>(k));
  for (int64_t j = j0; j < j1; ++j) {
    ConvertRow(seg.dtype, seg.data + static_cast<size_t>(j) * seg.row_bytes, k, buffer.data());
    for (int64_t i = 0; i < m; ++i) y[i * n + seg.row0 + j] = Dot(buffer.data(), x + i * k, k);
  }
#endif
}

}  // namespace unmask::cpu
