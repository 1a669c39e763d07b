// `unmask generate` with the fast diffusion flags (--cache, --commit, --threshold, --factor,
// --low-threshold, --early-stop, ...): --json reports the mode, NFE and positions fed; a cached
// threshold run needs fewer positions than the exact one; flags that do not apply are refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "e2e/cli_runner.h"
#include "test_util.h"

namespace unmask {
namespace {

std::string Twin() { return testing::SourceDir() + "/models/unmask-tinystories-llada.gguf"; }

nlohmann::json Generate(const std::string& flags) {
  const testing::CliResult r =
      testing::RunUnmask("generate -m " + Twin() + " -p 'Once upon a time, there was a girl' " +
                         "-n 64 --block-length 32 -t 1 --json " + flags);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json{};
}

TEST(FastDiffusionCliTest, ModesReportTheirWorkInJson) {
  const nlohmann::json exact = Generate("--steps 64");
  ASSERT_FALSE(exact.is_null());
  EXPECT_EQ(exact["nfe"], 64);
  EXPECT_EQ(exact["params"]["cache"], "none");
  EXPECT_EQ(exact["params"]["commit"], "fixed");
  const nlohmann::json fast = Generate("--cache dual --threshold 0.5");
  ASSERT_FALSE(fast.is_null());
  EXPECT_EQ(fast["params"]["cache"], "dual");
  EXPECT_EQ(fast["params"]["commit"], "threshold");  // implied by --threshold
  EXPECT_EQ(fast["output_ids"].size(), 64u);
  EXPECT_LE(fast["nfe"].get<int>(), 64);
  EXPECT_GE(fast["nfe"].get<int>(), 2);  // at least one forward per block
  // Dual cache: two full forwards (one per block), the other steps feed 32 positions.
  EXPECT_LT(fast["forward_positions"].get<int64_t>(), exact["forward_positions"].get<int64_t>());
  const nlohmann::json factor = Generate("--factor 1 --cache prefix --early-stop");
  EXPECT_EQ(factor["params"]["commit"], "factor");
  EXPECT_EQ(factor["params"]["early_stop"], true);
  const nlohmann::json hier = Generate("--low-threshold 0.5 --cache vicinity --after-look 4");
  EXPECT_EQ(hier["params"]["commit"], "hierarchy");
  EXPECT_EQ(hier["params"]["after_look"], 4);
  const nlohmann::json credit = Generate("--commit credit --threshold 0.8");
  EXPECT_EQ(credit["params"]["commit"], "credit");
  // The exact reference path is unchanged by the new flags' defaults.
  EXPECT_EQ(Generate("--steps 64 --cache none --commit fixed")["output_ids"], exact["output_ids"]);
}

TEST(FastDiffusionCliTest, InapplicableOrInvalidFlagsAreRefused) {
  struct Bad {
    std::string flags;
    int code;
    std::string mention;
  };
  for (const Bad& b :
       {Bad{"--cache sideways", 2, "--cache"}, Bad{"--commit maybe", 2, "--commit"},
        Bad{"--threshold 0", 2, "--threshold"}, Bad{"--threshold 1.5", 2, "--threshold"},
        Bad{"--factor -1", 2, "--factor"}, Bad{"--low-threshold 2", 2, "--low-threshold"},
        Bad{"--prefix-look -3", 2, "--prefix-look"},
        Bad{"--commit factor --threshold 0.5", 1, "--threshold"},
        Bad{"--commit threshold --factor 2", 1, "--factor"},
        Bad{"--threshold 0.5 --low-threshold 0.2 --commit threshold", 1, "--low-threshold"},
        Bad{"--cache dual --cfg-scale 1 --steps 32", 1, "cfg_scale"},
        Bad{"--credit-alpha 5 --steps 32", 1, "--credit-alpha"},
        Bad{"--commit threshold --credit-beta 0.1", 1, "--credit-beta"},
        Bad{"--cache dual --prefix-look 5", 1, "--prefix-look"},
        Bad{"--after-look 3 --steps 32", 1, "--after-look"}}) {
    const testing::CliResult r = testing::RunUnmask(
        "generate -m " + Twin() + " --prompt-ids 0,5,6 -n 32 --block-length 32 " + b.flags);
    EXPECT_EQ(r.exit_code, b.code) << b.flags << ": " << r.err;
    EXPECT_NE(r.err.find(b.mention), std::string::npos) << b.flags << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << b.flags;
  }
  // Diffusion-only flags on an autoregressive model are refused by name.
  const testing::CliResult r =
      testing::RunUnmask("generate -m " + testing::SourceDir() +
                         "/models/unmask-tinystories-ar.gguf -p hi " + "--cache dual");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--cache"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace unmask
