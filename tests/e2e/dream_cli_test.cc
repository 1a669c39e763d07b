// `unmask generate` with a Dream model: the CLI reproduces the Python reference's goldens
// (tests/data/golden/dream) through its flags (--alg, --eps, --alg-temp, --steps, --gen-length,
// --temperature, --top-p, --top-k, --seed), and flags of other decoders are refused.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e/cli_runner.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::RunUnmask;

nlohmann::json Golden(const std::string& name) {
  std::ifstream in(testing::TestDataPath("golden/dream/" + name + ".json"));
  return nlohmann::json::parse(in);
}

std::string Model(const nlohmann::json& g) {
  return testing::TestDataPath("models/" + g.at("model").get<std::string>());
}

// The flags of a golden case (top-p / top-k only when the case uses them).
std::string Flags(const nlohmann::json& g) {
  std::string f = " -n " + std::to_string(g.at("gen_length").get<int>()) + " --steps " +
                  std::to_string(g.at("steps").get<int>()) + " --alg " +
                  g.at("alg").get<std::string>() + " --eps " +
                  std::to_string(g.at("eps").get<double>()) + " --alg-temp " +
                  std::to_string(g.at("alg_temp").get<double>()) + " --temperature " +
                  std::to_string(g.at("temperature").get<double>()) + " --seed " +
                  std::to_string(g.at("seed").get<uint64_t>());
  if (g.at("top_p").get<double>() < 1)
    f += " --top-p " + std::to_string(g.at("top_p").get<double>());
  if (g.at("top_k").get<int>() > 0) f += " --top-k " + std::to_string(g.at("top_k").get<int>());
  return f + " --json -t 2";
}

std::string Ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

TEST(DreamCliTest, ReproducesTheReferenceGoldens) {
  for (const char* name : {"a_t07_entropy_filters_algtemp", "b_origin_t1_topp095",
                           "a_margin_s16_g16", "b_maskgit_s20_g16_eps05"}) {
    const nlohmann::json g = Golden(name);
    const auto r = RunUnmask("generate -m " + Model(g) + " --prompt-ids " +
                             Ids(g.at("prompt_ids")) + Flags(g));
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("model").at("architecture"), "dream");
    EXPECT_EQ(j.at("output_ids"), g.at("output_ids")) << name;
    EXPECT_EQ(j.at("nfe"), g.at("nfe")) << name;
    EXPECT_EQ(j.at("params").at("alg"), g.at("alg")) << name;
    EXPECT_TRUE(j.at("params").at("shift_logits").get<bool>());
  }
}

TEST(DreamCliTest, TextPromptIsTokenizedLikeHuggingFace) {
  const nlohmann::json g = Golden("a_origin_s16_g16");
  const auto r = RunUnmask("generate -m " + Model(g) + " -p '" +
                           g.at("prompt_text").get<std::string>() + "' --no-chat" + Flags(g));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("prompt_ids"), g.at("prompt_ids"));
  EXPECT_EQ(j.at("output_ids"), g.at("output_ids"));
  EXPECT_EQ(j.at("params").at("top_k"), 0) << "AR sampling defaults must not leak into Dream";
  EXPECT_EQ(j.at("params").at("top_p"), 1.0);
}

TEST(DreamCliTest, DefaultAlgIsEntropyAndChatTemplateApplies) {
  const std::string m = testing::TestDataPath("models/dream-tiny-gqa1-f16.gguf");
  const auto r = RunUnmask("generate -m " + m + " -p 'Hi!' -n 8 --steps 4 --json -t 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("params").at("alg"), "entropy");
  EXPECT_TRUE(j.at("params").at("chat").get<bool>());
  EXPECT_EQ(j.at("output_ids").size(), 8u);
  EXPECT_EQ(j.at("nfe"), 4);
}

TEST(DreamCliTest, BlockDecoderFlagsSelectTheBlockDecoderWithShiftedLogits) {
  const std::string dream = testing::TestDataPath("models/dream-tiny-gqa2-f32.gguf");
  for (const char* flags :
       {"--block-length 8 --steps 16", "--block-length 8 --cache dual --threshold 0.5",
        "--block-length 8 --cache vicinity --commit credit --early-stop"}) {
    const auto r = RunUnmask("generate -m " + dream + " -p Hi -n 16 -t 1 --json " + flags);
    ASSERT_EQ(r.exit_code, 0) << flags << ": " << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("params").at("block_length"), 8) << flags;
    EXPECT_FALSE(j.at("params").contains("alg")) << flags;  // not Dream's sampler
    EXPECT_EQ(j.at("output_ids").size(), 16u) << flags;
  }
}

