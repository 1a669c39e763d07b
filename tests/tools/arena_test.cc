// Pieces of `unmask bench arena`: prompts (the held-out split of the twins' corpus, prompt files),
// both judges' perplexity (the second one retokenizing texts), modes and their requests and
// planner specs, the block modes through the engine loop, the report's summaries and crossovers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "cli/arena/arena_data.h"
#include "cli/arena/arena_modes.h"
#include "cli/arena/arena_report.h"
#include "cli/arena/arena_run.h"
#include "decode/decoder_factory.h"
#include "fixtures/tiny_llada.h"
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

// A tiny random model of the fixture byte tokenizer (tests/fixtures/tiny_llada.h): "llama" is
// causal (a judge), "sdar" block-causal with block 4.
const LoadedModel& Tiny(const std::string& arch) {
  // Heap-held so the models stay reachable at exit (no leak report, no teardown order issue).
  static auto* cache = new std::map<std::string, const LoadedModel*>;
  auto it = cache->find(arch);
  if (it != cache->end()) return *it->second;
  testing::TinyLladaSpec spec;
  spec.architecture = arch;
  spec.hidden = 32;
  spec.ffn = 64;
  spec.context = 128;
  if (arch == "sdar") {
    spec.qk_norm = true;
    spec.head_dim = 16;
  }
  const std::string path = ::testing::TempDir() + "/arena_tiny_" + arch + ".gguf";
  EXPECT_EQ(testing::WriteTinyLlada(spec, path), "");
  auto m = LoadModel(path, LoadOptions{});
  EXPECT_TRUE(m.ok()) << m.status().message();
  (*cache)[arch] = new LoadedModel(std::move(m).value());
  return *(*cache)[arch];
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

TEST(ArenaDataTest, TextsForTheSecondJudgeStopAtTheFirstEndOfText) {
  const Tokenizer& tok = *ArTwin().tokenizer;
  const std::vector<int32_t> prompt = tok.Encode("Once upon a time", true, false);
  std::vector<int32_t> output = tok.Encode(" there was a dog", false, false);
  output.push_back(tok.special().eos);
  output.push_back(output[0]);
  const JudgeText t = DecodeForJudge(tok, prompt, output);
  EXPECT_EQ(t.prompt, "Once upon a time");  // BOS dropped
  EXPECT_EQ(t.output, " there was a dog");  // cut before EOS, the space kept
}

TEST(ArenaDataTest, SecondJudgeScoresTheOutputsOwnTokensGivenThePrompt) {
  // The byte tokenizer (no BOS, one token per byte): the tokens after "Once upon" are the 7 bytes
  // of " a time", scored by one forward of the whole text.
  const LoadedModel& judge = Tiny("llama");
  const JudgeText text{"Once upon", " a time"};
  const JudgeTokens t = RetokenizeForJudge(*judge.tokenizer, text);
  ASSERT_EQ(t.ids.size(), 16u);
  EXPECT_EQ(t.first, 9u);
  const std::string joint = "Once upon a time";
  for (size_t i = 0; i < t.ids.size(); ++i) {
    EXPECT_EQ(t.ids[i], static_cast<unsigned char>(joint[i])) << i;
  }
  JudgeResult r;
  ASSERT_TRUE(JudgeTexts(*judge.model, *judge.tokenizer, {text, {"Hi", ""}}, &r).ok());
  EXPECT_EQ(r.tokens, 7);
  EXPECT_EQ(r.outputs, 1);  // the empty output is skipped
  // Directly: every row's logits, the log-softmax of the next byte at rows 8..14.
  const int64_t vocab = judge.model->config().vocab_size;
  std::vector<int32_t> rows;
  for (int32_t i = 0; i < 16; ++i) rows.push_back(i);
  BatchPlan plan;
  plan.sequences.push_back(SequenceInput{t.ids, 0, rows});
  Tensor logits(DType::kF32, {16, vocab});
  Workspace ws;
  ASSERT_TRUE(judge.model->Forward(plan, ws, logits.view(), nullptr).ok());
  double nll = 0;
  for (int64_t row = 8; row < 15; ++row) {
    const float* l = logits.as<float>() + row * vocab;
    double sum = 0;
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(l[v]));
    nll -= static_cast<double>(l[t.ids[static_cast<size_t>(row) + 1]]) - std::log(sum);
  }
  EXPECT_NEAR(r.nll, nll, 1e-4 * nll);
  EXPECT_NEAR(r.perplexity(), std::exp(nll / 7), 1e-3 * std::exp(nll / 7));
  // A model that is not causal is no judge.
  EXPECT_EQ(JudgeTexts(*Tiny("sdar").model, *judge.tokenizer, {text}, &r).code(),
            StatusCode::kInvalidArgument);
}

