// Machine peaks for benchmark reports: measured in the same run where possible (ARCHITECTURE.md
// "Performance model": every benchmark prints the achieved fraction of the roofline).
#ifndef UNMASK_TOOLS_COMMON_ROOFLINE_H_
#define UNMASK_TOOLS_COMMON_ROOFLINE_H_

#include "core/status.h"

namespace unmask::tools {

// f32 FMA peak of this project's machine class with 2 threads, GFLOP/s (the project developer
// guide, "The machine"); override with $UNMASK_PEAK_GFLOPS on other hardware.
double NominalPeakGflops();

// Measures the GEMM peak the engine can reach now: y[512, 2048] = x[512, 768] W^T with W
// prepacked f32, through the current CPU backend, best of `reps` timed runs after a warm-up.
// Returns GFLOP/s.
StatusOr<double> MeasureGemmPeakGflops(int reps = 10);

// Measures the memory read bandwidth the engine's threads reach now: sums of a 256 MiB f32 buffer
// split over the current thread count (core/parallel.h), best of `reps` timed passes after a
// warm-up pass. Returns GB/s (1e9 bytes/s). Decoding at batch 1 reads every weight once per token,
// so weight bytes per token / time per token against this is the memory roofline fraction.
double MeasureMemoryBandwidthGBs(int reps = 5);

// Nominal read bandwidth of this project's machine class with 2 threads, GB/s (the developer
// guide: 25-28); override with $UNMASK_PEAK_GBS.
double NominalBandwidthGBs();

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_ROOFLINE_H_
