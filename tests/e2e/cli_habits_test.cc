// What llama.cpp users type works in `unmask generate`: prompts from a file, `-p -` and a pipe;
// --temp, -c / --ctx-size, --system, -n -1; "did you mean" for a mistyped flag; a random seed
// printed when sampling without --seed; one canvas and stop-string rule with the server; Ctrl-C
// ends with the text so far and the statistics (valid JSON with --json).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "e2e/cli_runner.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::RunUnmask;

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + "/" + name + "." + std::to_string(getpid());
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

nlohmann::json Json(const testing::CliResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

// Runs `args` and expects exit code `code` with `needle` in the one-line error.
void ExpectError(const std::string& args, int code, const std::string& needle) {
  const auto r = RunUnmask(args);
  EXPECT_EQ(r.exit_code, code) << args << ": " << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << args << ": " << r.err;
}

const std::string kAr = " -m " + testing::TwinPath("ar") + " -t 1 ";
const std::string kLlada = " -m " + testing::TwinPath("llada") + " -t 1 ";

TEST(CliHabitsTest, PromptFromAFileStdinOrAPipeEqualsTheSamePromptGivenWithP) {
  const nlohmann::json direct =
      Json(RunUnmask("generate" + kAr + "-p 'Once upon a time' -n 8 --json"));
  ASSERT_TRUE(direct.is_object());
  // The file's trailing newline is dropped, as llama.cpp drops it.
  const std::string file = WriteTemp("prompt.txt", "Once upon a time\n");
  for (const std::string& how : {"-f " + file, "-p - < " + file, "< " + file}) {
    const nlohmann::json j = Json(RunUnmask("generate" + kAr + "-n 8 --json " + how));
    ASSERT_TRUE(j.is_object()) << how;
    EXPECT_EQ(j["prompt_ids"], direct["prompt_ids"]) << how;
    EXPECT_EQ(j["output_ids"], direct["output_ids"]) << how;
  }
  // No prompt at all, an empty pipe, a missing file, -f with -p: one-line errors.
  ExpectError("generate" + kAr + "-n 8", 1, "no prompt");  // stdin is /dev/null: empty
  ExpectError("generate" + kAr + "-n 8 -p -", 1, "standard input is empty");
  ExpectError("generate" + kAr + "-n 8 -f /nonexistent/prompt.txt", 1, "no such prompt file");
  ExpectError("generate" + kAr + "-n 8 -f ''", 1, "-f/--file: empty path");
  ExpectError("generate" + kAr + "-n 8 -f " + file + " -p hi", 2, "excludes");
  std::remove(file.c_str());
}

// --chat-template-file (llama.cpp's flag) replaces the model's template in generate and serve.
TEST(CliHabitsTest, ChatTemplateFileReplacesTheModels) {
  const std::string wrap = WriteTemp("wrap.jinja", "<<{{ messages[0].content }}>>");
  const std::string raise =
      WriteTemp("raise.jinja", "{{ raise_exception('the file template ran') }}");
  const std::string broken = WriteTemp("broken.jinja", "{% if %}");
  const std::string base = "generate" + kAr + "-p 'Once upon a time' -n 4 --json ";
  const nlohmann::json plain = Json(RunUnmask(base + "--no-chat"));
  const nlohmann::json wrapped = Json(RunUnmask(base + "--chat --chat-template-file " + wrap));
  ASSERT_TRUE(plain.is_object() && wrapped.is_object());
  EXPECT_GT(wrapped["prompt_ids"].size(), plain["prompt_ids"].size());  // "<<" and ">>" added
  ExpectError(base + "--chat --chat-template-file " + raise, 1, "the file template ran");
  ExpectError(base + "--chat-template-file /nonexistent.jinja", 1, "--chat-template-file");
  ExpectError(base + "--chat-template-file " + broken, 1, broken);
  ExpectError(base + "--chat-template-file ''", 2, "empty path");
  ExpectError(base + "--stop ''", 2, "empty stop string");
  // Checked at start-up by rendering one user message: a filter the renderer lacks shows there.
  const std::string lacks = WriteTemp("lacks.jinja", "{{ messages[0].content | wordcount }}");
  ExpectError(base + "--chat --chat-template-file " + lacks, 1, "rendering one user message");
  std::remove(lacks.c_str());
  ExpectError("serve" + kAr + "-m " + testing::TwinPath("llada") + " --chat-template-file " + wrap,
              2, "one -m");
  for (const auto& f : {wrap, raise, broken}) std::remove(f.c_str());
}

TEST(CliHabitsTest, LlamaCppAliasesMeanTheSame) {
  const std::string base = "generate" + kAr + "-p 'Once upon a time' -n 12 --json --seed 7 ";
  const nlohmann::json a = Json(RunUnmask(base + "--temperature 0.8"));
  const nlohmann::json b = Json(RunUnmask(base + "--temp 0.8"));
  ASSERT_TRUE(a.is_object() && b.is_object());
  EXPECT_EQ(a["output_ids"], b["output_ids"]);
  EXPECT_EQ(b["params"]["temperature"], 0.8);
}

TEST(CliHabitsTest, MistypedFlagsNameTheFlagAndTheClosestOne) {
  auto r = RunUnmask("generate" + kAr + "-p hi --tmp 0.5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown flag --tmp (did you mean --temp?)"), std::string::npos) << r.err;
  r = RunUnmask("generate" + kAr + "-p hi --gen_length 5");
  EXPECT_NE(r.err.find("did you mean --gen-length?"), std::string::npos) << r.err;
  r = RunUnmask("generate" + kAr + "-p Once upon");
  EXPECT_NE(r.err.find("unexpected argument 'upon'"), std::string::npos) << r.err;
  // llama.cpp's one-dash long flags: -temp is --temp (not -t "emp"); -ngl is refused with why;
  // a prompt that looks like one stays a prompt.
  const nlohmann::json one = Json(RunUnmask("generate" + kAr + "-p hi -n 4 --json -temp 0.5 -s 1"));
  ASSERT_TRUE(one.is_object());
  EXPECT_EQ(one["params"]["temperature"], 0.5);
  r = RunUnmask("generate" + kAr + "-p hi -ngl 99");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-ngl is llama.cpp's GPU flag"), std::string::npos) << r.err;
  const nlohmann::json dash = Json(RunUnmask("generate" + kAr + "-p -temp -n 2 --json"));
  ASSERT_TRUE(dash.is_object());
}

