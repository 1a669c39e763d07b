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

// Thread policy: whether threading pays is decided per operation from its work, not from the
// thread count alone. A parallel region costs microseconds (waking the pool, the closing barrier;
// far more when another process holds the other core), so a loop is split only when every thread
// gets at least kMinParallelBytes of memory traffic, about 20 us of one core's work at the
// 10-15 GB/s one core streams. Tiny models (stories260K: 64-wide layers, 1-16 KB per op) then run
// every op on one thread whatever --threads says, and are never slower than -t 1; large ops use
// all threads. Measured per model in docs/benchmarks.md ("Build flags and threads").
inline constexpr int64_t kMinParallelBytes = 256 * 1024;

// Matrix products: split only with >= kMinParallelFlops per thread (about 10 us of one core's
// f32 GEMM at 150-250 GFLOP/s).
inline constexpr int64_t kMinParallelFlops = 2'000'000;

// Items per chunk so that a chunk of items of `bytes_per_item` moves >= kMinParallelBytes (>= 1).
int64_t GrainForBytes(int64_t bytes_per_item);
// Threads worth using for work that moves about `bytes` in total: in [1, GetNumThreads()].
int ThreadsForBytes(int64_t bytes);
// Threads worth using for a matrix product of `flops` (2 m n k): in [1, GetNumThreads()].
int ThreadsForFlops(int64_t flops);

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
