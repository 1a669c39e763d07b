// ArDecoder mechanics on constructed logits: what each plan feeds, when generation ends, and the
// speculative accept/reject rule (greedy: lossless; sampling: the target distribution).
#include "decode/decoder_ar.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <random>

namespace unmask {
namespace {

constexpr int64_t kVocab = 6;

// Logit rows with a peak (10) at the given token of each row.
std::vector<float> Peaks(const std::vector<int32_t>& tokens) {
  std::vector<float> l(tokens.size() * kVocab, 0.0f);
  for (size_t r = 0; r < tokens.size(); ++r) l[r * kVocab + static_cast<size_t>(tokens[r])] = 10;
  return l;
}

TensorView View(std::vector<float>& l) {
  return TensorView{l.data(), DType::kF32, Shape{static_cast<int64_t>(l.size()) / kVocab, kVocab}};
}

ArParams Greedy(int64_t n_predict) {
  ArParams p;
  p.sampling.temperature = 0;
  p.n_predict = n_predict;
  return p;
}

// Proposes the queued drafts in order (each a point mass unless q is given).
class FakeDrafter final : public Drafter {
 public:
  std::deque<DraftProposal> queue;
  std::vector<std::vector<int32_t>> contexts;  // what Propose saw
  std::string_view name() const override { return "fake"; }

