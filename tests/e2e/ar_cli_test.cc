// `unmask generate` with autoregressive models: the decoder follows the architecture, --json
// reports the AR fields, speculative modes give the plain greedy tokens, and bad flags or
// incompatible draft models are one-line errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "e2e/cli_runner.h"
#include "format/gguf.h"
#include "model/medusa_heads.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::RunUnmask;

nlohmann::json Json(const testing::CliResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

TEST(ArCliTest, GeneratesWithTheArTwinAndReportsArFields) {
  const auto r = RunUnmask("generate -m " + testing::TwinPath("ar") +
                           " -p 'Once upon a time' -n 24 --json -t 1");
  const nlohmann::json j = Json(r);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["model"]["architecture"], "llama");
  EXPECT_EQ(j["output_ids"].size(), 24u);
  EXPECT_EQ(j["finish_reason"], "length");
  EXPECT_EQ(j["nfe"], 24);
  EXPECT_GT(j["tokens_per_second"].get<double>(), 0);
  EXPECT_GE(j["timings"]["ttft_ms"].get<double>(), 0);
  EXPECT_FALSE(j["text"].get<std::string>().empty());
  EXPECT_FALSE(j.contains("speculative"));
  // Batch-1 decoding of f16 weights: about 1 FLOP per byte moved.
  EXPECT_GT(j["bytes"].get<double>(), 0);
  EXPECT_GT(j["arithmetic_intensity"].get<double>(), 0.3);
  EXPECT_LT(j["arithmetic_intensity"].get<double>(), 3);
}

TEST(ArCliTest, PlainTextStreamsToStdoutAndStatsGoToStderr) {
  const auto r =
      RunUnmask("generate -m " + testing::TwinPath("ar") + " -p 'Once upon a time' -n 16 -t 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(r.out.size(), 10u);
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("TTFT"), std::string::npos) << r.err;
}

TEST(ArCliTest, SpeculativeModesGiveThePlainGreedyTokens) {
  const std::string base = "generate -m " + testing::TwinPath("ar") +
                           " -p 'One day, Lily went to the park' -n 40 --json -t 1";
  const nlohmann::json plain = Json(RunUnmask(base));
  ASSERT_TRUE(plain.is_object());
  for (const std::string& spec : std::vector<std::string>{
           "--spec lookup --draft-max 3",
           "--spec diffusion --draft-model " + testing::TwinPath("llada") + " --draft-max 4",
           "--draft-model " + testing::TwinPath("ar") + " --draft-max 5"}) {
    const nlohmann::json j = Json(RunUnmask(base + " " + spec));
    ASSERT_TRUE(j.is_object()) << spec;
    EXPECT_EQ(j["output_ids"], plain["output_ids"]) << spec;
    ASSERT_TRUE(j.contains("speculative")) << spec;
    EXPECT_GE(j["speculative"]["acceptance_rate"].get<double>(), 0.0);
    EXPECT_LE(j["speculative"]["accepted"].get<int64_t>(),
              j["speculative"]["drafted"].get<int64_t>());
  }
  // The AR twin drafting for itself: every draft accepted, draft_max + 1 tokens per forward.
  // 40 tokens at up to 8 per forward (7 drafts + 1): at most 1 + ceil(39 / 8) = 6 forwards.
  const nlohmann::json self =
      Json(RunUnmask(base + " --draft-model " + testing::TwinPath("ar") + " --draft-max 7"));
  EXPECT_EQ(self["speculative"]["mode"], "draft");
  EXPECT_EQ(self["speculative"]["accepted"], self["speculative"]["drafted"]);
  EXPECT_LE(self["nfe"].get<int>(), 6);
}

TEST(ArCliTest, StopStringsEndTheTextWithoutPrintingThem) {
  const nlohmann::json plain = Json(RunUnmask("generate -m " + testing::TwinPath("ar") +
                                              " -p 'Once upon a time' -n 40 --json -t 1"));
  const std::string text = plain["text"];
  const size_t cut = text.find(' ', 10);
  ASSERT_NE(cut, std::string::npos) << text;
  const std::string stop = text.substr(cut, 4);
  const nlohmann::json j =
      Json(RunUnmask("generate -m " + testing::TwinPath("ar") +
                     " -p 'Once upon a time' -n 40 --json -t 1 --stop '" + stop + "'"));
  EXPECT_EQ(j["finish_reason"], "stop");
  EXPECT_EQ(j["text"], text.substr(0, text.find(stop)));
}

