// Grammar-constrained sampling in the AR decoder (ArDecoder::SetConstraint), on constructed
// logits and a scripted constraint: masked tokens are never committed (greedy, sampled, drafted),
// the constraint sees every committed token in order, Complete() and an empty mask end the
// generation, logprobs stay the model's; the factory refuses a constraint on diffusion models.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "decode/decoder_ar.h"
#include "decode/decoder_factory.h"

namespace unmask {
namespace {

constexpr int64_t kVocab = 6;

// Allows allowed[k] after k accepted tokens; complete after `complete_after` tokens.
class ScriptedConstraint final : public TokenConstraint {
 public:
  ScriptedConstraint(std::vector<std::set<int32_t>> allowed, size_t complete_after)
      : allowed_(std::move(allowed)), complete_after_(complete_after) {}
  std::span<const uint8_t> Allowed() override {
    mask_.assign(kVocab, 0);
    if (accepted.size() < allowed_.size()) {
      for (int32_t t : allowed_[accepted.size()]) mask_[static_cast<size_t>(t)] = 1;
    }
    ++allowed_calls;
    return mask_;
  }
  Status Accept(int32_t token) override {
    if (accepted.size() >= allowed_.size() || !allowed_[accepted.size()].count(token)) {
      return InvalidArgumentError("token " + std::to_string(token) + " is not allowed");
    }
    accepted.push_back(token);
    return Status::Ok();
  }
  bool Complete() const override { return accepted.size() >= complete_after_; }
  std::string name() const override { return "scripted"; }
  Status status() const override { return failure; }

  std::vector<int32_t> accepted;
  Status failure;  // what status() reports (a grammar too ambiguous to follow)
  int allowed_calls = 0;

 private:
  std::vector<std::set<int32_t>> allowed_;
  size_t complete_after_;
  std::vector<uint8_t> mask_;
};

TensorView View(std::vector<float>& l) {
  return TensorView{l.data(), DType::kF32, Shape{static_cast<int64_t>(l.size()) / kVocab, kVocab}};
}

ArParams Params(double temperature, int64_t n_predict) {
  ArParams p;
  p.sampling.temperature = temperature;
  p.n_predict = n_predict;
  return p;
}

const std::vector<int32_t> kPrompt = {1, 2};

TEST(ArConstraintTest, AConstraintThatFailsFailsTheGeneration) {
  auto d = ArDecoder::Create(Params(0, 8), {}, kPrompt, 32, kVocab);
  ASSERT_TRUE(d.ok());
  auto owned =
      std::make_unique<ScriptedConstraint>(std::vector<std::set<int32_t>>{{2}, {3}, {4}}, 3);
  ScriptedConstraint* c = owned.get();
  d->SetConstraint(std::move(owned));
  std::vector<float> l(kVocab, 0.0f);
  ASSERT_TRUE(d->Plan().ok());
  ASSERT_TRUE(d->Update(View(l), nullptr).ok());
  c->failure = InvalidArgumentError("the grammar is too ambiguous to follow");
  ASSERT_TRUE(d->Plan().ok());
  const Status s = d->Update(View(l), nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("too ambiguous"), std::string::npos);
  EXPECT_TRUE(d->Done());
}

TEST(ArConstraintTest, GreedyTakesTheBestAllowedTokenAndLogprobsStayTheModels) {
  ArParams params = Params(0, 8);
  params.logprobs = 1;
  auto d = ArDecoder::Create(params, {}, kPrompt, 32, kVocab);
  ASSERT_TRUE(d.ok());
  auto owned =
      std::make_unique<ScriptedConstraint>(std::vector<std::set<int32_t>>{{2, 3}, {0, 5}, {4}}, 3);
  ScriptedConstraint* c = owned.get();
  d->SetConstraint(std::move(owned));
  // The model prefers 4, then 4, then 1: the grammar turns them into 3, 5, 4.
  const std::vector<std::vector<float>> rows = {
      {0, 0, 1, 2, 9, 0}, {1, 0, 0, 0, 9, 3}, {0, 9, 0, 0, 1, 0}};
  for (const auto& row : rows) {
    ASSERT_FALSE(d->Done());
    ASSERT_TRUE(d->Plan().ok());
    std::vector<float> l = row;
    ASSERT_TRUE(d->Update(View(l), nullptr).ok());
  }
  EXPECT_EQ(std::vector<int32_t>(d->generated().begin(), d->generated().end()),
            (std::vector<int32_t>{3, 5, 4}));
  EXPECT_EQ(c->accepted, (std::vector<int32_t>{3, 5, 4}));
  EXPECT_TRUE(d->Done());
  EXPECT_EQ(d->finish(), ArFinish::kStopped);  // Complete() after 3 tokens
  ASSERT_EQ(d->logprobs().size(), 3u);
  // The top alternative is the model's favourite (4), masked or not.
  ASSERT_EQ(d->logprobs()[0].top.size(), 1u);
  EXPECT_EQ(d->logprobs()[0].top[0].first, 4);
  EXPECT_LT(d->logprobs()[0].logprob, d->logprobs()[0].top[0].second);
}

TEST(ArConstraintTest, AnEmptyMaskEndsTheGenerationWithoutACommit) {
  auto d = ArDecoder::Create(Params(0, 8), {}, kPrompt, 32, kVocab);
  ASSERT_TRUE(d.ok());
  d->SetConstraint(std::make_unique<ScriptedConstraint>(std::vector<std::set<int32_t>>{{1}}, 99));
  std::vector<float> l = {0, 0, 0, 0, 9, 0};
  ASSERT_TRUE(d->Plan().ok());
  ASSERT_TRUE(d->Update(View(l), nullptr).ok());
  ASSERT_FALSE(d->Done());
  ASSERT_TRUE(d->Plan().ok());
  ASSERT_TRUE(d->Update(View(l), nullptr).ok());  // nothing allowed after one token
  EXPECT_TRUE(d->Done());
  EXPECT_EQ(d->finish(), ArFinish::kStopped);
  EXPECT_EQ(std::vector<int32_t>(d->generated().begin(), d->generated().end()),
            std::vector<int32_t>{1});
}

TEST(ArConstraintTest, SampledTokensAreAlwaysAllowed) {
  // Flat logits with the allowed set {0, 3, 5}: over many seeds every draw is in it, and every
  // allowed token is drawn (no valid token is masked out).
  std::set<int32_t> seen;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    ArParams p = Params(1.0, 1);
    p.sampling.seed = seed;
    auto d = ArDecoder::Create(p, {}, kPrompt, 32, kVocab);
    ASSERT_TRUE(d.ok());
    d->SetConstraint(
        std::make_unique<ScriptedConstraint>(std::vector<std::set<int32_t>>{{0, 3, 5}}, 99));
    std::vector<float> l = {0.5f, 3, 3, 0, 3, 1};
    ASSERT_TRUE(d->Plan().ok());
    ASSERT_TRUE(d->Update(View(l), nullptr).ok());
    seen.insert(d->generated()[0]);
  }
  EXPECT_EQ(seen, (std::set<int32_t>{0, 3, 5}));
}

// Proposes one fixed draft once.
class OnceDrafter final : public Drafter {
 public:
  explicit OnceDrafter(std::vector<int32_t> t) : tokens_(std::move(t)) {}
  std::string_view name() const override { return "once"; }

