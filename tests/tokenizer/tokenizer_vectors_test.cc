// llama.cpp's tokenizer test vectors (models/ggml-vocab-*.gguf + .inp/.out, as in
// tests/test-tokenizer-0.cpp: no BOS, no special-token parsing) and the llama2.c encoder outputs
// for stories260K, read through Tokenizer::FromGguf.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../test_util.h"
#include "../vocab_util.h"
#include "format/gguf.h"
#include "tokenizer/tokenizer.h"

namespace unmask {
namespace {

using Ids = std::vector<TokenId>;
using testing::LoadVocab;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Case {
  std::string text;
  Ids ids;
};

// Same parsing as llama.cpp test-tokenizer-0: inputs separated by "\n__ggml_vocab_test__\n", one
// output line of space-separated ids per input.
std::vector<Case> ReadCases(const std::string& base) {
  const std::string raw = ReadFile(base + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  size_t pos = 0;
  while (pos < raw.size()) {
    const size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      inputs.push_back(raw.substr(pos));
      break;
    }
    inputs.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::istringstream out(ReadFile(base + ".out"));
  std::vector<Case> cases;
  std::string line;
  for (const std::string& input : inputs) {
    if (!std::getline(out, line)) break;
    Case c{input, {}};
    std::istringstream ids(line);
    for (TokenId id; ids >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  EXPECT_EQ(cases.size(), inputs.size()) << base;
  return cases;
}

std::string Show(const Ids& ids) {
  std::string s;
  for (TokenId id : ids) s += " " + std::to_string(id);
  return s;
}

class VocabVectorsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(VocabVectorsTest, EncodeMatchesLlamaCpp) {
  const std::string name = std::string("vocab/ggml-vocab-") + GetParam() + ".gguf";
  UNMASK_REQUIRE_SHARED_DATA(path, name);
  const Tokenizer* tok = LoadVocab(path);
  ASSERT_NE(tok, nullptr);
  const std::vector<Case> cases = ReadCases(path);
  ASSERT_GE(cases.size(), 40u);
  int failures = 0;
  for (const Case& c : cases) {
    const Ids got = tok->Encode(c.text, /*add_special=*/false, /*parse_special=*/false);
    if (got != c.ids) ++failures;
    EXPECT_EQ(got, c.ids) << "input '" << c.text << "'\n expected" << Show(c.ids) << "\n got     "
                          << Show(got);
  }
  EXPECT_EQ(failures, 0);
}

// Decode(Encode(s)) == s wherever llama.cpp gives it: SentencePiece and the byte-level vocabularies
// without clean_up_tokenization_spaces always; gpt-2 (clean-up on) except where the clean-up rules
// apply (" ?", " !", " .", " ,", " '").
TEST_P(VocabVectorsTest, DecodeRoundTrips) {
  const std::string name = std::string("vocab/ggml-vocab-") + GetParam() + ".gguf";
  UNMASK_REQUIRE_SHARED_DATA(path, name);
  const Tokenizer* tok = LoadVocab(path);
  ASSERT_NE(tok, nullptr);
  const bool cleans = std::string(GetParam()) == "gpt-2";
  int checked = 0;
  for (const Case& c : ReadCases(path)) {
    if (cleans) {
      bool touched = false;
      for (const char* p : {" ?", " !", " .", " ,", " '"}) {
        touched = touched || c.text.find(p) != std::string::npos;
      }
      if (touched) continue;
    }
    EXPECT_EQ(tok->Decode(c.ids, /*skip_special=*/false), c.text);
    ++checked;
  }
  EXPECT_GE(checked, 40);
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, VocabVectorsTest,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "deepseek-coder"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           std::string n = param_info.param;
                           for (char& ch : n) {
                             if (ch == '-') ch = '_';
                           }
                           return n;
                         });

TEST(VocabFilesTest, SpecialTokensAndMetadata) {
  UNMASK_REQUIRE_SHARED_DATA(spm_path, "vocab/ggml-vocab-llama-spm.gguf");
  UNMASK_REQUIRE_SHARED_DATA(gpt2_path, "vocab/ggml-vocab-gpt-2.gguf");
  UNMASK_REQUIRE_SHARED_DATA(phi3_path, "vocab/ggml-vocab-phi-3.gguf");
  UNMASK_REQUIRE_SHARED_DATA(dsc_path, "vocab/ggml-vocab-deepseek-coder.gguf");
  const Tokenizer* spm = LoadVocab(spm_path);
  const Tokenizer* gpt2 = LoadVocab(gpt2_path);
  const Tokenizer* phi3 = LoadVocab(phi3_path);
  const Tokenizer* dsc = LoadVocab(dsc_path);
  ASSERT_TRUE(spm && gpt2 && phi3 && dsc);

  EXPECT_EQ(spm->model_name(), "llama");
  EXPECT_EQ(spm->vocab_size(), 32000);
  EXPECT_EQ(spm->special().bos, 1);
  EXPECT_EQ(spm->special().eos, 2);
  EXPECT_EQ(spm->special().unk, 0);
  EXPECT_TRUE(spm->special().add_bos);
  EXPECT_EQ(spm->Encode("Hello world", true, false), (Ids{1, 15043, 3186}));
  EXPECT_EQ(spm->Decode(Ids{1, 15043, 3186, 2}, false), "<s> Hello world</s>");
  EXPECT_EQ(spm->Decode(Ids{15043, 3186, 2}, true), "Hello world");
  EXPECT_EQ(spm->Encode("<s>Hi</s>", false, true).front(), 1);

  EXPECT_EQ(gpt2->model_name(), "gpt2");
  EXPECT_EQ(gpt2->pre_name(), "gpt-2");
  EXPECT_EQ(gpt2->special().eos, 50256);
  EXPECT_EQ(gpt2->special().eot, 50256);  // "<|endoftext|>" found by text
  EXPECT_FALSE(gpt2->special().add_bos);
  EXPECT_EQ(gpt2->Encode("Hello<|endoftext|>", false, true), (Ids{15496, 50256}));
  EXPECT_NE(gpt2->Encode("Hello<|endoftext|>", false, false).back(), 50256);

  EXPECT_EQ(phi3->special().eos, 32000);
  EXPECT_EQ(phi3->special().eot, 32007);  // "<|end|>"
  EXPECT_TRUE(phi3->IsControl(32007));

  EXPECT_EQ(dsc->pre_name(), "deepseek-coder");
  EXPECT_EQ(dsc->special().bos, 32013);
  EXPECT_TRUE(dsc->special().add_bos);
  // User-defined tokens ('ü' here) are split out even without special-token parsing.
  EXPECT_EQ(dsc->Encode("\xC3\xBC", false, false), (Ids{32009}));
}

TEST(VocabFilesTest, EncodeIsThreadSafe) {
  UNMASK_REQUIRE_SHARED_DATA(path, "vocab/ggml-vocab-gpt-2.gguf");
  const Tokenizer* tok = LoadVocab(path);
  ASSERT_NE(tok, nullptr);
  const std::vector<Case> cases = ReadCases(path);
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        for (const Case& c : cases) {
          if (tok->Encode(c.text, false, false) != c.ids) ++mismatches[t];
          if (tok->Decode(c.ids, true).empty() != c.text.empty()) ++mismatches[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST(VocabFilesTest, LargeTextRoundTripsAndScales) {
  UNMASK_REQUIRE_SHARED_DATA(corpus_path, "corpus/tiny_shakespeare.txt");
  UNMASK_REQUIRE_SHARED_DATA(spm_path, "vocab/ggml-vocab-llama-spm.gguf");
  UNMASK_REQUIRE_SHARED_DATA(dsc_path, "vocab/ggml-vocab-deepseek-coder.gguf");
  const std::string text = ReadFile(corpus_path).substr(0, 256 * 1024);
  for (const std::string& path : {spm_path, dsc_path}) {
    const Tokenizer* tok = LoadVocab(path);
    ASSERT_NE(tok, nullptr);
    const auto start = std::chrono::steady_clock::now();
    const Ids ids = tok->Encode(text, false, false);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("[ INFO     ] %s: %zu bytes -> %zu tokens in %.1f ms\n", path.c_str(), text.size(),
                ids.size(), seconds * 1e3);
    EXPECT_GT(ids.size(), text.size() / 8);
    EXPECT_LT(ids.size(), text.size());
    EXPECT_EQ(tok->Decode(ids, false), text);
  }
}

// llama2.c's encoder on the 512-token SentencePiece vocabulary of stories260K. Columns: text, TAB,
// ids (BOS 1 first, as llama2.c encode(bos=1, eos=0) writes them).
TEST(Stories260KTest, EncodeMatchesLlama2c) {
  UNMASK_REQUIRE_SHARED_DATA(model_path, "models/stories260K.gguf");
  UNMASK_REQUIRE_SHARED_DATA(tsv_path, "models/tok512_encode_expected_runc.tsv");
  const Tokenizer* tok = LoadVocab(model_path);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocab_size(), 512);
  EXPECT_EQ(tok->special().pad, kNoToken);  // stored as 0xFFFFFFFF ("none")
  std::istringstream tsv(ReadFile(tsv_path));
  int rows = 0;
  for (std::string line; std::getline(tsv, line);) {
    const size_t tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    const std::string text = line.substr(0, tab);
    Ids expected;
    std::istringstream ids(line.substr(tab + 1));
    for (TokenId id; ids >> id;) expected.push_back(id);
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(expected.front(), 1);
    EXPECT_EQ(tok->Encode(text, /*add_special=*/true, false), expected) << "'" << text << "'";
    // Without the BOS the first piece's prefix space is dropped again.
    EXPECT_EQ(tok->Decode(Ids(expected.begin() + 1, expected.end()), true), text);
    ++rows;
  }
  EXPECT_GE(rows, 5);
}

}  // namespace
}  // namespace unmask