 protected:
  Status DoPropose(std::span<const int32_t> ctx, int64_t max_tokens, DraftProposal* out) override {
    contexts.emplace_back(ctx.begin(), ctx.end());
    *out = queue.empty() ? DraftProposal{} : queue.front();
    if (!queue.empty()) queue.pop_front();
    if (static_cast<int64_t>(out->tokens.size()) > max_tokens) {
      out->tokens.resize(static_cast<size_t>(max_tokens));
      out->q.resize(static_cast<size_t>(max_tokens));
      if (!out->parents.empty()) out->parents.resize(static_cast<size_t>(max_tokens));
    }
    return Status::Ok();
  }
};

DraftProposal Points(const std::vector<int32_t>& t) {
  DraftProposal d;
  d.tokens = t;
  for (int32_t x : t) d.q.push_back(TokenDistribution::PointMass(x));
  return d;
}

TEST(ArDecoderTest, CreateRejectsBadInput) {
  const std::vector<int32_t> prompt = {1, 2};
  EXPECT_FALSE(ArDecoder::Create(Greedy(4), {}, {}, 16, kVocab).ok());
  const std::vector<int32_t> bad = {1, 6};
  EXPECT_FALSE(ArDecoder::Create(Greedy(4), {}, bad, 16, kVocab).ok());
  EXPECT_FALSE(ArDecoder::Create(Greedy(4), {}, prompt, 2, kVocab).ok());  // no room
  EXPECT_FALSE(ArDecoder::Create(Greedy(-2), {}, prompt, 16, kVocab).ok());
  ArParams p = Greedy(4);
  p.draft_max = 0;
  EXPECT_FALSE(ArDecoder::Create(p, {}, prompt, 16, kVocab).ok());
  p = Greedy(4);
  p.sampling.top_p = 2;
  EXPECT_FALSE(ArDecoder::Create(p, {}, prompt, 16, kVocab).ok());
  auto zero = ArDecoder::Create(Greedy(0), {}, prompt, 16, kVocab);
  ASSERT_TRUE(zero.ok());
  EXPECT_TRUE(zero->Done());
  EXPECT_FALSE(zero->Plan().ok());
}

TEST(ArDecoderTest, PrefillThenOneTokenPerStep) {
  const std::vector<int32_t> prompt = {1, 2, 3};
  auto d = ArDecoder::Create(Greedy(3), {}, prompt, 16, kVocab);
  ASSERT_TRUE(d.ok());
  std::vector<float> wrong(2 * kVocab);
  EXPECT_EQ(d->Update(View(wrong), nullptr).code(), StatusCode::kFailedPrecondition);  // no plan
  auto plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  const SequenceInput& s = (*plan)->sequences.at(0);
  EXPECT_EQ(std::vector<int32_t>(s.tokens.begin(), s.tokens.end()), prompt);
  EXPECT_EQ(s.pos0, 0);
  EXPECT_EQ(std::vector<int32_t>(s.logit_rows.begin(), s.logit_rows.end()),
            std::vector<int32_t>{2});
  EXPECT_EQ(s.kv_seq, 0);
  ArStepResult r;
  EXPECT_EQ(d->Update(View(wrong), &r).code(), StatusCode::kInvalidArgument);  // 2 rows, want 1
  ASSERT_TRUE(d->Plan().ok());
  std::vector<float> l = Peaks({4});
  ASSERT_TRUE(d->Update(View(l), &r).ok());
  EXPECT_EQ(r.tokens, std::vector<int32_t>{4});
  plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  const SequenceInput& s2 = (*plan)->sequences.at(0);
  EXPECT_EQ(std::vector<int32_t>(s2.tokens.begin(), s2.tokens.end()), std::vector<int32_t>{4});
  EXPECT_EQ(s2.pos0, 3);
  l = Peaks({5});
  ASSERT_TRUE(d->Update(View(l), &r).ok());
  ASSERT_TRUE(d->Plan().ok());
  l = Peaks({0});
  ASSERT_TRUE(d->Update(View(l), &r).ok());
  EXPECT_TRUE(d->Done());
  EXPECT_EQ(d->finish(), ArFinish::kLength);
  EXPECT_EQ(std::vector<int32_t>(d->generated().begin(), d->generated().end()),
            (std::vector<int32_t>{4, 5, 0}));
  EXPECT_EQ(d->nfe(), 3);
}

TEST(ArDecoderTest, EndsAtEosUnlessIgnoredAndAtTheContext) {
  const std::vector<int32_t> prompt = {1};
  auto d = ArDecoder::Create(Greedy(-1), {2, 3}, prompt, 16, kVocab);
  ASSERT_TRUE(d.ok());
  ArStepResult r;
  std::vector<float> eot = Peaks({3});
  ASSERT_TRUE(d->Plan().ok());
  ASSERT_TRUE(d->Update(View(eot), &r).ok());
  EXPECT_EQ(d->finish(), ArFinish::kEos);
  EXPECT_EQ(ArFinishName(d->finish()), "stop");

  ArParams p = Greedy(-1);
  p.ignore_eos = true;
  auto e = ArDecoder::Create(p, {2, 3}, prompt, 4, kVocab);
  ASSERT_TRUE(e.ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(e->Plan().ok());
    ASSERT_TRUE(e->Update(View(eot), &r).ok());
  }
  EXPECT_EQ(e->finish(), ArFinish::kContext);  // 1 + 3 tokens fill the context of 4
  EXPECT_EQ(ArFinishName(e->finish()), "length");
}

TEST(ArDecoderTest, GreedyVerificationAcceptsTheMatchingPrefix) {
  const std::vector<int32_t> prompt = {1, 2};
  FakeDrafter drafter;
  drafter.queue.push_back(Points({4, 5, 1}));  // target says 4, 5, then 0: two accepted
  drafter.queue.push_back(Points({3, 3}));     // target says 3, 3, then bonus 2
  auto d = ArDecoder::Create(Greedy(-1), {}, prompt, 32, kVocab, &drafter);
  ASSERT_TRUE(d.ok());
  auto plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  const SequenceInput& s = (*plan)->sequences.at(0);
  EXPECT_EQ(std::vector<int32_t>(s.tokens.begin(), s.tokens.end()),
            (std::vector<int32_t>{1, 2, 4, 5, 1}));
  EXPECT_EQ(std::vector<int32_t>(s.logit_rows.begin(), s.logit_rows.end()),
            (std::vector<int32_t>{1, 2, 3, 4}));
  std::vector<float> l = Peaks({4, 5, 0, 3});
  ArStepResult r;
  ASSERT_TRUE(d->Update(View(l), &r).ok());
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{4, 5, 0}));
  EXPECT_EQ(r.drafted, 3);
  EXPECT_EQ(r.accepted, 2);
  // The cache keeps the prompt and the accepted drafts: the next forward starts at position 4
  // and feeds the correction 0 plus the new drafts.
  plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  const SequenceInput& s2 = (*plan)->sequences.at(0);
  EXPECT_EQ(s2.pos0, 4);
  EXPECT_EQ(std::vector<int32_t>(s2.tokens.begin(), s2.tokens.end()),
            (std::vector<int32_t>{0, 3, 3}));
  EXPECT_EQ(drafter.contexts.back(), (std::vector<int32_t>{1, 2, 4, 5, 0}));
  l = Peaks({3, 3, 2});
  ASSERT_TRUE(d->Update(View(l), &r).ok());
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{3, 3, 2}));
  EXPECT_EQ(d->speculative().drafted, 5);
  EXPECT_EQ(d->speculative().accepted, 4);
  EXPECT_NEAR(d->speculative().acceptance_rate(), 0.8, 1e-12);
}

