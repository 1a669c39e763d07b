// Mean and sample standard deviation of repeated measurements (benchmark rows: mean ± sd).
#ifndef UNMASK_TOOLS_COMMON_SUMMARY_H_
#define UNMASK_TOOLS_COMMON_SUMMARY_H_

#include <cmath>
#include <vector>

namespace unmask::tools {

struct MeanSd {
  double mean = 0, sd = 0;
};

// sd uses n - 1 (0 for a single value); an empty input gives zeros.
inline MeanSd Summarize(const std::vector<double>& v) {
  MeanSd r;
  if (v.empty()) return r;
  for (double x : v) r.mean += x;
  r.mean /= static_cast<double>(v.size());
  for (double x : v) r.sd += (x - r.mean) * (x - r.mean);
  r.sd = v.size() > 1 ? std::sqrt(r.sd / static_cast<double>(v.size() - 1)) : 0.0;
  return r;
}

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_SUMMARY_H_
