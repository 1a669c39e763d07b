// Byte-level BPE tokenizer (tokenizer.ggml.model = "gpt2") on in-memory vocabularies.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "toy_vocabs.h"

namespace unmask {
namespace {

using testing::AddToken;
using testing::BpeVocab;
using testing::ByteLevel;
using Ids = std::vector<TokenId>;

std::unique_ptr<Tokenizer> Make(Vocab v) {
  auto t = Tokenizer::FromVocab(std::move(v));
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

// Id of the token whose plain text is `text` (byte-level form looked up).
TokenId Id(const Tokenizer& t, std::string_view text) { return t.FindToken(ByteLevel(text)); }

TEST(BpeTokenizerTest, LowestRankMergesFirst) {
  auto bc_first = Make(BpeVocab("gpt-2", {{"b", "c"}, {"a", "bc"}}));
  ASSERT_TRUE(bc_first);
  EXPECT_EQ(bc_first->Encode("abc", false, false), (Ids{Id(*bc_first, "abc")}));
  auto ab_first = Make(BpeVocab("gpt-2", {{"a", "b"}, {"b", "c"}, {"a", "bc"}}));
  ASSERT_TRUE(ab_first);
  // (a, b) has rank 0, so "ab" forms and "bc" never can; there is no (ab, c) merge.
  EXPECT_EQ(ab_first->Encode("abc", false, false), (Ids{Id(*ab_first, "ab"), 'c'}));
}

TEST(BpeTokenizerTest, EqualRanksMergeLeftmostFirst) {
  auto t = Make(BpeVocab("gpt-2", {{"a", "a"}}));
  ASSERT_TRUE(t);
  const TokenId aa = Id(*t, "aa");
  EXPECT_EQ(t->Encode("aaa", false, false), (Ids{aa, 'a'}));
  EXPECT_EQ(t->Encode("aaaaa", false, false), (Ids{aa, aa, 'a'}));
}

TEST(BpeTokenizerTest, MergesStayInsidePreTokenizedWords) {
  // (o, space) has the best rank, but "hello" and " world" are separate words.
  auto t = Make(BpeVocab("gpt-2", {{"o", " "},
                                   {"h", "e"},
                                   {"l", "l"},
                                   {"he", "ll"},
                                   {"hell", "o"},
                                   {" ", "w"},
                                   {" w", "o"},
                                   {" wo", "r"},
                                   {" wor", "l"},
                                   {" worl", "d"}}));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("hello world", false, false), (Ids{Id(*t, "hello"), Id(*t, " world")}));
  EXPECT_EQ(t->Decode(t->Encode("hello world", false, false), false), "hello world");
  // Byte-level BPE has no space prefix: a continuation decodes as Decode does.
  EXPECT_EQ(t->DecodeContinuation(Id(*t, "hello"), Ids{Id(*t, " world")}, false), " world");
  EXPECT_EQ(t->DecodeContinuation(kNoToken, Ids{Id(*t, " world")}, false), " world");
}

TEST(BpeTokenizerTest, BytesMapToGpt2StandIns) {
  auto t = Make(BpeVocab("gpt-2", {{"x", "y"}}));
  ASSERT_TRUE(t);
  // Every byte is its own token here: ids are byte values.
  EXPECT_EQ(t->Encode("a b\n", false, false), (Ids{'a', ' ', 'b', '\n'}));
  EXPECT_EQ(t->TokenText(' '), "\xC4\xA0");  // 'Ġ'
  const std::string text = "tab\there \xC3\xA9\xF0\x9F\xA6\x99 \x01";
  const Ids ids = t->Encode(text, false, false);
  EXPECT_EQ(ids.size(), text.size());
  EXPECT_EQ(t->Decode(ids, false), text);
}

TEST(BpeTokenizerTest, InvalidUtf8BecomesReplacementCharacter) {
  auto t = Make(BpeVocab("gpt-2", {{"x", "y"}}));
  ASSERT_TRUE(t);
  const Ids ids = t->Encode(
      "a\xFF"
      "b",
      false, false);
  EXPECT_EQ(ids, (Ids{'a', 0xEF, 0xBF, 0xBD, 'b'}));
  EXPECT_EQ(t->Decode(ids, false),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(t->Decode(t->Encode("\xE2\x82", false, false), false), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(BpeTokenizerTest, EmptyInput) {
  Vocab v = BpeVocab("gpt-2", {{"x", "y"}});
  v.bos = 'x';
  auto t = Make(v);
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->Encode("", false, false).empty());
  EXPECT_TRUE(t->Encode("", true, true).empty());  // gpt-2: no BOS by default
}

TEST(BpeTokenizerTest, AddBosDefaultsFollowThePreTokenizer) {
  Vocab v = BpeVocab("gpt-2", {{"x", "y"}});
  const TokenId bos = AddToken(&v, "<|begin_of_text|>", TokenType::kControl);
  v.bos = bos;
  auto gpt2 = Make(v);
  ASSERT_TRUE(gpt2);
  EXPECT_FALSE(gpt2->special().add_bos);
  EXPECT_EQ(gpt2->Encode("a", true, false), (Ids{'a'}));
  v.pre = "llama-bpe";
  auto llama3 = Make(v);
  ASSERT_TRUE(llama3);
  EXPECT_TRUE(llama3->special().add_bos);
  EXPECT_EQ(llama3->Encode("a", true, false), (Ids{bos, 'a'}));
  v.add_bos = false;  // tokenizer.ggml.add_bos_token overrides the default
  auto explicit_off = Make(v);
  ASSERT_TRUE(explicit_off);
  EXPECT_EQ(explicit_off->Encode("a", true, false), (Ids{'a'}));
}

TEST(BpeTokenizerTest, IgnoreMergesForWholeWordTokens) {
  // llama3 pre-tokenizer: a word that is itself a token is emitted without merging.
  Vocab v = BpeVocab("llama-bpe", {{"x", "y"}}, {"abc"});
  auto llama3 = Make(v);
  ASSERT_TRUE(llama3);
  EXPECT_EQ(llama3->Encode("abc", false, false), (Ids{Id(*llama3, "abc")}));
  v.pre = "gpt-2";
  auto gpt2 = Make(v);
  ASSERT_TRUE(gpt2);
  EXPECT_EQ(gpt2->Encode("abc", false, false), (Ids{'a', 'b', 'c'}));
}

TEST(BpeTokenizerTest, SpecialTokens) {
  Vocab v = BpeVocab("qwen2", {{"x", "y"}});
  const TokenId end = AddToken(&v, "<|im_end|>", TokenType::kControl);
  const TokenId tool = AddToken(&v, "<tool_call>", TokenType::kUserDefined);
  auto t = Make(v);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("a<|im_end|>b", false, true), (Ids{'a', end, 'b'}));
  const Ids plain = t->Encode("a<|im_end|>b", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), end), 0);
  EXPECT_EQ(t->Decode(plain, false), "a<|im_end|>b");
  EXPECT_EQ(t->Encode("a<tool_call>b", false, false), (Ids{'a', tool, 'b'}));
  EXPECT_EQ(t->Decode(Ids{'a', end, tool}, false), "a<|im_end|><tool_call>");
  EXPECT_EQ(t->Decode(Ids{'a', end, tool}, true), "a<tool_call>");
  EXPECT_EQ(t->special().eot, end);  // found by text
}

TEST(BpeTokenizerTest, DecodeCleansSpacesLikeLlamaCpp) {
  const std::string text = "a ? b , c . d ! e ' f 's g 't";
  auto gpt2 = Make(BpeVocab("gpt-2", {{"x", "y"}}));
  ASSERT_TRUE(gpt2);
  // clean_up_tokenization_spaces: " ?" " ," " ." " !" lose the space, " ' " loses both, " 's"
  // loses it, " 't" keeps it.
  EXPECT_EQ(gpt2->Decode(gpt2->Encode(text, false, false), false), "a? b, c. d! e'f's g 't");
  auto qwen2 = Make(BpeVocab("qwen2", {{"x", "y"}}));
  ASSERT_TRUE(qwen2);
  EXPECT_EQ(qwen2->Decode(qwen2->Encode(text, false, false), false), text);
}

TEST(BpeTokenizerTest, NonByteCharactersDecodeLikeLlamaCpp) {
  Vocab v = BpeVocab("gpt-2", {{"x", "y"}});
  v.tokens.push_back("\xE2\x86\x92");  // '→' is not a byte stand-in
  v.token_types.push_back(static_cast<int32_t>(TokenType::kNormal));
  auto t = Make(v);
  ASSERT_TRUE(t);
  const auto arrow = static_cast<TokenId>(t->vocab_size() - 1);
  EXPECT_EQ(t->Decode(Ids{arrow}, false), "[UNK_BYTE_0xe28692\xE2\x86\x92]");
}

TEST(BpeTokenizerTest, SymbolsOutsideTheVocabularyAreDropped) {
  Vocab v;
  v.model = "gpt2";
  v.pre = "gpt-2";
  v.tokens = {"a", "b", "ab"};
  v.merges = {"a b"};
  auto t = Make(v);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("ab", false, false), (Ids{2}));
  EXPECT_EQ(t->Encode("a\xC3\xA9", false, false), (Ids{0}));  // no tokens for é's bytes
}

