// Machine peaks for benchmark reports: measured in the same run where possible (ARCHITECTURE.md
// "Performance model": every benchmark prints the achieved fraction of the roofline).
#ifndef UNMASK_TOOLS_COMMON_ROOFLINE_H_
#define UNMASK_TOOLS_COMMON_ROOFLINE_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "common/nominal_peaks.h"  // NominalPeakGflops, NominalBandwidthGBs
#include "core/status.h"
#include "format/gguf.h"
#include "ops/linear.h"

namespace unmask::tools {

// Measures the GEMM peak the engine can reach now: y[512, 2048] = x[512, 768] W^T with W
// prepacked f32, through the current CPU backend, best of `reps` timed runs after a warm-up.
// Returns GFLOP/s.
StatusOr<double> MeasureGemmPeakGflops(int reps = 10);

// Measures the memory read bandwidth the engine's threads reach now: sums of an f32 buffer of
// `bytes` (default 256 MiB: main memory) split over the current thread count (core/parallel.h),
// best of `reps` timed passes after a warm-up pass. Returns GB/s (1e9 bytes/s). Decoding at batch
// 1 reads every weight once per token, so weight bytes per token / time per token against this is
// the memory roofline fraction. A buffer the size of a small model's weights measures the rate of
// the cache level those weights stay in.
double MeasureMemoryBandwidthGBs(int reps = 5, int64_t bytes = int64_t{256} << 20);

// GEMM throughput against the number of rows M (positions fed in one forward) on one of a model's
// own weight matrices: blk.0.ffn_up.weight ([ffn, hidden], the stored dtype) prepared with `mode`
// as the model prepares its weights; y[M, ffn] = x[M, hidden] W^T, best of `reps` after a
// warm-up, for each M of `rows`. Returns (M, FLOP/s) pairs. Errors: NotFound without that tensor,
// the errors of LinearWeight::Prepare and Linear.
StatusOr<std::vector<std::pair<double, double>>> MeasureGemmCurve(const gguf::GgufFile& file,
                                                                  WeightMode mode,
                                                                  const std::vector<int64_t>& rows,
                                                                  int reps = 5);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_ROOFLINE_H_
