// The decoder factory (decode/decoder_factory.h), the one place where request parameters are
// settled: which decoder a model and a request get, the canvas rule, default steps, the commit rule
// a parameter implies, and which parameters a model kind, a sampler or a rule refuses (CLI) or
// lists as unused (server). Model configs are constructed; no weights are needed.
#include "decode/decoder_factory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace unmask {
namespace {

ModelConfig Config(const std::string& arch, bool diffusion) {
  ModelConfig c;
  c.architecture = arch;
  c.vocab_size = 64;
  c.context_length = 256;
  c.attention = diffusion ? AttentionKind::kBidirectional : AttentionKind::kCausal;
  c.shift_logits = arch == "dream";
  return c;
}

struct Fixture {
  ModelConfig llada = Config("llada", true);
  ModelConfig dream = Config("dream", true);
  ModelConfig llama = Config("llama", false);
  DecoderModel Of(const ModelConfig& c) const { return {&c, {63, 62, 61}, c.architecture}; }
};

DecodeOptions With(std::vector<std::string> names, bool refuse = true) {
  DecodeOptions o;
  for (const std::string& n : names) {
    std::string label = "--" + n;  // as the CLI writes it
    std::replace(label.begin(), label.end(), '_', '-');
    o.given.push_back({n, label});
  }
  o.refuse_unused = refuse;
  return o;
}

const std::vector<int32_t> kPrompt = {1, 2, 3};

TEST(DecoderFactoryTest, CanvasRuleAndDefaultSteps) {
  EXPECT_EQ(DiffusionCanvasLength(20, 8), 24);
  EXPECT_EQ(DiffusionCanvasLength(24, 8), 24);
  EXPECT_EQ(DiffusionCanvasLength(5, 0), 5);
  EXPECT_EQ(DefaultDiffusionSteps(64, 32), 64);  // one token per step up to 128
  EXPECT_EQ(DefaultDiffusionSteps(128, 32), 128);
  EXPECT_EQ(DefaultDiffusionSteps(256, 32), 128);   // 8 blocks: 128 divides
  EXPECT_EQ(DefaultDiffusionSteps(160, 32), 125);   // 5 blocks: 128 rounded down to 125
  EXPECT_EQ(DefaultDiffusionSteps(4096, 1), 4096);  // at least one step per block

  DecodeOptions o;
  o.max_tokens = 20;
  o.diffusion.block_length = 8;
  o.diffusion.steps = 0;
  auto p = SettleDiffusionParams(o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->gen_length, 24);  // rounded up to whole blocks (the server)
  EXPECT_EQ(p->steps, 24);
  o.round_canvas = false;  // the CLI: -n is gen_length itself
  EXPECT_EQ(SettleDiffusionParams(o)->gen_length, 20);
}

TEST(DecoderFactoryTest, ImpliedCommitRule) {
  for (const auto& [given, rule] :
       std::vector<std::pair<std::string, CommitRule>>{{"threshold", CommitRule::kThreshold},
                                                       {"factor", CommitRule::kFactor},
                                                       {"low_threshold", CommitRule::kHierarchy}}) {
    DecodeOptions o = With({given});
    o.max_tokens = 32;
    auto p = SettleDiffusionParams(o);
    ASSERT_TRUE(p.ok()) << given << ": " << p.status().ToString();
    EXPECT_EQ(p->commit, rule) << given;
  }
  // low_threshold + threshold: hierarchy uses both.
  DecodeOptions both = With({"threshold", "low_threshold"});
  both.max_tokens = 32;
  EXPECT_EQ(SettleDiffusionParams(both)->commit, CommitRule::kHierarchy);
  // A named rule wins; a threshold keeps a rule that already uses one (the server's --commit).
  DecodeOptions credit = With({"threshold"});
  credit.max_tokens = 32;
  credit.diffusion.commit = CommitRule::kCredit;
  EXPECT_EQ(SettleDiffusionParams(credit)->commit, CommitRule::kCredit);
}

TEST(DecoderFactoryTest, RuleParametersOfAnotherRule) {
  DecodeOptions o = With({"threshold", "factor"});
  o.max_tokens = 32;
  auto p = SettleDiffusionParams(o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("--threshold and --factor belong to different commit rules"),
            std::string::npos)
      << p.status().message();
  DecodeOptions named = With({"commit", "factor"});
  named.max_tokens = 32;
  named.diffusion.commit = CommitRule::kThreshold;
  EXPECT_NE(SettleDiffusionParams(named).status().message().find(
                "--factor does not apply to --commit threshold"),
            std::string::npos);
  DecodeOptions look = With({"prefix_look"});
  look.max_tokens = 32;
  EXPECT_NE(SettleDiffusionParams(look).status().message().find(
                "applies to --cache vicinity, not --cache none"),
            std::string::npos);
  // Listed, not refused, for the server.
  DecodeOptions listed = With({"threshold", "factor", "steps"}, /*refuse=*/false);
  listed.max_tokens = 32;
  std::vector<std::string> unused;
  ASSERT_TRUE(SettleDiffusionParams(listed, &unused).ok());
  EXPECT_EQ(unused, (std::vector<std::string>{"--threshold", "--steps"}));
  // Request fields are named as such (the server's log).
  DecodeOptions fields;
  fields.given = {{"prefix_look", "prefix_look"}};
  fields.max_tokens = 32;
  EXPECT_NE(SettleDiffusionParams(fields).status().message().find(
                "prefix_look applies to cache vicinity, not cache none"),
            std::string::npos);
}

TEST(DecoderFactoryTest, DecoderKindFollowsModelAndParameters) {
  Fixture f;
  DecodeOptions o;
  o.max_tokens = 8;
  EXPECT_EQ(SelectDecoder(f.llama, o), DecoderKind::kAr);
  EXPECT_EQ(SelectDecoder(f.llada, o), DecoderKind::kDiffusion);
  EXPECT_EQ(SelectDecoder(f.dream, o), DecoderKind::kDream);
  EXPECT_EQ(SelectDecoder(f.dream, With({"block_length"})), DecoderKind::kDiffusion);
  EXPECT_EQ(SelectDecoder(f.dream, With({"steps", "alg"})), DecoderKind::kDream);
  DecodeOptions block;
  block.sampler = DiffusionSampler::kBlock;
  EXPECT_EQ(SelectDecoder(f.dream, block), DecoderKind::kDiffusion);

  auto d = MakeDecoder(f.Of(f.dream), kPrompt, o);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->decoder->kind(), DecoderKind::kDream);
  EXPECT_EQ(d->dream.gen_length, 8);
  EXPECT_EQ(d->dream.steps, 8);
  EXPECT_EQ(d->dream.alg, DreamAlg::kEntropy);  // the CLI's and Dream's evaluation default
  EXPECT_EQ(d->dream.top_k, 0);                 // AR defaults are not Dream's
  DecodeOptions topk = With({"top_k"});
  topk.max_tokens = 8;
  topk.ar.sampling.top_k = 5;
  EXPECT_EQ(MakeDecoder(f.Of(f.dream), kPrompt, topk)->dream.top_k, 5);