TEST(BpeTokenizerTest, Accessors) {
  Vocab v = BpeVocab("", {{"x", "y"}});
  auto t = Make(v);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->model_name(), "gpt2");
  EXPECT_EQ(t->pre_name(), "default");
  EXPECT_EQ(t->vocab_size(), 257);
}

TEST(BpeTokenizerTest, UnknownPreIsUnimplemented) {
  auto t = Tokenizer::FromVocab(BpeVocab("gpt2", {{"x", "y"}}));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(t.status().message().find("'gpt2'"), std::string::npos);
  auto t2 = Tokenizer::FromVocab(BpeVocab("tekken", {{"x", "y"}}));
  ASSERT_FALSE(t2.ok());
  EXPECT_NE(t2.status().message().find("tekken"), std::string::npos);
}

TEST(BpeTokenizerTest, MalformedOrMissingMerges) {
  Vocab v = BpeVocab("gpt-2", {{"x", "y"}});
  v.merges.push_back("nospace");
  auto t = Tokenizer::FromVocab(v);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(t.status().message().find("tokenizer.ggml.merges[1]"), std::string::npos);
  v.merges.back() = " x";  // the separator is searched from the second byte on
  EXPECT_EQ(Tokenizer::FromVocab(v).status().code(), StatusCode::kDataLoss);
  v.merges.back() = "";
  EXPECT_EQ(Tokenizer::FromVocab(v).status().code(), StatusCode::kDataLoss);
  // No merges at all is a valid pure byte-level vocabulary (llama.cpp only requires the GGUF key,
  // which FromGguf checks): every byte stays its own token.
  v.merges.clear();
  auto bytes_only = Make(v);
  ASSERT_TRUE(bytes_only);
  EXPECT_EQ(bytes_only->Encode("xy", false, false), (Ids{'x', 'y'}));
}

TEST(BpeTokenizerTest, DuplicateMergesKeepTheFirstRank) {
  Vocab v = BpeVocab("gpt-2", {{"b", "c"}, {"a", "b"}});
  v.merges.push_back(ByteLevel("b") + " " + ByteLevel("c"));
  auto t = Make(v);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("abc", false, false), (Ids{'a', Id(*t, "bc")}));
}

TEST(BpeTokenizerTest, LongWordIsNotQuadratic) {
  auto t = Make(BpeVocab("gpt-2", {{"a", "a"}, {"aa", "aa"}, {"aaaa", "aaaa"}}));
  ASSERT_TRUE(t);
  const std::string word(200000, 'a');  // one pre-tokenizer word of 200k symbols
  const Ids ids = t->Encode(word, false, false);
  EXPECT_EQ(ids.size(), word.size() / 8);
  EXPECT_EQ(t->Decode(ids, false), word);
}

}  // namespace
}  // namespace unmask
