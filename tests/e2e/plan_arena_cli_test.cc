// `unmask plan` and `unmask bench arena` from the command line: the reports, their files (block
// rows on a tiny SDAR fixture, both judges), and one-line errors for bad input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "e2e/cli_runner.h"
#include "fixtures/tiny_llada.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::RunUnmask;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void ExpectOneLineError(const testing::CliResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

TEST(PlanCliTest, DefaultReportPrintsAssumptionsTablesAndTheCrossover) {
  const auto r = RunUnmask("plan");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s :
       {"Assumptions:", "## h100-sxm", "## h200", "| batch |", "winner", "diffusion-fast",
        "ar+spec", "ar+eagle", "$/M tokens", "llada-8b", "llama-3-8b"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
  EXPECT_TRUE(r.out.find("AR catches up") != std::string::npos ||
              r.out.find("AR is ahead") != std::string::npos ||
              r.out.find("At no batch size") != std::string::npos);
}

// AR leads at batch 1 and block diffusion from a larger batch: the report says the lead changes
// hands, not only that AR is ahead at the first batch.
TEST(PlanCliTest, ALeadThatChangesHandsIsReported) {
  const auto r = RunUnmask("plan --model llada2.0-mini,qwen3-30b-a3b --hardware h100-sxm");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("AR is ahead of diffusion already at batch 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("The lead changes hands: AR at batch 1, diffusion at batch"),
            std::string::npos)
      << r.out;
}

TEST(PlanCliTest, JsonSvgAndAGgufModel) {
  const std::string dir = testing::TempDir() + "/plan_svg";
  std::filesystem::create_directories(dir);
  const auto r = RunUnmask("plan -o json --hardware cpu,l4 --model " + testing::TwinPath("llada") +
                           " --batch 1,4,16 -n 64 --prompt-length 32 --svg " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  ASSERT_EQ(j["hardware"].size(), 2u);
  EXPECT_EQ(j["hardware"][0]["id"], "cpu");
  EXPECT_EQ(j["hardware"][0]["rows"].size(), 5u * 3u);  // 5 engines x 3 batch sizes
  EXPECT_EQ(j["hardware"][0]["ar_model"], "unmask-tinystories-llada-as-ar");
  for (const auto& row : j["hardware"][1]["rows"]) {
    EXPECT_GT(row["tokens_per_second"].get<double>(), 0);
    EXPECT_GT(row["arithmetic_intensity"].get<double>(), 0);
  }
  bool noted = false;
  for (const auto& a : j["assumptions"])
    noted |= a.get<std::string>().find("causal") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_EQ(Slurp(dir + "/plan-l4.svg").rfind("<svg", 0), 0u);
  EXPECT_EQ(Slurp(dir + "/plan-cpu.svg").rfind("<svg", 0), 0u);
}

TEST(PlanCliTest, BadInputIsAOneLineError) {
  ExpectOneLineError(RunUnmask("plan --hardware tpu-v9"), "unknown hardware 'tpu-v9' (known:");
  ExpectOneLineError(RunUnmask("plan --model gpt-5"), "unknown model 'gpt-5'");
  ExpectOneLineError(RunUnmask("plan --batch 4,2"), "ascending");
  ExpectOneLineError(RunUnmask("plan --hardware a100 --dtype fp8"), "a100 has no fp8 peak");
  ExpectOneLineError(RunUnmask("plan --fast-tokens-per-forward 64"), "tokens_per_forward");
  ExpectOneLineError(RunUnmask("plan --tokens-per-verify 9"), "tokens_per_verify");
  ExpectOneLineError(RunUnmask("plan --eagle-nodes 2 --eagle-tokens-per-verify 4"),
                     "tokens_per_verify");
  ExpectOneLineError(RunUnmask("plan --model llada-8b,dream-7b"), "at most one diffusion");
  ExpectOneLineError(RunUnmask("plan --model /nonexistent.gguf"), "/nonexistent.gguf");
  const std::string bad = testing::TempDir() + "/bad_hardware.json";
  std::ofstream(bad) << R"({"schema": "unmask-hardware/1", "hardware": [{"id": "x"}]})";
  ExpectOneLineError(RunUnmask("plan --hardware-file /dev/zero"), "must be a regular file");
  ExpectOneLineError(RunUnmask("plan --hardware h100-sxm,h100-sxm"), "listed twice");
  ExpectOneLineError(RunUnmask("plan --model " + testing::TwinPath("ar")),
                     "exceed its context of 256");
  ExpectOneLineError(RunUnmask("plan --block-length 64 -n 32"), "longer than the output");
  ExpectOneLineError(RunUnmask("plan --hardware-file " + bad), "'name' must be");
  const auto flag = RunUnmask("plan --batch 0");
  EXPECT_EQ(flag.exit_code, 2) << flag.err;
}

TEST(PlanCliTest, LatencyTargetAndPriceOverride) {
  const auto none = RunUnmask("plan --hardware h100-sxm --latency-target-ms 1");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.out.find("none fits and meets the target"), std::string::npos);
  const auto j = nlohmann::json::parse(
      RunUnmask("plan -o json --hardware h100-sxm --batch 1 --price-per-hour 1").out, nullptr,
      false);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["hardware"][0]["price_per_hour"], 1.0);
  for (const auto& row : j["hardware"][0]["rows"]) {
    const double tps = row["tokens_per_second"].get<double>();
    EXPECT_NEAR(row["usd_per_million_tokens"].get<double>(), 1e6 / (tps * 3600), 1e-9);
  }
}