  auto ar = MakeDecoder(f.Of(f.llama), kPrompt, o);
  ASSERT_TRUE(ar.ok());
  EXPECT_EQ(ar->decoder->kind(), DecoderKind::kAr);
  EXPECT_EQ(ar->ar.n_predict, 8);
  EXPECT_TRUE(ar->decoder->needs_kv_cache());
  DecodeOptions lookup = o;
  lookup.speculative_lookup = true;
  auto spec = MakeDecoder(f.Of(f.llama), kPrompt, lookup);
  ASSERT_TRUE(spec.ok());
  EXPECT_NE(static_cast<const ArDecoder&>(*spec->decoder).drafter(), nullptr);  // owned
}

TEST(DecoderFactoryTest, ParametersOfAnotherKindAreRefusedOrListed) {
  Fixture f;
  struct Case {
    const ModelConfig* model;
    std::string param;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {&f.llama, "steps", "--steps applies to diffusion models"},
           {&f.llama, "alg", "--alg applies to diffusion models"},
           {&f.llada, "top_k", "--top-k applies to autoregressive models"},
           {&f.llada, "alg", "--alg applies to Dream models"},
           {&f.dream, "min_p", "--min-p applies to autoregressive models"},
           // The draft-head flags of --spec medusa / eagle (found by a trial run:
           // they were accepted and ignored on diffusion models).
           {&f.llada, "draft_heads", "--draft-heads applies to autoregressive models"},
           {&f.llada, "draft_depth", "--draft-depth applies to autoregressive models"},
           {&f.dream, "draft_topk", "--draft-topk applies to autoregressive models"}}) {
    DecodeOptions o;
    std::string label = "--" + c.param;
    std::replace(label.begin(), label.end(), '_', '-');
    o.given.push_back({c.param, label});
    o.max_tokens = 8;
    auto d = MakeDecoder(f.Of(*c.model), kPrompt, o);
    ASSERT_FALSE(d.ok()) << c.param;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(d.status().message().find(c.message), std::string::npos) << d.status().message();
    o.refuse_unused = false;
    auto listed = MakeDecoder(f.Of(*c.model), kPrompt, o);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    EXPECT_EQ(listed->unused, std::vector<std::string>{label});
  }
  // Dream-sampler parameters with block-decoder ones.
  DecodeOptions o = With({"block_length", "alg"});
  o.max_tokens = 8;
  o.diffusion.block_length = 8;
  auto d = MakeDecoder(f.Of(f.dream), kPrompt, o);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("--alg applies to Dream's reference sampler, but the "
                                      "block-decoder flags given (--block-length, --cache, "
                                      "--commit, ...) select the block decoder"),
            std::string::npos)
      << d.status().message();
  // top_k / top_p are the Dream sampler's too: the same message, not "autoregressive".
  DecodeOptions topk = With({"block_length", "top_k"});
  topk.max_tokens = 8;
  topk.diffusion.block_length = 8;
  EXPECT_NE(MakeDecoder(f.Of(f.dream), kPrompt, topk)
                .status()
                .message()
                .find("--top-k applies to Dream's reference sampler"),
            std::string::npos);
}

