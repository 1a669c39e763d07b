// Pieces of `unmask bench arena`: prompts (the held-out split of the twins' corpus, prompt files),
// the judge perplexity, modes and their planner specs, the report's summaries and crossover.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "cli/arena/arena_data.h"
#include "cli/arena/arena_modes.h"
#include "cli/arena/arena_report.h"
#include "model/loader.h"
#include "test_util.h"

namespace unmask::tools {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

const LoadedModel& ArTwin() {
  static const LoadedModel* lm = [] {
    LoadOptions o;
    auto m = LoadModel(testing::SourceDir() + "/models/unmask-tinystories-ar.gguf", o);
    EXPECT_TRUE(m.ok()) << m.status().message();
    return new LoadedModel(std::move(m).value());
  }();
  return *lm;
}

TEST(ArenaDataTest, HeldOutStoriesFollowTheTrainingSplit) {
  // Stories: paragraphs separated by a blank line; a new story starts on the line right after a
  // paragraph. 40 stories -> the last 2 (5%) are held out.
  std::string text;
  for (int i = 0; i < 40; ++i) {
    text += "Story " + std::to_string(i) + " begins.\n\nIt ends " + std::to_string(i) + ".  \n";
  }
  auto held = HeldOutStories(Write("corpus.txt", text));
  ASSERT_TRUE(held.ok()) << held.status().message();
  ASSERT_EQ(held->size(), 2u);
  EXPECT_EQ((*held)[0], "Story 38 begins.\n\nIt ends 38.");
  EXPECT_EQ((*held)[1], "Story 39 begins.\n\nIt ends 39.");
  EXPECT_EQ(HeldOutStories("/nonexistent/corpus.txt").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(HeldOutStories(Write("empty.txt", "\n\n")).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ArenaDataTest, PromptFiles) {
  auto lines = ReadPromptFile(Write("prompts.txt", "first prompt\n\n  \nsecond\n"));
  ASSERT_TRUE(lines.ok());
  EXPECT_EQ(*lines, (std::vector<std::string>{"first prompt", "second"}));
  auto jsonl = ReadPromptFile(Write("prompts.jsonl", R"({"prompt": "a"})"
                                                     "\n"
                                                     R"({"turns": ["b", "c"], "id": 1})"
                                                     "\n"
                                                     R"({"question": "d"})"
                                                     "\n"));
  ASSERT_TRUE(jsonl.ok()) << jsonl.status().message();
  EXPECT_EQ(*jsonl, (std::vector<std::string>{"a", "b", "d"}));
  const Status bad = ReadPromptFile(Write("bad.jsonl", R"({"prompt": "a"})"
                                                       "\n{oops\n"))
                         .status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("bad.jsonl:2"), std::string::npos) << bad.message();
  const Status field = ReadPromptFile(Write("field.jsonl", R"({"answer": 3})")).status();
  EXPECT_NE(field.message().find("field.jsonl:1: no prompt"), std::string::npos);
  EXPECT_EQ(ReadPromptFile(Write("none.txt", "\n")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadPromptFile("/nonexistent.txt").status().code(), StatusCode::kNotFound);
}

TEST(ArenaDataTest, PromptsAreCutToTheirLengthWithBos) {
  const Tokenizer& tok = *ArTwin().tokenizer;
  auto ids = TokenizePrompts(tok, {"Once upon a time, there was a little dog named Max.", "Hi"}, 6);
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->size(), 1u);  // "Hi" is too short
  EXPECT_EQ((*ids)[0].size(), 6u);
  EXPECT_EQ((*ids)[0][0], tok.special().bos);
  EXPECT_EQ(TokenizePrompts(tok, {"Hi"}, 6).status().code(), StatusCode::kInvalidArgument);
}

TEST(ArenaDataTest, JudgePerplexityScoresThroughTheFirstEndOfText) {
  const LoadedModel& lm = ArTwin();
  const Tokenizer& tok = *lm.tokenizer;
  const std::vector<int32_t> prompt =
      tok.Encode("Once upon a time, there was a little girl named Lily.", true, false);
  const std::vector<int32_t> fluent = tok.Encode(" She liked to play with her ball.", false, false);
  std::vector<int32_t> noise;
  for (int i = 0; i < static_cast<int>(fluent.size()); ++i) noise.push_back(100 + 37 * i % 2900);
  JudgeResult good, bad;
  ASSERT_TRUE(JudgeOutputs(*lm.model, tok, {prompt}, {fluent}, &good).ok());
  ASSERT_TRUE(JudgeOutputs(*lm.model, tok, {prompt}, {noise}, &bad).ok());
  EXPECT_EQ(good.tokens, static_cast<int64_t>(fluent.size()));
  EXPECT_EQ(good.outputs, 1);
  EXPECT_GT(good.perplexity(), 1.0);
  EXPECT_LT(good.perplexity() * 10, bad.perplexity());
  EXPECT_NEAR(good.perplexity(), std::exp(good.nll / static_cast<double>(good.tokens)), 1e-9);
  // Everything after the first end-of-text token is fill and not scored.
  std::vector<int32_t> ended = fluent;
  ended.push_back(tok.special().eos);
  ended.push_back(noise[0]);
  ended.push_back(noise[1]);
  JudgeResult cut;
  ASSERT_TRUE(JudgeOutputs(*lm.model, tok, {prompt}, {ended}, &cut).ok());
  EXPECT_EQ(cut.tokens, static_cast<int64_t>(fluent.size()) + 1);
  // Errors.
  JudgeResult r;
  EXPECT_FALSE(JudgeOutputs(*lm.model, tok, {prompt, prompt}, {fluent}, &r).ok());
  EXPECT_FALSE(JudgeOutputs(*lm.model, tok, {prompt}, {{1 << 20}}, &r).ok());
  std::vector<int32_t> long_output(300, fluent[0]);
  EXPECT_FALSE(JudgeOutputs(*lm.model, tok, {prompt}, {long_output}, &r).ok());
}

TEST(ArenaModesTest, NamesAndPlannerSpecs) {
  for (const std::string& name : DefaultArenaModeNames()) EXPECT_TRUE(FindArenaMode(name).ok());
  const Status unknown = FindArenaMode("diffusion-magic").status();
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.message().find("diffusion-exact"), std::string::npos);
  const ArenaMode exact = FindArenaMode("diffusion-exact").value();
  const plan::EngineSpec e = ArenaPlannerSpec(exact, 32, 1.0, 0);
  EXPECT_EQ(e.kind, plan::EngineKind::kDiffusion);
  EXPECT_EQ(e.cache, plan::DiffusionCache::kNone);
  const plan::EngineSpec dual =
      ArenaPlannerSpec(FindArenaMode("diffusion-dual-threshold").value(), 32, 64.0, 0);
  EXPECT_EQ(dual.cache, plan::DiffusionCache::kDual);
  EXPECT_DOUBLE_EQ(dual.tokens_per_forward, 32);  // clamped to the block
  const plan::EngineSpec lookup = ArenaPlannerSpec(FindArenaMode("ar+lookup").value(), 32, 1.5, 0);
  EXPECT_EQ(lookup.kind, plan::EngineKind::kArSpeculative);
  EXPECT_DOUBLE_EQ(lookup.tokens_per_verify, 1.5);
  EXPECT_TRUE(plan::ValidateEngineSpec(lookup).ok());
  EXPECT_FALSE(FindArenaMode("ar+draft")->batched);
}

TEST(ArenaReportTest, SummaryAndCrossover) {
  ArenaPoint p;
  p.mode = "ar";
  p.batch = 2;
  p.wall_ms = 100;
  for (int i = 0; i < 4; ++i) {
    ArenaRequest q;
    q.stats.completion_tokens = 11;
    q.stats.nfe = 11;
    q.stats.ttft_ms = 1 + i;
    q.stats.total_ms = 21 + i;
    p.requests.push_back(q);
  }
  p.totals.forwards = 22;
  p.totals.flops = 2e9;
  p.totals.bytes = 1e9;
  p.totals.forward_ms = 80;
  ArenaMachine m;
  m.gemm_gflops = 100;
  m.bandwidth_gbs = 10;
  m.price_per_hour = 3.6;
  const ArenaRow row = SummarizePoint(p, false, m);
  EXPECT_EQ(row.tokens, 44);
  EXPECT_DOUBLE_EQ(row.tokens_per_second, 440);
  EXPECT_DOUBLE_EQ(row.ttft_p50_ms, 2.5);
  EXPECT_DOUBLE_EQ(row.e2e_p50_ms, 22.5);
  EXPECT_DOUBLE_EQ(row.tpot_p50_ms, 2.0);
  EXPECT_DOUBLE_EQ(row.tokens_per_forward, 1.0);
  EXPECT_DOUBLE_EQ(row.arithmetic_intensity, 2);
  EXPECT_DOUBLE_EQ(row.achieved_gflops, 20);
  EXPECT_DOUBLE_EQ(row.roofline_fraction, 1.0);  // min(100, 2 x 10) = 20 GFLOP/s attainable
  EXPECT_DOUBLE_EQ(row.forward_share, 0.8);
  EXPECT_NEAR(row.tokens_per_dollar, 440.0 * 1000, 1e-6);
  EXPECT_NEAR(row.usd_per_million_tokens, 1.0 / 0.44, 1e-9);

  ArenaReport r;
  r.batches = {1, 2, 4};
  auto add = [&](const char* mode, bool diffusion, int64_t batch, double tps) {
    ArenaRow w;
    w.mode = mode;
    w.diffusion = diffusion;
    w.batch = batch;
    w.tokens_per_second = tps;
    r.rows.push_back(w);
  };
  add("ar", false, 1, 100), add("d", true, 1, 300), add("ar", false, 2, 200);
  add("d", true, 2, 310), add("ar", false, 4, 400), add("d", true, 4, 320);
  EXPECT_EQ(r.Crossover(), 4);
  const std::string md = ArenaMarkdown(r);
  EXPECT_NE(md.find("AR catches up with diffusion at batch 4"), std::string::npos);
  const nlohmann::json j = ArenaJson(r);
  EXPECT_EQ(j["crossover_batch"], 4);
  EXPECT_EQ(j["rows"].size(), 6u);
  const LinePlot plot = ArenaThroughputPlot(r);
  ASSERT_EQ(plot.markers.size(), 1u);
  EXPECT_DOUBLE_EQ(plot.markers[0].x, 4);
  EXPECT_EQ(plot.series.size(), 2u);
}

}  // namespace
}  // namespace unmask::tools