 protected:
  Status DoPropose(std::span<const int32_t>, int64_t max_tokens, DraftProposal* out) override {
    *out = DraftProposal{};
    if (used_) return Status::Ok();
    used_ = true;
    for (int32_t t : tokens_) {
      if (static_cast<int64_t>(out->tokens.size()) >= max_tokens) break;
      out->tokens.push_back(t);
      out->q.push_back(TokenDistribution::PointMass(t));
    }
    return Status::Ok();
  }

 private:
  std::vector<int32_t> tokens_;
  bool used_ = false;
};

TEST(ArConstraintTest, ADraftTheGrammarRefusesIsRejected) {
  // The target agrees with the drafts 4, 4, 4 (greedy), but the grammar allows 4 only first and
  // then {2}: the second draft is rejected and 2 is committed in its place.
  OnceDrafter drafter({4, 4, 4});
  auto d = ArDecoder::Create(Params(0, 8), {}, kPrompt, 32, kVocab, &drafter);
  ASSERT_TRUE(d.ok());
  auto owned = std::make_unique<ScriptedConstraint>(
      std::vector<std::set<int32_t>>{{4}, {2}, {0, 1, 2, 3, 4, 5}}, 99);
  ScriptedConstraint* c = owned.get();
  d->SetConstraint(std::move(owned));
  auto plan = d->Plan();
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ((*plan)->num_logit_rows(), 4);
  std::vector<float> l(4 * kVocab, 0.0f);
  for (int r = 0; r < 4; ++r) l[static_cast<size_t>(r * kVocab + 4)] = 9;
  ArStepResult result;
  ASSERT_TRUE(d->Update(View(l), &result).ok());
  EXPECT_EQ(result.accepted, 1);
  EXPECT_EQ(result.tokens, (std::vector<int32_t>{4, 2}));
  EXPECT_EQ(c->accepted, (std::vector<int32_t>{4, 2}));
}

TEST(ArConstraintTest, TheFactoryRefusesAConstraintOnDiffusionModels) {
  ModelConfig llada;
  llada.architecture = "llada";
  llada.vocab_size = 64;
  llada.context_length = 256;
  llada.attention = AttentionKind::kBidirectional;
  ModelConfig llama = llada;
  llama.architecture = "llama";
  llama.attention = AttentionKind::kCausal;
  DecodeOptions o;
  o.max_tokens = 8;
  o.constraint_label = "response_format";
  int made = 0;
  o.make_constraint = [&made] {
    ++made;
    return std::make_unique<ScriptedConstraint>(std::vector<std::set<int32_t>>{{1}}, 1);
  };
  const std::vector<int32_t> prompt = {1, 2, 3};
  auto refused = MakeDecoder({&llada, {63, 62, 61}, "llada.gguf"}, prompt, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message().rfind("response_format (grammar-constrained", 0), 0u)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("llada.gguf"), std::string::npos);
  EXPECT_EQ(made, 0);
  // Listing unused parameters instead of refusing them never drops a constraint.
  o.refuse_unused = false;
  EXPECT_FALSE(MakeDecoder({&llada, {63, 62, 61}, "llada.gguf"}, prompt, o).ok());
  auto ar = MakeDecoder({&llama, {-1, 62, 61}, "llama.gguf"}, prompt, o);
  ASSERT_TRUE(ar.ok()) << ar.status().message();
  EXPECT_EQ(made, 1);
  const auto* dec = dynamic_cast<const ArDecoder*>(ar->decoder.get());
  ASSERT_NE(dec, nullptr);
  EXPECT_NE(dec->constraint(), nullptr);
}

}  // namespace
}  // namespace unmask
