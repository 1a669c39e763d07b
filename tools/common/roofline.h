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

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_ROOFLINE_H_
