// SDAR's block-diffusion decoding on constructed logits: the schedule, the plan of each phase
// (prefill of whole prompt blocks, block steps against the cache, the store forward; the fused
// schedule that folds prefill and stores into the next denoising forward), every
// remasking strategy, the reproduced over-commit edge case (prompt tokens of the shared first
// block overwritten), stop ids, NFE, and the bad-parameter paths. The token-for-token agreement
// with the Python reference on real forwards is in block_golden_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "decode/decoder_block_diffusion.h"

namespace unmask {
namespace {

constexpr int64_t kVocab = 16;
constexpr int32_t kMask = 15;

// Rows of logits: row r peaks at tokens[r] with logit peaks[r] (others 0).
std::vector<float> Peaked(const std::vector<int32_t>& tokens, const std::vector<float>& peaks) {
  std::vector<float> l(tokens.size() * kVocab, 0.0f);
  for (size_t r = 0; r < tokens.size(); ++r)
    l[r * kVocab + static_cast<size_t>(tokens[r])] = peaks[r];
  return l;
}

BlockParams Params(BlockRemasking r, int64_t gen, int64_t block, int64_t steps) {
  BlockParams p;
  p.remasking = r;
  p.gen_length = gen;
  p.block_length = block;
  p.denoising_steps = steps;
  p.separate_store = true;  // the reference's schedule; the fused one has its own tests
  return p;
}

// Runs one Plan/Update with logits built per row by `make(row position)` -> (token, peak).
template <typename Make>
DecodeStep Step(BlockDiffusionDecoder& d, Make make) {
  auto plan = d.Plan();
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  const SequenceInput& s = (*plan)->sequences[0];
  std::vector<int32_t> tok;
  std::vector<float> peak;
  for (int32_t r : s.logit_rows) {
    const auto [t, p] = make(s.pos0 + r);
    tok.push_back(t);
    peak.push_back(p);
  }
  std::vector<float> l = Peaked(tok, peak);
  DecodeStep st;
  const Status u = d.Update(
      TensorView{l.data(), DType::kF32, Shape{static_cast<int64_t>(tok.size()), kVocab}}, &st);
  EXPECT_TRUE(u.ok()) << u.ToString();
  return st;
}

TEST(BlockScheduleTest, RemainderGoesToTheFirstSteps) {
  EXPECT_EQ(BlockTransferSchedule(4, 4), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(BlockTransferSchedule(8, 3), (std::vector<int64_t>{3, 3, 2}));
  EXPECT_EQ(BlockTransferSchedule(4, 1), (std::vector<int64_t>{4}));
}

TEST(BlockDiffusionDecoderTest, PlansPrefillThenBlockStepsThenStore) {
  // Prompt 6, block 4, gen 5: canvas ceil(11 / 4) = 3 blocks; block 0 is prefilled, block 1
  // holds the prompt tail (positions 4, 5) and two masks, block 2 four masks.
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6};
  auto d = BlockDiffusionDecoder::Create(Params(BlockRemasking::kLowConfidenceStatic, 5, 4, 4),
                                         kMask, prompt, 64, kVocab, 3);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->generated().size(), 6u);
  auto plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  const SequenceInput& pre = (*plan)->sequences[0];
  EXPECT_EQ(pre.tokens.size(), 4u);
  EXPECT_EQ(pre.pos0, 0);
  EXPECT_EQ(pre.kv_seq, 3);
  EXPECT_TRUE(pre.logit_rows.empty());
  std::vector<float> none;
  ASSERT_TRUE(d->Update(TensorView{none.data(), DType::kF32, Shape{0, kVocab}}, nullptr).ok());
  // Block 1, step 0: quota 1 <= 2 masks: logits only of the masked rows 2, 3.
  plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ((*plan)->sequences[0].pos0, 4);
  EXPECT_EQ(std::vector<int32_t>((*plan)->sequences[0].logit_rows.begin(),
                                 (*plan)->sequences[0].logit_rows.end()),
            (std::vector<int32_t>{2, 3}));
  // The more confident one (position 7) first.
  DecodeStep st = Step(*d, [](int64_t pos) {
    return std::pair<int32_t, float>{static_cast<int32_t>(pos), pos == 7 ? 9.0f : 3.0f};
  });
  EXPECT_EQ(st.committed_positions, (std::vector<int32_t>{7}));
  st = Step(*d, [](int64_t pos) {
    return std::pair<int32_t, float>{static_cast<int32_t>(pos), 5.0f};
  });
  EXPECT_EQ(st.committed_positions, (std::vector<int32_t>{6}));
  // Block 1 is full but not finished (its store forward comes next): nothing streams yet.
  EXPECT_TRUE(d->committed().empty());
  // No masks left: the store forward (no logits), then block 2.
  plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE((*plan)->sequences[0].logit_rows.empty());
  EXPECT_EQ((*plan)->sequences[0].pos0, 4);
  ASSERT_TRUE(d->Update(TensorView{none.data(), DType::kF32, Shape{0, kVocab}}, nullptr).ok());
  EXPECT_EQ(d->current_block(), 2);
  EXPECT_EQ(d->committed().size(), 2u);  // block 1's generated positions 6, 7
  for (int i = 0; i < 4; ++i) {
    Step(*d, [](int64_t pos) {
      return std::pair<int32_t, float>{static_cast<int32_t>(pos), 4.0f};
    });
  }
  ASSERT_FALSE(d->Done());
  ASSERT_TRUE(d->Plan().ok());
  ASSERT_TRUE(d->Update(TensorView{none.data(), DType::kF32, Shape{0, kVocab}}, nullptr).ok());
  EXPECT_TRUE(d->Done());
  EXPECT_EQ(d->finish(), DecodeFinish::kLength);
  // NFE: prefill 1 + block 1 (2 steps + store) + block 2 (4 steps + store).
  EXPECT_EQ(d->nfe(), 1 + 3 + 5);
  EXPECT_EQ(std::vector<int32_t>(d->generated().begin(), d->generated().end()),
            (std::vector<int32_t>{6, 7, 8, 9, 10, 11}));
}

TEST(BlockDiffusionDecoderTest, OverCommitOverwritesPromptTokensOfTheSharedBlock) {
  // One step for block 4: quota 4 > the 2 masks of block 1, so top-4 also picks the prompt
  // positions 4 and 5 (the reference's topk over -inf slots, lower position first) and writes
  // their sampled x0 there, as JetAstra/SDAR generate.py does.
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6};
  auto d = BlockDiffusionDecoder::Create(Params(BlockRemasking::kLowConfidenceStatic, 2, 4, 1),
                                         kMask, prompt, 64, kVocab);
  ASSERT_TRUE(d.ok());
  std::vector<float> none;
  ASSERT_TRUE(d->Plan().ok());
  ASSERT_TRUE(d->Update(TensorView{none.data(), DType::kF32, Shape{0, kVocab}}, nullptr).ok());
  auto plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ((*plan)->sequences[0].logit_rows.size(), 4u);  // every row: x0 of unmasked ones too
  const DecodeStep st = Step(*d, [](int64_t) { return std::pair<int32_t, float>{12, 6.0f}; });
  EXPECT_EQ(st.committed_positions, (std::vector<int32_t>{6, 7, 4, 5}));
  EXPECT_EQ(d->canvas()[4], 12);
  EXPECT_EQ(d->canvas()[5], 12);
}

