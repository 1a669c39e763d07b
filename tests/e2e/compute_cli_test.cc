// --compute on the command line (BackendOptions::compute): bf16 and int8 run and report their
// type, f32 stays the default, bad combinations fail with one line naming the flags, and a CPU
// without the instructions (forced with ONEDNN_MAX_CPU_ISA) falls back to f32 with one warning.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "e2e/cli_runner.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::RunUnmask;

std::string Twin() { return testing::TwinPath("llada"); }

int Lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

nlohmann::json GenerateJson(const std::string& flags, const std::string& env = "") {
  const auto r =
      RunUnmask("generate -m " + Twin() +
                    " --prompt-ids 1,45,67,89 -n 16 --block-length 16 --json -t 2 " + flags,
                env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

TEST(ComputeCliTest, DefaultIsF32AndEachTypeReportsItself) {
  const nlohmann::json dflt = GenerateJson("");
  ASSERT_FALSE(dflt.is_discarded());
  EXPECT_NE(dflt["backend"].get<std::string>().find("f32 compute"), std::string::npos) << dflt;
  EXPECT_EQ(GenerateJson("--compute f32")["output_ids"], dflt["output_ids"]);
  EXPECT_EQ(GenerateJson("--compute auto")["output_ids"], dflt["output_ids"]);
  for (const char* type : {"bf16", "int8"}) {
    const auto r = RunUnmask("generate -m " + Twin() +
                             " --prompt-ids 1,45,67,89 -n 16 --block-length 16 --json -t 2 "
                             "--compute " +
                             type);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out;
    const std::string backend = j["backend"].get<std::string>();
    // Either the type ran, or this CPU lacks its instructions and a warning said so.
    if (backend.find(std::string(type) + " compute") == std::string::npos) {
      EXPECT_NE(r.err.find("warning: " + std::string(type) + " compute"), std::string::npos)
          << r.err;
      EXPECT_NE(backend.find("f32 compute"), std::string::npos);
    }
    ASSERT_EQ(j["output_ids"].size(), 16u);
  }
}

TEST(ComputeCliTest, MissingInstructionsFallBackToF32WithOneWarning) {
  // oneDNN's ISA limited to AVX2 (no AVX512-BF16, no VNNI): as on an older CPU.
  for (const char* type : {"bf16", "int8"}) {
    const auto r = RunUnmask("generate -m " + Twin() +
                                 " --prompt-ids 1,45,67,89 -n 16 --block-length 16 --json -t 2 "
                                 "--compute " +
                                 type,
                             "ONEDNN_MAX_CPU_ISA=AVX2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string warning = "unmask: warning: " + std::string(type) + " compute: this CPU";
    ASSERT_NE(r.err.find(warning), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(warning), r.err.rfind(warning)) << "warned more than once: " << r.err;
    EXPECT_NE(r.err.find("using f32"), std::string::npos) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded());
    EXPECT_NE(j["backend"].get<std::string>().find("(avx2)"), std::string::npos) << j;
    EXPECT_NE(j["backend"].get<std::string>().find("f32 compute"), std::string::npos) << j;
    // f32 after the fallback: the default's tokens.
    EXPECT_EQ(j["output_ids"], GenerateJson("", "ONEDNN_MAX_CPU_ISA=AVX2")["output_ids"]);
  }
}

struct Bad {
  std::string args;
  int exit_code;
  std::string must_mention;
};

TEST(ComputeCliTest, BadCombinationsFailWithOneLine) {
  const std::string m = "-m " + Twin() + " -n 8 --block-length 8 ";
  const std::string ids = "--prompt-ids 1,2 ";
  for (const Bad& b : {
           Bad{"generate " + m + ids + "--compute fp8", 2, "--compute"},
           Bad{"generate " + m + ids + "--compute bf16 --weights native", 1, "--weights native"},
           Bad{"generate " + m + ids + "--compute int8 --blas openblas", 1, "--blas onednn"},
           Bad{"bench " + m + "--compute-list bf16 --blas-list openblas -r 1", 1, "onednn"},
           Bad{"bench " + m + "--compute-list fp16 -r 1", 2, "--compute-list"},
           Bad{"bench " + m + "--compute int8 --compute-list f32 -r 1", 2, "excludes"},
           // Every type's flags are checked before the first row runs (stdout stays empty).
           Bad{"bench -m " + testing::TwinPath("ar") +
                   " -n 8 --weights native --compute-list f32,bf16 -r 1",
               1, "--weights native"},
       }) {
    const auto r = RunUnmask(b.args);
    EXPECT_EQ(r.exit_code, b.exit_code) << b.args << "\n" << r.err;
    EXPECT_EQ(Lines(r.err), 1) << b.args << "\n" << r.err;
    EXPECT_NE(r.err.find(b.must_mention), std::string::npos) << b.args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

}  // namespace
}  // namespace unmask