TEST(ArDecoderTest, DraftsNeverRunPastTheBudget) {
  const std::vector<int32_t> prompt = {1};
  FakeDrafter drafter;
  drafter.queue.push_back(Points({4, 4, 4, 4, 4}));
  ArParams p = Greedy(3);
  p.draft_max = 8;
  auto d = ArDecoder::Create(p, {}, prompt, 32, kVocab, &drafter);
  ASSERT_TRUE(d.ok());
  auto plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ((*plan)->sequences[0].tokens.size(), 3u);  // prompt + 2 drafts: 3 tokens to commit
  std::vector<float> l = Peaks({4, 4, 4});
  ArStepResult r;
  ASSERT_TRUE(d->Update(View(l), &r).ok());
  EXPECT_EQ(r.tokens.size(), 3u);
  EXPECT_EQ(d->finish(), ArFinish::kLength);
}

TEST(ArDecoderTest, EosInsideAcceptedDraftsEndsThere) {
  const std::vector<int32_t> prompt = {1};
  FakeDrafter drafter;
  drafter.queue.push_back(Points({4, 2, 5}));
  auto d = ArDecoder::Create(Greedy(-1), {2, -1}, prompt, 32, kVocab, &drafter);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(d->Plan().ok());
  std::vector<float> l = Peaks({4, 2, 5, 5});
  ArStepResult r;
  ASSERT_TRUE(d->Update(View(l), &r).ok());
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{4, 2}));
  EXPECT_EQ(d->finish(), ArFinish::kEos);
}

// Leviathan et al.'s rule: whatever the draft distribution q, the committed token follows p.
TEST(ArDecoderTest, SpeculativeSamplingPreservesTheTargetDistribution) {
  const std::vector<float> target = {0.0f, 1.0f, 2.0f, 0.5f, -1.0f, -INFINITY};
  ArParams p;
  p.sampling.temperature = 1.0;
  p.sampling.top_k = 0;
  p.sampling.top_p = 1.0;
  p.sampling.min_p = 0.0;
  p.n_predict = 2;  // room for one draft and the token after it
  p.draft_max = 1;
  const TokenDistribution want = Sampler(p.sampling).Distribution(target, {});
  const TokenDistribution q{{0, 1, 3, 4}, {0.4, 0.3, 0.2, 0.1}};  // far from the target
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<int> counts(kVocab, 0);
  constexpr int kN = 20000;
  int64_t accepted = 0;
  for (int i = 0; i < kN; ++i) {
    FakeDrafter drafter;
    DraftProposal prop;
    prop.tokens = {q.Draw(u(gen))};
    prop.q = {q};
    drafter.queue.push_back(prop);
    p.sampling.seed = static_cast<uint64_t>(i);
    const std::vector<int32_t> prompt = {1};
    auto d = ArDecoder::Create(p, {}, prompt, 8, kVocab, &drafter);
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(d->Plan().ok());
    std::vector<float> l(target);
    l.insert(l.end(), target.begin(), target.end());
    ArStepResult r;
    ASSERT_TRUE(d->Update(View(l), &r).ok());
    ++counts[static_cast<size_t>(r.tokens.at(0))];
    accepted += r.accepted;
  }
  for (int v = 0; v < kVocab; ++v) {
    const double pv = want.Prob(v);
    EXPECT_NEAR(counts[static_cast<size_t>(v)] / double{kN}, pv,
                5 * std::sqrt(pv * (1 - pv) / kN) + 1e-9)
        << "token " << v;
  }
  // Acceptance probability is sum_x min(p(x), q(x)).
  double overlap = 0;
  for (size_t j = 0; j < q.ids.size(); ++j) overlap += std::min(q.probs[j], want.Prob(q.ids[j]));
  EXPECT_NEAR(static_cast<double>(accepted) / kN, overlap, 5 * std::sqrt(0.25 / kN));
}

DraftProposal Tree(const std::vector<int32_t>& tokens, const std::vector<int32_t>& parents) {
  DraftProposal d = Points(tokens);
  d.parents = parents;
  return d;
}