TEST(CliHabitsTest, SamplingWithoutSeedDrawsOneAndPrintsIt) {
  const std::string base = "generate" + kAr + "-p 'Once upon a time' -n 12 --json --temp 0.9";
  const auto r1 = RunUnmask(base);
  const auto r2 = RunUnmask(base);
  const nlohmann::json a = Json(r1), b = Json(r2);
  ASSERT_TRUE(a.is_object() && b.is_object());
  EXPECT_NE(a["params"]["seed"], b["params"]["seed"]);
  const std::string seed = std::to_string(a["params"]["seed"].get<uint64_t>());
  EXPECT_NE(r1.err.find("seed " + seed + " (drawn at random; --seed " + seed), std::string::npos)
      << r1.err;
  // The printed seed repeats the run.
  const nlohmann::json again = Json(RunUnmask(base + " --seed " + seed));
  EXPECT_EQ(again["output_ids"], a["output_ids"]);
  // Greedy decoding does not talk about seeds.
  const auto greedy = RunUnmask("generate" + kAr + "-p 'Once upon a time' -n 4");
  EXPECT_EQ(greedy.err.find("seed"), std::string::npos) << greedy.err;
}

TEST(CliHabitsTest, ContextSizeCapsTheRunAndUntilDoneFillsIt) {
  // -n -1 on an AR model: until EOS or the context; -c caps that context.
  const nlohmann::json j =
      Json(RunUnmask("generate" + kAr + "-p 'Once upon a time' -n -1 --ignore-eos -c 40 --json"));
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["prompt_ids"].size() + j["output_ids"].size(), 40u);
  const std::string story = "generate" + kAr + "-p 'Once upon a time' ";
  ExpectError(story + "-n 64 -c 40", 1, "exceed the context of 40");
  ExpectError(story + "-n 64 -c 40", 1, "tokens fit after this prompt");
  ExpectError(story + "-n 8 -c 100000", 1, "does not extend");
  // A prompt that alone fills the context says so, without useless advice about -n.
  ExpectError("generate" + kAr + "-p 'Once upon a time there was a girl' -n 8 -c 4", 1,
              "fills the context of 4 tokens");
  ExpectError("generate" + kAr + "-p 'Once upon a time there was a girl' -n 8 -c 4", 1,
              "shorten the prompt");
  // A full canvas has no "until EOS".
  ExpectError("generate" + kLlada + "-p 'Once upon a time' -n -1", 1, "give a length");
}

