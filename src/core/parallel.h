// Thread count and parallel loops. unmask uses OpenMP (libgomp), the same runtime oneDNN uses, so
// GEMM threads and our own loops share one pool and never oversubscribe the cores.
#ifndef UNMASK_CORE_PARALLEL_H_
#define UNMASK_CORE_PARALLEL_H_

#include <cstdint>
#include <functional>

namespace unmask {

// Sets the number of threads used by unmask's loops and by the GEMM libraries. n <= 0 means
// "all hardware threads".
void SetNumThreads(int n);
int GetNumThreads();
int HardwareThreads();

// Calls fn(begin, end) on disjoint chunks covering [0, n), in parallel. Chunks have at least
// `grain` items. Each index is visited exactly once; the order of chunks is unspecified.
void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Runs fn on a new thread and waits for it. libgomp keeps an idle OpenMP thread pool per thread
// that ever started a parallel region, until that thread exits; idle pools count as managed
// threads, and with more managed threads than cores libgomp stops spinning between parallel
// regions and puts its workers to sleep (futex wake-ups per region). Work done before an engine
// thread starts (loading, timing forwards) therefore belongs on a thread that ends: measured on
// the 2-core machine, AR decoding at batch 1 on an engine thread ran 2x slower while the main
// thread held an idle pool.
void RunOnTemporaryThread(const std::function<void()>& fn);

}  // namespace unmask

#endif  // UNMASK_CORE_PARALLEL_H_
