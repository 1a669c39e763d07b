#include "kv/kv_cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace unmask {
namespace {

KvCache Make(int64_t max_positions = 300, int64_t seqs = 2) {
  auto kv = KvCache::Create({2, 3, max_positions, seqs});
  EXPECT_TRUE(kv.ok()) << kv.status().ToString();
  return std::move(kv).value();
}

// Plans and applies a write of positions [pos0, pos0 + n) of `seq`.
Status Write(KvCache& kv, int64_t seq, int64_t pos0, int64_t n) {
  auto w = kv.Plan(seq, pos0, n);
  if (!w.ok()) return w.status();
  kv.Apply(*w);
  return Status::Ok();
}

TEST(KvCacheTest, RejectsNonPositiveSizes) {
  EXPECT_FALSE(KvCache::Create({0, 3, 10, 1}).ok());
  EXPECT_FALSE(KvCache::Create({2, 0, 10, 1}).ok());
  EXPECT_FALSE(KvCache::Create({2, 3, 0, 1}).ok());
  EXPECT_FALSE(KvCache::Create({2, 3, 10, 0}).ok());
}

TEST(KvCacheTest, PlanChecksGapsRangeAndSequence) {
  KvCache kv = Make(100);
  EXPECT_EQ(kv.Plan(0, 1, 1).status().code(),
            StatusCode::kFailedPrecondition);  // nothing cached yet
  EXPECT_EQ(kv.Plan(2, 0, 1).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(kv.Plan(-1, 0, 1).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(kv.Plan(0, 0, 101).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(Write(kv, 0, 0, 100).ok());
  EXPECT_EQ(kv.length(0), 100);
  EXPECT_EQ(kv.length(1), 0);
}

TEST(KvCacheTest, PlanChangesNothingUntilApplied) {
  KvCache kv = Make();
  ASSERT_TRUE(Write(kv, 0, 0, 10).ok());
  const size_t bytes = kv.bytes();
  auto w = kv.Plan(0, 4, 200);  // would drop [4, 10) and grow
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->seq, 0);
  EXPECT_EQ(w->pos0, 4);
  EXPECT_EQ(w->n, 200);
  EXPECT_FALSE(w->replace);
  EXPECT_EQ(kv.length(0), 10);
  EXPECT_EQ(kv.bytes(), bytes);
  auto r = kv.PlanReplace(0, 2, 8);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->replace);
  kv.Apply(*r);  // a replace keeps every row
  EXPECT_EQ(kv.length(0), 10);
  kv.Apply(*w);
  EXPECT_EQ(kv.length(0), 204);
  EXPECT_GT(kv.bytes(), bytes);
}

TEST(KvCacheTest, GrowingKeepsRowsAndReplanningDropsTheTail) {
  KvCache kv = Make();
  ASSERT_TRUE(Write(kv, 0, 0, 10).ok());
  for (int64_t l = 0; l < 2; ++l) {
    for (int64_t i = 0; i < 10 * 3; ++i) {
      kv.Keys(0, l)[i] = static_cast<float>(l * 1000 + i);
      kv.Values(0, l)[i] = static_cast<float>(-l * 1000 - i);
    }
  }
  ASSERT_TRUE(Write(kv, 0, 10, 200).ok());  // grows past the first allocation
  EXPECT_EQ(kv.length(0), 210);
  for (int64_t l = 0; l < 2; ++l) {
    for (int64_t i = 0; i < 10 * 3; ++i) {
      ASSERT_EQ(kv.Keys(0, l)[i], static_cast<float>(l * 1000 + i));
      ASSERT_EQ(kv.Values(0, l)[i], static_cast<float>(-l * 1000 - i));
    }
  }
  // A forward from position 5 (rejected speculative tokens) drops positions >= 5.
  ASSERT_TRUE(Write(kv, 0, 5, 2).ok());
  EXPECT_EQ(kv.length(0), 7);
  kv.Truncate(0, 3);
  EXPECT_EQ(kv.length(0), 3);
  kv.Truncate(0, 50);  // never grows
  EXPECT_EQ(kv.length(0), 3);
  kv.Clear(0);
  EXPECT_EQ(kv.length(0), 0);
  EXPECT_GT(kv.bytes(), 0u);
}

}  // namespace
}  // namespace unmask

namespace unmask {
namespace {

TEST(KvCacheTest, MoveRowsKeepsATreeBranchAndChecksItsArguments) {
  KvCache kv = Make();
  ASSERT_TRUE(Write(kv, 0, 0, 10).ok());
  for (int64_t l = 0; l < 2; ++l) {
    for (int64_t i = 0; i < 10 * 3; ++i) {
      kv.Keys(0, l)[i] = static_cast<float>(l * 1000 + i);
      kv.Values(0, l)[i] = static_cast<float>(-l * 1000 - i);
    }
  }
  // A tree fed at rows 4..9; the accepted branch is rows 4 (in place), 6 and 9.
  const std::vector<int32_t> from = {4, 6, 9};
  ASSERT_TRUE(kv.CheckMoveRows(0, from, 4).ok());
  kv.MoveRows(0, from, 4);
  EXPECT_EQ(kv.length(0), 10);  // the next Plan drops what follows the branch
  for (int64_t l = 0; l < 2; ++l) {
    for (size_t j = 0; j < from.size(); ++j) {
      for (int64_t c = 0; c < 3; ++c) {
        const int64_t dst = (4 + static_cast<int64_t>(j)) * 3 + c, src = from[j] * 3 + c;
        EXPECT_EQ(kv.Keys(0, l)[dst], static_cast<float>(l * 1000 + src));
        EXPECT_EQ(kv.Values(0, l)[dst], static_cast<float>(-l * 1000 - src));
      }
    }
    EXPECT_EQ(kv.Keys(0, l)[3 * 3], static_cast<float>(l * 1000 + 9));  // row 3 untouched
  }
  const std::vector<int32_t> descending = {6, 5}, upward = {2}, past = {10};
  EXPECT_EQ(kv.CheckMoveRows(0, descending, 4).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kv.CheckMoveRows(0, upward, 4).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kv.CheckMoveRows(0, past, 4).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(kv.CheckMoveRows(5, from, 4).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(kv.CheckMoveRows(0, from, -1).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace unmask