// A tiny random model of the fixture byte tokenizer: "sdar" (block 4) or "llama" (causal).
std::string TinyModel(const std::string& arch) {
  testing::TinyLladaSpec spec;
  spec.architecture = arch;
  spec.hidden = 32;
  spec.ffn = 64;
  spec.context = 512;
  if (arch == "sdar") {
    spec.qk_norm = true;
    spec.head_dim = 16;
  }
  const std::string path = testing::TempDir() + "/arena_cli_tiny_" + arch + ".gguf";
  EXPECT_EQ(testing::WriteTinyLlada(spec, path), "");
  return path;
}

std::string TinyPrompts() {
  const std::string path = testing::TempDir() + "/arena_block_prompts.txt";
  std::ofstream(path) << "Once upon a time there was a little girl named Lily who loved to play.\n"
                         "Tom had a red ball and he liked to throw it high into the blue sky.\n";
  return path;
}

TEST(ArenaCliTest, BlockModesOnATinySdarWithBothJudges) {
  // Random weights: the rows test the plumbing, their quality numbers mean nothing.
  const std::string dir = testing::TempDir() + "/arena_block";
  std::filesystem::remove_all(dir);
  const auto r = RunUnmask("bench arena --modes ar,block-default,block-static --block-model " +
                           TinyModel("sdar") + " --judge2 " + TinyModel("llama") + " --prompts " +
                           TinyPrompts() +
                           " --batch 1,4 --validate-batch 1 --min-requests 4 -n 16 "
                           "--prompt-length 8 -t 1 --out " +
                           dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(Slurp(dir + "/arena.json"), nullptr, false);
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j["rows"].size(), 6u);  // 3 modes x 2 batch sizes
  for (const auto& row : j["rows"]) {
    const bool block = row["mode"].get<std::string>().rfind("block-", 0) == 0;
    EXPECT_EQ(row["engine"], block ? "block" : "ar") << row;
    EXPECT_GT(row["tokens_per_second"].get<double>(), 0) << row;
    EXPECT_GT(row["nfe_per_request"].get<double>(), 0) << row;
    EXPECT_GT(row["arithmetic_intensity"].get<double>(), 0) << row;
    EXPECT_GT(row["roofline_fraction"].get<double>(), 0) << row;
    // One token per denoising step, and the fused schedule has no other forwards (prefill and
    // stores ride along): one token per forward, fewer where a request stops early.
    if (row["mode"] == "block-static") {
      EXPECT_LE(row["tokens_per_forward"].get<double>(), 1.0 + 1e-9);
      EXPECT_GT(row["tokens_per_forward"].get<double>(), 0.5);
    }
  }
  EXPECT_EQ(j["models"]["block"], "arena_cli_tiny_sdar.gguf");
  EXPECT_EQ(j["models"]["block_length_of_block_model"], 4);
  EXPECT_EQ(j["models"]["judge2"], "arena_cli_tiny_llama.gguf");
  ASSERT_EQ(j["quality"].size(), 3u);
  for (const auto& q : j["quality"]) {
    // The AR twin's vocabulary is not the fixture's: it scores the AR rows only; the second
    // judge reads every mode's text.
    EXPECT_EQ(q["judge_ppl"].is_null(), q["mode"] != "ar") << q;
    EXPECT_GT(q["judge2_ppl"].get<double>(), 1.0) << q;
    EXPECT_GT(q["judge2_scored_tokens"].get<int>(), 0) << q;
  }
  EXPECT_NE(r.out.find("the AR judge does not score the block modes"), std::string::npos);
  EXPECT_TRUE(r.out.find("AR has the higher throughput than block diffusion") !=
                  std::string::npos ||
              r.out.find("AR catches up with block diffusion") != std::string::npos ||
              r.out.find("Block diffusion keeps the higher throughput") != std::string::npos)
      << r.out;
  // The planner projects the block rows too (validation at batch 1 of each mode).
  ASSERT_EQ(j["validation"].size(), 3u);
  for (const auto& v : j["validation"]) {
    EXPECT_GT(v["predicted_tokens_per_second"].get<double>(), 0) << v;
    EXPECT_GT(v["roofline_tokens_per_second"].get<double>(), 0) << v;
  }
  EXPECT_EQ(j["model_rates"].size(), 2u);  // the AR twin and the block model
}