TEST(ArenaDataTest, SecondJudgeScoresATokenAcrossTheBoundaryAsOutput) {
  // With a BPE tokenizer a prompt cut inside a word ("... ti" + "me ...") gives a joint token
  // that starts in the prompt: it and everything after it are scored.
  const Tokenizer& tok = *ArTwin().tokenizer;
  const JudgeText text{"Once upon a ti", "me there was a dog"};
  const JudgeTokens t = RetokenizeForJudge(tok, text);
  const std::vector<int32_t> prompt = tok.Encode(text.prompt, true, false);
  const std::vector<int32_t> head = tok.Encode("Once upon a", true, false);
  ASSERT_LT(t.first, prompt.size());  // the prompt's last token is not the joint text's
  EXPECT_EQ(t.first, head.size());    // " time" is one token, scored as output
  const std::span<const int32_t> ids(t.ids);
  EXPECT_EQ(tok.Decode(ids.subspan(0, t.first), true), "Once upon a");
  EXPECT_EQ(tok.Decode(ids.subspan(t.first), true), " time there was a dog");
}

TEST(ArenaModesTest, BlockModesAndTheirRequests) {
  const std::vector<std::string> plain = DefaultArenaModeNames();
  const std::vector<std::string> with = DefaultArenaModeNames(true);
  EXPECT_EQ(std::count_if(plain.begin(), plain.end(),
                          [](const std::string& n) { return n.rfind("block-", 0) == 0; }),
            0);
  EXPECT_EQ(with.size(), plain.size() + 5);
  const LoadedModel& sdar = Tiny("sdar");
  const DecoderModel dm{
      &sdar.model->config(),
      {testing::kTinyMask, testing::kTinyEos, testing::kTinyEot, testing::kTinyEos},
      "sdar"};
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6};
  auto settle = [&](const std::string& name) {
    const ArenaMode m = FindArenaMode(name).value();
    EXPECT_TRUE(m.block && !m.diffusion) << name;
    const GenerationRequest req = MakeArenaRequest(m, ArenaSettings{16, 32}, prompt, 0);
    auto built = MakeDecoder(dm, prompt, req);
    EXPECT_TRUE(built.ok()) << name << ": " << built.status().message();
    EXPECT_EQ(built->kind, DecoderKind::kBlockDiffusion);
    return built->block;
  };
  // SDAR's defaults: the model's block (not the arena's LLaDA --block-length), one step per
  // block position, low_confidence_dynamic at 0.85.
  const BlockParams d = settle("block-default");
  EXPECT_EQ(d.block_length, 4);
  EXPECT_EQ(d.denoising_steps, 4);
  EXPECT_EQ(d.remasking, BlockRemasking::kLowConfidenceDynamic);
  EXPECT_DOUBLE_EQ(d.confidence_threshold, 0.85);
  EXPECT_EQ(settle("block-static").remasking, BlockRemasking::kLowConfidenceStatic);
  EXPECT_DOUBLE_EQ(settle("block-dynamic-0.9").confidence_threshold, 0.9);
  EXPECT_DOUBLE_EQ(settle("block-dynamic-0.7").confidence_threshold, 0.7);
  EXPECT_DOUBLE_EQ(settle("block-dynamic-0.5").confidence_threshold, 0.5);
  const plan::EngineSpec e =
      ArenaPlannerSpec(FindArenaMode("block-static").value(), 4, 16.0 / 21.0, 0);
  EXPECT_EQ(e.kind, plan::EngineKind::kBlockDiffusion);
  EXPECT_EQ(e.block_length, 4);
  EXPECT_DOUBLE_EQ(e.tokens_per_forward, 16.0 / 21.0);
  EXPECT_TRUE(plan::ValidateEngineSpec(e).ok());
  const ArenaModels models{nullptr, nullptr, nullptr, &sdar};
  EXPECT_EQ(ArenaModelOf(FindArenaMode("block-static").value(), models), &sdar);
  EXPECT_EQ(ArenaModelOf(FindArenaMode("ar").value(), models), nullptr);
}