TEST(CliHabitsTest, SystemNeedsAChatTemplate) {
  auto r = RunUnmask("generate" + kAr + "-p hi --system 'be brief'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--system"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no chat template"), std::string::npos) << r.err;
  // A model with a template puts the system message into it.
  const std::string qwen = " -m " + testing::TestDataPath("hf/qwen3-tiny") + " -t 1 ";
  const nlohmann::json plain = Json(RunUnmask("generate" + qwen + "-p hi -n 2 --json"));
  const nlohmann::json sys =
      Json(RunUnmask("generate" + qwen + "-p hi -n 2 --json --system 'be brief'"));
  ASSERT_TRUE(plain.is_object() && sys.is_object());
  // (This template writes a default system message when none is given: --system replaces it.)
  EXPECT_NE(sys["prompt_ids"], plain["prompt_ids"]);
  r = RunUnmask("generate" + qwen + "-p hi -n 2 --no-chat --system x");
  EXPECT_NE(r.err.find("--no-chat"), std::string::npos) << r.err;
}

// The server's canvas rule: -n rounded up to whole blocks and the text cut back, a default block
// longer than -n shrinks to it; stop strings apply to diffusion text as to AR text.
TEST(CliHabitsTest, DiffusionTakesAnyLengthAndStopStrings) {
  nlohmann::json j = Json(RunUnmask("generate" + kLlada + "-p 'Once upon a time' -n 16 --json"));
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["output_ids"].size(), 16u);
  EXPECT_EQ(j["params"]["block_length"], 16);
  j = Json(RunUnmask("generate" + kLlada + "-p 'Once upon a time' -n 40 --block-length 32 --json"));
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["output_ids"].size(), 40u);
  EXPECT_EQ(j["params"]["gen_length"], 64);
  const nlohmann::json full =
      Json(RunUnmask("generate" + kLlada + "-p 'Once upon a time' -n 32 --json"));
  const std::string text = full["text"];
  ASSERT_GT(text.size(), 8u);
  const std::string stop = text.substr(4, 3);
  j = Json(
      RunUnmask("generate" + kLlada + "-p 'Once upon a time' -n 32 --json --stop '" + stop + "'"));
  EXPECT_EQ(j["text"], text.substr(0, text.find(stop)));
  EXPECT_EQ(j["finish_reason"], "stop");
  // Stopped early: only the committed prefix is returned and counted (no masks).
  EXPECT_LT(j["output_ids"].size(), 32u);
}

// Plain text of a diffusion model streams as its blocks commit: the text ends with a newline and
// equals --json's.
TEST(CliHabitsTest, DiffusionTextIsPrintedOnceWithANewline) {
  const auto r = RunUnmask("generate" + kLlada + "-p 'Once upon a time' -n 64");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j =
      Json(RunUnmask("generate" + kLlada + "-p 'Once upon a time' -n 64 --json"));
  EXPECT_EQ(r.out, j["text"].get<std::string>() + "\n");
}