// A speculative step can commit tokens past the stop string: output_ids must still end where plain
// decoding ends (the token that completed the stop string).
TEST(ArCliTest, StopStringsCutOutputIdsLikePlainDecoding) {
  const std::string base =
      "generate -m " + testing::TwinPath("ar") + " -p 'Once' -n 32 -t 1 --json --stop 'named Li' ";
  const nlohmann::json plain = Json(RunUnmask(base));
  const nlohmann::json spec =
      Json(RunUnmask(base + "--draft-model " + testing::SourceDir() +
                     "/models/unmask-tinystories-ar-draft.gguf --draft-max 8"));
  ASSERT_TRUE(plain.is_object() && spec.is_object());
  ASSERT_EQ(plain["finish_reason"], "stop") << plain["text"];
  EXPECT_EQ(spec["finish_reason"], "stop");
  EXPECT_EQ(spec["output_ids"], plain["output_ids"]);
  EXPECT_EQ(spec["text"], plain["text"]);
}

TEST(ArCliTest, FlagsOfTheOtherModelKindAreRefused) {
  const auto diffusion_flag =
      RunUnmask("generate -m " + testing::TwinPath("ar") + " -p Once -n 8 --steps 8");
  EXPECT_EQ(diffusion_flag.exit_code, 1);
  EXPECT_NE(diffusion_flag.err.find("--steps applies to diffusion models"), std::string::npos)
      << diffusion_flag.err;
  const auto ar_flag = RunUnmask("generate -m " + testing::TwinPath("llada") +
                                 " -p Once -n 8 --steps 8 --block-length 8 --top-k 5");
  EXPECT_EQ(ar_flag.exit_code, 1);
  EXPECT_NE(ar_flag.err.find("--top-k applies to autoregressive models"), std::string::npos)
      << ar_flag.err;
}

TEST(ArCliTest, LengthBeyondTheContextIsAnErrorUnlessNPredictIsMinusOne) {
  const auto r = RunUnmask("generate -m " + testing::TwinPath("ar") + " -p Once -n 300 -t 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("exceed the context of 256"), std::string::npos) << r.err;
  const nlohmann::json j = Json(RunUnmask("generate -m " + testing::TwinPath("ar") +
                                          " -p Once --n-predict -1 --ignore-eos --json -t 1"));
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["finish_reason"], "length");
  EXPECT_EQ(j["prompt_ids"].size() + j["output_ids"].size(), 256u);  // the whole context
}

TEST(ArCliTest, UnwritableStdoutIsAnError) {
  const auto r =
      RunUnmask("generate -m " + testing::TwinPath("ar") + " -p Once -n 8 -t 1 > /dev/full");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot write"), std::string::npos) << r.err;
}

TEST(ArCliTest, SamplingIsReproducibleWithASeed) {
  const std::string cmd = "generate -m " + testing::TwinPath("ar") +
                          " -p 'Once upon a time' -n 20 --json -t 1 --temperature 0.9 "
                          "--top-k 20 --top-p 0.9 --min-p 0.02 --repeat-penalty 1.1 -s 7";
  const nlohmann::json a = Json(RunUnmask(cmd)), b = Json(RunUnmask(cmd));
  EXPECT_EQ(a["output_ids"], b["output_ids"]);
  EXPECT_EQ(a["params"]["top_k"], 20);
  EXPECT_DOUBLE_EQ(a["params"]["repeat_penalty"].get<double>(), 1.1);
}

