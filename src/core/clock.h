// Wall-clock intervals in milliseconds (double) on std::chrono::steady_clock: the unit of every
// *_ms statistic (ForwardStats::ms, GenerationStats, the scheduler's request stats).
#ifndef UNMASK_CORE_CLOCK_H_
#define UNMASK_CORE_CLOCK_H_

#include <chrono>

namespace unmask {

// Milliseconds from `a` to `b` (negative when b is earlier).
inline double MsBetween(std::chrono::steady_clock::time_point a,
                        std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Milliseconds from `t` to now.
inline double MsSince(std::chrono::steady_clock::time_point t) {
  return MsBetween(t, std::chrono::steady_clock::now());
}

}  // namespace unmask

#endif  // UNMASK_CORE_CLOCK_H_