TEST(DecoderFactoryTest, LimitsAreErrors) {
  Fixture f;
  DecodeOptions o;
  o.max_tokens = 300;  // context 256
  EXPECT_EQ(MakeDecoder(f.Of(f.llama), kPrompt, o).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(MakeDecoder(f.Of(f.llada), kPrompt, o).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(MakeDecoder(f.Of(f.dream), kPrompt, o).status().code(), StatusCode::kOutOfRange);
  o.max_tokens = -2;
  EXPECT_EQ(MakeDecoder(f.Of(f.llama), kPrompt, o).status().code(), StatusCode::kInvalidArgument);
  o.max_tokens = 0;
  EXPECT_EQ(MakeDecoder(f.Of(f.llada), kPrompt, o).status().code(), StatusCode::kInvalidArgument);
  o.max_tokens = 32;
  o.diffusion.block_length = 32;
  o.diffusion.steps = 257;  // more forwards than the context allows
  auto d = MakeDecoder(f.Of(f.llada), kPrompt, o);
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("context length"), std::string::npos);
  DecodeOptions dream;
  dream.max_tokens = 8;
  dream.sampler = DiffusionSampler::kDream;
  EXPECT_EQ(MakeDecoder(f.Of(f.llada), kPrompt, dream).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeDecoder(DecoderModel{}, kPrompt, dream).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace unmask

namespace unmask {
namespace {

// Until EOS or the context (max_tokens -1): the context left, in whole blocks for block
// diffusion, capped by context_length; refused for a full canvas; OutOfRange when nothing fits.
TEST(UntilDoneLengthTest, TheContextLeftInTheDecodersUnits) {
  ModelConfig ar = Config("llama", false);
  ModelConfig sdar = Config("sdar", false);
  sdar.attention = AttentionKind::kBlockCausal;
  sdar.block_length = 4;
  DecodeOptions o;
  auto n = UntilDoneLength(ar, "ar", 10, o);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 246);
  n = UntilDoneLength(sdar, "sdar", 10, o);  // canvas of 256 = 64 blocks of 4
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 246);
  o.context_length = 30;
  n = UntilDoneLength(sdar, "sdar", 10, o);  // 7 blocks of 4 = 28 positions
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 18);
  o.given.push_back({"block_length", "block_length"});
  o.diffusion.block_length = 8;
  n = UntilDoneLength(sdar, "sdar", 10, o);  // 3 blocks of 8 = 24 positions
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 14);
  n = UntilDoneLength(sdar, "sdar", 30, o);
  EXPECT_EQ(n.status().code(), StatusCode::kOutOfRange);
  const auto llada = UntilDoneLength(Config("llada", true), "llada", 10, DecodeOptions{});
  EXPECT_EQ(llada.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(llada.status().message().find("fixed length"), std::string::npos);
}

}  // namespace
}  // namespace unmask