TEST(ArCliTest, BadFlagsAndIncompatibleDraftsAreOneLineErrors) {
  const std::string base = "generate -m " + testing::TwinPath("ar") + " -p 'Once' -n 8 -t 1 ";
  for (const std::string& bad : std::vector<std::string>{
           "--spec draft",  // no draft model
           "--spec diffusion --draft-model " +
               testing::TwinPath("ar"),  // causal model as diffusion drafter
           "--spec draft --draft-model " +
               testing::TwinPath("llada"),  // diffusion model as AR drafter
           "--draft-model /nonexistent.gguf", "--top-p 0", "--top-p 1.5", "--min-p -1",
           "--repeat-penalty 0", "--draft-max 0", "--spec hydra", "--n-predict -5",
           // Medusa: heads that are not a heads file, heads with another mode or a draft model
           "--draft-heads " + testing::TwinPath("ar"),
           "--spec lookup --draft-heads " + MedusaHeadsPathFor(testing::TwinPath("ar")),
           "--spec medusa --draft-model " + testing::TwinPath("ar"),
           // EAGLE: Medusa heads given as the layer, a draft model, tree sizes out of range
           "--spec eagle --draft-heads " + MedusaHeadsPathFor(testing::TwinPath("ar")),
           "--spec eagle --draft-model " + testing::TwinPath("ar"), "--spec eagle --draft-depth 0",
           "--spec eagle --draft-topk 17", "--spec eagle --draft-max 16",
           // a flag of another mode: refused, not ignored
           "--spec medusa --draft-depth 3", "--spec lookup --draft-topk 2", "--draft-depth 2",
           "--spec lookup --draft-p-min 0.5", "--draft-p-min 0.5", "--spec eagle --draft-steps 2",
           "--spec medusa --lookup-ngram-max 3", "--spec eagle --draft-p-min 1.5",
           "--spec eagle --draft-p-min nan",
           // an empty grammar or schema (it ran unconstrained)
           "--grammar ''", "-j ''", "--jf ''",
           "--spec lookup --draft-model " + testing::TwinPath("ar-draft")}) {
    const auto r = RunUnmask(base + bad);
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_NE(r.exit_code, -1) << bad;  // not a crash
    EXPECT_TRUE(r.out.empty()) << bad;
    EXPECT_FALSE(r.err.empty()) << bad;
  }
  // The refusal names the mode as the run got it: from --spec, implied by a file, or none.
  const std::string heads = MedusaHeadsPathFor(testing::TwinPath("ar"));
  for (const auto& [flags, says] : std::vector<std::pair<std::string, std::string>>{
           {"--spec medusa --draft-depth 3", "this run is --spec medusa"},
           {"--draft-heads " + heads + " --draft-depth 3",
            "this run is --spec medusa (implied by --draft-heads)"},
           {"--draft-model " + testing::TwinPath("ar-draft") + " --draft-topk 2",
            "this run is --spec draft (implied by --draft-model)"},
           {"--draft-depth 2", "this run has no --spec"}}) {
    const auto r = RunUnmask(base + flags);
    EXPECT_NE(r.err.find(says), std::string::npos) << flags << ": " << r.err;
  }
}

// --spec medusa finds the heads beside the model (MODEL.medusa.gguf) and gives the plain greedy
// tokens; a model without heads beside it is a one-line error naming the file it looked for.
TEST(ArCliTest, MedusaFindsTheHeadsBesideTheModelAndIsLossless) {
  const std::string base = "generate -m " + testing::TwinPath("ar") +
                           " -p 'Once upon a time' -n 40 -t 1 --temperature 0 --json";
  const nlohmann::json plain = Json(RunUnmask(base));
  const nlohmann::json medusa = Json(RunUnmask(base + " --spec medusa"));
  EXPECT_EQ(medusa["output_ids"], plain["output_ids"]);
  EXPECT_EQ(medusa["speculative"]["mode"], "medusa");
  EXPECT_GT(medusa["speculative"]["drafted"].get<int64_t>(), 0);
  EXPECT_EQ(medusa["speculative"]["draft_forwards"], 0);
  // The twin has 4 heads: a larger --draft-max is reported as what a step can draft.
  const testing::CliResult capped_run = RunUnmask(base + " --spec medusa --draft-max 9");
  const nlohmann::json capped = Json(capped_run);
  EXPECT_EQ(capped["speculative"]["draft_max"], 4);
  // ... and said on stderr, not capped silently.
  EXPECT_NE(capped_run.err.find("--draft-max 9 is more than"), std::string::npos) << capped_run.err;
  EXPECT_NE(capped_run.err.find("4 heads: drafting 4"), std::string::npos) << capped_run.err;
  EXPECT_EQ(RunUnmask(base + " --spec medusa --draft-max 3").err.find("note: --draft-max"),
            std::string::npos);
  EXPECT_EQ(capped["output_ids"], plain["output_ids"]);
  EXPECT_LT(medusa["nfe"].get<int64_t>(), plain["nfe"].get<int64_t>());
  // --draft-heads names the file (and implies --spec medusa).
  const nlohmann::json named =
      Json(RunUnmask(base + " --draft-heads " + MedusaHeadsPathFor(testing::TwinPath("ar"))));
  EXPECT_EQ(named["output_ids"], plain["output_ids"]);
  EXPECT_EQ(named["speculative"]["mode"], "medusa");
  const auto none = RunUnmask("generate -m " + testing::TwinPath("ar-draft") +
                              " -p Once -n 4 -t 1 --spec medusa");
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("unmask-tinystories-ar-draft.medusa.gguf"), std::string::npos)
      << none.err;
}

