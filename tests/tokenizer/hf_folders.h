// Hugging Face tokenizer folders written by the tests (tokenizer_hf_test.cc,
// tokenizer_hf_errors_test.cc): a small byte-level BPE tokenizer.json built in memory, folders
// under the build tree's test_tmp, and the committed fixtures of scripts/make_hf_tokenizers.py.
#ifndef UNMASK_TESTS_TOKENIZER_HF_FOLDERS_H_
#define UNMASK_TESTS_TOKENIZER_HF_FOLDERS_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../test_util.h"
#include "toy_vocabs.h"

namespace unmask::testing {

using Json = nlohmann::json;

// tests/data/hf/tokenizers/qwen-style (ids 0..999 BPE, 1000..1003 specials).
inline std::string QwenStyleDir() { return TestDataPath("hf/tokenizers/qwen-style"); }

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A byte-level BPE tokenizer.json: ids 0..255 the byte stand-ins in byte order, then one token per
// merge result in merge order (merges given in plain text, as BpeVocab), merges as [a, b] pairs;
// pre_tokenizer ByteLevel(use_regex) without prefix space, decoder ByteLevel, no added tokens.
inline Json ByteLevelTokenizerJson(std::vector<std::pair<std::string, std::string>> merges) {
  Json vocab = Json::object();
  int next = 0;
  for (int b = 0; b < 256; ++b) vocab[unicode::ByteToUnicode(static_cast<uint8_t>(b))] = next++;
  Json merge_list = Json::array();
  for (const auto& [left, right] : merges) {
    merge_list.push_back({ByteLevel(left), ByteLevel(right)});
    const std::string merged = ByteLevel(left + right);
    if (!vocab.contains(merged)) vocab[merged] = next++;
  }
  Json byte_level = {{"type", "ByteLevel"},
                     {"add_prefix_space", false},
                     {"trim_offsets", true},
                     {"use_regex", true}};
  return Json{{"version", "1.0"},
              {"truncation", nullptr},
              {"padding", nullptr},
              {"added_tokens", Json::array()},
              {"normalizer", nullptr},
              {"pre_tokenizer", byte_level},
              {"post_processor", nullptr},
              {"decoder", byte_level},
              {"model",
               {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", false},
                {"vocab", vocab},
                {"merges", merge_list}}}};
}

// An added_tokens[] entry.
inline Json AddedToken(int id, const std::string& content, bool special, bool normalized = false,
                       bool lstrip = false, bool rstrip = false) {
  return Json{{"id", id},          {"content", content}, {"single_word", false},
              {"lstrip", lstrip},  {"rstrip", rstrip},   {"normalized", normalized},
              {"special", special}};
}

// A fresh folder test_tmp/hf/<name> holding tokenizer.json (when not null) and `files`
// (file name -> content). Returns its path.
inline std::string WriteFolder(const std::string& name, const Json& tokenizer,
                               const std::map<std::string, std::string>& files = {}) {
  const std::string dir = TempDir() + "/hf/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  if (!tokenizer.is_null()) WriteText(dir + "/tokenizer.json", tokenizer.dump(1));
  for (const auto& [file, content] : files) WriteText(dir + "/" + file, content);
  return dir;
}

}  // namespace unmask::testing

#endif  // UNMASK_TESTS_TOKENIZER_HF_FOLDERS_H_
