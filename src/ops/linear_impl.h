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
  };

  int64_t n = 0;  // out_features
  int64_t k = 0;  // in_features
  WeightMode mode = WeightMode::kPackedF32;
  size_t owned_bytes = 0;
  cpu::PackedGemm packed;                                    // kPackedF32
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

}  // namespace cpu
}  // namespace unmask

#endif  // UNMASK_OPS_LINEAR_IMPL_H_
