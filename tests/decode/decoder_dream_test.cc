// Dream's sampler pieces on constructed inputs: the float32 timestep schedule, sample_tokens
// (temperature -> top-p -> top-k, the confidences of each alg, Gumbel sampling), the decoder's
// plan (shifted, deduplicated rows), commit order and tie rule, and every bad-parameter path.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "decode/decoder_dream.h"
#include "decode/dream_sampling.h"

namespace unmask {
namespace {

// k per step for `masked` masks over `steps` steps (masks decrease as tokens are committed).
std::vector<int64_t> Schedule(int64_t masked, int64_t steps, double eps = 1e-3) {
  const std::vector<float> ts = DreamTimesteps(steps, eps);
  std::vector<int64_t> ks;
  for (int64_t i = 0; i < steps; ++i) {
    ks.push_back(DreamNumTransfer(masked, ts, i));
    masked -= ks.back();
  }
  return ks;
}

TEST(DreamScheduleTest, TimestepsRunFromOneToEps) {
  const std::vector<float> ts = DreamTimesteps(16, 1e-3);
  ASSERT_EQ(ts.size(), 17u);
  EXPECT_EQ(ts.front(), 1.0f);
  EXPECT_EQ(ts.back(), 1e-3f);
  for (size_t i = 1; i < ts.size(); ++i) EXPECT_LT(ts[i], ts[i - 1]);
  EXPECT_EQ(DreamTimesteps(1, 0.5), (std::vector<float>{1.0f, 0.5f}));
}

TEST(DreamScheduleTest, StepsEqualGenLengthCommitsZeroFirstAndTwoLast) {
  // ALGORITHMS.md §2.2: int(m * (1 - s/t)) truncates 16 * (1/16 - tiny) to 0 at step 0, so the
  // last step commits the 2 left over. Same for every power of two checked by the reference.
  for (int64_t n : {16, 64, 256}) {
    const std::vector<int64_t> ks = Schedule(n, n);
    EXPECT_EQ(ks.front(), 0) << n;
    EXPECT_EQ(ks.back(), 2) << n;
    EXPECT_EQ(std::accumulate(ks.begin(), ks.end(), int64_t{0}), n) << n;
    for (size_t i = 1; i + 1 < ks.size(); ++i) EXPECT_EQ(ks[i], 1) << n << " step " << i;
  }
}

TEST(DreamScheduleTest, FewerAndMoreStepsThanTokens) {
  // Values of scripts/reference/dream_generate.py (goldens a_maskgit_s8_g16 and
  // b_maskgit_s20_g16_eps05).
  EXPECT_EQ(Schedule(16, 8), (std::vector<int64_t>{1, 2, 2, 2, 2, 2, 2, 3}));
  EXPECT_EQ(Schedule(16, 20, 0.05),
            (std::vector<int64_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3}));
  // The last step commits whatever is left, and k never exceeds the masks.
  const std::vector<float> ts = DreamTimesteps(4, 1e-3);
  EXPECT_EQ(DreamNumTransfer(7, ts, 3), 7);
  EXPECT_EQ(DreamTransferFraction(ts, 0), 1.0f - ts[1] / ts[0]);
}

DreamParams Params(DreamAlg alg, double temperature = 0, double top_p = 1, int64_t top_k = 0) {
  DreamParams p;
  p.alg = alg;
  p.temperature = temperature;
  p.top_p = top_p;
  p.top_k = top_k;
  return p;
}

std::vector<double> Softmax(const std::vector<double>& l) {
  std::vector<double> p(l.size());
  double mx = *std::max_element(l.begin(), l.end()), s = 0;
  for (size_t i = 0; i < l.size(); ++i) s += (p[i] = std::exp(l[i] - mx));
  for (double& x : p) x /= s;
  return p;
}

TEST(DreamSampleTokensTest, ConfidenceOfEachAlgAtTemperatureZero) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 0.5f};
  const std::vector<double> p = Softmax({1.0, 3.0, 2.0, 0.5});
  const CounterRng rng(0);
  DreamScratch s;
  DreamSample a = DreamSampleTokens(logits, Params(DreamAlg::kMaskGitPlus), rng, 0, 0, s);
  EXPECT_EQ(a.token, 1);
  EXPECT_NEAR(a.confidence, p[1], 1e-15);
  a = DreamSampleTokens(logits, Params(DreamAlg::kOrigin), rng, 0, 0, s);
  EXPECT_EQ(a.token, 1);
  a = DreamSampleTokens(logits, Params(DreamAlg::kTopKMargin), rng, 0, 0, s);
  EXPECT_EQ(a.token, 1);
  EXPECT_NEAR(a.confidence, p[1] - p[2], 1e-15);
  a = DreamSampleTokens(logits, Params(DreamAlg::kEntropy), rng, 0, 0, s);
  double neg_entropy = 0;
  for (double x : p) neg_entropy += x * std::log(x + 1e-10);
  EXPECT_EQ(a.token, 1);
  EXPECT_NEAR(a.confidence, neg_entropy, 1e-14);
  // Ties: the lowest id; a uniform row has negative entropy -log(V) (up to the 1e-10).
  a = DreamSampleTokens(std::vector<float>(8, 0.5f), Params(DreamAlg::kEntropy), rng, 0, 0, s);
  EXPECT_EQ(a.token, 0);
  EXPECT_NEAR(a.confidence, -std::log(8.0), 1e-8);
}