// A tree of drafts: the plan feeds it under a tree mask, greedy verification walks the branch
// that matches the target's argmax, and the next plan moves the accepted rows into place.
TEST(ArDecoderTest, GreedyTreeVerificationWalksTheMatchingBranch) {
  FakeDrafter drafter;
  // Below the context's last token (1): d0=2, d1=3, d2=4; below d0: d3=5; below d1: d4=1, d5=2.
  drafter.queue.push_back(Points({}));  // the prefill drafts nothing
  drafter.queue.push_back(Tree({2, 3, 4, 5, 1, 2}, {-1, -1, -1, 0, 1, 1}));
  drafter.queue.push_back(Points({}));
  const std::vector<int32_t> prompt = {0, 1};
  ArParams params = Greedy(20);
  params.draft_max = 6;
  auto d = ArDecoder::Create(params, {}, prompt, 64, kVocab, &drafter);
  ASSERT_TRUE(d.ok());
  auto plan = d->Plan();  // prefill
  ASSERT_TRUE(plan.ok());
  std::vector<float> l = Peaks({1});
  ASSERT_TRUE(d->Update(View(l), nullptr).ok());
  plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  const SequenceInput& in = (*plan)->sequences[0];
  EXPECT_EQ(std::vector<int32_t>(in.tokens.begin(), in.tokens.end()),
            (std::vector<int32_t>{1, 2, 3, 4, 5, 1, 2}));
  EXPECT_EQ(std::vector<int32_t>(in.tree_parents.begin(), in.tree_parents.end()),
            (std::vector<int32_t>{-1, 0, 0, 0, 1, 2, 2}));
  EXPECT_EQ(in.pos0, 2);
  EXPECT_TRUE(in.kv_keep.empty());
  // Rows: the context's last token, then d0..d5. The target says 3 (d1), then 2 (d5), then 4.
  l = Peaks({3, 0, 2, 0, 0, 0, 4});
  ArStepResult r;
  ASSERT_TRUE(d->Update(View(l), &r).ok());
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{3, 2, 4}));
  EXPECT_EQ(r.drafted, 6);
  EXPECT_EQ(r.accepted, 2);
  plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  const SequenceInput& next = (*plan)->sequences[0];
  // Cache rows 2 + 1 + 1 (d1) and 2 + 1 + 5 (d5) move to rows 3 and 4; the bonus token 4 is fed
  // at position 5.
  EXPECT_EQ(std::vector<int32_t>(next.kv_keep.begin(), next.kv_keep.end()),
            (std::vector<int32_t>{4, 8}));
  EXPECT_EQ(next.pos0, 5);
  EXPECT_EQ(std::vector<int32_t>(next.tokens.begin(), next.tokens.end()),
            (std::vector<int32_t>{4}));
  EXPECT_TRUE(next.tree_parents.empty());
  // No child matches: the target's token is committed alone and nothing moves.
  l = Peaks({0});
  ASSERT_TRUE(d->Update(View(l), &r).ok());
  drafter.queue.push_back(Tree({5, 5}, {-1, 0}));
  plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE((*plan)->sequences[0].kv_keep.empty());
  l = Peaks({1, 0, 0});
  ASSERT_TRUE(d->Update(View(l), &r).ok());
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{1}));
  EXPECT_EQ(r.accepted, 0);
}

// EAGLE's multi-round rule with deterministic drafts: over a two-level tree, the first committed
// token follows p1 (the context's row) and, after an accepted first draft, the second follows
// that draft's own row, whatever the tree holds.
TEST(ArDecoderTest, TreeSamplingPreservesTheTargetDistribution) {
  const std::vector<float> p1 = {0.0f, 1.0f, 2.0f, 0.5f, -1.0f, -INFINITY};
  const std::vector<float> p2 = {1.5f, -0.5f, 0.0f, 1.0f, 0.2f, 0.7f};
  ArParams p;
  p.sampling.temperature = 1.0;
  p.sampling.top_k = 0;
  p.sampling.top_p = 1.0;
  p.sampling.min_p = 0.0;
  p.n_predict = 8;
  p.draft_max = 5;
  const TokenDistribution w1 = Sampler(p.sampling).Distribution(p1, {});
  const TokenDistribution w2 = Sampler(p.sampling).Distribution(p2, {});
  constexpr int kN = 20000;
  std::vector<int> first(kVocab, 0), second(kVocab, 0);
  int after_two = 0;
  for (int i = 0; i < kN; ++i) {
    FakeDrafter drafter;
    // Children of the context: 2, 3, 4; under 2: 0 and 5.
    drafter.queue.push_back(Tree({2, 3, 4, 0, 5}, {-1, -1, -1, 0, 0}));
    p.sampling.seed = static_cast<uint64_t>(i);
    const std::vector<int32_t> prompt = {1};
    auto d = ArDecoder::Create(p, {}, prompt, 16, kVocab, &drafter);
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(d->Plan().ok());
    // Rows: context, d0 (2), d1, d2, d3, d4.
    std::vector<float> l(p1);
    l.insert(l.end(), p2.begin(), p2.end());
    for (int row = 0; row < 4; ++row) l.insert(l.end(), p1.begin(), p1.end());
    ArStepResult r;
    ASSERT_TRUE(d->Update(View(l), &r).ok());
    ++first[static_cast<size_t>(r.tokens.at(0))];
    if (r.tokens[0] == 2) {
      ++after_two;
      ++second[static_cast<size_t>(r.tokens.at(1))];
    }
  }
  for (int v = 0; v < kVocab; ++v) {
    const double pv = w1.Prob(v);
    EXPECT_NEAR(first[static_cast<size_t>(v)] / double{kN}, pv,
                5 * std::sqrt(pv * (1 - pv) / kN) + 1e-9)
        << "first token " << v;
  }
  ASSERT_GT(after_two, 1000);
  for (int v = 0; v < kVocab; ++v) {
    const double pv = w2.Prob(v);
    EXPECT_NEAR(second[static_cast<size_t>(v)] / static_cast<double>(after_two), pv,
                5 * std::sqrt(pv * (1 - pv) / static_cast<double>(after_two)) + 1e-9)
        << "second token " << v;
  }
}

