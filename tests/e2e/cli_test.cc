// End-to-end tests of the `unmask` command line: results on stdout, one-line errors with a
// non-zero exit code, --json output, and agreement of the CLI with the golden reference cases.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/cli_runner.h"
#include "fixtures/tiny_llada.h"
#include "test_util.h"

namespace unmask {
namespace {

using Result = testing::CliResult;
Result RunCli(const std::string& args) { return testing::RunUnmask(args); }

int CountLines(const std::string& s) {
  int n = 0;
  for (char c : s) n += (c == '\n');
  return n;
}

std::string Model() { return testing::TestDataPath("models/llada-tiny-gqa2-untied-f16.gguf"); }

TEST(CliTest, HelpAnswersTheMainQuestions) {
  const Result r = RunCli("generate --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag :
       {"--gen-length", "--steps", "--block-length", "--remasking", "--temperature", "--cfg-scale",
        "--logits-eos-inf", "--confidence-eos-eot-inf", "--seed", "--threads", "--chat",
        "--no-chat", "--prompt-ids", "--json", "--visual"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
}

TEST(CliTest, JsonOutputIsOneObjectWithTheDocumentedFields) {
  const Result r = RunCli("generate -m " + Model() +
                          " --prompt-ids 1,2,3,4,5 -n 16 --steps 8 --block-length 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(CountLines(r.out), 1) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key :
       {"text", "prompt_ids", "output_ids", "nfe", "tokens_per_second", "timings"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["prompt_ids"], nlohmann::json::array({1, 2, 3, 4, 5}));
  EXPECT_EQ(j["output_ids"].size(), 16u);
  EXPECT_EQ(j["nfe"], 8);
  EXPECT_GT(j["tokens_per_second"].get<double>(), 0.0);
  EXPECT_TRUE(j["timings"].contains("generate_ms"));
  EXPECT_GT(j["flops"].get<double>(), 0);
  EXPECT_GT(j["bytes"].get<double>(), 0);
  EXPECT_NEAR(j["arithmetic_intensity"].get<double>(),
              j["flops"].get<double>() / j["bytes"].get<double>(), 1e-9);
}

TEST(CliTest, MatchesAGoldenReferenceCase) {
  // The CLI path (flags -> params -> decoder) gives the reference's tokens.
  std::ifstream in(testing::TestDataPath("golden/llada/b_cfg2_5_lp5.json"));
  const auto g = nlohmann::json::parse(in);
  std::string ids;
  for (const auto& id : g["prompt_ids"])
    ids += (ids.empty() ? "" : ",") + std::to_string(id.get<int>());
  const Result r =
      RunCli("generate -m " + testing::TestDataPath("models/" + g["model"].get<std::string>()) +
             " --prompt-ids " + ids + " -n " + std::to_string(g["gen_length"].get<int>()) +
             " --steps " + std::to_string(g["steps"].get<int>()) + " --block-length " +
             std::to_string(g["block_length"].get<int>()) + " --cfg-scale " +
             std::to_string(g["cfg_scale"].get<double>()) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["output_ids"], g["output_ids"]);
}

TEST(CliTest, TokenizeAgreesWithGenerate) {
  // `unmask tokenize` gives the ids that `generate -p` feeds the model (without a chat template).
  const Result t = RunCli("tokenize -m " + Model() + " -p 'Hi there!' --json");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const auto tj = nlohmann::json::parse(t.out);
  ASSERT_EQ(tj["ids"].size(), tj["pieces"].size());
  const Result g = RunCli("generate -m " + Model() +
                          " -p 'Hi there!' --no-chat -n 8 --steps 8 "
                          "--block-length 8 --json");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const auto gj = nlohmann::json::parse(g.out);
  EXPECT_EQ(gj["prompt_ids"], tj["ids"]);
  const Result plain = RunCli("tokenize -m " + Model() + " -p 'Hi there!' --no-bos");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  // The same ids without a leading BOS (id 256 in the fixture), space-separated.
  std::string expected;
  for (size_t i = 0; i < tj["ids"].size(); ++i) {
    if (i == 0 && tj["ids"][0] == 256) continue;
    expected += (expected.empty() ? "" : " ") + std::to_string(tj["ids"][i].get<int>());
  }
  EXPECT_EQ(plain.out, expected + "\n");
}

TEST(CliTest, TokenizeWithAHuggingFaceFolder) {
  // --tokenizer DIR: the folder's tokenizer.json and tokenizer_config.json, no model.
  const std::string dir = testing::TestDataPath("hf/tokenizers/qwen-style");
  const Result t = RunCli("tokenize --tokenizer " + dir +
                          " -p '<|im_start|>user Hi<|im_end|>' --parse-special --json");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const auto tj = nlohmann::json::parse(t.out);
  ASSERT_GE(tj["ids"].size(), 3u);
  EXPECT_EQ(tj["ids"].front(), 1001);
  EXPECT_EQ(tj["ids"].back(), 1002);
  // --jsonl: one JSON string per line in, {ids, text, text_special} per line out.
  const std::string texts = testing::TempDir() + "/hf_texts.jsonl";
  {
    std::ofstream out(texts);
    out << "\"<|MASK|>a\"\n\"cafe\\u0301\"\n";
  }
  const Result batch =
      RunCli("tokenize --tokenizer " + dir + " --jsonl " + texts + " --parse-special");
  ASSERT_EQ(batch.exit_code, 0) << batch.err;
  std::istringstream lines(batch.out);
  std::string line;
  ASSERT_TRUE(std::getline(lines, line));
  const auto first = nlohmann::json::parse(line);
  EXPECT_EQ(first["ids"][0], 1003);
  EXPECT_EQ(first["text"], "a");
  EXPECT_EQ(first["text_special"], "<|MASK|>a");
  ASSERT_TRUE(std::getline(lines, line));
  EXPECT_EQ(nlohmann::json::parse(line)["text"], "caf\xC3\xA9");  // NFC
  EXPECT_FALSE(std::getline(lines, line));
}

// Steps as the LLaDA reference runs them: more steps than tokens are forwards that commit nothing
// (NFE = steps, same tokens as one step per token); without --steps a short output gets one step
// per token rather than 128 forwards.
TEST(CliTest, StepsBeyondGenLengthRunAsTheReferenceAndTheDefaultFollowsShortOutputs) {
  const std::string base = "generate -m " + Model() + " --prompt-ids 1,2,3 -n 8 --block-length 8 ";
  const auto one = nlohmann::json::parse(RunCli(base + "--steps 8 --json").out, nullptr, false);
  const auto two = nlohmann::json::parse(RunCli(base + "--steps 16 --json").out, nullptr, false);
  const auto dflt = nlohmann::json::parse(RunCli(base + "--json").out, nullptr, false);
  ASSERT_TRUE(one.is_object() && two.is_object() && dflt.is_object());
  EXPECT_EQ(one["nfe"], 8);
  EXPECT_EQ(two["nfe"], 16);
  EXPECT_EQ(two["output_ids"], one["output_ids"]);  // the extra steps commit nothing
  EXPECT_EQ(dflt["nfe"], 8);
  EXPECT_EQ(dflt["output_ids"], one["output_ids"]);
  const Result empty_ids = RunCli("generate -m " + Model() + " --prompt-ids ''");
  EXPECT_EQ(empty_ids.exit_code, 1);
  EXPECT_NE(empty_ids.err.find("--prompt-ids is empty"), std::string::npos) << empty_ids.err;
}

TEST(CliTest, TextEndsAtTheFirstEndOfGenerationToken) {
  const Result r = RunCli("generate -m " + Model() +
                          " --prompt-ids 1,2,3 -n 16 --steps 16 --block-length 16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("finish_reason"));
  EXPECT_EQ(j["output_ids"].size(), 16u);  // output_ids always hold the whole canvas
  // The tiny fixture's vocabulary: 256 bytes, then BOS 256, EOS 257, EOT 258, mask 259.
  bool has_end = false;
  for (const auto& id : j["output_ids"]) has_end = has_end || id == 257 || id == 258;
  EXPECT_EQ(j["finish_reason"], has_end ? "stop" : "length") << j;
  // Force the other case: with EOS banned and no EOT in the vocabulary's way, the text runs on.
  const Result banned = RunCli("generate -m " + Model() +
                               " --prompt-ids 1,2,3 -n 16 --steps 16 --block-length 16 "
                               "--logits-eos-inf --json");
  ASSERT_EQ(banned.exit_code, 0) << banned.err;
  const auto b = nlohmann::json::parse(banned.out);
  bool has_eot = false;
  for (const auto& id : b["output_ids"]) has_eot = has_eot || id == 258;
  EXPECT_EQ(b["finish_reason"], has_eot ? "stop" : "length") << b;
}

// Lower-cased runs of ASCII letters: the words of a text.
std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> words;
  std::string w;
  for (char c : text + " ") {
    if (std::isalpha(static_cast<unsigned char>(c))) {
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!w.empty()) {
      words.push_back(w);
      w.clear();
    }
  }
  return words;
}

TEST(CliTest, ReadmeMainCommandWritesEnglishWithTheDefaultModel) {
  // The README's first command without --visual: the diffusion twin (models/) by default, greedy.
  // "Readable" is checked the simple way: the story is made of words of the TinyStories corpus.
  UNMASK_REQUIRE_SHARED_DATA(corpus_path, "corpus/tinystories_train_head_944k.txt");
  const Result r = RunCli("generate -p 'Once upon a time, there was' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"]["architecture"], "llada");
  const std::vector<std::string> words = Words(j["text"].get<std::string>());
  ASSERT_GE(words.size(), 10u) << j["text"];
  std::ifstream in(corpus_path);
  std::set<std::string> known;
  for (std::string line; std::getline(in, line);) {
    for (auto& w : Words(line)) known.insert(std::move(w));
  }
  size_t hits = 0;
  for (const auto& w : words) hits += known.count(w);
  EXPECT_GE(hits, words.size() * 95 / 100) << j["text"];
  // ... and not one word over and over (an undertrained diffusion model's failure).
  EXPECT_GE(std::set<std::string>(words.begin(), words.end()).size(), words.size() / 4)
      << j["text"];
}

TEST(CliTest, TextPromptWithChatTemplateAndProgressOnStderr) {
  const Result r =
      RunCli("generate -m " + Model() + " -p 'Hello there' -n 8 --steps 8 --block-length 8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(CountLines(r.out), 1);  // the text (single line here) and nothing else on stdout
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << r.err;
}

struct BadCall {
  std::string args;
  int exit_code;
  std::string must_mention;
};

void PrintTo(const BadCall& c, std::ostream* os) { *os << "unmask " << c.args; }

class CliErrorTest : public ::testing::TestWithParam<BadCall> {};

TEST_P(CliErrorTest, PrintsOneLineAndFails) {
  std::string args = GetParam().args;
  const std::string model = "{MODEL}";
  if (const size_t at = args.find(model); at != std::string::npos)
    args.replace(at, model.size(), Model());
  const Result r = RunCli(args);
  EXPECT_EQ(r.exit_code, GetParam().exit_code) << r.err;
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(GetParam().must_mention), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CliErrorTest,
    ::testing::Values(
        BadCall{"generate --no-such-flag", 2, "--no-such-flag"},
        BadCall{"frobnicate", 2, "frobnicate"},
        BadCall{"generate -m {MODEL} --prompt-ids 1 --steps abc", 2, "steps"},
        BadCall{"generate -m {MODEL} --prompt-ids 1 --remasking sometimes", 2, "remasking"},
        BadCall{"generate -m {MODEL} --prompt-ids 1 --temperature -1", 2, "temperature"},
        BadCall{"generate -m /nonexistent/model.gguf -p hi", 1, "/nonexistent/model.gguf"},
        BadCall{"generate -m {MODEL}", 1, "prompt"},
        BadCall{"generate -m {MODEL} --prompt-ids 1 -n 8 --block-length 4 --steps 3", 1,
                "number of blocks"},
        BadCall{"generate -m {MODEL} --prompt-ids 1 -n 200 --steps 200 --block-length 200", 1,
                "context length"},
        BadCall{"generate -m {MODEL} --prompt-ids 1,x,3", 1, "'x'"},
        BadCall{"generate -m {MODEL} --prompt-ids 1,99999 -n 8 --steps 8 --block-length 8", 1,
                "99999"},
        BadCall{"generate -m {MODEL} -p hi --prompt-ids 1", 2, "excludes"},
        BadCall{"generate -m {MODEL} -p hi --chat --no-chat", 2, "excludes"},
        BadCall{"inspect /nonexistent.gguf", 1, "/nonexistent.gguf"},
        BadCall{"generate -m {MODEL} --prompt-ids 1 -t 65536", 2, "--threads"},
        BadCall{"generate -m {MODEL} --prompt-ids 1 -n 0", 2, "is not an integer in [1, "},
        BadCall{"generate -m {MODEL} --prompt-ids 1 -n 99999999999999999999999", 2,
                "is not an integer"},
        BadCall{"generate -m {MODEL} --prompt-ids 1 --seed -1", 2, "--seed"},
        BadCall{"generate -m {MODEL} --prompt-ids 1 --seed 18446744073709551616", 2, "--seed"},
        BadCall{"generate -m {MODEL} --prompt-ids 1 --temperature abc", 2,
                "is not a finite number"},
        BadCall{"generate -m {MODEL} --prompt-ids 1 --temperature inf", 2,
                "is not a finite number"},
        BadCall{"generate -m '' -p hi", 1, "empty path"},
        BadCall{"generate -m {MODEL} -p '<|mdm_mask|> hi' -n 8 --steps 8 --block-length 8", 1,
                "mask token"},
        BadCall{"bench -m {MODEL} --prompt-length 1000000 -r 1", 1, "context length"},
        BadCall{"inspect " + testing::SourceDir() + "/README.md", 1, "README.md"},
        BadCall{"tokenize -m {MODEL}", 1, "nothing to tokenize"},
        BadCall{"tokenize -m {MODEL} -f /nonexistent.txt", 1, "/nonexistent.txt"},
        BadCall{"tokenize -m {MODEL} -p hi -f x.txt", 2, "excludes"},
        BadCall{"tokenize -m /nonexistent.gguf -p hi", 1, "/nonexistent.gguf"},
        BadCall{"tokenize --tokenizer /nonexistent-dir -p hi", 1,
                "/nonexistent-dir/tokenizer.json"},
        BadCall{"tokenize --tokenizer /nonexistent-dir -m {MODEL} -p hi", 2, "excludes"},
        BadCall{"tokenize -m {MODEL} --jsonl /nonexistent.jsonl", 1, "/nonexistent.jsonl"}));

TEST(CliTest, ErrorsStayOnOneLineAndShort) {
  // A file whose strings carry newlines and terminal escapes: the error quotes them escaped.
  testing::TinyLladaSpec spec;
  spec.architecture = "llada\nsecond line \x1b[31mred";
  const std::string path = testing::TempDir() + "/escape.gguf";
  ASSERT_EQ(testing::WriteTinyLlada(spec, path), "");
  const Result r = RunCli("generate -m " + path + " -p hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\\x1b"), std::string::npos) << r.err;
  // Range errors do not print DBL_MAX in full.
  const Result zero = RunCli("generate -m " + Model() + " --prompt-ids 1 --steps 0");
  EXPECT_LT(zero.err.size(), 200u) << zero.err;
}

TEST(CliTest, BenchFinishesOnAVocabularyOfControlTokens) {
  // Every token but the mask is a control token: the random prompt must still be built.
  testing::TinyLladaSpec spec;
  spec.edit = [](gguf::GgufWriter& w) {
    w.Set("tokenizer.ggml.token_type", gguf::Value::I32Array(std::vector<int32_t>(260, 3)));
  };
  const std::string path = testing::TempDir() + "/all_control.gguf";
  ASSERT_EQ(testing::WriteTinyLlada(spec, path), "");
  const Result r = RunCli("bench -m " + path +
                          " -t 1 -r 1 --blas-list onednn -n 8 --steps 8 --block-length 8 "
                          "--prompt-length 8");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(CliTest, InspectPrintsArchitectureTokenizerAndTensors) {
  const Result r = RunCli("inspect " + Model());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"architecture: llada", "bidirectional", "kv heads 2", "tokenizer: gpt2",
                        "mask", "blk.1.ffn_down.weight", "parameters"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace unmask
