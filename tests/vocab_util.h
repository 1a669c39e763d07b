// Test helper: the shared llama.cpp vocabularies (../shared/data/vocab/ggml-vocab-*.gguf) as
// tokenizers, loaded once per process (the gpt-2 vocabulary has 50k tokens and 50k merges).
#ifndef UNMASK_TESTS_VOCAB_UTIL_H_
#define UNMASK_TESTS_VOCAB_UTIL_H_

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "format/gguf.h"
#include "tokenizer/tokenizer.h"

namespace unmask::testing {

// The tokenizer of the GGUF at `path`, or null (with a test failure saying why).
inline const Tokenizer* LoadVocab(const std::string& path) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto it = cache.find(path);
  if (it != cache.end()) return it->second.get();
  auto file = gguf::GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  auto tok = Tokenizer::FromGguf(**file);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  if (!tok.ok()) return nullptr;
  std::unique_ptr<Tokenizer>& slot = cache[path];
  slot = std::move(tok).value();
  return slot.get();
}

}  // namespace unmask::testing

// Loads ../shared/data/vocab/ggml-vocab-<name>.gguf into `var` (const Tokenizer*); skips the test
// when the file is missing, or fails it under CI=true (UNMASK_REQUIRE_SHARED_DATA).
#define UNMASK_REQUIRE_VOCAB(var, name)                                                         \
  UNMASK_REQUIRE_SHARED_DATA(var##_path_, std::string("vocab/ggml-vocab-") + (name) + ".gguf"); \
  const Tokenizer* var = ::unmask::testing::LoadVocab(var##_path_);                             \
  ASSERT_NE(var, nullptr)

#endif  // UNMASK_TESTS_VOCAB_UTIL_H_
