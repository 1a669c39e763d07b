// RunOnTemporaryThread runs its function on another thread, to completion, before returning; the
// thread policy splits work only when every thread gets enough of it.
#include "core/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace unmask {
namespace {

TEST(ParallelTest, RunOnTemporaryThreadRunsElsewhereAndWaits) {
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id ran_on;
  int64_t sum = 0;
  RunOnTemporaryThread([&] {
    ran_on = std::this_thread::get_id();
    std::vector<int64_t> values(1000, 0);  // each index written by exactly one chunk
    ParallelFor(1000, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) values[static_cast<size_t>(i)] = i;
    });
    for (int64_t v : values) sum += v;
  });
  EXPECT_NE(ran_on, caller);
  EXPECT_EQ(sum, 999 * 1000 / 2);
}

TEST(ParallelTest, ThreadPolicyFollowsTheWork) {
  SetNumThreads(4);
  EXPECT_EQ(ThreadsForBytes(0), 1);
  EXPECT_EQ(ThreadsForBytes(kMinParallelBytes - 1), 1);
  EXPECT_EQ(ThreadsForBytes(2 * kMinParallelBytes), 2);
  EXPECT_EQ(ThreadsForBytes(1000 * kMinParallelBytes), 4);  // never more than allowed
  EXPECT_EQ(ThreadsForFlops(kMinParallelFlops / 2), 1);
  EXPECT_EQ(ThreadsForFlops(3 * kMinParallelFlops), 3);
  // Chunks of rows carry >= kMinParallelBytes each; a row larger than that is a chunk alone.
  EXPECT_EQ(GrainForBytes(256), kMinParallelBytes / 256);
  EXPECT_EQ(GrainForBytes(kMinParallelBytes * 3), 1);
  EXPECT_EQ(GrainForBytes(0), kMinParallelBytes);
  SetNumThreads(1);
  EXPECT_EQ(ThreadsForBytes(1000 * kMinParallelBytes), 1);
  SetNumThreads(0);
}

TEST(ParallelTest, SmallLoopsStayOnTheCallingThread) {
  SetNumThreads(2);
  // stories260K's RMSNorm: one row of 64 floats is far below a chunk's worth of work.
  std::mutex mu;
  std::set<std::thread::id> threads;
  ParallelFor(16, GrainForBytes(8 * 64), [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(mu);
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(threads.size(), 1u);
  EXPECT_EQ(*threads.begin(), std::this_thread::get_id());
  SetNumThreads(0);
}

}  // namespace
}  // namespace unmask