// --spec eagle finds the draft layer beside the model (MODEL.eagle.gguf), drafts trees and gives
// the plain greedy tokens; --draft-heads names a layer file (its kind implies --spec eagle).
TEST(ArCliTest, EagleFindsTheLayerBesideTheModelAndIsLossless) {
  const std::string base = "generate -m " + testing::TwinPath("ar") +
                           " -p 'Once upon a time' -n 40 -t 1 --temperature 0 --json";
  const nlohmann::json plain = Json(RunUnmask(base));
  for (const std::string& flags : {std::string(" --spec eagle"),
                                   std::string(" --spec eagle --draft-depth 3 --draft-topk 3 "
                                               "--draft-max 9"),
                                   std::string(" --spec eagle --draft-p-min 0.05"),
                                   " --draft-heads " + testing::SourceDir() +
                                       "/tests/data/golden/eagle/random-twin.eagle.gguf"}) {
    const nlohmann::json eagle = Json(RunUnmask(base + flags));
    EXPECT_EQ(eagle["output_ids"], plain["output_ids"]) << flags;
    EXPECT_EQ(eagle["speculative"]["mode"], "eagle") << flags;
    EXPECT_GT(eagle["speculative"]["drafted"].get<int64_t>(), 0) << flags;
    EXPECT_GT(eagle["speculative"]["draft_forwards"].get<int64_t>(), 0) << flags;
  }
  const nlohmann::json trained = Json(RunUnmask(base + " --spec eagle"));
  EXPECT_LT(trained["nfe"].get<int64_t>(), plain["nfe"].get<int64_t>());
  const auto none =
      RunUnmask("generate -m " + testing::TwinPath("ar-draft") + " -p Once -n 4 -t 1 --spec eagle");
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("unmask-tinystories-ar-draft.eagle.gguf"), std::string::npos) << none.err;
}

