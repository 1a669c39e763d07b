// `unmask serve` refuses bad command lines and unloadable models with a readable error and a
// non-zero exit (the server itself is tested on loopback by tests/server/*.py).
#include <gtest/gtest.h>

#include <fstream>

#include "cli_runner.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::CliResult;
using testing::RunUnmask;

const std::string kTwin = testing::SourceDir() + "/models/unmask-tinystories-ar.gguf";

TEST(ServeCliTest, BadFlagsExitTwo) {
  EXPECT_EQ(RunUnmask("serve").exit_code, 2);  // -m is required
  EXPECT_EQ(RunUnmask("serve -m " + kTwin + " --port 70000").exit_code, 2);
  EXPECT_EQ(RunUnmask("serve -m " + kTwin + " --max-batch 0").exit_code, 2);
  EXPECT_EQ(RunUnmask("serve -m " + kTwin + " --cache sideways").exit_code, 2);
  const CliResult both = RunUnmask("serve -m " + kTwin + " --threshold 0.9 --factor 1 --port 0");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("different commit rules"), std::string::npos) << both.err;
  const CliResult aliases = RunUnmask("serve -m " + kTwin + " --alias a --alias b --port 0");
  EXPECT_EQ(aliases.exit_code, 2);
  EXPECT_NE(aliases.err.find("more --alias than -m"), std::string::npos) << aliases.err;
}

TEST(ServeCliTest, UnloadableModelsExitOneNamingTheProblem) {
  const std::string bad = testing::TempDir() + "/serve_not_a_model.gguf";
  std::ofstream(bad) << "this is not a GGUF file";
  const CliResult r = RunUnmask("serve -m " + bad + " --port 0 -t 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("serve_not_a_model.gguf"), std::string::npos) << r.err;
  const CliResult twice = RunUnmask("serve -m " + kTwin + " -m " + kTwin + " --port 0 -t 1");
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_NE(twice.err.find("--alias"), std::string::npos) << twice.err;
  const CliResult reserved = RunUnmask("serve -m " + kTwin + " --alias auto --port 0 -t 1");
  EXPECT_EQ(reserved.exit_code, 1);
  EXPECT_NE(reserved.err.find("reserved"), std::string::npos) << reserved.err;
}

}  // namespace
}  // namespace unmask