// Dynamic remasking (threshold 0.9) over prompt 1 2 3 4 and one block of 4, past its prefill (the
// prompt fills the first block: no logit rows); logprobs >= 0 records them with that many
// alternatives.
StatusOr<BlockDiffusionDecoder> DynamicAfterPrefill(int32_t logprobs = -1) {
  BlockParams p = Params(BlockRemasking::kLowConfidenceDynamic, 4, 4, 4);
  p.confidence_threshold = 0.9;
  const std::vector<int32_t> prompt = {1, 2, 3, 4};
  UNMASK_ASSIGN_OR_RETURN(BlockDiffusionDecoder d,
                          BlockDiffusionDecoder::Create(p, kMask, prompt, 64, kVocab));
  if (logprobs >= 0) UNMASK_RETURN_IF_ERROR(d.EnableLogprobs(logprobs));
  UNMASK_RETURN_IF_ERROR(d.Plan().status());
  std::vector<float> none;
  UNMASK_RETURN_IF_ERROR(d.Update(TensorView{none.data(), DType::kF32, Shape{0, kVocab}}, nullptr));
  return d;
}

TEST(BlockDiffusionDecoderTest, DynamicTakesEveryConfidentPositionOrTheQuota) {
  auto d = DynamicAfterPrefill();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  // Peak 20 -> probability ~1 > 0.9 at positions 5 and 6; peak 1 elsewhere.
  DecodeStep st = Step(*d, [](int64_t pos) {
    return std::pair<int32_t, float>{3, pos == 5 || pos == 6 ? 20.0f : 1.0f};
  });
  EXPECT_EQ(st.committed_positions, (std::vector<int32_t>{5, 6}));
  // None confident: the quota (1), the most confident first.
  st = Step(*d, [](int64_t pos) { return std::pair<int32_t, float>{3, pos == 7 ? 2.0f : 1.0f}; });
  EXPECT_EQ(st.committed_positions, (std::vector<int32_t>{7}));
}

