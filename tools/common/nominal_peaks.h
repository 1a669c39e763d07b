// Nominal machine peaks of this project's machine class, overridable from the environment. Header
// only, so that the op benchmarks (which link only the op layer) read the same variables as the
// tools' roofline reports (common/roofline.h).
#ifndef UNMASK_TOOLS_COMMON_NOMINAL_PEAKS_H_
#define UNMASK_TOOLS_COMMON_NOMINAL_PEAKS_H_

#include <cstdlib>

namespace unmask::tools {

// A positive number from environment variable `name`, else `fallback`.
inline double PositiveEnvOr(const char* name, double fallback) {
  if (const char* env = std::getenv(name); env && *env) {
    const double v = std::atof(env);
    if (v > 0) return v;
  }
  return fallback;
}

// f32 FMA peak of this project's machine class with 2 threads, GFLOP/s (the project developer
// guide, "The machine": 2 threads of an AVX-512 AMD EPYC); override with $UNMASK_PEAK_GFLOPS on
// other hardware.
inline double NominalPeakGflops() { return PositiveEnvOr("UNMASK_PEAK_GFLOPS", 340.0); }

// Nominal read bandwidth of this project's machine class with 2 threads, GB/s (the developer
// guide: 25-28); override with $UNMASK_PEAK_GBS.
inline double NominalBandwidthGBs() { return PositiveEnvOr("UNMASK_PEAK_GBS", 26.0); }

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_NOMINAL_PEAKS_H_
