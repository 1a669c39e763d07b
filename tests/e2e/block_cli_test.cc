// `unmask generate` on the tiny Hugging Face checkpoint folders (tests/data/hf): the CLI reproduces
// the numpy reference's SDAR and Fast-dLLM v2 goldens (tests/data/golden/block) through its flags
// (-m DIR, --prompt-ids, -n, --block-length, --denoising-steps, --remasking, --threshold,
// --eb-threshold, --top-k, --small-block-size), and flags of other decoders, or of another SDAR
// strategy, are refused with a message naming them.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e/cli_runner.h"
#include "golden_util.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::RunUnmask;

std::string Folder(const nlohmann::json& g) {
  return testing::TestDataPath("hf/" + g.at("checkpoint").get<std::string>());
}

std::string Ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

class BlockCliGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BlockCliGoldenTest, ReproducesTheReference) {
  const nlohmann::json g = testing::ReadJson(testing::TestDataPath("golden/block/" + GetParam()));
  std::string flags =
      " -m " + Folder(g) + " --prompt-ids " + Ids(g.at("prompt_ids").get<std::vector<int32_t>>());
  const bool sdar = g.at("algorithm") == "sdar_block_diffusion";
  if (sdar) {
    const std::string strategy = g.at("remasking_strategy");
    flags += " -n " + std::to_string(g.at("gen_length").get<int>()) + " --block-length " +
             std::to_string(g.at("block_length").get<int>()) + " --denoising-steps " +
             std::to_string(g.at("denoising_steps").get<int>()) + " --remasking " + strategy;
    if (strategy == "low_confidence_dynamic") {
      flags += " --threshold " + std::to_string(g.at("confidence_threshold").get<double>());
    }
    if (strategy == "entropy_bounded") {
      flags += " --eb-threshold " + std::to_string(g.at("eb_threshold").get<double>());
    }
    if (g.at("top_k").get<int>() > 0)
      flags += " --top-k " + std::to_string(g.at("top_k").get<int>());
  } else {
    flags += " -n " + std::to_string(g.at("max_new_tokens").get<int>()) + " --block-length " +
             std::to_string(g.at("block_size").get<int>()) + " --small-block-size " +
             std::to_string(g.at("small_block_size").get<int>()) + " --threshold " +
             std::to_string(g.at("threshold").get<double>());
  }
  // SDAR: its own schedule (--separate-store) has the reference's NFE; the default fused one the
  // same tokens in one forward per denoising step.
  const auto r = RunUnmask("generate" + flags + (sdar ? " --separate-store" : "") + " --json -t 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out.at("output_ids").get<std::vector<int32_t>>(),
            g.at("output_ids").get<std::vector<int32_t>>());
  EXPECT_EQ(out.at("nfe").get<int64_t>(), g.at("nfe").get<int64_t>());
  EXPECT_EQ(out.at("params").at("decoder"), sdar ? "block_diffusion" : "fast_dllm_v2");
  if (sdar) {
    EXPECT_TRUE(out.at("params").at("separate_store").get<bool>());
    const auto f = RunUnmask("generate" + flags + " --json -t 1");
    ASSERT_EQ(f.exit_code, 0) << f.err;
    const nlohmann::json fused = nlohmann::json::parse(f.out);
    EXPECT_FALSE(fused.at("params").at("separate_store").get<bool>());
    EXPECT_EQ(fused.at("output_ids"), out.at("output_ids"));
    EXPECT_EQ(fused.at("nfe").get<int64_t>(), static_cast<int64_t>(g.at("trace").size()));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BlockCliGoldenTest,
                         ::testing::ValuesIn(testing::GoldenFiles("block")),
                         testing::GoldenCaseName);

void ExpectRefused(const std::string& args, const std::string& needle) {
  const auto r = RunUnmask("generate " + args + " --prompt-ids 5,6,7 -n 8 -t 1");
  EXPECT_NE(r.exit_code, 0) << args;
  EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

TEST(BlockCliTest, RefusesFlagsOfOtherDecodersAndStrategies) {
  const std::string sdar = "-m " + testing::TestDataPath("hf/sdar-tiny-f32");
  const std::string fast = "-m " + testing::TestDataPath("hf/fastdllm-v2-tiny");
  ExpectRefused(sdar + " --remasking low_confidence", "sequential, low_confidence_static");
  ExpectRefused(sdar + " --cache dual", "--cache does not apply");
  ExpectRefused(sdar + " --steps 2 --denoising-steps 3", "both give the denoising steps");
  ExpectRefused(sdar + " --remasking low_confidence_static --threshold 0.5",
                "--threshold applies to --remasking low_confidence_dynamic");
  ExpectRefused(sdar + " --eb-threshold 1",
                "--eb-threshold applies to --remasking entropy_bounded");
  ExpectRefused(sdar + " --small-block-size 2", "applies to Fast-dLLM v2 models");
  ExpectRefused(sdar + " --denoising-steps 5", "denoising_steps must be in [1, block_length");
  ExpectRefused(fast + " --remasking sequential", "does not apply to");
  ExpectRefused(fast + " --small-block-size 3", "must divide block_length");
  ExpectRefused("-m " + testing::TestDataPath("hf/qwen2-tiny") + " --denoising-steps 2",
                "applies to");
}

TEST(BlockCliTest, BenchPointsBlockModelsToTheArena) {
  const auto r = RunUnmask("bench -m " + testing::TestDataPath("hf/sdar-tiny-f32") + " -t 1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("bench arena --block-model"), std::string::npos) << r.err;
}

TEST(BlockCliTest, StepsMeansDenoisingStepsPerBlock) {
  const std::string sdar =
      "-m " + testing::TestDataPath("hf/sdar-tiny-f32") + " --prompt-ids 5,6,7,8 -n 8 --json -t 1";
  const auto a = RunUnmask("generate " + sdar + " --steps 2");
  const auto b = RunUnmask("generate " + sdar + " --denoising-steps 2");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const nlohmann::json ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(ja.at("output_ids"), jb.at("output_ids"));
  EXPECT_EQ(ja.at("params").at("denoising_steps"), 2);
}

}  // namespace
}  // namespace unmask