TEST(ArDecoderTest, MalformedDraftTreesAreAnError) {
  for (const auto& parents : std::vector<std::vector<int32_t>>{{0, -1}, {-1, 1}, {-2, 0}, {-1}}) {
    FakeDrafter drafter;
    drafter.queue.push_back(Tree({2, 3}, parents));
    const std::vector<int32_t> prompt = {1};
    auto d = ArDecoder::Create(Greedy(8), {}, prompt, 16, kVocab, &drafter);
    ASSERT_TRUE(d.ok());
    const auto plan = d->Plan();
    ASSERT_FALSE(plan.ok());
    EXPECT_NE(plan.status().message().find("draft tree"), std::string::npos)
        << plan.status().ToString();
  }
}

}  // namespace
}  // namespace unmask

namespace unmask {
namespace {

// logprobs: log_softmax of the raw row (not of the sampling chain's distribution), the top-k
// alternatives most likely first with ties to the lower id; off by default; range-checked.
TEST(ArDecoderLogprobsTest, EveryCommittedTokenGetsItsLogSoftmax) {
  ArParams p = Greedy(2);
  p.logprobs = 3;
  p.sampling.repeat_penalty = 2.0;  // acts on sampling only, not on the reported log-probabilities
  const std::vector<int32_t> prompt = {1};
  auto d = ArDecoder::Create(p, {}, prompt, 16, kVocab);
  ASSERT_TRUE(d.ok()) << d.status().message();
  std::vector<float> rows[2] = {{0, 1, 2, 3, 3, 5}, {4, 0, 0, 0, 0, 0}};
  for (auto& row : rows) {
    ASSERT_TRUE(d->Plan().ok());
    ASSERT_TRUE(d->Update(View(row), nullptr).ok());
  }
  ASSERT_TRUE(d->Done());
  const auto lp = d->logprobs();
  ASSERT_EQ(lp.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    double z = 0;
    for (float v : rows[r]) z += std::exp(static_cast<double>(v));
    const int32_t t = lp[r].token;
    EXPECT_EQ(t, d->generated()[r]);
    EXPECT_NEAR(lp[r].logprob, rows[r][static_cast<size_t>(t)] - std::log(z), 1e-6);
    ASSERT_EQ(lp[r].top.size(), 3u);
    for (const auto& [id, v] : lp[r].top) {
      EXPECT_NEAR(v, rows[r][static_cast<size_t>(id)] - std::log(z), 1e-6);
    }
  }
  EXPECT_EQ(lp[0].token, 5);
  EXPECT_EQ(lp[0].top[0].first, 5);
  EXPECT_EQ(lp[0].top[1].first, 3);  // 3 and 4 tie: the lower id first
  EXPECT_EQ(lp[0].top[2].first, 4);
  // Off by default; out of range refused.
  auto off = ArDecoder::Create(Greedy(1), {}, prompt, 16, kVocab);
  ASSERT_TRUE(off.ok());
  ASSERT_TRUE(off->Plan().ok());
  std::vector<float> row = rows[0];
  ASSERT_TRUE(off->Update(View(row), nullptr).ok());
  EXPECT_TRUE(off->logprobs().empty());
  p.logprobs = 21;
  EXPECT_FALSE(ArDecoder::Create(p, {}, prompt, 16, kVocab).ok());
}

}  // namespace
}  // namespace unmask