TEST(BlockDiffusionDecoderTest, SequentialAndEntropyBounded) {
  const std::vector<int32_t> prompt = {1, 2, 3, 4};
  auto seq = BlockDiffusionDecoder::Create(Params(BlockRemasking::kSequential, 4, 4, 2), kMask,
                                           prompt, 64, kVocab);
  ASSERT_TRUE(seq.ok());
  std::vector<float> none;
  ASSERT_TRUE(seq->Plan().ok());
  ASSERT_TRUE(seq->Update(TensorView{none.data(), DType::kF32, Shape{0, kVocab}}, nullptr).ok());
  DecodeStep st = Step(*seq, [](int64_t pos) {
    return std::pair<int32_t, float>{2, pos == 7 ? 30.0f : 1.0f};  // confidence is ignored
  });
  EXPECT_EQ(st.committed_positions, (std::vector<int32_t>{4, 5}));

  BlockParams p = Params(BlockRemasking::kEntropyBounded, 4, 4, 4);
  p.eb_threshold = 0.01;
  auto eb = BlockDiffusionDecoder::Create(p, kMask, prompt, 64, kVocab);
  ASSERT_TRUE(eb.ok());
  ASSERT_TRUE(eb->Plan().ok());
  ASSERT_TRUE(eb->Update(TensorView{none.data(), DType::kF32, Shape{0, kVocab}}, nullptr).ok());
  // Near-zero entropy at 6 and 5 (peak 30, 25): their sum < 0.01; position 4 (peak 1) is not.
  st = Step(*eb, [](int64_t pos) {
    return std::pair<int32_t, float>{2, pos == 6 ? 30.0f : pos == 5 ? 25.0f : 1.0f};
  });
  EXPECT_EQ(st.committed_positions, (std::vector<int32_t>{6, 5}));
  // Nothing below the bound: still at least one position.
  st = Step(*eb, [](int64_t) { return std::pair<int32_t, float>{2, 0.5f}; });
  EXPECT_EQ(st.committed_positions.size(), 1u);
}

TEST(BlockDiffusionDecoderTest, StopsAfterTheBlockHoldingAStopId) {
  const std::vector<int32_t> prompt = {1, 2, 3, 4};
  BlockParams p = Params(BlockRemasking::kLowConfidenceStatic, 12, 4, 1);
  p.stop_ids = {9};
  auto d = BlockDiffusionDecoder::Create(p, kMask, prompt, 64, kVocab);
  ASSERT_TRUE(d.ok());
  std::vector<float> none;
  ASSERT_TRUE(d->Plan().ok());
  ASSERT_TRUE(d->Update(TensorView{none.data(), DType::kF32, Shape{0, kVocab}}, nullptr).ok());
  Step(*d, [](int64_t pos) { return std::pair<int32_t, float>{pos == 6 ? 9 : 3, 5.0f}; });
  EXPECT_FALSE(d->Done());  // the block's store forward comes first
  ASSERT_TRUE(d->Plan().ok());
  ASSERT_TRUE(d->Update(TensorView{none.data(), DType::kF32, Shape{0, kVocab}}, nullptr).ok());
  EXPECT_TRUE(d->Done());
  EXPECT_EQ(d->finish(), DecodeFinish::kEos);
  EXPECT_EQ(d->nfe(), 3);
  EXPECT_EQ(d->Plan().status().code(), StatusCode::kFailedPrecondition);
}

