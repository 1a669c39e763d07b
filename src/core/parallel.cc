#include "core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <thread>

namespace unmask {
namespace {
int g_num_threads = 0;  // 0: not set yet
}  // namespace

int HardwareThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

void SetNumThreads(int n) {
  g_num_threads = n <= 0 ? HardwareThreads() : n;
  omp_set_num_threads(g_num_threads);
}

int GetNumThreads() { return g_num_threads > 0 ? g_num_threads : omp_get_max_threads(); }

namespace {
// One thread per `per_thread` of work, at least 1 and at most GetNumThreads().
int ThreadsFor(int64_t work, int64_t per_thread) {
  return static_cast<int>(std::clamp<int64_t>(work / per_thread, 1, GetNumThreads()));
}
}  // namespace

int64_t GrainForBytes(int64_t bytes_per_item) {
  const int64_t b = std::max<int64_t>(1, bytes_per_item);
  return (kMinParallelBytes + b - 1) / b;
}

int ThreadsForBytes(int64_t bytes) { return ThreadsFor(bytes, kMinParallelBytes); }
int ThreadsForFlops(int64_t flops) { return ThreadsFor(flops, kMinParallelFlops); }

void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t max_chunks = (n + grain - 1) / grain;
  const int threads = static_cast<int>(std::min<int64_t>(GetNumThreads(), max_chunks));
  if (threads <= 1) {
    fn(0, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num();
    const int64_t nt = omp_get_num_threads();
    const int64_t begin = n * t / nt;
    const int64_t end = n * (t + 1) / nt;
    if (begin < end) fn(begin, end);
  }
}

void RunOnTemporaryThread(const std::function<void()>& fn) {
  std::thread t(fn);
  t.join();
}

}  // namespace unmask
