// Mixture-of-experts models through the CLI: LLaDA 2.x golden cases reproduced by `unmask
// generate` on the folder (the family's defaults from the factory; joint_threshold by its flags),
// the routing statistics in --json and bench -o json, inspect's routing line, and the editing flags
// refused with one-line errors where they do not apply.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e/cli_runner.h"
#include "golden_util.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::RunUnmask;

std::string Folder(const std::string& name) { return testing::TestDataPath("hf/" + name); }

std::string Ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

nlohmann::json Json(const testing::CliResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

TEST(MoeCliTest, LladaTwoGoldensFromTheFactoryDefaultsAndTheEditingFlags) {
  // l2_default_lp5: the family's defaults (threshold 0.95, block 32, 32 steps, capped quota);
  // only the length is given.
  const auto g = testing::ReadJson(testing::TestDataPath("golden/moe/l2_default_lp5.json"));
  auto j = Json(RunUnmask("generate -m " + Folder(g.at("checkpoint")) + " --prompt-ids " +
                          Ids(g.at("prompt_ids")) + " -n " +
                          std::to_string(g.at("gen_length").get<int>()) + " --json -t 1"));
  EXPECT_EQ(j.at("output_ids"), g.at("output_ids"));
  EXPECT_EQ(j.at("nfe"), g.at("nfe"));
  EXPECT_EQ(j.at("params").at("overcommit"), false);
  EXPECT_EQ(j.at("params").at("confidence_threshold"), 0.95);
  ASSERT_TRUE(j.contains("moe"));
  EXPECT_EQ(j.at("moe").at("experts"), 16);
  EXPECT_EQ(j.at("moe").at("gating"), "sigmoid");
  const double hit = j.at("moe").at("experts_hit_per_layer_forward");
  EXPECT_GE(hit, 4);  // at least top-k
  EXPECT_LE(hit, 16);
  EXPECT_GT(j.at("moe").at("expert_bytes").get<double>(), 0);
  // j21_edit06_b16_lp9: LLaDA 2.1 token editing by its flags.
  const auto e = testing::ReadJson(testing::TestDataPath("golden/moe/j21_edit06_b16_lp9.json"));
  j = Json(RunUnmask(
      "generate -m " + Folder(e.at("checkpoint")) + " --prompt-ids " + Ids(e.at("prompt_ids")) +
      " -n " + std::to_string(e.at("gen_length").get<int>()) + " --block-length " +
      std::to_string(e.at("block_length").get<int>()) + " --remasking joint_threshold" +
      " --threshold " + std::to_string(e.at("threshold").get<double>()) + " --edit-threshold " +
      std::to_string(e.at("edit_threshold").get<double>()) + " --max-post-edit-steps " +
      std::to_string(e.at("max_post_edit_steps").get<int>()) + " --json -t 1"));
  EXPECT_EQ(j.at("output_ids"), e.at("output_ids"));
  EXPECT_EQ(j.at("nfe"), e.at("nfe"));
}

TEST(MoeCliTest, BenchAndInspectReportTheRouting) {
  auto j = Json(RunUnmask("bench -m " + Folder("qwen3-moe-tiny") + " -n 8 -r 1 -o json -t 1"));
  ASSERT_TRUE(j.contains("moe")) << j.dump();
  EXPECT_EQ(j.at("moe").at("top_k"), 2);
  const auto inspect = RunUnmask("inspect " + Folder("llada2-tiny-bf16"));
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("mixture of experts: 16 experts of width 8, top-4, sigmoid"),
            std::string::npos)
      << inspect.out;
  EXPECT_NE(inspect.out.find("active parameters per position"), std::string::npos);
}

TEST(MoeCliTest, EditingFlagsAreRefusedWhereTheyDoNotApply) {
  const std::string m = " -m " + Folder("llada2-tiny-bf16") + " --prompt-ids 5,6 -n 8 -t 1";
  auto r = RunUnmask("generate" + m + " --edit-threshold 0.3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--edit-threshold applies to --remasking joint_threshold"),
            std::string::npos)
      << r.err;
  r = RunUnmask("generate" + m + " --remasking joint_threshold --temperature 0.5");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("temperature 0 only"), std::string::npos) << r.err;
  r = RunUnmask("generate" + m + " --remasking joint_threshold --edit-threshold 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--edit-threshold"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace unmask
