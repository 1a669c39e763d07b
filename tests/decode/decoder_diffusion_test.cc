// Mechanics of the LLaDA reference decoder on constructed logits: which positions are fed, which
// rows get logits, how many tokens are committed per step, which ones, and the switches.
#include "decode/decoder_diffusion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "decode/schedule.h"

namespace unmask {
namespace {

constexpr int64_t kVocab = 16;
constexpr int32_t kMask = 15, kEos = 14, kEot = 13;
constexpr float kInf = std::numeric_limits<float>::infinity();

// Builds logits for the current plan with fn(sequence index, canvas position) -> row.
Tensor MakeLogits(const BatchPlan& plan, const std::function<std::vector<float>(int, int)>& fn) {
  Tensor t(DType::kF32, {std::max<int64_t>(plan.num_logit_rows(), 1), kVocab});
  int64_t r = 0;
  for (size_t s = 0; s < plan.sequences.size(); ++s) {
    for (int32_t pos : plan.sequences[s].logit_rows) {
      const std::vector<float> row = fn(static_cast<int>(s), pos);
      std::copy(row.begin(), row.end(), t.as<float>() + r * kVocab);
      ++r;
    }
  }
  return t;
}

TensorView View(const Tensor& t, int64_t rows) {
  return TensorView{t.data(), DType::kF32, Shape{rows, kVocab}};
}

// A row whose argmax is `token` with logit `peak` (others 0).
std::vector<float> Peak(int token, float peak) {
  std::vector<float> row(kVocab, 0.0f);
  row[static_cast<size_t>(token)] = peak;
  return row;
}

DiffusionDecoder MakeDecoder(const DiffusionParams& p, std::vector<int32_t> prompt) {
  auto d = DiffusionDecoder::Create(p, {kMask, kEos, kEot}, prompt, 128, kVocab);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return std::move(d).value();
}

// Runs one step with fn and returns the committed positions.
std::vector<int32_t> Step(DiffusionDecoder& d,
                          const std::function<std::vector<float>(int, int)>& fn) {
  const BatchPlan& plan = (*d.Plan().value());
  const Tensor logits = MakeLogits(plan, fn);
  DiffusionStepResult r;
  const Status s = d.Update(View(logits, plan.num_logit_rows()), &r);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return r.committed_positions;
}

TEST(ScheduleTest, RemainderGoesToFirstSteps) {
  EXPECT_EQ(NumTransferTokens(32, 10), (std::vector<int64_t>{4, 4, 3, 3, 3, 3, 3, 3, 3, 3}));
  EXPECT_EQ(NumTransferTokens(8, 3), (std::vector<int64_t>{3, 3, 2}));
  EXPECT_EQ(NumTransferTokens(4, 4), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(NumTransferTokens(2, 4), (std::vector<int64_t>{1, 1, 0, 0}));
  EXPECT_TRUE(NumTransferTokens(5, 0).empty());
}

TEST(DiffusionDecoderTest, PlanFeedsWholeCanvasAndAsksLogitsForCurrentBlockMasks) {
  DiffusionParams p;
  p.gen_length = 8;
  p.block_length = 4;
  p.steps = 4;  // 2 per block
  DiffusionDecoder d = MakeDecoder(p, {1, 2, 3});
  const BatchPlan& plan = (*d.Plan().value());
  ASSERT_EQ(plan.sequences.size(), 1u);
  EXPECT_EQ(plan.sequences[0].tokens.size(), 11u);
  EXPECT_EQ(plan.sequences[0].pos0, 0);
  EXPECT_EQ(std::vector<int32_t>(plan.sequences[0].logit_rows.begin(),
                                 plan.sequences[0].logit_rows.end()),
            (std::vector<int32_t>{3, 4, 5, 6}));
}

TEST(DiffusionDecoderTest, CommitsScheduledCountByConfidenceBlockByBlock) {
  DiffusionParams p;
  p.gen_length = 8;
  p.block_length = 4;
  p.steps = 4;
  DiffusionDecoder d = MakeDecoder(p, {1, 2, 3});
  // Confidence grows with the position: the highest positions of the block are committed first.
  auto fn = [](int, int pos) { return Peak(pos % 10, static_cast<float>(pos)); };
  EXPECT_EQ(Step(d, fn), (std::vector<int32_t>{6, 5}));
  EXPECT_EQ(Step(d, fn), (std::vector<int32_t>{4, 3}));
  // Block 2 starts: only its positions are asked for.
  EXPECT_EQ((*d.Plan().value()).sequences[0].logit_rows.size(), 4u);
  EXPECT_EQ(Step(d, fn), (std::vector<int32_t>{10, 9}));
  EXPECT_EQ(Step(d, fn), (std::vector<int32_t>{8, 7}));
  EXPECT_TRUE(d.Done());
  EXPECT_EQ(d.nfe(), 4);
  EXPECT_EQ(std::vector<int32_t>(d.generated().begin(), d.generated().end()),
            (std::vector<int32_t>{3, 4, 5, 6, 7, 8, 9, 0}));
  EXPECT_EQ(d.num_masked(), 0);
  DiffusionStepResult r;
  Tensor dummy(DType::kF32, {1, kVocab});
  EXPECT_EQ(d.Update(View(dummy, 0), &r).code(), StatusCode::kFailedPrecondition);
}

TEST(DiffusionDecoderTest, UnevenScheduleAndTieRuleLowerPositionFirst) {
  DiffusionParams p;
  p.gen_length = 8;
  p.block_length = 8;
  p.steps = 3;  // 8 over 3 steps: 3, 3, 2
  DiffusionDecoder d = MakeDecoder(p, {1});
  auto same = [](int, int) { return Peak(4, 2.0f); };  // identical confidences everywhere
  EXPECT_EQ(Step(d, same), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(Step(d, same), (std::vector<int32_t>{4, 5, 6}));
  EXPECT_EQ(Step(d, same), (std::vector<int32_t>{7, 8}));
  EXPECT_TRUE(d.Done());
}

TEST(DiffusionDecoderTest, LogitsEosInfNeverProducesEos) {
  DiffusionParams p;
  p.gen_length = 4;
  p.block_length = 4;
  p.steps = 4;
  p.logits_eos_inf = true;
  DiffusionDecoder d = MakeDecoder(p, {1});
  auto fn = [](int, int) {
    std::vector<float> row = Peak(kEos, 9.0f);
    row[5] = 1.0f;
    return row;
  };
  while (!d.Done()) Step(d, fn);
  for (int32_t t : d.generated()) EXPECT_EQ(t, 5);
}

TEST(DiffusionDecoderTest, ConfidenceEosEotInfCommitsEosLastAtTemperatureZero) {
  DiffusionParams p;
  p.gen_length = 4;
  p.block_length = 4;
  p.steps = 4;
  p.confidence_eos_eot_inf = true;
  DiffusionDecoder d = MakeDecoder(p, {1});
  // Position 1 predicts EOS very confidently, position 2 EOT; 3 and 4 predict token 6 weakly.
  auto fn = [](int, int pos) {
    if (pos == 1) return Peak(kEos, 20.0f);
    if (pos == 2) return Peak(kEot, 20.0f);
    return Peak(6, 1.0f + static_cast<float>(pos));
  };
  EXPECT_EQ(Step(d, fn), (std::vector<int32_t>{4}));
  EXPECT_EQ(Step(d, fn), (std::vector<int32_t>{3}));
  // EOS and EOT both have confidence exactly 0: the tie goes to the lower position.
  EXPECT_EQ(Step(d, fn), (std::vector<int32_t>{1}));
  EXPECT_EQ(Step(d, fn), (std::vector<int32_t>{2}));
  EXPECT_EQ(std::vector<int32_t>(d.generated().begin(), d.generated().end()),
            (std::vector<int32_t>{kEos, kEot, 6, 6}));
}

TEST(DiffusionDecoderTest, WithoutConfidenceSwitchEosIsCommittedFirst) {
  DiffusionParams p;
  p.gen_length = 4;
  p.block_length = 4;
  p.steps = 4;
  DiffusionDecoder d = MakeDecoder(p, {1});
  auto fn = [](int, int pos) { return pos == 2 ? Peak(kEos, 20.0f) : Peak(6, 1.0f); };
  EXPECT_EQ(Step(d, fn), (std::vector<int32_t>{2}));
}

TEST(DiffusionDecoderTest, ConfidenceSwitchAtPositiveTemperatureOnlyRemovesEot) {
  // At T > 0 the reference only removes EOT from the confidence softmax (aliasing quirk), so an
  // EOS prediction keeps its high confidence and is committed first.
  DiffusionParams p;
  p.gen_length = 4;
  p.block_length = 4;
  p.steps = 4;
  p.temperature = 1e-3;  // practically argmax, through the Gumbel path
  p.confidence_eos_eot_inf = true;
  DiffusionDecoder d = MakeDecoder(p, {1});
  auto fn = [](int, int pos) {
    if (pos == 1) return Peak(kEot, 30.0f);
    if (pos == 2) return Peak(kEos, 30.0f);
    return Peak(6, 2.0f);
  };
  EXPECT_EQ(Step(d, fn), (std::vector<int32_t>{2}));  // EOS, high confidence
  // EOT (position 1) has confidence 0; positions 3 and 4 tie, the lower goes first.
  EXPECT_EQ(Step(d, fn), (std::vector<int32_t>{3}));
}

TEST(DiffusionDecoderTest, ClassifierFreeGuidanceBatchesUnconditionalCanvas) {
  DiffusionParams p;
  p.gen_length = 2;
  p.block_length = 2;
  p.steps = 2;
  p.cfg_scale = 1.0;
  DiffusionDecoder d = MakeDecoder(p, {1, 2});
  const BatchPlan& plan = (*d.Plan().value());
  ASSERT_EQ(plan.sequences.size(), 2u);
  EXPECT_EQ(std::vector<int32_t>(plan.sequences[1].tokens.begin(), plan.sequences[1].tokens.end()),
            (std::vector<int32_t>{kMask, kMask, kMask, kMask}));
  EXPECT_EQ(plan.num_logit_rows(), 4);
  // cond prefers 3 slightly, uncond prefers 3 strongly and 4 not at all: guided logits
  // un + 2 (cond - un) favour token 4.
  auto fn = [](int seq, int) {
    std::vector<float> row(kVocab, 0.0f);
    if (seq == 0) {
      row[3] = 2.0f;
      row[4] = 1.5f;
    } else {
      row[3] = 3.0f;
      row[4] = 0.0f;
    }
    return row;
  };
  Step(d, fn);
  // The committed token appears in both canvases.
  EXPECT_EQ((*d.Plan().value()).sequences[1].tokens[2] == 4 ||
                (*d.Plan().value()).sequences[1].tokens[3] == 4,
            true);
  Step(d, fn);
  EXPECT_EQ(std::vector<int32_t>(d.generated().begin(), d.generated().end()),
            (std::vector<int32_t>{4, 4}));
}

TEST(DiffusionDecoderTest, RandomRemaskingIsSeededAndIndependentOfLogits) {
  DiffusionParams p;
  p.gen_length = 8;
  p.block_length = 8;
  p.steps = 8;
  p.remasking = Remasking::kRandom;
  p.seed = 99;
  DiffusionDecoder a = MakeDecoder(p, {1});
  DiffusionDecoder b = MakeDecoder(p, {1});
  auto f1 = [](int, int pos) { return Peak(3, static_cast<float>(pos)); };
  auto f2 = [](int, int pos) { return Peak(3, static_cast<float>(100 - pos)); };
  std::vector<int32_t> order_a, order_b;
  while (!a.Done()) {
    for (int32_t x : Step(a, f1)) order_a.push_back(x);
    for (int32_t x : Step(b, f2)) order_b.push_back(x);
  }
  EXPECT_EQ(order_a, order_b);  // the order comes from the RNG, not from the logits
  p.seed = 100;
  DiffusionDecoder c = MakeDecoder(p, {1});
  std::vector<int32_t> order_c;
  while (!c.Done()) {
    for (int32_t x : Step(c, f1)) order_c.push_back(x);
  }
  EXPECT_NE(order_a, order_c);
}

TEST(DiffusionDecoderTest, MaskTokensInThePromptCompeteLikeInTheReference) {
  DiffusionParams p;
  p.gen_length = 2;
  p.block_length = 2;
  p.steps = 2;
  DiffusionDecoder d = MakeDecoder(p, {1, kMask, 2});
  EXPECT_EQ(std::vector<int32_t>((*d.Plan().value()).sequences[0].logit_rows.begin(),
                                 (*d.Plan().value()).sequences[0].logit_rows.end()),
            (std::vector<int32_t>{1, 3, 4}));
  auto fn = [](int, int pos) { return Peak(5, pos == 1 ? 9.0f : 1.0f); };
  EXPECT_EQ(Step(d, fn), (std::vector<int32_t>{1}));
}

TEST(DiffusionDecoderTest, RejectsBadParametersAndInputs) {
  DiffusionParams p;
  p.gen_length = 10;
  p.block_length = 4;
  EXPECT_EQ(DiffusionDecoder::Create(p, {kMask, kEos, kEot}, std::vector<int32_t>{1}, 128, kVocab)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  p.block_length = 5;
  p.steps = 3;  // 2 blocks
  EXPECT_EQ(DiffusionDecoder::Create(p, {kMask, kEos, kEot}, std::vector<int32_t>{1}, 128, kVocab)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  p.steps = 4;
  EXPECT_EQ(DiffusionDecoder::Create(p, {kMask, kEos, kEot}, std::vector<int32_t>{1}, 8, kVocab)
                .status()
                .code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(DiffusionDecoder::Create(p, {kMask, kEos, kEot}, std::vector<int32_t>{}, 128, kVocab)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(DiffusionDecoder::Create(p, {kMask, kEos, kEot}, std::vector<int32_t>{16}, 128, kVocab)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(DiffusionDecoder::Create(p, {-1, kEos, kEot}, std::vector<int32_t>{1}, 128, kVocab)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  p.logits_eos_inf = true;
  EXPECT_EQ(DiffusionDecoder::Create(p, {kMask, -1, kEot}, std::vector<int32_t>{1}, 128, kVocab)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  p.logits_eos_inf = false;
  p.temperature = -1;
  EXPECT_EQ(DiffusionDecoder::Create(p, {kMask, kEos, kEot}, std::vector<int32_t>{1}, 128, kVocab)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  p.temperature = 0;
  p.cfg_scale = std::nan("");
  EXPECT_EQ(DiffusionDecoder::Create(p, {kMask, kEos, kEot}, std::vector<int32_t>{1}, 128, kVocab)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(DiffusionDecoderTest, UpdateNeedsAPlanForEveryStep) {
  DiffusionParams p;
  p.gen_length = 4;
  p.block_length = 4;
  p.steps = 4;
  DiffusionDecoder d = MakeDecoder(p, {1});
  Tensor t(DType::kF32, {4, kVocab});
  DiffusionStepResult r;
  EXPECT_EQ(d.Update(View(t, 4), &r).code(), StatusCode::kFailedPrecondition);
  Step(d, [](int, int) { return Peak(3, 1.0f); });
  EXPECT_EQ(d.Update(View(t, 3), &r).code(), StatusCode::kFailedPrecondition);  // stale plan
  EXPECT_EQ(d.step(), 1);
}

TEST(DiffusionDecoderTest, RejectsLogitsOfTheWrongShape) {
  DiffusionParams p;
  p.gen_length = 4;
  p.block_length = 4;
  p.steps = 4;
  DiffusionDecoder d = MakeDecoder(p, {1});
  ASSERT_TRUE(d.Plan().ok());
  Tensor t(DType::kF32, {3, kVocab});
  DiffusionStepResult r;
  EXPECT_EQ(d.Update(View(t, 3), &r).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(d.step(), 0);
}

// Commit-time log-probabilities: each generated position's entry is log_softmax of the row it was
// committed from, at that step (checked against a log-softmax computed here), with the k most
// likely ids; positions not committed yet have none.
TEST(DiffusionDecoderTest, LogprobsAreTheCommitRowsLogSoftmax) {
  DiffusionParams p;
  p.gen_length = 6;
  p.block_length = 3;
  p.steps = 6;  // one commit per step
  p.temperature = 0;
  DiffusionDecoder d = MakeDecoder(p, {1, 2});
  ASSERT_TRUE(d.EnableLogprobs(3).ok());
  EXPECT_FALSE(d.EnableLogprobs(21).ok());
  ASSERT_TRUE(d.EnableLogprobs(3).ok());
  // Rows that differ by step and position (none favours the mask id).
  int step = 0;
  auto row_at = [&](int, int pos) {
    std::vector<float> row(kVocab);
    for (int t = 0; t < kVocab; ++t) {
      row[static_cast<size_t>(t)] = static_cast<float>(3.0 * std::sin(step * 7.0 + pos * 3.0 + t));
    }
    row[kMask] = -5;
    return row;
  };
  std::vector<std::vector<float>> committed_row(static_cast<size_t>(p.gen_length));
  while (!d.Done()) {
    const std::vector<int32_t> committed = Step(d, row_at);
    for (int32_t pos : committed) committed_row[static_cast<size_t>(pos - 2)] = row_at(0, pos);
    if (step == 2) {
      // Mid-way: the positions still masked have no entry yet.
      for (size_t i = 0; i < committed_row.size(); ++i) {
        if (committed_row[i].empty()) {
          EXPECT_EQ(d.logprobs()[i].token, -1) << i;
        }
      }
    }
    ++step;
  }
  ASSERT_EQ(d.logprobs().size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    const std::vector<float>& row = committed_row[i];
    ASSERT_FALSE(row.empty()) << i;
    double z = 0;
    for (float v : row) z += std::exp(double{v});
    const TokenLogprob& lp = d.logprobs()[i];
    EXPECT_EQ(lp.token, d.generated()[i]);
    EXPECT_NEAR(lp.logprob, row[static_cast<size_t>(lp.token)] - std::log(z), 1e-5) << i;
    ASSERT_EQ(lp.top.size(), 3u);
    std::vector<int> ids(kVocab);
    for (int t = 0; t < kVocab; ++t) ids[static_cast<size_t>(t)] = t;
    std::sort(ids.begin(), ids.end(), [&](int a, int b) { return row[a] > row[b]; });
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(lp.top[k].first, ids[k]) << i;
      EXPECT_NEAR(lp.top[k].second, row[static_cast<size_t>(ids[k])] - std::log(z), 1e-5);
    }
    EXPECT_EQ(lp.top[0].first, lp.token);  // greedy: the most likely token is committed
  }
}

}  // namespace
}  // namespace unmask
