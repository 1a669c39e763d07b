// End-to-end tests of `unmask convert`: stories260K.bin + tok512.bin (../shared/data) converted
// on the command line tokenize like llama.cpp's stories260K.gguf, and match it byte for byte with
// --context-length 2048; wrong calls print one line and fail.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "e2e/cli_runner.h"
#include "test_util.h"

namespace unmask {
namespace {

using testing::CliResult;
using testing::RunUnmask;

std::string ReadAll(const std::string& path) {
  std::string data;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    std::array<char, 65536> buf{};
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) data.append(buf.data(), n);
    std::fclose(f);
  }
  return data;
}

int CountLines(const std::string& s) {
  int n = 0;
  for (char c : s) n += (c == '\n');
  return n;
}

TEST(ConvertCliTest, HelpExplainsTheFlags) {
  const CliResult r = RunUnmask("convert --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"--llama2c", "--tokenizer", "--output", "--name", "--context-length",
                        "seq_len", "llama.cpp"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
  EXPECT_NE(RunUnmask("--help").out.find("convert"), std::string::npos);
}

TEST(ConvertCliTest, ConvertedStories260KTokenizesLikeLlamaCppsGguf) {
  UNMASK_REQUIRE_SHARED_DATA(bin, "models/stories260K.bin");
  UNMASK_REQUIRE_SHARED_DATA(tok, "models/tok512.bin");
  UNMASK_REQUIRE_SHARED_DATA(ref, "models/stories260K.gguf");
  UNMASK_REQUIRE_SHARED_DATA(tsv, "models/tok512_encode_expected_runc.tsv");
  const std::string out = testing::TempDir() + "/convert_stories260K.gguf";
  std::remove(out.c_str());
  const CliResult c = RunUnmask("convert --llama2c " + bin + " --tokenizer " + tok + " -o " + out);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_TRUE(c.out.empty()) << c.out;
  EXPECT_NE(c.err.find("wrote " + out), std::string::npos) << c.err;

  const CliResult info = RunUnmask("inspect " + out + " --no-tensors");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  for (const char* s : {"architecture: llama", "kv heads 4", "context 512", "tokenizer: llama",
                        "512 tokens", "bos    1 '<s>'"}) {
    EXPECT_NE(info.out.find(s), std::string::npos) << s << "\n" << info.out;
  }

  // The texts of the llama2.c encoder test vectors: the same ids from both files.
  std::ifstream in(tsv);
  int cases = 0;
  for (std::string line; std::getline(in, line);) {
    const std::string text = line.substr(0, line.find('\t'));
    const std::string text_path = testing::TempDir() + "/convert_text.txt";
    std::ofstream(text_path, std::ios::binary) << text;
    const CliResult a = RunUnmask("tokenize -m " + out + " -f " + text_path);
    const CliResult b = RunUnmask("tokenize -m " + ref + " -f " + text_path);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_EQ(a.out, b.out) << text;
    EXPECT_GE(a.out.size(), 2u) << text;
    ++cases;
  }
  EXPECT_GE(cases, 3);
}

TEST(ConvertCliTest, ContextLength2048ReproducesLlamaCppsFile) {
  UNMASK_REQUIRE_SHARED_DATA(bin, "models/stories260K.bin");
  UNMASK_REQUIRE_SHARED_DATA(tok, "models/tok512.bin");
  UNMASK_REQUIRE_SHARED_DATA(ref, "models/stories260K.gguf");
  const std::string out = testing::TempDir() + "/convert_stories260K_2048.gguf";
  const CliResult c = RunUnmask("convert --llama2c " + bin + " --tokenizer " + tok + " -o " + out +
                                " --context-length 2048 --name llama");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const std::string a = ReadAll(out);
  const std::string b = ReadAll(ref);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_TRUE(a == b);
}

TEST(ConvertCliTest, WrongCallsPrintOneLineAndFail) {
  UNMASK_REQUIRE_SHARED_DATA(bin, "models/stories260K.bin");
  UNMASK_REQUIRE_SHARED_DATA(tok, "models/tok512.bin");
  const std::string out = testing::TempDir() + "/convert_bad.gguf";
  struct Case {
    std::string args;
    int exit_code;
    std::string must_mention;
  };
  const std::string ok_inputs = "--llama2c " + bin + " --tokenizer " + tok;
  // A copy of the checkpoint for the case that names it as the output too (never risk the
  // shared file).
  const std::string copy = testing::TempDir() + "/convert_copy.bin";
  std::ofstream(copy, std::ios::binary) << ReadAll(bin);
  const std::vector<Case> cases = {
      {"convert --tokenizer " + tok + " -o " + out, 2, "--llama2c"},
      {"convert " + ok_inputs, 2, "--output"},
      {"convert " + ok_inputs + " -o " + out + " --context-length 0", 2, "--context-length"},
      {"convert --llama2c /nonexistent/m.bin --tokenizer " + tok + " -o " + out, 1,
       "/nonexistent/m.bin"},
      {"convert --llama2c " + bin + " --tokenizer /nonexistent/t.bin -o " + out, 1,
       "/nonexistent/t.bin"},
      // The checkpoint given as the tokenizer: its "tokens" do not add up.
      {"convert --llama2c " + bin + " --tokenizer " + bin + " -o " + out, 1, "tokenizer"},
      // A GGUF given as the checkpoint.
      {"convert --llama2c " + testing::TestDataPath("models/llada-tiny-gqa2-untied-f16.gguf") +
           " --tokenizer " + tok + " -o " + out,
       1, "GGUF"},
      {"convert --llama2c " + copy + " --tokenizer " + tok + " -o " + copy, 1, "is the input"},
      {"convert " + ok_inputs + " -o /nonexistent/dir/out.gguf", 1, "/nonexistent/dir/out.gguf"},
      {"frobnicate", 2, "convert"},
  };
  for (const Case& c : cases) {
    const CliResult r = RunUnmask(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args << "\n" << r.err;
    EXPECT_EQ(CountLines(r.err), 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.must_mention), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  // The checkpoint is intact after the refused -o.
  EXPECT_TRUE(ReadAll(copy) == ReadAll(bin));
}

}  // namespace
}  // namespace unmask
