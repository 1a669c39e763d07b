// RunOnTemporaryThread runs its function on another thread, to completion, before returning.
#include "core/parallel.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace unmask
