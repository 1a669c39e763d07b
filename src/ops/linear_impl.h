// Ops-internal: the state behind LinearWeight (linear.h), shared by linear.cc and linear_cpu.cc.
#ifndef UNMASK_OPS_LINEAR_IMPL_H_
#define UNMASK_OPS_LINEAR_IMPL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cpu/packed_gemm.h"
#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"
#include "ops/linear.h"

namespace unmask {

struct LinearWeight::Impl {
  // Rows [row0, row0 + rows) of W kept in their stored dtype (kOnTheFly).
  struct Segment {
    int64_t row0 = 0;
    int64_t rows = 0;
    DType dtype = DType::kF32;
    const uint8_t* data = nullptr;  // [rows, k] in dtype
    size_t row_bytes = 0;
    // Q4_0 / Q4_1 / Q8_0 also packed in groups of 16 rows (linear_packed_quant.h) where the VNNI
    // kernel of that layout runs (PackQuantWeights); in `owned`. data stays valid for the others.
    const uint8_t* packed = nullptr;
  };

  int64_t n = 0;  // out_features
  int64_t k = 0;  // in_features
  WeightMode mode = WeightMode::kPacked;
  size_t owned_bytes = 0;
  cpu::PackedGemm packed;                                    // kPacked
  std::vector<Segment> segments;                             // kOnTheFly, in row order
  std::vector<std::unique_ptr<void, AlignedDeleter>> owned;  // copies behind segments
};

namespace cpu {

// Rows of W dequantized per panel in the on-the-fly path (linear_cpu.cc): about 1 MiB of f32
// (measured best on K 768 / 2048: 512 KiB panels ran ffn_down at M = 32 at 42 instead of 97
// GFLOP/s; 2 MiB left too few panels to balance 2 threads), clamped to [16, 256] rows.
int64_t OnTheFlyPanelRows(int64_t k);

// y[m, n] = x[m, k] * W^T for a kOnTheFly weight (validated by the caller, m >= 1).
void LinearOnTheFly(const LinearWeight::Impl& w, const float* x, int64_t m, float* y);

// linear_quant_cpu.cc / linear_quant_i8_cpu.cc: the fused small-M kernels of the 4- and 6-bit
// block types (f32 or int8 activations), and the int8-activation kernel of Q8_0 (with f32
// activations Q8_0 takes the generic fused kernels of linear_cpu.cc).
// True for Q4_0, Q4_1, Q4_K and Q6_K.
bool IsFusedQuantDType(DType dtype);
// True for the dtypes with an int8-activation kernel (FusedQuantRowsInt8): Q8_0, Q4_0, Q4_1, Q4_K
// and Q6_K.
bool HasInt8Kernel(DType dtype);

// x [m, k] quantized for the int8 kernels: each row in blocks of 32 elements as int8 values with
// an f32 scale, as ggml's block_q8_0 (but d kept in f32): d = max |x| / 127, q = x * (1 / d)
// rounded to nearest even (x / d when 1 / d overflows; 0 when d is 0 or NaN), plus the per-block
// sums the kernels use to apply the weights' offsets. linear_quant_i8_cpu.cc.
struct QuantizedX {
  int64_t m = 0;
  int64_t k = 0;                  // a multiple of 32
  std::vector<int8_t> q;          // [m, k], in [-127, 127]
  std::vector<float> d;           // [m, k / 32]; NaN for a block holding a NaN
  std::vector<float> d_sum;       // [m, k / 32]: d * (sum of the block's q)
  std::vector<int16_t> pair_sum;  // [m, k / 32, 16]: q[2 l] + q[2 l + 1] of the block
  std::vector<int32_t> sum;       // [m, k / 32]: the block's sum of q
  // The layout of the Q4_0 / Q4_1 kernels, which take blocks two at a time: per pair (A, B) of
  // blocks 2t, 2t + 1 of a row, A[0, 16) B[0, 16) A[16, 32) B[16, 32) (a last odd block as is),
  // and for lanes l < 8: 8 (pair_sum_A[l] + pair_sum_A[l + 8]), lanes 8 + l: the same for B.
  std::vector<int8_t> q_pairs;        // [m, k]
  std::vector<int16_t> pair_offsets;  // [m, k / 64, 16]
};

// Quantizes x [m, k] (k % 32 == 0) into *out (resized as needed); q_pairs and pair_offsets only
// with `pair_layout` (weights with Q4_0 / Q4_1 segments).
void QuantizeX(const float* x, int64_t m, int64_t k, QuantizedX* out, bool pair_layout = true);

// The int8 activations for one fused Linear call: x quantized into buffer `slot` (0..4) of the
// calling thread when GetQuantActivations() is kInt8 and w has a segment with HasInt8Kernel;
// nullptr otherwise (the f32 kernels run). Valid until the thread's next call with that slot.
const QuantizedX* PrepareQuantizedX(const LinearWeight::Impl& w, const float* x, int64_t m,
                                    int slot = 0);

// y[i, seg.row0 + j] = x[i, :] . W[seg.row0 + j, :] for i < m (1..4) and j in [j0, j1) of a
// segment whose dtype IsFusedQuantDType; x [m, k], y [m, n]. Each weight block is read once and
// multiplied in registers: with xq (its int8 image of x) by integer dot products, otherwise as
// exactly dequantized f32 weights (the f32 dot product of ConvertRow's numbers).
void FusedQuantRows(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1, const float* x,
                    const QuantizedX* xq, int64_t m, int64_t k, int64_t n, float* y);

// The integer kernels behind FusedQuantRows, and Q8_0's (linear_quant_i8_cpu.cc): y as above for
// a segment whose dtype HasInt8Kernel, xq.m rows (1..4). y is the exact product of xq's int8 image
// (d q) of x with the weights up to f32 rounding.
void FusedQuantRowsInt8(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1,
                        const QuantizedX& xq, int64_t n, float* y);

// True when LinearWeight::Prepare packs Q4_0 / Q4_1 / Q8_0 weights for the VNNI kernel of the
// 16-row layout (linear_packed_quant.h): the int8 tier is kAvx512Vnni and UNMASK_PACKED_QUANT is
// not "0".
bool PackQuantWeights(DType dtype);
// True when `seg` takes FusedQuantRowsPacked: it was packed and the tier (as capped now) is
// kAvx512Vnni.
bool TakesPackedKernel(const LinearWeight::Impl::Segment& seg);
// As FusedQuantRowsInt8 for such a segment, with every row of xq at once (xq.m in 1..16: the
// weights are read once for all of them); j0 a multiple of 16.
void FusedQuantRowsPacked(const LinearWeight::Impl::Segment& seg, int64_t j0, int64_t j1,
                          const QuantizedX& xq, int64_t n, float* y);
// The packed copy of a segment whose dtype PackQuantWeights: its bytes, the packing (out:
// PackedSegmentBytes bytes; sets seg->packed) and one row back in its stored layout (row_bytes at
// out).
size_t PackedSegmentBytes(DType dtype, int64_t rows, int64_t k);
void PackSegment(LinearWeight::Impl::Segment* seg, int64_t k, uint8_t* out);
void UnpackSegmentRow(const LinearWeight::Impl::Segment& seg, int64_t row, int64_t k, uint8_t* out);

// The instruction tier of the Q8_0, Q4_0 and Q4_1 int8 kernels, chosen at run time: kAvx512Vnni on
// CPUs with AVX-512 F/BW/VL and AVX512_VNNI (linear_q8_vnni_cpu.cc, linear_q4_vnni_cpu.cc, when the
// build has them), kAvx2 on the other x86-64-v3 CPUs, kScalar in a portable build. The tiers
// compute the same integer dot products and differ only in the f32 summation order. (Q4_K and
// Q6_K have the AVX2 kernels only.)
enum class Int8Tier { kScalar, kAvx2, kAvx512Vnni };
Int8Tier Int8KernelTier();
// Caps the tier (never raises it above the CPU's): tests run each tier on one machine.
void LimitInt8KernelTier(Int8Tier max);

}  // namespace cpu
}  // namespace unmask

#endif  // UNMASK_OPS_LINEAR_IMPL_H_