TEST(DreamFilterTest, TopKKeepsTheKLargestAndFillsFloat32Min) {
  DreamScratch s;
  DreamFilterLogits(std::vector<float>{1, 3, 2, 0}, 0, 1, 2, s);
  EXPECT_EQ(s.logits, (std::vector<double>{kDreamFilteredLogit, 3, 2, kDreamFilteredLogit}));
  EXPECT_EQ(kDreamFilteredLogit, double{std::numeric_limits<float>::lowest()});
  DreamFilterLogits(std::vector<float>{1, 3, 3, 0}, 0, 1, 1, s);  // ties at the k-th are kept
  EXPECT_EQ(s.logits, (std::vector<double>{kDreamFilteredLogit, 3, 3, kDreamFilteredLogit}));
  DreamFilterLogits(std::vector<float>{1, 3}, 0, 1, 10, s);  // k above the vocabulary: no-op
  EXPECT_EQ(s.logits, (std::vector<double>{1, 3}));
}

TEST(DreamFilterTest, TopPKeepsTheFirstTokenPastTheThreshold) {
  // probs (0.5, 0.3, 0.2) in the order ids 2, 0, 1.
  const std::vector<float> l = {std::log(0.3f), std::log(0.2f), std::log(0.5f)};
  DreamScratch s;
  auto kept = [&](double top_p) {
    DreamFilterLogits(l, 0, top_p, 0, s);
    std::vector<int> k;
    for (int v = 0; v < 3; ++v) {
      if (s.logits[static_cast<size_t>(v)] != kDreamFilteredLogit) k.push_back(v);
    }
    return k;
  };
  EXPECT_EQ(kept(0.4), (std::vector<int>{2}));        // cum 0.5 > 0.4 after the first
  EXPECT_EQ(kept(0.6), (std::vector<int>{0, 2}));     // cum 0.8 > 0.6 after the second
  EXPECT_EQ(kept(0.9), (std::vector<int>{0, 1, 2}));  // never removes the last needed
  EXPECT_EQ(kept(1e-9), (std::vector<int>{2}));       // the first token is always kept
}

TEST(DreamFilterTest, TemperatureComesBeforeTopPAndTiesKeepTheLowerId) {
  // T = 1: probs (0.8, 0.1, 0.1) -> top_p 0.7 keeps id 0 only. T = 3: logits / 3 give
  // (0.5, 0.25, 0.25) -> ids 0 and 1 (the tie between 1 and 2 keeps the lower id).
  const std::vector<float> l = {std::log(8.0f), 0, 0};
  DreamScratch s;
  DreamFilterLogits(l, 1, 0.7, 0, s);
  EXPECT_EQ(s.logits[1], kDreamFilteredLogit);
  EXPECT_EQ(s.logits[2], kDreamFilteredLogit);
  DreamFilterLogits(l, 3, 0.7, 0, s);
  EXPECT_NEAR(s.logits[0], std::log(8.0) / 3, 1e-7);
  EXPECT_EQ(s.logits[1], 0);
  EXPECT_EQ(s.logits[2], kDreamFilteredLogit);
  // Then top-k runs on what top-p left.
  DreamFilterLogits(l, 3, 0.7, 1, s);
  EXPECT_EQ(s.logits[1], kDreamFilteredLogit);
}