TEST(ArenaCliTest, MoeModelsGetARoutingTable) {
  // The tiny random MoE checkpoints (tests/data/hf): Qwen3-MoE (4 experts, top-2) as the AR model,
  // LLaDA-MoE (8, top-2) as the diffusion model and SDAR-MoE (top-3) as the block model.
  const std::string dir = testing::TempDir() + "/arena_moe";
  std::filesystem::remove_all(dir);
  const std::string hf = testing::TestDataPath("hf/");
  const auto r =
      RunUnmask("bench arena --modes ar,diffusion-exact,block-default --ar-model " + hf +
                "qwen3-moe-tiny --diffusion-model " + hf + "llada-moe-tiny-f32 " +
                "--block-model " + hf + "sdar-moe-tiny-bf16 --draft-model none " +
                "--judge2 none --no-quality --prompts " + TinyPrompts() +
                " --batch 1,2 --validate-batch 1 --min-requests 2 -n 16 --block-length 8 "
                "--prompt-length 8 -t 1 --out " +
                dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(Slurp(dir + "/arena.json"), nullptr, false);
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j["rows"].size(), 6u);
  for (const auto& row : j["rows"]) {
    const double hit = row["experts_per_layer_forward"].get<double>();
    const double uniform = row["experts_uniform"].get<double>();
    const double positions = row["positions_per_forward"].get<double>();
    EXPECT_GT(row["expert_bytes_per_forward"].get<double>(), 0) << row;
    EXPECT_GE(positions, 1.0) << row;
    if (row["mode"] == "ar") {
      // Each decode forward feeds one position per sequence: top-2 of 4 experts, the prefill
      // more; never more than the 4 there are.
      EXPECT_GE(hit, 2.0) << row;
      EXPECT_LE(hit, 4.0) << row;
      EXPECT_LE(uniform, 4.0) << row;
      EXPECT_GE(uniform, 2.0) << row;
    } else {
      EXPECT_GT(hit, 0) << row;
      EXPECT_GT(uniform, 0) << row;
    }
  }
  const std::string md = Slurp(dir + "/arena.md");
  EXPECT_NE(md.find("## Routing (mixture-of-experts models)"), std::string::npos) << md;
  EXPECT_NE(md.find("qwen3-moe-tiny: 4 experts per layer, top-2"), std::string::npos) << md;
  EXPECT_NE(md.find("uniform routing would hit"), std::string::npos) << md;
  // Dense models get no routing table.
  const std::string dense = testing::TempDir() + "/arena_dense";
  const auto d = RunUnmask("bench arena --modes ar --prompts " + TinyPrompts() +
                           " --judge2 none --no-quality --batch 1 --validate-batch 1 "
                           "--min-requests 2 -n 8 --prompt-length 8 -t 1 --out " +
                           dense);
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(Slurp(dense + "/arena.md").find("## Routing"), std::string::npos);
}

