// Machine peaks for benchmark reports: measured in the same run where possible (ARCHITECTURE.md
// "Performance model": every benchmark prints the achieved fraction of the roofline).
#ifndef UNMASK_TOOLS_COMMON_ROOFLINE_H_
#define UNMASK_TOOLS_COMMON_ROOFLINE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/nominal_peaks.h"  // NominalPeakGflops, NominalBandwidthGBs
#include "core/status.h"
#include "format/gguf.h"
#include "model/loader.h"
#include "plan/gemm_curve.h"

namespace unmask::tools {

// Measures the GEMM peak the engine can reach now through `backend` in compute type `type`
// (Backend::MeasureGemmPeakGflops: y[512, 2048] = x[512, 768] W^T with W prepacked in `type`),
// best of `reps` timed runs after a warm-up. Returns GFLOP/s (GOP/s for int8).
StatusOr<double> MeasureGemmPeakGflops(const Backend& backend, ComputeType type = ComputeType::kF32,
                                       int reps = 10);

// The peak of each compute type the backend runs natively (f32 always; bf16 / int8 where the CPU
// has their instructions), in that order: the rooflines a report judges each forward against.
struct TypedPeak {
  ComputeType type;
  double gflops;
};
StatusOr<std::vector<TypedPeak>> MeasureGemmPeaks(const Backend& backend, int reps = 10);
// "f32 310.2, bf16 620.5, int8 1204.8 GFLOP/s (int8: GOP/s)" (the note only with an int8 peak).
std::string FormatPeaks(const std::vector<TypedPeak>& peaks);
// "f32 12.1, bf16 24.3" FLOP/byte: each peak over the bandwidth (GB/s).
std::string FormatRidges(const std::vector<TypedPeak>& peaks, double bandwidth_gbs);

// Measures the memory read bandwidth the engine's threads reach now: sums of an f32 buffer of
// `bytes` (default 256 MiB: main memory) split over the current thread count (core/parallel.h),
// best of `reps` timed passes after a warm-up pass. Returns GB/s (1e9 bytes/s). Decoding at batch
// 1 reads every weight once per token, so weight bytes per token / time per token against this is
// the memory roofline fraction. A buffer the size of a small model's weights measures the rate of
// the cache level those weights stay in.
double MeasureMemoryBandwidthGBs(int reps = 5, int64_t bytes = int64_t{256} << 20);

// GEMM throughput against the number of rows M (positions fed in one forward) on one of a model's
// own weight matrices (plan/gemm_curve.h).
using plan::MeasureGemmCurve;

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_ROOFLINE_H_