TEST(DreamSampleTokensTest, TemperatureSamplesByGumbelMaxOnTheFilteredRow) {
  const std::vector<float> l = {std::log(8.0f), 0, 0};
  const CounterRng rng(42);
  DreamScratch s;
  int count0 = 0;
  const int n = 4000;
  for (int pos = 0; pos < n; ++pos) {
    const DreamSample a = DreamSampleTokens(l, Params(DreamAlg::kMaskGitPlus, 1.0), rng, 3,
                                            static_cast<uint32_t>(pos), s);
    // The same draw by hand: argmax l_v - log(-log u_v).
    int best = 0;
    double best_score = -1e300;
    for (int v = 0; v < 3; ++v) {
      const double u =
          rng.Uniform(RngStream::kGumbel, 3, static_cast<uint32_t>(pos), static_cast<uint32_t>(v));
      const double score = l[static_cast<size_t>(v)] - std::log(-std::log(u));
      if (score > best_score) best_score = score, best = v;
    }
    ASSERT_EQ(a.token, best);
    EXPECT_NEAR(a.confidence, a.token == 0 ? 0.8 : 0.1, 1e-6);
    count0 += a.token == 0;
  }
  EXPECT_NEAR(count0 / double{n}, 0.8, 0.03);
  // With top_k = 1 the sample is always the argmax.
  for (uint32_t pos = 0; pos < 50; ++pos) {
    EXPECT_EQ(DreamSampleTokens(l, Params(DreamAlg::kMaskGitPlus, 1.0, 1, 1), rng, 0, pos, s).token,
              0);
  }
}

TEST(DreamParamsTest, AlgNamesRoundTrip) {
  for (const char* name : {"origin", "maskgit_plus", "topk_margin", "entropy"}) {
    auto a = DreamAlgFromName(name);
    ASSERT_TRUE(a.has_value()) << name;
    EXPECT_EQ(DreamAlgName(*a), name);
  }
  EXPECT_FALSE(DreamAlgFromName("confidence").has_value());
  EXPECT_FALSE(DreamAlgFromName("").has_value());
}

struct BadParamCase {
  std::string name;
  std::function<void(DreamParams&)> edit;
  StatusCode code;
  std::string must_mention;
};
void PrintTo(const BadParamCase& c, std::ostream* os) { *os << c.name; }

class DreamBadParamsTest : public ::testing::TestWithParam<BadParamCase> {};

TEST_P(DreamBadParamsTest, CreateRefuses) {
  DreamParams p;
  p.gen_length = 8;
  p.steps = 8;
  GetParam().edit(p);
  const std::vector<int32_t> prompt = {1, 2};
  auto d = DreamDecoder::Create(p, 9, true, prompt, 16, 10);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), GetParam().code) << d.status().ToString();
  EXPECT_NE(d.status().message().find(GetParam().must_mention), std::string::npos)
      << d.status().ToString();
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

INSTANTIATE_TEST_SUITE_P(
    Cases, DreamBadParamsTest,
    ::testing::Values(BadParamCase{"eps_zero", [](DreamParams& p) { p.eps = 0; },
                                   StatusCode::kInvalidArgument, "eps"},
                      BadParamCase{"eps_one", [](DreamParams& p) { p.eps = 1; },
                                   StatusCode::kInvalidArgument, "eps"},
                      BadParamCase{"eps_negative", [](DreamParams& p) { p.eps = -0.1; },
                                   StatusCode::kInvalidArgument, "eps"},
                      BadParamCase{"eps_nan", [](DreamParams& p) { p.eps = kNaN; },
                                   StatusCode::kInvalidArgument, "eps"},
                      BadParamCase{"steps_zero", [](DreamParams& p) { p.steps = 0; },
                                   StatusCode::kInvalidArgument, "steps"},
                      BadParamCase{"steps_negative", [](DreamParams& p) { p.steps = -3; },
                                   StatusCode::kInvalidArgument, "steps"},
                      BadParamCase{"gen_length_zero", [](DreamParams& p) { p.gen_length = 0; },
                                   StatusCode::kInvalidArgument, "gen_length"},
                      BadParamCase{"top_p_zero", [](DreamParams& p) { p.top_p = 0; },
                                   StatusCode::kInvalidArgument, "top_p"},
                      BadParamCase{"top_p_above_one", [](DreamParams& p) { p.top_p = 1.5; },
                                   StatusCode::kInvalidArgument, "top_p"},
                      BadParamCase{"top_p_nan", [](DreamParams& p) { p.top_p = kNaN; },
                                   StatusCode::kInvalidArgument, "top_p"},
                      BadParamCase{"top_k_negative", [](DreamParams& p) { p.top_k = -1; },
                                   StatusCode::kInvalidArgument, "top_k"},
                      BadParamCase{"temperature_negative",
                                   [](DreamParams& p) { p.temperature = -1; },
                                   StatusCode::kInvalidArgument, "temperature"},
                      BadParamCase{"temperature_inf", [](DreamParams& p) { p.temperature = kInf; },
                                   StatusCode::kInvalidArgument, "temperature"},
                      BadParamCase{"alg_temp_negative", [](DreamParams& p) { p.alg_temp = -0.5; },
                                   StatusCode::kInvalidArgument, "alg_temp"},
                      BadParamCase{"alg_temp_nan", [](DreamParams& p) { p.alg_temp = kNaN; },
                                   StatusCode::kInvalidArgument, "alg_temp"},
                      BadParamCase{"beyond_context", [](DreamParams& p) { p.gen_length = 15; },
                                   StatusCode::kOutOfRange, "context"}),
    [](const ::testing::TestParamInfo<BadParamCase>& param_info) { return param_info.param.name; });