TEST(BlockDiffusionDecoderTest, FusedScheduleFeedsTheUncachedCleanPositionsWithTheBlock) {
  // As PlansPrefillThenBlockStepsThenStore, fused: no prefill or store forwards.
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6};
  BlockParams p = Params(BlockRemasking::kLowConfidenceStatic, 5, 4, 4);
  p.separate_store = false;
  auto d = BlockDiffusionDecoder::Create(p, kMask, prompt, 64, kVocab, 3);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  // Block 1, step 0: the prompt's whole block 0 rides in front: positions 0..7, rows 6, 7.
  EXPECT_EQ(d->step_positions(), 8);
  auto plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  const SequenceInput& first = (*plan)->sequences[0];
  EXPECT_EQ(first.pos0, 0);
  EXPECT_EQ(first.tokens.size(), 8u);
  EXPECT_EQ(first.kv_seq, 3);
  EXPECT_EQ(first.block_length, 4);
  EXPECT_EQ(std::vector<int32_t>(first.logit_rows.begin(), first.logit_rows.end()),
            (std::vector<int32_t>{6, 7}));
  auto by_pos = [](int64_t pos) {
    return std::pair<int32_t, float>{static_cast<int32_t>(pos), pos == 7 ? 9.0f : 3.0f};
  };
  DecodeStep st = Step(*d, by_pos);
  EXPECT_EQ(st.committed_positions, (std::vector<int32_t>{7}));
  // Step 1: block 0 is cached now: only the block, its one masked row.
  EXPECT_EQ(d->step_positions(), 4);
  plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ((*plan)->sequences[0].pos0, 4);
  EXPECT_EQ((*plan)->sequences[0].tokens.size(), 4u);
  EXPECT_EQ(std::vector<int32_t>((*plan)->sequences[0].logit_rows.begin(),
                                 (*plan)->sequences[0].logit_rows.end()),
            (std::vector<int32_t>{2}));
  st = Step(*d, by_pos);
  EXPECT_EQ(st.committed_positions, (std::vector<int32_t>{6}));
  // Block 1 is finished at once (no store forward): it streams, and block 2's first forward
  // feeds block 1's clean positions 4..7 in front of it.
  EXPECT_EQ(d->current_block(), 2);
  EXPECT_EQ(d->committed().size(), 2u);
  plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ((*plan)->sequences[0].pos0, 4);
  EXPECT_EQ((*plan)->sequences[0].tokens.size(), 8u);
  EXPECT_EQ((*plan)->sequences[0].tokens[2], 6);  // committed x0 (the position's id here)
  EXPECT_EQ(std::vector<int32_t>((*plan)->sequences[0].logit_rows.begin(),
                                 (*plan)->sequences[0].logit_rows.end()),
            (std::vector<int32_t>{4, 5, 6, 7}));
  for (int i = 0; i < 4; ++i) {
    ASSERT_FALSE(d->Done());
    plan = d->Plan();
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ((*plan)->sequences[0].pos0, i == 0 ? 4 : 8) << i;
    Step(*d, [](int64_t pos) {
      return std::pair<int32_t, float>{static_cast<int32_t>(pos), 4.0f};
    });
  }
  EXPECT_TRUE(d->Done());  // the last block needs no store
  EXPECT_EQ(d->finish(), DecodeFinish::kLength);
  EXPECT_EQ(d->nfe(), 2 + 4);
  EXPECT_EQ(std::vector<int32_t>(d->generated().begin(), d->generated().end()),
            (std::vector<int32_t>{6, 7, 8, 9, 10, 11}));
}

