// Mechanics of the accelerated diffusion decoder on constructed logits: which positions each
// cache mode feeds (and whether it overwrites the KV cache in place), which rows get logits
// (shifted for Dream-style models), which tokens each commit rule commits, block advance and
// early stop.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "decode/decoder_diffusion.h"

namespace unmask {
namespace {

constexpr int64_t kVocab = 16;
constexpr int32_t kMask = 15, kEos = 14, kEot = 13;
using V = std::vector<int32_t>;

// Logits for the planned rows from fn(canvas position decoded by the row) -> row. The canvas
// position is pos0 + row (+1 for shifted logits, whose row p - 1 predicts p).
Tensor MakeLogits(const BatchPlan& plan, bool shift,
                  const std::function<std::vector<float>(int)>& fn) {
  Tensor t(DType::kF32, {std::max<int64_t>(plan.num_logit_rows(), 1), kVocab});
  int64_t r = 0;
  for (const SequenceInput& seq : plan.sequences) {
    for (int32_t row : seq.logit_rows) {
      const std::vector<float> v = fn(seq.pos0 + row + (shift ? 1 : 0));
      std::copy(v.begin(), v.end(), t.as<float>() + r * kVocab);
      ++r;
    }
  }
  return t;
}

// A row whose argmax is `token` with logit `peak` (others 0): softmax confidence
// e^peak / (e^peak + 15).
std::vector<float> Peak(int token, float peak) {
  std::vector<float> row(kVocab, 0.0f);
  row[static_cast<size_t>(token)] = peak;
  return row;
}

DiffusionDecoder Make(const DiffusionParams& p, V prompt, bool shift = false) {
  auto d = DiffusionDecoder::Create(p, {kMask, kEos, kEot}, prompt, 128, kVocab, shift);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return std::move(d).value();
}

V Step(DiffusionDecoder& d, const std::function<std::vector<float>(int)>& fn, bool shift = false,
       DiffusionStepResult* out = nullptr) {
  const BatchPlan& plan = (*d.Plan().value());
  const Tensor logits = MakeLogits(plan, shift, fn);
  DiffusionStepResult r;
  const Status s =
      d.Update(TensorView{logits.data(), DType::kF32, Shape{plan.num_logit_rows(), kVocab}}, &r);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (out != nullptr) *out = r;
  return r.committed_positions;
}

// Prompt of 3, gen 8, block 4: block 0 = [3, 7), block 1 = [7, 11), canvas length 11.
DiffusionParams Params(CacheMode cache, CommitRule commit) {
  DiffusionParams p;
  p.gen_length = 8;
  p.block_length = 4;
  p.steps = 8;
  p.cache = cache;
  p.commit = commit;
  p.prefix_look = 2;
  p.after_look = 1;
  return p;
}

// One token per step: only position `pos` is confident.
auto OneConfident(int pos) {
  return [pos](int p) { return Peak(p % 10, p == pos ? 9.0f : 0.5f); };
}

struct Fed {
  int32_t pos0;
  size_t n;
  bool replace;
  int32_t kv_seq;
  V logit_rows;
};
Fed Planned(DiffusionDecoder& d) {
  const SequenceInput& s = (*d.Plan().value()).sequences.at(0);
  return {s.pos0, s.tokens.size(), s.kv_replace, s.kv_seq,
          V(s.logit_rows.begin(), s.logit_rows.end())};
}

TEST(FastDecoderTest, NoCacheFeedsTheWholeCanvasEveryStep) {
  DiffusionDecoder d = Make(Params(CacheMode::kNone, CommitRule::kThreshold), {1, 2, 3});
  EXPECT_FALSE(d.needs_kv_cache());
  for (int i = 0; i < 2; ++i) {
    const Fed f = Planned(d);
    EXPECT_EQ(f.pos0, 0);
    EXPECT_EQ(f.n, 11u);
    EXPECT_EQ(f.kv_seq, -1);
    EXPECT_TRUE(d.planned_full_forward());
    Step(d, OneConfident(3 + i));
  }
}

TEST(FastDecoderTest, PrefixCacheRefreshesPerBlockThenFeedsBlockAndSuffix) {
  DiffusionDecoder d = Make(Params(CacheMode::kPrefix, CommitRule::kThreshold), {1, 2, 3});
  EXPECT_TRUE(d.needs_kv_cache());
  Fed f = Planned(d);  // block 0, step 0: full forward into the cache
  EXPECT_EQ(f.pos0, 0);
  EXPECT_EQ(f.n, 11u);
  EXPECT_EQ(f.kv_seq, 0);
  EXPECT_FALSE(f.replace);
  EXPECT_EQ(f.logit_rows, (V{3, 4, 5, 6}));
  EXPECT_EQ(Step(d, OneConfident(5)), (V{5}));
  f = Planned(d);  // later step: positions [3, 11) from position 3 (cache keeps [0, 3))
  EXPECT_EQ(f.pos0, 3);
  EXPECT_EQ(f.n, 8u);
  EXPECT_FALSE(f.replace);
  EXPECT_FALSE(d.planned_full_forward());
  EXPECT_EQ(f.logit_rows, (V{0, 1, 3}));  // positions 3, 4, 6
  // Everything confident: the rest of the block in one step, then block 1 starts with a refresh.
  // (One token everywhere: equal confidences, committed lower position first.)
  EXPECT_EQ(Step(d, [](int) { return Peak(4, 9.0f); }), (V{3, 4, 6}));
  EXPECT_EQ(d.current_block(), 1);
  f = Planned(d);
  EXPECT_EQ(f.pos0, 0);
  EXPECT_EQ(f.n, 11u);
  EXPECT_EQ(f.logit_rows, (V{7, 8, 9, 10}));
}

TEST(FastDecoderTest, DualCacheFeedsOnlyTheBlockInPlace) {
  DiffusionDecoder d = Make(Params(CacheMode::kDual, CommitRule::kThreshold), {1, 2, 3});
  Step(d, OneConfident(3));
  const Fed f = Planned(d);
  EXPECT_EQ(f.pos0, 3);
  EXPECT_EQ(f.n, 4u);
  EXPECT_TRUE(f.replace);
  EXPECT_EQ(f.logit_rows, (V{1, 2, 3}));
}

TEST(FastDecoderTest, VicinityFeedsAWindowAroundTheBlockClippedToTheCanvas) {
  DiffusionDecoder d = Make(Params(CacheMode::kVicinity, CommitRule::kThreshold), {1, 2, 3});
  Step(d, OneConfident(3));
  Fed f = Planned(d);  // [3 - 2, 7 + 1) = [1, 8)
  EXPECT_EQ(f.pos0, 1);
  EXPECT_EQ(f.n, 7u);
  EXPECT_TRUE(f.replace);
  EXPECT_EQ(f.logit_rows, (V{3, 4, 5}));              // positions 4, 5, 6
  Step(d, [](int p) { return Peak(p % 10, 9.0f); });  // finish block 0
  Step(d, OneConfident(7));                           // block 1 refresh step
  f = Planned(d);                                     // [7 - 2, 11 + 1) clipped to [5, 11)
  EXPECT_EQ(f.pos0, 5);
  EXPECT_EQ(f.n, 6u);
}

TEST(FastDecoderTest, ShiftedLogitsAskRowPMinusOneAndFeedTheBlockPredecessor) {
  DiffusionDecoder d = Make(Params(CacheMode::kDual, CommitRule::kThreshold), {1, 2, 3}, true);
  Fed f = Planned(d);
  EXPECT_EQ(f.logit_rows, (V{2, 3, 4, 5}));  // rows p - 1 of positions 3..6
  Step(d, OneConfident(4), true);
  f = Planned(d);  // dual: [3 - 1, 7) so that row 2 predicts position 3
  EXPECT_EQ(f.pos0, 2);
  EXPECT_EQ(f.n, 5u);
  EXPECT_EQ(f.logit_rows, (V{0, 2, 3}));  // positions 3, 5, 6
}

TEST(FastDecoderTest, ThresholdRuleRunsABlockUntilItIsFull) {
  DiffusionDecoder d = Make(Params(CacheMode::kNone, CommitRule::kThreshold), {1, 2, 3});
  // conf(9) ~ 0.998 >= 0.9; conf(0.5) ~ 0.1: only the top-1.
  EXPECT_EQ(Step(d, OneConfident(6)), (V{6}));
  auto two = [](int p) { return Peak(4, p == 3 || p == 5 ? 9.0f : 0.5f); };
  EXPECT_EQ(Step(d, two), (V{3, 5}));
  EXPECT_EQ(d.current_block(), 0);
  EXPECT_EQ(Step(d, OneConfident(4)), (V{4}));
  EXPECT_EQ(d.current_block(), 1);  // block full after 3 steps, not steps / blocks = 4
  EXPECT_EQ(Step(d, [](int) { return Peak(4, 9.0f); }), (V{7, 8, 9, 10}));
  EXPECT_TRUE(d.Done());
  EXPECT_EQ(d.nfe(), 4);
}

TEST(FastDecoderTest, FixedRuleWithCacheKeepsTheReferenceSchedule) {
  DiffusionParams p = Params(CacheMode::kDual, CommitRule::kFixed);
  p.steps = 4;  // 2 per block, 2 tokens per step
  DiffusionDecoder d = Make(p, {1, 2, 3});
  auto rising = [](int pos) { return Peak(pos % 10, static_cast<float>(pos)); };
  EXPECT_EQ(Step(d, rising), (V{6, 5}));
  EXPECT_FALSE((*d.Plan().value()).sequences[0].tokens.size() == 11u);  // cached step
  EXPECT_EQ(Step(d, rising), (V{4, 3}));
  EXPECT_EQ(Step(d, rising), (V{10, 9}));
  EXPECT_EQ(Step(d, rising), (V{8, 7}));
  EXPECT_TRUE(d.Done());
}

TEST(FastDecoderTest, FactorHierarchyAndCreditRulesCommitAtLeastOnePerStep) {
  for (CommitRule rule : {CommitRule::kFactor, CommitRule::kHierarchy, CommitRule::kCredit}) {
    DiffusionDecoder d = Make(Params(CacheMode::kVicinity, rule), {1, 2, 3});
    int steps = 0;
    while (!d.Done() && steps < 20) {
      EXPECT_FALSE(Step(d, [](int p) { return Peak(p % 10, 0.1f); }).empty());
      ++steps;
    }
    EXPECT_TRUE(d.Done()) << CommitRuleName(rule);
    EXPECT_EQ(d.num_masked(), 0);
  }
}

TEST(FastDecoderTest, EarlyStopFillsEverythingAfterAFinishedBlockWithEos) {
  DiffusionParams p = Params(CacheMode::kNone, CommitRule::kThreshold);
  p.gen_length = 12;  // three blocks
  p.steps = 12;
  p.early_stop = true;
  DiffusionDecoder d = Make(p, {1, 2, 3});
  // Block 0 gets EOS at position 5; the others are ordinary tokens.
  DiffusionStepResult r;
  Step(
      d, [](int pos) { return Peak(pos == 5 ? kEos : pos % 10, 9.0f); }, false, &r);
  EXPECT_TRUE(d.Done());
  EXPECT_TRUE(r.early_stopped);
  EXPECT_EQ(d.nfe(), 1);
  EXPECT_EQ(V(d.generated().begin(), d.generated().end()),
            (V{3, 4, kEos, 6, kEos, kEos, kEos, kEos, kEos, kEos, kEos, kEos}));
  // Without early stop the next block runs.
  p.early_stop = false;
  DiffusionDecoder e = Make(p, {1, 2, 3});
  Step(e, [](int pos) { return Peak(pos == 5 ? kEos : pos % 10, 9.0f); });
  EXPECT_FALSE(e.Done());
}

TEST(FastDecoderTest, DynamicRulesNeverCommitTheMaskId) {
  // The model "predicts" the mask token everywhere with the highest logit: a dynamic rule that
  // committed it would never finish the block (the position stays masked).
  for (CommitRule rule :
       {CommitRule::kThreshold, CommitRule::kFactor, CommitRule::kHierarchy, CommitRule::kCredit}) {
    DiffusionDecoder d = Make(Params(CacheMode::kNone, rule), {1, 2, 3});
    int steps = 0;
    while (!d.Done() && steps < 20) {
      Step(d, [](int p) {
        std::vector<float> row = Peak(p % 10, 2.0f);
        row[kMask] = 9.0f;
        return row;
      });
      ++steps;
    }
    EXPECT_TRUE(d.Done()) << CommitRuleName(rule);
    EXPECT_EQ(d.num_masked(), 0) << CommitRuleName(rule);
  }
}

TEST(FastDecoderTest, ShiftedRowsStayUniqueWhenThePromptStartsWithAMask) {
  // Positions 0 and 1 both read row 0 with shifted logits.
  DiffusionParams p = Params(CacheMode::kNone, CommitRule::kFixed);
  p.steps = 8;
  DiffusionDecoder d = Make(p, {kMask}, true);
  const Fed f = Planned(d);
  EXPECT_EQ(f.logit_rows, (V{0, 1, 2, 3}));  // positions 0..4 read rows 0, 0, 1, 2, 3
  Step(
      d, [](int) { return Peak(4, 9.0f); }, true);
  EXPECT_EQ(d.step(), 1);
}

TEST(FastDecoderTest, KvSequenceIsTheCallers) {
  DiffusionDecoder d = Make(Params(CacheMode::kDual, CommitRule::kThreshold), {1, 2, 3});
  d.set_kv_seq(3);
  EXPECT_EQ(Planned(d).kv_seq, 3);
}

TEST(FastDecoderTest, RejectsBadAccelerationParameters) {
  auto code = [](const DiffusionParams& p) {
    return DiffusionDecoder::Create(p, {kMask, kEos, kEot}, V{1}, 128, kVocab).status().code();
  };
  DiffusionParams p = Params(CacheMode::kDual, CommitRule::kThreshold);
  EXPECT_EQ(code(p), StatusCode::kOk);
  for (double t : {0.0, -0.5, 1.5, std::nan("")}) {
    DiffusionParams q = p;
    q.threshold = t;
    EXPECT_EQ(code(q), StatusCode::kInvalidArgument) << t;
  }
  DiffusionParams q = p;
  q.factor = 0;
  EXPECT_EQ(code(q), StatusCode::kInvalidArgument);
  q = p;
  q.low_threshold = 2;
  EXPECT_EQ(code(q), StatusCode::kInvalidArgument);
  q = p;
  q.credit_beta = 1.5;
  EXPECT_EQ(code(q), StatusCode::kInvalidArgument);
  q = p;
  q.prefix_look = -1;
  EXPECT_EQ(code(q), StatusCode::kInvalidArgument);
  q = p;
  q.cfg_scale = 1;  // CFG needs a second canvas per step; not with a cache
  EXPECT_EQ(code(q), StatusCode::kInvalidArgument);
  EXPECT_EQ(CacheModeFromName("dual"), CacheMode::kDual);
  EXPECT_FALSE(CacheModeFromName("bogus").has_value());
  EXPECT_EQ(CommitRuleFromName("credit"), CommitRule::kCredit);
  EXPECT_FALSE(CommitRuleFromName("").has_value());
}

}  // namespace
}  // namespace unmask