TEST(DreamDecoderTest, CreateRefusesBadIds) {
  DreamParams p;
  p.gen_length = 4;
  p.steps = 4;
  const std::vector<int32_t> prompt = {1, 2};
  EXPECT_EQ(DreamDecoder::Create(p, 10, true, prompt, 16, 10).status().code(),
            StatusCode::kInvalidArgument);  // mask id == vocab
  EXPECT_EQ(DreamDecoder::Create(p, -1, true, prompt, 16, 10).status().code(),
            StatusCode::kInvalidArgument);
  const std::vector<int32_t> bad = {1, 12};
  auto d = DreamDecoder::Create(p, 9, true, bad, 16, 10);
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("12"), std::string::npos);
  EXPECT_EQ(DreamDecoder::Create(p, 9, true, {}, 16, 10).status().code(),
            StatusCode::kInvalidArgument);  // empty prompt
}

TEST(DreamDecoderTest, PlanReadsShiftedRowsDeduplicated) {
  DreamParams p;
  p.gen_length = 2;
  p.steps = 2;
  const int32_t mask = 9;
  // Canvas [mask, 5, mask, mask]: positions 0, 2, 3 read rows 0, 1, 2.
  const std::vector<int32_t> prompt = {mask, 5};
  auto d = DreamDecoder::Create(p, mask, true, prompt, 16, 10);
  ASSERT_TRUE(d.ok());
  const BatchPlan& plan = (*d->Plan().value());
  ASSERT_EQ(plan.sequences.size(), 1u);
  EXPECT_EQ(std::vector<int32_t>(plan.sequences[0].logit_rows.begin(),
                                 plan.sequences[0].logit_rows.end()),
            (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(plan.sequences[0].tokens.size(), 4u);
  // Canvas [mask, mask, mask]: positions 0 and 1 both read row 0.
  const std::vector<int32_t> one = {mask};
  auto e = DreamDecoder::Create(p, mask, true, one, 16, 10);
  ASSERT_TRUE(e.ok());
  const auto& rows = (*e->Plan().value()).sequences[0].logit_rows;
  EXPECT_EQ(std::vector<int32_t>(rows.begin(), rows.end()), (std::vector<int32_t>{0, 1}));
  // Without shift the rows are the positions.
  auto f = DreamDecoder::Create(p, mask, false, prompt, 16, 10);
  ASSERT_TRUE(f.ok());
  const auto& frows = (*f->Plan().value()).sequences[0].logit_rows;
  EXPECT_EQ(std::vector<int32_t>(frows.begin(), frows.end()), (std::vector<int32_t>{0, 2, 3}));
}

TEST(DreamDecoderTest, UpdateCommitsByConfidenceWithLowerPositionOnTies) {
  DreamParams p;
  p.gen_length = 3;
  p.steps = 1;  // the last step commits every mask
  p.alg = DreamAlg::kMaskGitPlus;
  const int32_t mask = 3;
  const std::vector<int32_t> prompt = {1};
  auto d = DreamDecoder::Create(p, mask, true, prompt, 16, 4);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ((*d->Plan().value()).num_logit_rows(), 3);
  // Rows 0, 1, 2 predict positions 1, 2, 3. Position 3 is the surest; 1 and 2 tie.
  std::vector<float> logits = {0, 2, 0, 0, /**/ 0, 2, 0, 0, /**/ 0, 0, 9, 0};
  DreamStepResult r;
  ASSERT_TRUE(d->Update(TensorView{logits.data(), DType::kF32, Shape{3, 4}}, &r).ok());
  EXPECT_EQ(r.committed_positions, (std::vector<int32_t>{3, 1, 2}));
  EXPECT_EQ(r.num_transfer, 3);
  EXPECT_EQ(std::vector<int32_t>(d->generated().begin(), d->generated().end()),
            (std::vector<int32_t>{1, 1, 2}));
  EXPECT_TRUE(d->Done());
  EXPECT_EQ(d->Update(TensorView{logits.data(), DType::kF32, Shape{3, 4}}, &r).code(),
            StatusCode::kFailedPrecondition);
}

TEST(DreamDecoderTest, UpdateErrors) {
  DreamParams p;
  p.gen_length = 3;
  p.steps = 3;
  const std::vector<int32_t> prompt = {1};
  auto d = DreamDecoder::Create(p, 3, true, prompt, 16, 4);
  ASSERT_TRUE(d.ok());
  std::vector<float> logits(12, 0.0f);
  EXPECT_EQ(d->Update(TensorView{logits.data(), DType::kF32, Shape{3, 4}}, nullptr).code(),
            StatusCode::kFailedPrecondition);  // no Plan()
  ASSERT_TRUE(d->Plan().ok());
  EXPECT_EQ(d->Update(TensorView{logits.data(), DType::kF32, Shape{2, 4}}, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(d->Update(TensorView{logits.data(), DType::kF32, Shape{3, 3}}, nullptr).code(),
            StatusCode::kInvalidArgument);
}

TEST(DreamDecoderTest, OriginLastStepCommitsEveryMaskInPositionOrder) {
  DreamParams p;
  p.gen_length = 3;
  p.steps = 1;
  p.alg = DreamAlg::kOrigin;
  const std::vector<int32_t> prompt = {1};
  auto d = DreamDecoder::Create(p, 3, true, prompt, 16, 4);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(d->Plan().ok());
  std::vector<float> logits = {0, 0, 5, 0, /**/ 5, 0, 0, 0, /**/ 0, 5, 0, 0};
  DreamStepResult r;
  ASSERT_TRUE(d->Update(TensorView{logits.data(), DType::kF32, Shape{3, 4}}, &r).ok());
  EXPECT_EQ(r.committed_positions, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(std::vector<int32_t>(d->generated().begin(), d->generated().end()),
            (std::vector<int32_t>{2, 0, 1}));
}

// Commit-time log-probabilities: every logit row holds the same values, so each committed
// token's entry is log_softmax of that row at its token (shift_logits off: row i is position i's).
TEST(DreamDecoderTest, LogprobsAreThoseOfTheCommitRow) {
  DreamParams p = Params(DreamAlg::kMaskGitPlus);
  p.gen_length = 3;
  p.steps = 3;
  const int32_t mask = 9;
  const std::vector<int32_t> prompt = {1, 2};
  auto d = DreamDecoder::Create(p, mask, false, prompt, 16, 10);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(d->EnableLogprobs(1).ok());
  const std::vector<float> row = {0.5f, 2.0f, 4.0f, 1.0f, 0, 0, 0, 0, 0, -3.0f};
  double z = 0;
  for (float v : row) z += std::exp(double{v});
  while (!d->Done()) {
    const BatchPlan& plan = (*d->Plan().value());
    const int64_t rows = plan.num_logit_rows();
    std::vector<float> l;
    for (int64_t r = 0; r < rows; ++r) l.insert(l.end(), row.begin(), row.end());
    ASSERT_TRUE(d->Update(TensorView{l.data(), DType::kF32, Shape{rows, 10}}, nullptr).ok());
  }
  ASSERT_EQ(d->logprobs().size(), 3u);
  for (const TokenLogprob& lp : d->logprobs()) {
    EXPECT_EQ(lp.token, 2);
    EXPECT_NEAR(lp.logprob, 4.0 - std::log(z), 1e-5);
    ASSERT_EQ(lp.top.size(), 1u);
    EXPECT_EQ(lp.top[0].first, 2);
  }
}

}  // namespace
}  // namespace unmask