TEST(BlockDiffusionDecoderTest, FusedAndSeparateSchedulesCommitTheSame) {
  // The same logits per position (a function of position and step count within a block) give the
  // same commits in the same order under both schedules, for every strategy; NFE differs by the
  // prefill and one store per finished block.
  for (BlockRemasking r :
       {BlockRemasking::kSequential, BlockRemasking::kLowConfidenceStatic,
        BlockRemasking::kLowConfidenceDynamic, BlockRemasking::kEntropyBounded}) {
    for (int lp : {3, 4, 9}) {
      std::vector<int32_t> prompt(static_cast<size_t>(lp), 2);
      std::vector<std::vector<int32_t>> commits[2];
      std::vector<int32_t> out[2];
      int64_t nfe[2] = {0, 0};
      for (int fused = 0; fused < 2; ++fused) {
        BlockParams p = Params(r, 10, 4, 2);
        p.separate_store = fused == 0;
        p.stop_ids = {13};
        auto d = BlockDiffusionDecoder::Create(p, kMask, prompt, 64, kVocab);
        ASSERT_TRUE(d.ok()) << d.status().ToString();
        while (!d->Done()) {
          const DecodeStep st = Step(*d, [](int64_t pos) {
            // Position 13 emits the stop id 13; peaks vary by position so strategies differ.
            return std::pair<int32_t, float>{static_cast<int32_t>(pos % 14),
                                             1.0f + static_cast<float>((pos * 7) % 5)};
          });
          if (!st.committed_positions.empty()) commits[fused].push_back(st.committed_positions);
        }
        out[fused].assign(d->generated().begin(), d->generated().end());
        nfe[fused] = d->nfe();
      }
      EXPECT_EQ(commits[0], commits[1]) << BlockRemaskingName(r) << " lp " << lp;
      EXPECT_EQ(out[0], out[1]) << BlockRemaskingName(r) << " lp " << lp;
      EXPECT_LT(nfe[1], nfe[0]) << BlockRemaskingName(r) << " lp " << lp;
    }
  }
}

TEST(BlockDiffusionDecoderTest, FusedStopsWhenTheBlockHoldingAStopIdIsFilled) {
  const std::vector<int32_t> prompt = {1, 2, 3, 4};
  BlockParams p = Params(BlockRemasking::kLowConfidenceStatic, 12, 4, 1);
  p.separate_store = false;
  p.stop_ids = {9};
  auto d = BlockDiffusionDecoder::Create(p, kMask, prompt, 64, kVocab);
  ASSERT_TRUE(d.ok());
  Step(*d, [](int64_t pos) { return std::pair<int32_t, float>{pos == 6 ? 9 : 3, 5.0f}; });
  EXPECT_TRUE(d->Done());
  EXPECT_EQ(d->finish(), DecodeFinish::kEos);
  EXPECT_EQ(d->nfe(), 1);
}

TEST(BlockDiffusionDecoderTest, BadParametersAndLogits) {
  const std::vector<int32_t> prompt = {1, 2};
  auto bad = [&](BlockParams p, const std::string& needle, int64_t context = 64) {
    auto d = BlockDiffusionDecoder::Create(p, kMask, prompt, context, kVocab);
    ASSERT_FALSE(d.ok()) << needle;
    EXPECT_NE(d.status().message().find(needle), std::string::npos) << d.status().message();
  };
  BlockParams p = Params(BlockRemasking::kLowConfidenceDynamic, 8, 4, 4);
  BlockParams q = p;
  q.denoising_steps = 5;
  bad(q, "denoising_steps");
  q = p;
  q.block_length = 0;
  bad(q, "block_length");
  q = p;
  q.gen_length = 0;
  bad(q, "gen_length");
  q = p;
  q.temperature = -1;
  bad(q, "temperature");
  q = p;
  q.top_p = 0;
  bad(q, "top_p");
  q = p;
  q.confidence_threshold = 1.5;
  bad(q, "threshold");
  q = p;
  q.eb_threshold = 0;
  bad(q, "eb_threshold");
  bad(p, "context", 8);  // 2 + 8 -> 3 blocks of 4 = 12 positions > 8
  EXPECT_FALSE(BlockDiffusionDecoder::Create(p, 99, prompt, 64, kVocab).ok());
  const std::vector<int32_t> bad_prompt = {1, 40};
  EXPECT_FALSE(BlockDiffusionDecoder::Create(p, kMask, bad_prompt, 64, kVocab).ok());
  EXPECT_FALSE(BlockDiffusionDecoder::Create(p, kMask, {}, 64, kVocab).ok());
  auto d = BlockDiffusionDecoder::Create(p, kMask, prompt, 64, kVocab);
  ASSERT_TRUE(d.ok());
  std::vector<float> l(3 * kVocab);
  EXPECT_EQ(d->Update(TensorView{l.data(), DType::kF32, Shape{3, kVocab}}, nullptr).code(),
            StatusCode::kFailedPrecondition);  // no Plan
  ASSERT_TRUE(d->Plan().ok());
  EXPECT_EQ(d->Update(TensorView{l.data(), DType::kF32, Shape{3, kVocab}}, nullptr).code(),
            StatusCode::kInvalidArgument);  // 2 masked rows planned
  EXPECT_EQ(BlockRemaskingFromName("low_confidence_dynamic"),
            BlockRemasking::kLowConfidenceDynamic);
  EXPECT_FALSE(BlockRemaskingFromName("low_confidence").has_value());
}

