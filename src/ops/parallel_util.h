// Ops-internal: dynamic work distribution on top of core ParallelFor. Items are handed out one at
// a time from an atomic counter, so a thread that is slowed down (uneven items such as causal
// attention blocks, or a core shared with another process) does not hold up the others, unlike
// ParallelFor's static split.
#ifndef UNMASK_OPS_PARALLEL_UTIL_H_
#define UNMASK_OPS_PARALLEL_UTIL_H_

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "core/parallel.h"

namespace unmask::ops_internal {

// Calls fn(i) once for every i in [0, n), from up to min(GetNumThreads(), max_workers) threads
// (max_workers: ThreadsForBytes of the loop's traffic, core/parallel.h). fn must be safe to call
// concurrently for different i.
template <typename Fn>
void ParallelForDynamic(int64_t n, int max_workers, const Fn& fn) {
  if (n <= 0) return;
  const int64_t workers = std::min<int64_t>({GetNumThreads(), n, std::max(1, max_workers)});
  if (workers <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<int64_t> next{0};
  ParallelFor(workers, 1, [&](int64_t, int64_t) {
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      fn(i);
    }
  });
}

}  // namespace unmask::ops_internal

#endif  // UNMASK_OPS_PARALLEL_UTIL_H_