TEST(ArenaRunTest, BlockModesRunBatchedThroughTheEngineLoop) {
  const LoadedModel& sdar = Tiny("sdar");
  const ArenaModels models{nullptr, nullptr, nullptr, &sdar};
  std::vector<std::vector<int32_t>> prompts;
  for (int32_t p = 0; p < 4; ++p) prompts.push_back({65 + p, 66, 67, 68, 69, 70, 71, 72 + p});
  const ArenaMode mode = FindArenaMode("block-static").value();
  auto point = RunArenaPoint(mode, models, ArenaSettings{16, 32}, prompts, 4, 8, nullptr);
  ASSERT_TRUE(point.ok()) << point.status().message();
  ASSERT_EQ(point->requests.size(), 8u);
  int64_t nfe = 0;
  for (const ArenaRequest& q : point->requests) {
    EXPECT_GT(q.stats.completion_tokens, 0);
    // One token per step, the fused schedule: 4 forwards per decoded block (the prompt's 8
    // positions and each finished block ride with the next block's first forward).
    EXPECT_LE(q.stats.nfe, 4 * 4);
    EXPECT_LE(q.stats.tokens_per_forward(), 1.0 + 1e-9);
    nfe += q.stats.nfe;
  }
  // Batched: concurrent requests share forwards.
  EXPECT_LT(point->totals.forwards, nfe);
  EXPECT_GT(point->totals.flops, 0);
  // At temperature 0 a request's output does not depend on the batch.
  auto solo = RunArenaPoint(mode, models, ArenaSettings{16, 32}, prompts, 1, 4, nullptr);
  ASSERT_TRUE(solo.ok()) << solo.status().message();
  for (const ArenaRequest& q : point->requests) {
    for (const ArenaRequest& s : solo->requests) {
      if (s.prompt_index == q.prompt_index) {
        EXPECT_EQ(s.output, q.output);
      }
    }
  }
  // Without a block model the mode is refused.
  EXPECT_EQ(
      RunArenaPoint(mode, ArenaModels{}, ArenaSettings{}, prompts, 1, 1, nullptr).status().code(),
      StatusCode::kInvalidArgument);
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

  // Block rows: their own crossover, never counted as AR, dashed, "block" in the JSON.
  auto add_block = [&](int64_t batch, double tps) {
    ArenaRow w;
    w.mode = "block-default";
    w.block = true;
    w.batch = batch;
    w.tokens_per_second = tps;
    r.rows.push_back(w);
  };
  add_block(1, 5000), add_block(2, 150), add_block(4, 160);
  EXPECT_EQ(r.Crossover(), 4);  // block rows are neither AR nor full-canvas diffusion
  EXPECT_EQ(r.Crossover(true), 2);
  r.quality.push_back({"ar", 1.5, 10, 2, 20.0, 12, 2});
  r.quality.push_back({"block-default", -1, 0, 2, 30.0, 14, 2});
  r.judge_model = "ar.gguf";
  r.judge2_model = "smol.gguf";
  const std::string md2 = ArenaMarkdown(r);
  EXPECT_NE(md2.find("AR catches up with block diffusion at batch 2"), std::string::npos) << md2;
  EXPECT_NE(md2.find("judge 2 ppl (smol.gguf)"), std::string::npos) << md2;
  EXPECT_NE(md2.find("| block-default | - | 0 | 2 | 30.00 | 14 |"), std::string::npos) << md2;
  const nlohmann::json j2 = ArenaJson(r);
  EXPECT_EQ(j2["block_crossover_batch"], 2);
  EXPECT_EQ(j2["rows"][6]["engine"], "block");
  EXPECT_TRUE(j2["quality"][1]["judge_ppl"].is_null());
  EXPECT_DOUBLE_EQ(j2["quality"][1]["judge2_ppl"].get<double>(), 30.0);
  EXPECT_EQ(j2["models"]["judge2"], "smol.gguf");
  const LinePlot plot2 = ArenaThroughputPlot(r);
  ASSERT_EQ(plot2.series.size(), 3u);
  EXPECT_TRUE(plot2.series[2].dashed);
}

}  // namespace
}  // namespace unmask::tools