// Ctrl-C: the text so far, a newline and the statistics; --json still prints one valid object.
// Waits (up to 60 s) until process `pid` catches or waits for `sig` (/proc/PID/status) and has used
// `cpu_s` seconds of CPU (/proc/PID/stat utime + stime).
void WaitForHandlerAndCpu(pid_t pid, int sig, double cpu_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  while (std::chrono::steady_clock::now() < deadline) {
    bool caught = false;
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
      // A handler (SigCgt), or the signal blocked for the thread that sigwaits for it (SigBlk of
      // the main thread: common/interrupt.h).
      if (line.rfind("SigCgt:", 0) == 0 || line.rfind("SigBlk:", 0) == 0) {
        const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
        caught = caught || ((mask >> (sig - 1)) & 1ULL);
      }
    }
    double used = 0;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::stringstream buf;
    buf << stat.rdbuf();
    const std::string text = buf.str();
    const size_t close = text.rfind(')');
    if (close != std::string::npos) {
      std::istringstream fields(text.substr(close + 2));
      std::string f;
      for (int k = 3; k <= 15 && fields >> f; ++k) {
        if (k == 14 || k == 15) used += std::stod(f) / ticks;  // utime, stime
      }
    }
    if (caught && used >= cpu_s) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TEST(CliHabitsTest, InterruptEndsWithTheTextSoFar) {
  for (const bool json : {false, true}) {
    const std::string err_path = testing::TempDir() + "/interrupt." + std::to_string(getpid());
    const std::string out_path = err_path + ".out";
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int in = open("/dev/null", O_RDONLY);
      dup2(out, 1);
      dup2(err, 2);
      dup2(in, 0);
      // A long exact canvas: 240 forwards of 245 positions (seconds on any CPU).
      execl(UNMASK_CLI_PATH, UNMASK_CLI_PATH, "generate", "-m", testing::TwinPath("llada").c_str(),
            "-t", "1", "-p", "Once upon a time", "-n", "240", "--steps", "240", "--block-length",
            "240", json ? "--json" : "--no-chat", static_cast<char*>(nullptr));
      _exit(127);
    }
    // Interrupt once the handler is installed and the generation has run a while: 0.3 s of the
    // child's own CPU time (a fixed wall-clock wait is too short on a loaded machine).
    WaitForHandlerAndCpu(pid, SIGINT, 0.3);
    kill(pid, SIGINT);
    int status = 0;
    waitpid(pid, &status, 0);
    const std::string out = ReadAll(out_path), err = ReadAll(err_path);
    ASSERT_TRUE(WIFEXITED(status)) << "killed by the signal: " << err;
    EXPECT_EQ(WEXITSTATUS(status), 130) << err;
    if (json) {
      const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
      ASSERT_TRUE(j.is_object()) << out;
      EXPECT_EQ(j["finish_reason"], "interrupted");
      EXPECT_GT(j["nfe"].get<int64_t>(), 0);
      EXPECT_LT(j["nfe"].get<int64_t>(), 240);
      EXPECT_LT(j["output_ids"].size(), 240u);  // the committed prefix, not the masked canvas
      // The rate counts that prefix too, not the positions unmasked past its end.
      const double counted =
          j["tokens_per_second"].get<double>() * j["timings"]["generate_ms"].get<double>() / 1000.0;
      EXPECT_NEAR(counted, static_cast<double>(j["output_ids"].size()), 0.01) << out;
    } else {
      ASSERT_FALSE(out.empty());
      EXPECT_EQ(out.back(), '\n');
      EXPECT_NE(err.find("interrupted (Ctrl-C)"), std::string::npos) << err;
      EXPECT_NE(err.find("tokens/s"), std::string::npos) << err;
    }
    std::remove(out_path.c_str());
    std::remove(err_path.c_str());
  }
}

}  // namespace
}  // namespace unmask