// `unmask inspect` on a heads file says what it is and how to use it, not "not runnable".
TEST(ArCliTest, InspectNamesDraftFiles) {
  for (const auto& [path, kind] : std::vector<std::pair<std::string, std::string>>{
           {MedusaHeadsPathFor(testing::TwinPath("ar")), "medusa"},
           {testing::SourceDir() + "/tests/data/golden/eagle/random-twin.eagle.gguf", "eagle"}}) {
    const auto r = RunUnmask("inspect " + path + " --no-tensors");
    EXPECT_EQ(r.exit_code, 0) << path << r.err;
    EXPECT_NE(r.out.find("architecture: " + kind + " ("), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--spec " + kind + " --draft-heads"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(kind + "."), std::string::npos) << r.out;  // its metadata
    EXPECT_EQ(r.out.find("not runnable"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  loads: "), std::string::npos) << r.out;
  }
  // A heads file whose metadata promises 2^32 - 1 heads and holds no tensor: inspect says it does
  // not load (it printed the metadata as if it were fine).
  gguf::GgufWriter w;
  w.Set("general.architecture", gguf::Value::String("medusa"));
  w.Set("medusa.head_count", gguf::Value::U32(0xFFFFFFFFu));
  w.Set("medusa.layer_count", gguf::Value::U32(1));
  w.Set("medusa.embedding_length", gguf::Value::U32(64));
  w.Set("medusa.vocab_size", gguf::Value::U32(512));
  const std::string bad = testing::TempDir() + "/crafted.medusa.gguf";
  ASSERT_TRUE(w.WriteFile(bad).ok());
  const auto r = RunUnmask("inspect " + bad);
  EXPECT_EQ(r.exit_code, 0) << r.err;  // inspect reports; generate refuses
  EXPECT_NE(r.out.find("  does not load: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("medusa.head_count"), std::string::npos) << r.out;
  std::remove(bad.c_str());
  // Control bytes from a file are printed escaped: a NUL cut the line, an escape sequence would
  // reach the terminal.
  gguf::GgufWriter odd;
  odd.Set("general.architecture", gguf::Value::String(std::string("med\0x\x1b[2J", 9)));
  const std::string odd_path = testing::TempDir() + "/control-bytes.gguf";
  ASSERT_TRUE(odd.WriteFile(odd_path).ok());
  const auto o = RunUnmask("inspect " + odd_path + " --metadata");
  EXPECT_EQ(o.out.find('\x1b'), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("med\\x00x\\x1b[2J"), std::string::npos) << o.out;
  std::remove(odd_path.c_str());
}

TEST(ArCliTest, DraftModelWithAnotherVocabularyIsRejected) {
  UNMASK_REQUIRE_SHARED_DATA(stories, "models/stories260K.gguf");
  const auto r = RunUnmask("generate -m " + testing::TwinPath("ar") +
                           " -p 'Once' -n 8 -t 1 --draft-model " + stories);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("vocabulary"), std::string::npos) << r.err;
}

TEST(ArCliTest, Stories260kBenchPrintsBandwidth) {
  UNMASK_REQUIRE_SHARED_DATA(stories, "models/stories260K.gguf");
  const auto r = RunUnmask("bench -m " + stories + " -n 32 --prompt-length 4 -r 1 -t 1 -o json");
  const nlohmann::json j = Json(r);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["engine"], "ar");
  EXPECT_GT(j["decode_tokens_per_second"].get<double>(), 0);
  EXPECT_GT(j["measured_bandwidth_gb_per_second"].get<double>(), 0);
  EXPECT_NEAR(j["weight_bytes_per_token"].get<double>(), 1.04e6, 0.05e6);  // 260K f32 params
}

// What the user sees equals llama2.c's run.c (temperature 0, 256 steps): the prompt followed by
// generate's text, for every prompt of the reference file, the empty one (generation from BOS)
// included, exactly. run.c generates 257 - (prompt tokens with BOS) tokens and stops early when the
// model emits BOS (the story separator of stories260K); unmask, like llama.cpp, ends only at
// EOS/EOT, so -n is set to where run.c stops. The continuation keeps SentencePiece's leading space
// (" They saw ..."), both in --json and in the streamed text.
TEST(ArCliTest, Stories260kPromptPlusTextIsTheLlama2cOutput) {
  UNMASK_REQUIRE_SHARED_DATA(stories, "models/stories260K.gguf");
  UNMASK_REQUIRE_SHARED_DATA(expected_path, "models/stories260K_expected_greedy_runc.txt");
  std::ifstream in(expected_path);
  std::vector<std::pair<std::string, std::string>> cases;  // prompt, expected text
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("### prompt=[", 0) == 0) {
      cases.emplace_back(line.substr(12, line.find("] steps=") - 12), "");
    } else if (!cases.empty()) {
      cases.back().second += (cases.back().second.empty() ? "" : "\n") + line;
    }
  }
  ASSERT_EQ(cases.size(), 4u);
  for (auto& [prompt, text] : cases) {
    while (!text.empty() && text.back() == '\n') text.pop_back();
    const std::string base = "generate -m " + stories + " -p '" + prompt + "' --ignore-eos -t 1";
    const nlohmann::json full = Json(RunUnmask(base + " -n 256 --json"));
    ASSERT_TRUE(full.is_object());
    const auto ids = full["output_ids"].get<std::vector<int32_t>>();
    size_t n = 257 - full["prompt_ids"].size();
    for (size_t i = 0; i < n && i < ids.size(); ++i) {
      if (ids[i] == 1) n = i;  // run.c stops at BOS
    }
    const nlohmann::json j = Json(RunUnmask(base + " -n " + std::to_string(n) + " --json"));
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(prompt + j["text"].get<std::string>(), text) << "prompt [" << prompt << "]";
    const auto streamed = RunUnmask(base + " -n " + std::to_string(n));
    ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
    EXPECT_EQ(prompt + streamed.out, text + "\n") << "prompt [" << prompt << "] (streamed)";
  }
}

TEST(ArCliTest, EmptyPromptStartsFromBos) {
  const auto r = RunUnmask("generate -m " + testing::TwinPath("ar") + " -p '' -n 8 -t 1 --json");
  const nlohmann::json j = Json(r);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["prompt_ids"], nlohmann::json::array({0}));  // the twin's BOS
  EXPECT_EQ(j["output_ids"].size(), 8u);
  // --prompt= (empty after '=') is the same empty prompt; it does not swallow the next flag.
  const nlohmann::json eq =
      Json(RunUnmask("generate -m " + testing::TwinPath("ar") + " --prompt= --json -n 8 -t 1"));
  ASSERT_TRUE(eq.is_object());
  EXPECT_EQ(eq["prompt_ids"], nlohmann::json::array({0}));
  // Without -p at all there is still no prompt.
  const auto none = RunUnmask("generate -m " + testing::TwinPath("ar") + " -n 8 -t 1");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no prompt"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace unmask