TEST(BlockDiffusionDecoderTest, SamplingAtTemperatureIsDeterministicPerSeed) {
  const std::vector<int32_t> prompt = {1, 2, 3, 4};
  auto run = [&](uint64_t seed) {
    BlockParams p = Params(BlockRemasking::kLowConfidenceStatic, 8, 4, 4);
    p.temperature = 1.0;
    p.top_k = 3;
    p.top_p = 0.9;
    p.seed = seed;
    auto d = BlockDiffusionDecoder::Create(p, kMask, prompt, 64, kVocab);
    EXPECT_TRUE(d.ok());
    while (!d->Done()) {
      auto plan = d->Plan();
      const size_t rows = (*plan)->sequences[0].logit_rows.size();
      std::vector<float> l(rows * kVocab);
      for (size_t i = 0; i < l.size(); ++i) l[i] = static_cast<float>((i * 7919) % 13) * 0.3f;
      EXPECT_TRUE(
          d->Update(TensorView{l.data(), DType::kF32, Shape{static_cast<int64_t>(rows), kVocab}},
                    nullptr)
              .ok());
    }
    std::vector<int32_t> out(d->generated().begin(), d->generated().end());
    for (int32_t t : out) EXPECT_NE(t, kMask);
    return out;
  };
  EXPECT_EQ(run(1), run(1));
  EXPECT_NE(run(1), run(2));
}

// Commit-time log-probabilities: a peaked row with peak v at token t over 16 ids has
// log p(t) = v - log(e^v + 15), recorded for each position at the step it was committed.
TEST(BlockDiffusionDecoderTest, LogprobsAreThoseOfTheCommitStep) {
  auto d = DynamicAfterPrefill(/*logprobs=*/2);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  // Step 1 commits 5 and 6 (peak 20); step 2 commits 7 (peak 2) and step 3 the rest (peak 3).
  Step(*d, [](int64_t pos) {
    return std::pair<int32_t, float>{3, pos == 5 || pos == 6 ? 20.0f : 1.0f};
  });
  Step(*d, [](int64_t pos) { return std::pair<int32_t, float>{6, pos == 7 ? 2.0f : 1.0f}; });
  Step(*d, [](int64_t) { return std::pair<int32_t, float>{9, 3.0f}; });
  const auto lp = d->logprobs();
  ASSERT_GE(lp.size(), 4u);
  const auto logp = [](double v) { return v - std::log(std::exp(v) + 15.0); };
  const int32_t want_token[4] = {9, 3, 3, 6};  // positions 4 (last step), 5, 6, 7
  const double want_peak[4] = {3, 20, 20, 2};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(lp[i].token, want_token[i]) << i;
    EXPECT_EQ(d->generated()[i], want_token[i]) << i;
    EXPECT_NEAR(lp[i].logprob, logp(want_peak[i]), 1e-5) << i;
    ASSERT_EQ(lp[i].top.size(), 2u);
    EXPECT_EQ(lp[i].top[0].first, want_token[i]);
    EXPECT_EQ(lp[i].top[1].first, 0);  // the ties at logit 0: the lowest id
    EXPECT_NEAR(lp[i].top[1].second, logp(want_peak[i]) - want_peak[i], 1e-5);
  }
}

}  // namespace
}  // namespace unmask
