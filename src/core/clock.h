// Wall-clock helpers for timings reported in milliseconds.
#ifndef UNMASK_CORE_CLOCK_H_
#define UNMASK_CORE_CLOCK_H_

#include <chrono>

namespace unmask {

// Milliseconds from `t` to now (steady clock).
inline double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// Milliseconds from `a` to `b` (negative when b is earlier).
inline double MsBetween(std::chrono::steady_clock::time_point a,
                        std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace unmask

#endif  // UNMASK_CORE_CLOCK_H_
