#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace unmask {
namespace {

std::vector<std::string> SplitWith(std::string_view pre, std::string_view text) {
  auto spec = FindPreTokenizerSpec(pre);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  if (!spec.ok()) return {};
  auto tokenizer = PreTokenizer::Compile(spec->patterns);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  if (!tokenizer.ok()) return {};
  std::vector<std::string> out;
  for (std::string_view w : tokenizer->Split(text)) out.emplace_back(w);
  return out;
}

std::vector<std::string> SplitPatterns(const std::vector<std::string>& patterns,
                                       std::string_view text) {
  auto tokenizer = PreTokenizer::Compile(patterns);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  if (!tokenizer.ok()) return {};
  std::vector<std::string> out;
  for (std::string_view w : tokenizer->Split(text)) out.emplace_back(w);
  return out;
}

using Words = std::vector<std::string>;

TEST(PreTokenizerTest, Gpt2Splits) {
  EXPECT_EQ(SplitWith("gpt-2", "Hello world"), (Words{"Hello", " world"}));
  // A run of spaces gives all but the last space to its own word (\s+(?!\S)).
  EXPECT_EQ(SplitWith("gpt-2", "   Hello"), (Words{"  ", " Hello"}));
  EXPECT_EQ(SplitWith("gpt-2", "I've 3 cats!!"), (Words{"I", "'ve", " 3", " cats", "!!"}));
  EXPECT_EQ(SplitWith("gpt-2", "\n\n x"), (Words{"\n\n", " x"}));
  EXPECT_EQ(SplitWith("gpt-2", "trailing  "), (Words{"trailing", "  "}));
}

TEST(PreTokenizerTest, Llama3Splits) {
  EXPECT_EQ(SplitWith("llama-bpe", "12345"), (Words{"123", "45"}));
  EXPECT_EQ(SplitWith("llama-bpe", "Hello\n\nworld"), (Words{"Hello", "\n\n", "world"}));
  EXPECT_EQ(SplitWith("llama-bpe", "I'M here"), (Words{"I", "'M", " here"}));  // case-insensitive
  EXPECT_EQ(SplitWith("llama-bpe", "x = (y);\n"), (Words{"x", " =", " (", "y", ");\n"}));
}

TEST(PreTokenizerTest, Qwen2SplitsDigitsSingly) {
  EXPECT_EQ(SplitWith("qwen2", "12345"), (Words{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(SplitWith("qwen2", "a1"), (Words{"a", "1"}));
}

TEST(PreTokenizerTest, SmollmIsolatesDigitsFirst) {
  // \p{N} first, then the GPT-2 pattern on what is left (SmolLM2's " 12" is " ", "1", "2").
  EXPECT_EQ(SplitWith("smollm", "Hello 12 x"), (Words{"Hello", " ", "1", "2", " x"}));
}

TEST(PreTokenizerTest, DefaultSplitsPunctuationAndDigitTriples) {
  // [\p{P}$+<=>^~|]+ | gpt-2 | \p{N}+ | [0-9][0-9][0-9]
  EXPECT_EQ(SplitWith("default", "a+b 12345"), (Words{"a", "+", "b", " ", "123", "45"}));
}

TEST(PreTokenizerTest, DeepseekCoderAppliesPatternsInSequence) {
  // [\r\n] | \s?\p{L}+ | \s?\p{P}+ | CJK runs | \p{N}, each splitting the previous fragments.
  EXPECT_EQ(SplitWith("deepseek-coder", "Hi 42\n"), (Words{"Hi", " ", "4", "2", "\n"}));
  EXPECT_EQ(SplitWith("deepseek-coder", "f(x)"), (Words{"f", "(", "x", ")"}));
}

TEST(PreTokenizerTest, CjkRangesDoNotMatchWhitespace) {
  // llama.cpp maps non-ASCII whitespace to U+000B before matching the CJK ranges, so U+3000
  // (inside U+0800..U+4E00) is not part of a CJK run.
  EXPECT_EQ(SplitWith("deepseek-coder", "\xE3\x80\x80\xE4\xB8\xAD\xE6\x96\x87"),
            (Words{"\xE3\x80\x80", "\xE4\xB8\xAD\xE6\x96\x87"}));
}

TEST(PreTokenizerTest, WhitespaceIsLlamaCppSet) {
  const std::string expanded = ExpandWhitespaceClasses("\\s+|[^\\s\\p{L}]|\\S");
  EXPECT_EQ(expanded.find("\\s"), std::string::npos);
  EXPECT_EQ(expanded.find("\\S"), std::string::npos);
  EXPECT_NE(expanded.find("\\x{3000}"), std::string::npos);
  // U+3000 is whitespace, U+180E (Mongolian vowel separator, \s in PCRE2) is not.
  EXPECT_EQ(SplitPatterns({"\\s"},
                          "a\xE3\x80\x80"
                          "b"),
            (Words{"a", "\xE3\x80\x80", "b"}));
  EXPECT_EQ(SplitPatterns({"\\s"},
                          "a\xE1\xA0\x8E"
                          "b"),
            (Words{"a\xE1\xA0\x8E"
                   "b"}));
  EXPECT_EQ(SplitPatterns({"\\s"},
                          "a\xC2\x85"
                          "b"),
            (Words{"a", "\xC2\x85", "b"}));  // NEL
}

TEST(PreTokenizerTest, EachFragmentIsItsOwnSubject) {
  // The second pattern runs on "a  " alone, so its lookahead sees the fragment end, not "b".
  EXPECT_EQ(SplitPatterns({"b", "\\s+(?!\\S)"}, "a  b"), (Words{"a", "  ", "b"}));
  // `$` is the end of the fragment only (std::regex semantics), not before a final newline.
  EXPECT_EQ(SplitPatterns({"b$"}, "ab\n"), (Words{"ab\n"}));
  EXPECT_EQ(SplitPatterns({"b$"}, "ab"), (Words{"a", "b"}));
}

TEST(PreTokenizerTest, EmptyMatchesSplitButDoNotLoop) {
  // As std::regex_iterator in llama.cpp: an empty match ends the unmatched run before it and
  // yields no word itself.
  EXPECT_EQ(SplitPatterns({"x*"}, "abxxc"), (Words{"a", "b", "xx", "c"}));
  EXPECT_EQ(SplitPatterns({"(?=b)"}, "abc"), (Words{"a", "bc"}));
}

TEST(PreTokenizerTest, EmptyTextGivesNoWords) {
  EXPECT_TRUE(SplitWith("gpt-2", "").empty());
  EXPECT_TRUE(SplitWith("deepseek-coder", "").empty());
}

TEST(PreTokenizerTest, WordsCoverTheText) {
  const std::string text = "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～\n\t 12 ab";
  for (const char* pre : {"default", "gpt-2", "llama-bpe", "qwen2", "deepseek-coder",
                          "deepseek-llm", "starcoder", "smollm"}) {
    std::string joined;
    for (const std::string& w : SplitWith(pre, text)) {
      EXPECT_FALSE(w.empty()) << pre;
      joined += w;
    }
    EXPECT_EQ(joined, text) << pre;
  }
}

TEST(PreTokenizerTest, UnknownNameIsUnimplemented) {
  auto spec = FindPreTokenizerSpec("no-such-pre");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(spec.status().message().find("no-such-pre"), std::string::npos);
  // llama.cpp rejects "gpt2" (the model name) as a pre-tokenizer name too.
  EXPECT_EQ(FindPreTokenizerSpec("gpt2").status().code(), StatusCode::kUnimplemented);
  // Empty means "default".
  auto empty = FindPreTokenizerSpec("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->name, "default");
  EXPECT_EQ(empty->patterns.size(), 4u);
}

TEST(PreTokenizerTest, SpecFlagsFollowLlamaCpp) {
  auto llama3 = FindPreTokenizerSpec("llama-bpe");
  ASSERT_TRUE(llama3.ok());
  EXPECT_TRUE(llama3->ignore_merges);
  EXPECT_TRUE(llama3->add_bos);
  EXPECT_TRUE(llama3->clean_spaces);
  auto qwen2 = FindPreTokenizerSpec("qwen2");
  ASSERT_TRUE(qwen2.ok());
  EXPECT_FALSE(qwen2->clean_spaces);
  EXPECT_FALSE(qwen2->ignore_merges);
  auto gpt2 = FindPreTokenizerSpec("gpt-2");
  ASSERT_TRUE(gpt2.ok());
  EXPECT_TRUE(gpt2->clean_spaces);
  EXPECT_FALSE(gpt2->add_bos);
}

TEST(PreTokenizerTest, BadPatternIsInvalidArgument) {
  auto tokenizer = PreTokenizer::Compile({"(unclosed"});
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_EQ(tokenizer.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(tokenizer.status().message().find("(unclosed"), std::string::npos);
}

TEST(PreTokenizerTest, MoveKeepsCompiledPatterns) {
  auto compiled = PreTokenizer::Compile({"b"});
  ASSERT_TRUE(compiled.ok());
  PreTokenizer moved = std::move(compiled).value();
  PreTokenizer target = std::move(moved);
  EXPECT_EQ(target.Split("abc").size(), 3u);
}

}  // namespace
}  // namespace unmask