TEST(ArenaCliTest, BlockAndSecondJudgeInputErrors) {
  const std::string out = " --out " + testing::TempDir() + "/arena_block_bad";
  ExpectOneLineError(RunUnmask("bench arena --modes block-default --block-model none" + out),
                     "needs a block-diffusion model");
  ExpectOneLineError(
      RunUnmask("bench arena --modes block-default --block-model " + testing::TwinPath("ar") + out),
      "is not a block-diffusion model");
  ExpectOneLineError(
      RunUnmask("bench arena --modes diffusion-exact --diffusion-model " + TinyModel("sdar") + out),
      "give it as --block-model");
  ExpectOneLineError(RunUnmask("bench arena --modes ar --ar-model " + TinyModel("sdar") + out),
                     "is not an autoregressive model");
  ExpectOneLineError(
      RunUnmask("bench arena --modes ar --judge2 " + testing::TwinPath("llada") + out),
      "--judge2 must be an autoregressive model");
}

TEST(PlanCliTest, BlockDiffusionModelsGetBlockEngines) {
  // A block model (here with its causal twin as the AR side) is planned with block engines at
  // its own block length; a MoE preset pair prints the experts-touched assumption.
  const auto r =
      RunUnmask("plan --model " + TinyModel("sdar") + " --hardware h100-sxm --batch 1,4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("block-exact"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("block-threshold"), std::string::npos) << r.out;
  const auto moe =
      RunUnmask("plan --model llada2.0-mini,qwen3-30b-a3b --hardware h200 --batch 1,16 -o json");
  ASSERT_EQ(moe.exit_code, 0) << moe.err;
  const auto j = nlohmann::json::parse(moe.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << moe.out;
  bool experts_assumption = false;
  for (const auto& a : j["assumptions"]) {
    experts_assumption |= a.get<std::string>().find("(1 - k/E)^N") != std::string::npos;
  }
  EXPECT_TRUE(experts_assumption);
  EXPECT_NE(moe.out.find("\"experts_hit_per_layer\""), std::string::npos);
}

TEST(ArenaCliTest, MissingSecondJudgeIsSkippedWithANote) {
  const std::string dir = testing::TempDir() + "/arena_no_judge2";
  setenv("UNMASK_CACHE", "/nonexistent/cache", 1);
  const auto r = RunUnmask("bench arena --modes ar --prompts " + TinyPrompts() +
                           " --batch 1 --min-requests 2 -n 8 --prompt-length 8 -t 1 --out " + dir);
  unsetenv("UNMASK_CACHE");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("second judge skipped: /nonexistent/cache/smollm2/"), std::string::npos)
      << r.out;
  const auto j = nlohmann::json::parse(Slurp(dir + "/arena.json"), nullptr, false);
  ASSERT_EQ(j["quality"].size(), 1u);
  EXPECT_TRUE(j["quality"][0]["judge2_ppl"].is_null());
  EXPECT_GT(j["quality"][0]["judge_ppl"].get<double>(), 1.0);
  EXPECT_EQ(j["models"]["judge2"], "");
}

TEST(ArenaCliTest, JudgeWithAnotherVocabularyIsRefusedBeforeRunning) {
  UNMASK_REQUIRE_SHARED_DATA(other, "models/stories260K.gguf");
  const auto r = RunUnmask("bench arena --modes ar --judge " + other + " --out " +
                           testing::TempDir() + "/arena_judge");
  ExpectOneLineError(r, "the judge's vocabulary (512 tokens) differs");
  EXPECT_EQ(r.err.find("arena: measuring"), std::string::npos) << "refused before measuring";
}

TEST(ArenaCliTest, SmallArenaWritesJsonMarkdownAndPlots) {
  UNMASK_REQUIRE_SHARED_DATA(corpus, "corpus/tinystories_train_head_944k.txt");
  const std::string dir = testing::TempDir() + "/arena_small";
  std::filesystem::remove_all(dir);
  const auto r = RunUnmask(
      "bench arena --modes ar,ar+draft,diffusion-exact --batch 1,2 "
      "--min-requests 2 -n 32 --prompt-length 16 -t 1 --out " +
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# unmask bench arena"), std::string::npos);
  EXPECT_NE(r.err.find("arena: wrote"), std::string::npos);
  const auto j = nlohmann::json::parse(Slurp(dir + "/arena.json"), nullptr, false);
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j["rows"].size(), 5u);  // ar x 2 batches, ar+draft at batch 1, exact x 2
  for (const auto& row : j["rows"]) {
    EXPECT_GT(row["tokens_per_second"].get<double>(), 0) << row;
    EXPECT_GT(row["arithmetic_intensity"].get<double>(), 0) << row;
    EXPECT_GT(row["tokens_per_dollar"].get<double>(), 0) << row;
    EXPECT_GE(row["requests"].get<int>(), 2) << row;
  }
  EXPECT_EQ(j["quality"].size(), 3u);
  for (const auto& q : j["quality"]) EXPECT_GT(q["judge_ppl"].get<double>(), 1.0);
  // The second judge: SmolLM2 when fetched, else a note.
  if (testing::FindSmolLM2()) {
    EXPECT_EQ(j["models"]["judge2"], "SmolLM2-135M-Instruct.Q4_1.gguf");
    for (const auto& q : j["quality"]) EXPECT_GT(q["judge2_ppl"].get<double>(), 1.0) << q;
  } else {
    EXPECT_NE(r.out.find("second judge skipped"), std::string::npos);
  }
  EXPECT_EQ(j["validation"].size(), 3u);  // batch 1 of each mode (batch 16 not run)
  EXPECT_GT(j["machine"]["gemm_peak_gflops"].get<double>(), 0);
  EXPECT_GT(j["machine"]["bandwidth_gbs"].get<double>(), 0);
  EXPECT_EQ(j["model_rates"].size(), 2u);
  EXPECT_EQ(Slurp(dir + "/arena.md"), r.out);
  EXPECT_EQ(Slurp(dir + "/arena-throughput.svg").rfind("<svg", 0), 0u);
  EXPECT_EQ(Slurp(dir + "/arena-latency.svg").rfind("<svg", 0), 0u);
}

TEST(ArenaCliTest, BadInputIsAOneLineError) {
  const std::string out = " --out " + testing::TempDir() + "/arena_bad";
  ExpectOneLineError(RunUnmask("bench arena --modes ar,warp-drive" + out),
                     "unknown arena mode 'warp-drive'");
  ExpectOneLineError(RunUnmask("bench arena --batch 4,2" + out), "ascending");
  ExpectOneLineError(RunUnmask("bench arena --modes ar,ar" + out), "listed twice");
  ExpectOneLineError(RunUnmask("bench arena --batch 1 --validate-batch 4" + out),
                     "--validate-batch 4 is not one of the --batch sizes");
  ExpectOneLineError(RunUnmask("bench arena --out /proc/arena"), "--out /proc/arena");
  ExpectOneLineError(RunUnmask("bench arena --modes ar --prompts /dev/zero" + out),
                     "must be a regular file");
  const auto bad_flag = RunUnmask("bench arena --min-requests 0" + out);
  EXPECT_EQ(bad_flag.exit_code, 2);
  EXPECT_NE(bad_flag.err.find("unmask bench arena: error:"), std::string::npos) << bad_flag.err;
  ExpectOneLineError(RunUnmask("bench arena --modes ar+draft --draft-model none" + out),
                     "no mode left to run");
  ExpectOneLineError(RunUnmask("bench arena --modes ar --draft-model none --judge " +
                               testing::TwinPath("llada") + out),
                     "--judge must be an autoregressive model");
  ExpectOneLineError(RunUnmask("bench arena --modes diffusion-exact --diffusion-model " +
                               testing::TwinPath("ar") + out),
                     "is not a diffusion model");
  setenv("UNMASK_CORPUS", "/nonexistent/corpus.txt", 1);
  ExpectOneLineError(RunUnmask("bench arena --modes ar" + out), "--prompts");
  unsetenv("UNMASK_CORPUS");
  const std::string bad = testing::TempDir() + "/bad_prompts.jsonl";
  std::ofstream(bad) << "{\"prompt\": \"ok\"}\nnot json\n";
  ExpectOneLineError(RunUnmask("bench arena --modes ar --prompts " + bad + out),
                     "bad_prompts.jsonl:2");
  const std::string prompts = testing::TempDir() + "/prompts.txt";
  std::ofstream(prompts) << "Once upon a time there was a cat who liked to sleep all day long.\n";
  ExpectOneLineError(RunUnmask("bench arena --modes diffusion-exact --prompts " + prompts +
                               " --prompt-length 8 -n 256" + out),
                     "context");
  ExpectOneLineError(
      RunUnmask("bench arena --modes ar --prompts " + prompts + " --prompt-length 500" + out),
      "--prompt-length");
}

}  // namespace
}  // namespace unmask
