#include "common/roofline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "core/parallel.h"

namespace unmask::tools {

StatusOr<double> MeasureGemmPeakGflops(const Backend& backend, ComputeType type, int reps) {
  return backend.MeasureGemmPeakGflops(reps, type);
}

StatusOr<std::vector<TypedPeak>> MeasureGemmPeaks(const Backend& backend, int reps) {
  std::vector<TypedPeak> peaks;
  for (ComputeType t : {ComputeType::kF32, ComputeType::kBf16, ComputeType::kInt8}) {
    if (t != ComputeType::kF32 && !backend.HasNativeCompute(t)) continue;
    UNMASK_ASSIGN_OR_RETURN(const double g, backend.MeasureGemmPeakGflops(reps, t));
    peaks.push_back({t, g});
  }
  return peaks;
}

std::string FormatPeaks(const std::vector<TypedPeak>& peaks) {
  std::string out;
  char buf[64];
  for (const TypedPeak& p : peaks) {
    std::snprintf(buf, sizeof(buf), "%s%s %.1f", out.empty() ? "" : ", ",
                  std::string(ComputeTypeName(p.type)).c_str(), p.gflops);
    out += buf;
  }
  const bool int8 = std::any_of(peaks.begin(), peaks.end(),
                                [](const TypedPeak& p) { return p.type == ComputeType::kInt8; });
  return out + (int8 ? " GFLOP/s (int8: GOP/s)" : " GFLOP/s");
}

std::string FormatRidges(const std::vector<TypedPeak>& peaks, double bandwidth_gbs) {
  std::string out;
  char buf[64];
  for (const TypedPeak& p : peaks) {
    std::snprintf(buf, sizeof(buf), "%s%s %.1f", out.empty() ? "" : ", ",
                  std::string(ComputeTypeName(p.type)).c_str(),
                  p.gflops / std::max(bandwidth_gbs, 1e-9));
    out += buf;
  }
  return out;
}

double MeasureMemoryBandwidthGBs(int reps, int64_t bytes) {
  const int64_t chunks = 64;
  // Whole chunks of 8 floats, at least one each.
  const int64_t kFloats = std::max<int64_t>(bytes / 4 / (8 * chunks), 1) * 8 * chunks;
  std::vector<float> buf(static_cast<size_t>(kFloats), 1.0f);
  std::vector<double> sums(static_cast<size_t>(chunks));
  double best = 1e30;
  for (int r = 0; r <= reps; ++r) {  // r == 0: warm-up
    const auto t0 = std::chrono::steady_clock::now();
    ParallelFor(chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const float* p = buf.data() + c * (kFloats / chunks);
        // Eight independent accumulators: the loop is bound by loads, not by add latency.
        float acc[8] = {};
        for (int64_t i = 0; i < kFloats / chunks; i += 8) {
          for (int j = 0; j < 8; ++j) acc[j] += p[i + j];
        }
        double s = 0;
        for (float a : acc) s += a;
        sums[static_cast<size_t>(c)] = s;
      }
    });
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best = std::min(best, secs);
  }
  volatile double sink = 0;
  for (double s : sums) sink = sink + s;
  return static_cast<double>(kFloats) * sizeof(float) / best / 1e9;
}

}  // namespace unmask::tools
