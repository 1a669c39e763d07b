// `unmask generate --suffix / --suffix-ids` (infilling): the twin's middle equals the Python
// reference's (tests/data/golden/twins/llada_story_infill.json), text and JSON output carry the
// suffix, and the models and flags that cannot fill in are one-line errors.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "e2e/cli_runner.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::RunUnmask;

nlohmann::json Golden() {
  std::ifstream in(testing::TestDataPath("golden/twins/llada_story_infill.json"));
  return nlohmann::json::parse(in);
}

std::string Twin(const std::string& kind) {
  return testing::SourceDir() + "/models/unmask-tinystories-" + kind + ".gguf";
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

TEST(CliInfillTest, SuffixTextGivesTheReferenceMiddle) {
  const nlohmann::json g = Golden();
  const std::string common = "generate -m " + Twin("llada") + " -p " +
                             Quote(g["prompt"].get<std::string>()) + " -n 16 --steps 16 -t 1";
  const auto r =
      RunUnmask(common + " --suffix " + Quote(g["suffix"].get<std::string>()) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["output_ids"], g["output_ids"]);
  EXPECT_EQ(j["prompt_ids"], g["prompt_ids"]);
  EXPECT_EQ(j["suffix"], g["suffix"]);
  // Text mode: the middle, then the suffix, on stdout.
  const auto t = RunUnmask(common + " --suffix " + Quote(g["suffix"].get<std::string>()));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(t.out, j["text"].get<std::string>() + g["suffix"].get<std::string>() + "\n");
}

TEST(CliInfillTest, SuffixIdsGiveTheSameTokens) {
  const nlohmann::json g = Golden();
  std::string ids;
  for (const auto& id : g["suffix_ids"]) ids += (ids.empty() ? "" : ",") + id.dump();
  const auto r =
      RunUnmask("generate -m " + Twin("llada") + " -p " + Quote(g["prompt"].get<std::string>()) +
                " -n 16 --steps 16 -t 1 --json --suffix-ids " + ids);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["output_ids"], g["output_ids"]);
}

TEST(CliInfillTest, ModelsAndFlagsThatCannotFillInAreErrors) {
  auto r = RunUnmask("generate -m " + Twin("ar") + " -p 'Once' --suffix ' end.' -n 4");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("fill-in-the-middle tokens"), std::string::npos) << r.err;
  r = RunUnmask("generate -m " + Twin("block") + " -p 'Once' --suffix ' end.' -n 4");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("bidirectional attention"), std::string::npos) << r.err;
  r = RunUnmask("generate -m " + Twin("llada") + " -p 'Once' --suffix-ids 1,x -n 4");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--suffix-ids: 'x'"), std::string::npos) << r.err;
  r = RunUnmask("generate -m " + Twin("llada") + " -p 'Once' --suffix a --suffix-ids 1 -n 4");
  EXPECT_NE(r.exit_code, 0);
}

}  // namespace
}  // namespace unmask
