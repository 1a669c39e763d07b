// `unmask chat` (and llama-cli's `generate -cnv`): a multi-turn conversation read from standard
// input, the history kept in the chat template, /commands, a base model refused, a conversation
// that outgrows the context reported without ending the session.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "e2e/cli_runner.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::RunUnmask;

std::string Input(const std::string& text) {
  const std::string path = testing::TempDir() + "/chat_input." + std::to_string(getpid());
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

const std::string kQwen = " -m " + testing::TestDataPath("hf/qwen3-tiny") + " -t 1 -n 4 ";

TEST(ChatCliTest, OneReplyPerTurnAndTheCommands) {
  const std::string in =
      Input("hello\n/help\n\n/clear\nhow are you\n/frobnicate\n/exit\nnot read\n");
  const auto r = RunUnmask("chat" + kQwen + "< " + in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Count(r.err, "tokens/s"), 2u) << r.err;  // two turns; /exit ends before "not read"
  EXPECT_NE(r.err.find("commands: /exit"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the conversation is cleared"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unknown command /frobnicate"), std::string::npos) << r.err;
  // llama-cli's conversation flag on generate is the same command.
  const auto cnv = RunUnmask("generate -cnv" + kQwen + "< " + in);
  EXPECT_EQ(cnv.exit_code, 0) << cnv.err;
  EXPECT_EQ(Count(cnv.err, "tokens/s"), 2u) << cnv.err;
  std::remove(in.c_str());
}

TEST(ChatCliTest, AConversationBeyondTheContextIsReportedAndTheSessionGoesOn) {
  const std::string in = Input(std::string(400, 'a') + "\nhi\n");
  const auto r = RunUnmask("chat" + kQwen + "-c 64 < " + in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("fills the context of 64 tokens: /clear starts a new one"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(Count(r.err, "tokens/s"), 1u) << r.err;  // "hi" still gets its reply
  std::remove(in.c_str());
}

// A flag that would fail every turn ends the command at the start; a line continued with a
// backslash at the end of the input is still sent.
TEST(ChatCliTest, BadFlagsFailAtTheStartAndTheLastLineIsSent) {
  const std::string in = Input("hi\n");
  for (const char* bad : {"-c 100000", "--steps 4", "--spec draft"}) {
    const auto r = RunUnmask("chat" + kQwen + std::string(bad) + " < " + in);
    EXPECT_EQ(r.exit_code, 1) << bad << ": " << r.err;
    EXPECT_EQ(Count(r.err, "error"), 1u) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("unmask chat: error"), std::string::npos) << r.err;
  }
  const std::string cont = Input("hello \\");
  const auto r = RunUnmask("chat" + kQwen + "< " + cont);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Count(r.err, "tokens/s"), 1u) << r.err;
  std::remove(in.c_str());
  std::remove(cont.c_str());
}

TEST(ChatCliTest, ABaseModelIsRefused) {
  const auto r = RunUnmask("chat -m " + testing::TwinPath("ar") + " -t 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no chat template"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unmask generate"), std::string::npos) << r.err;
}

// With a real instruction-tuned model the second turn is answered in the context of the first.
TEST(ChatCliTest, TheHistoryIsKept) {
  const auto smollm2 = testing::FindSmolLM2();
  if (!smollm2) GTEST_SKIP() << "SmolLM2-135M-Instruct not downloaded (scripts/fetch-smollm2.sh)";
  const std::string in = Input("What is the capital of France?\nAnd of Germany?\n");
  const auto r =
      RunUnmask("chat -m " + *smollm2 + " -t 2 --system 'Answer in one short sentence.' < " + in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Paris"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Berlin"), std::string::npos) << r.out;
  std::remove(in.c_str());
}

// Ctrl-C at the prompt leaves, as the banner says (SIGINT arrives on the interrupt thread, so the
// prompt's read polls for it), after a reply was given; standard input stays open.
TEST(ChatCliTest, CtrlCAtThePromptLeaves) {
  const std::string err_path = testing::TempDir() + "/chat_ctrl_c." + std::to_string(getpid());
  int in[2];
  ASSERT_EQ(pipe(in), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int out = open("/dev/null", O_WRONLY);
    dup2(in[0], 0);
    dup2(out, 1);
    dup2(err, 2);
    close(in[1]);
    const std::string model = testing::TestDataPath("hf/qwen3-tiny");
    execl(UNMASK_CLI_PATH, UNMASK_CLI_PATH, "chat", "-m", model.c_str(), "-t", "1", "-n", "4",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  ASSERT_EQ(write(in[1], "hello\n", 6), 6);
  // Wait for the reply's statistics line: the chat is then back at the prompt.
  std::string err;
  for (int i = 0; i < 600 && err.find("tokens/s") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream f(err_path);
    std::stringstream ss;
    ss << f.rdbuf();
    err = ss.str();
  }
  ASSERT_NE(err.find("tokens/s"), std::string::npos) << err;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  kill(pid, SIGINT);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 100 && done == 0; ++i) {  // up to 10 s
    done = waitpid(pid, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  close(in[1]);
  std::remove(err_path.c_str());
  ASSERT_NE(done, 0) << "chat still waits for input after Ctrl-C at the prompt";
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace unmask