TEST(DreamCliTest, DynamicRulesFinishAndPromptMasksAreHandled) {
  const std::string dream = testing::TestDataPath("models/dream-tiny-gqa2-f32.gguf");
  // These ran forever when the random model's argmax was the mask id (now never a candidate).
  for (const char* flags :
       {"-p hi -n 32 --commit credit", "-p hi -n 32 --factor 0.5",
        "-p hi -n 32 --block-length 32 --threshold 0.9",
        // A prompt starting with the mask token (shifted rows 0 and 1 coincide).
        "--prompt-ids 383 -n 8 --steps 8 --block-length 8",
        "--prompt-ids 383,383 -n 8 --block-length 8 --factor 1"}) {
    const auto r = RunUnmask("generate -m " + dream + " -t 1 --json " + std::string(flags));
    ASSERT_EQ(r.exit_code, 0) << flags << ": " << r.err;
    EXPECT_FALSE(nlohmann::json::parse(r.out).at("output_ids").empty()) << flags;
  }
}

TEST(DreamCliTest, BadFlagsAreOneLineErrors) {
  const std::string dream = testing::TestDataPath("models/dream-tiny-gqa2-f32.gguf");
  const std::string llada = testing::TestDataPath("models/llada-tiny-mha-tied-f32.gguf");
  struct Case {
    std::string args;
    std::string must_mention;
  };
  for (const Case& c : std::vector<Case>{
           {"-m " + dream + " -p Hi --block-length 8 --alg entropy", "--alg"},
           {"-m " + dream + " -p Hi --cache dual --top-k 5", "--top-k"},
           {"-m " + dream + " -p Hi --cfg-scale 1 --cache dual --block-length 8", "cfg_scale"},
           {"-m " + dream + " -p Hi --remasking random --eps 0.1", "--eps"},
           {"-m " + dream + " -p Hi --eps 0", "eps"},
           {"-m " + dream + " -p Hi --eps 1", "eps"},
           {"-m " + dream + " -p Hi --alg confidence", "--alg"},
           {"-m " + dream + " -p Hi --alg-temp -1", "--alg-temp"},
           {"-m " + dream + " -p Hi --top-p 0", "--top-p"},
           {"-m " + dream + " -p Hi -n 300", "context"},
           {"-m " + llada + " -p Hi --alg entropy", "--alg"},
           {"-m " + llada + " -p Hi --eps 0.01", "--eps"},
           {"-m " + llada + " -p Hi --top-k 5", "--top-k"}}) {
    const std::string n = c.args.find(" -n ") == std::string::npos ? " -n 8" : "";
    const auto r = RunUnmask("generate " + c.args + n + " --steps 8 -t 1");
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.err.find(c.must_mention), std::string::npos) << c.args << ": " << r.err;
  }
}

// --visual draws Dream's sampler canvas too (the Decoder interface's generated() and mask id);
// into a pipe only the final frame is written.
TEST(DreamCliTest, VisualDrawsTheReferenceSamplersCanvas) {
  const std::string dream = testing::TestDataPath("models/dream-tiny-gqa2-f32.gguf");
  const auto r = RunUnmask("generate -m " + dream + " -p Hi --visual -n 8 --steps 8 -t 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("step 8/8"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace unmask
