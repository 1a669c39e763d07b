// SentencePiece-style tokenizer (tokenizer.ggml.model = "llama") on in-memory vocabularies, and the
// vocabulary checks shared by both tokenizer kinds.
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
using testing::kSpace;
using testing::SpmVocab;
using Ids = std::vector<TokenId>;

constexpr TokenId Byte(int b) { return 3 + b; }  // <0xXX> ids in SpmVocab

// Ids of the pieces below: 259 ▁, 260 a, 261 b, 262 c, 263 ab, 264 bc, 265 abc, 266 ▁a, 267 aa.
constexpr TokenId kSp = 259, kA = 260, kB = 261, kC = 262, kAb = 263, kBc = 264, kAbc = 265,
                  kSpA = 266, kAa = 267;

Vocab Base() {
  return SpmVocab({{kSpace, -1.0f},
                   {"a", -2.0f},
                   {"b", -2.0f},
                   {"c", -2.0f},
                   {"ab", -1.0f},
                   {"bc", -0.5f},
                   {"abc", -0.2f},
                   {std::string(kSpace) + "a", -1.5f},
                   {"aa", -1.0f}});
}

std::unique_ptr<Tokenizer> Make(Vocab v) {
  auto t = Tokenizer::FromVocab(std::move(v));
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

std::unique_ptr<Tokenizer> MakeNoPrefix(Vocab v = Base()) {
  v.add_space_prefix = false;
  return Make(std::move(v));
}

TEST(SpmTokenizerTest, MergesHighestScoreFirst) {
  auto t = MakeNoPrefix();
  ASSERT_TRUE(t);
  // "bc" (-0.5) beats "ab" (-1.0); then "a"+"bc" forms "abc".
  EXPECT_EQ(t->Encode("abc", false, false), (Ids{kAbc}));
  EXPECT_EQ(t->Encode("ab", false, false), (Ids{kAb}));
  Vocab no_abc = SpmVocab({{"a", -2.0f}, {"b", -2.0f}, {"c", -2.0f}, {"ab", -1.0f}, {"bc", -0.5f}});
  auto t2 = MakeNoPrefix(no_abc);
  ASSERT_TRUE(t2);
  EXPECT_EQ(t2->Encode("abc", false, false), (Ids{259, 263}));  // a, bc
}

TEST(SpmTokenizerTest, EqualScoresMergeLeftmostFirst) {
  auto t = MakeNoPrefix();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("aaa", false, false), (Ids{kAa, kA}));
  EXPECT_EQ(t->Encode("aaaa", false, false), (Ids{kAa, kAa}));
}

TEST(SpmTokenizerTest, SpacesAreEscapedAndPrefixed) {
  auto plain = MakeNoPrefix();
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->Encode("a b", false, false), (Ids{kA, kSp, kB}));
  auto t = Make(Base());
  ASSERT_TRUE(t);
  // add_space_prefix (default for llama): "a" -> "▁a".
  EXPECT_EQ(t->Encode("a", false, false), (Ids{kSpA}));
  // "▁ab": "ab" (-1.0) merges before "▁a" (-1.5).
  EXPECT_EQ(t->Encode("ab", false, false), (Ids{kSp, kAb}));
}

TEST(SpmTokenizerTest, ByteFallbackForUnknownCharacters) {
  auto t = MakeNoPrefix();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("\xC3\xA9", false, false), (Ids{Byte(0xC3), Byte(0xA9)}));  // é
  EXPECT_EQ(t->Decode(Ids{Byte(0xC3), Byte(0xA9)}, false), "\xC3\xA9");
  EXPECT_EQ(t->Encode("a\xF0\x9F\xA6\x99", false, false),
            (Ids{kA, Byte(0xF0), Byte(0x9F), Byte(0xA6), Byte(0x99)}));
}

TEST(SpmTokenizerTest, ByteFallbackUsesUnkWithoutByteTokens) {
  Vocab v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>", kSpace, "a"};
  v.token_types = {2, 3, 3, 1, 1};
  v.unk = 0;
  v.add_space_prefix = false;
  auto t = Make(v);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("a\xC3\xA9", false, false), (Ids{4, 0, 0}));
  v.unk = kNoToken;
  auto t2 = Make(v);
  ASSERT_TRUE(t2);
  EXPECT_EQ(t2->Encode("a\xC3\xA9", false, false), (Ids{4}));  // no way to encode: dropped
}

TEST(SpmTokenizerTest, InvalidUtf8RoundTripsThroughBytes) {
  auto t = MakeNoPrefix();
  ASSERT_TRUE(t);
  const std::string bad =
      "a\x80"
      "b\xFF";
  const Ids ids = t->Encode(bad, false, false);
  EXPECT_EQ(ids, (Ids{kA, Byte(0x80), kB, Byte(0xFF)}));
  EXPECT_EQ(t->Decode(ids, false), bad);
  // A lead byte swallows the bytes it announces (llama.cpp splits by the lead byte's length).
  EXPECT_EQ(t->Encode("\xE2"
                      "ab",
                      false, false),
            (Ids{Byte(0xE2), Byte('a'), Byte('b')}));
  EXPECT_EQ(t->Decode(t->Encode("\xE2"
                                "ab",
                                false, false),
                      false),
            "\xE2"
            "ab");
  // A byte token alone decodes to that byte, even if it is not valid UTF-8 by itself.
  EXPECT_EQ(t->Decode(Ids{Byte(0xC3)}, false), "\xC3");
}

TEST(SpmTokenizerTest, EmptyInput) {
  auto t = Make(Base());
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->Encode("", false, false).empty());
  EXPECT_TRUE(t->Encode("", false, true).empty());
  EXPECT_EQ(t->Encode("", true, false), (Ids{1}));  // add_bos (llama default)
  EXPECT_EQ(t->Decode(Ids{}, false), "");
}

TEST(SpmTokenizerTest, AddSpecialAddsBosAndEos) {
  Vocab v = Base();
  auto t = Make(v);
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->special().add_bos);
  EXPECT_FALSE(t->special().add_eos);
  EXPECT_EQ(t->Encode("a", true, false), (Ids{1, kSpA}));
  v.add_bos = false;
  v.add_eos = true;
  auto t2 = Make(v);
  ASSERT_TRUE(t2);
  EXPECT_EQ(t2->Encode("a", true, false), (Ids{kSpA, 2}));
  EXPECT_EQ(t2->Encode("a", false, false), (Ids{kSpA}));
}

TEST(SpmTokenizerTest, DecodeRemovesThePrefixSpaceOfTheFirstPieceOnly) {
  auto t = Make(Base());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Decode(Ids{kSpA}, false), "a");
  EXPECT_EQ(t->Decode(Ids{kA, kSpA}, false), "a a");
  EXPECT_EQ(t->Decode(Ids{kSp, kSpA}, false), " a");
  EXPECT_EQ(t->Decode(t->Encode(" a", false, false), false), " a");
  // As llama.cpp: a leading control token takes the place of the first piece, so the space
  // after it stays (also when the control token itself is skipped).
  EXPECT_EQ(t->Decode(Ids{1, kSpA, 2}, false), "<s> a</s>");
  EXPECT_EQ(t->Decode(Ids{1, kSpA, 2}, true), " a");
  auto plain = MakeNoPrefix();
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->Decode(Ids{kSpA}, false), " a");
}

// Generated text continues a prompt: its first word keeps the space (llama2.c decode(prev, tok)
// strips it only after BOS), so prompt + continuation is the text of the whole sequence.
TEST(SpmTokenizerTest, DecodeContinuationKeepsTheSpaceUnlessAfterBos) {
  auto t = Make(Base());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->DecodeContinuation(kA, Ids{kSpA, kA}, false), " aa");
  EXPECT_EQ(t->DecodeContinuation(kSpA, Ids{kSpA}, true), " a");
  EXPECT_EQ(t->DecodeContinuation(1, Ids{kSpA, kSpA}, false), "a a");  // after BOS
  EXPECT_EQ(t->DecodeContinuation(kNoToken, Ids{kSpA}, false), "a");   // nothing before
  EXPECT_EQ(t->DecodeContinuation(kA, Ids{}, false), "");
  const Ids whole{kA, kSpA, kSpA};
  EXPECT_EQ(t->Decode(Ids{kA}, false) + t->DecodeContinuation(kA, Ids{kSpA, kSpA}, false),
            t->Decode(whole, false));
  auto plain = MakeNoPrefix();
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->DecodeContinuation(1, Ids{kSpA}, false), " a");
}

TEST(SpmTokenizerTest, DecodeSkipsOutOfRangeIds) {
  auto t = MakeNoPrefix();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Decode(Ids{-5, kA, 1 << 30, kB, kNoToken}, false), "ab");
}

TEST(SpmTokenizerTest, SpecialTokensParsedOnlyWhenAsked) {
  Vocab v = Base();
  const TokenId im_end = AddToken(&v, "<|im_end|>", TokenType::kControl);
  v.add_space_prefix = false;
  auto t = Make(v);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("a<|im_end|>b", false, true), (Ids{kA, im_end, kB}));
  const Ids plain = t->Encode("a<|im_end|>b", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), im_end), 0);
  EXPECT_GT(plain.size(), 3u);
  EXPECT_EQ(t->Decode(plain, false), "a<|im_end|>b");
  // The unknown token is special too: split out only when parse_special.
  EXPECT_EQ(t->Encode("<unk>", false, true), (Ids{0}));
  EXPECT_NE(t->Encode("<unk>", false, false), (Ids{0}));
}

TEST(SpmTokenizerTest, UserDefinedTokensAreAlwaysSplitOut) {
  Vocab v = Base();
  const TokenId tool = AddToken(&v, "<tool>", TokenType::kUserDefined);
  v.add_space_prefix = false;
  auto t = Make(v);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("a<tool>b", false, false), (Ids{kA, tool, kB}));
  EXPECT_EQ(t->Encode("a<tool>b", false, true), (Ids{kA, tool, kB}));
  // User-defined tokens decode to their text even with skip_special (they are not control).
  EXPECT_EQ(t->Decode(Ids{kA, tool, kB}, true), "a<tool>b");
}

TEST(SpmTokenizerTest, TextAfterASpecialTokenGetsTheSpacePrefix) {
  auto t = Make(Base());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("<s>a", false, true), (Ids{1, kSpA}));
  EXPECT_EQ(t->Encode("a</s>a", false, true), (Ids{kSpA, 2, kSpA}));
}

TEST(SpmTokenizerTest, LongerSpecialTokensWin) {
  Vocab v = Base();
  const TokenId shorter = AddToken(&v, "<|x|>", TokenType::kControl);
  const TokenId longer = AddToken(&v, "<|x|>ab", TokenType::kControl);
  v.add_space_prefix = false;
  auto t = Make(v);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("<|x|>ab<|x|>a", false, true), (Ids{longer, shorter, kA}));
}

TEST(SpmTokenizerTest, Phi3SpecialTokensSwallowWhitespaceToTheRight) {
  Vocab v = Base();
  const TokenId end = AddToken(&v, "<|end|>", TokenType::kControl);
  auto plain = Make(v);
  ASSERT_TRUE(plain);
  v.name = "Phi3";  // llama.cpp keys the rstrip attribute on general.name
  auto phi3 = Make(v);
  ASSERT_TRUE(phi3);
  EXPECT_EQ(phi3->Encode("<|end|>\n  a", false, true), (Ids{end, kSpA}));
  const Ids kept = plain->Encode("<|end|>\n  a", false, true);
  ASSERT_GT(kept.size(), 2u);
  EXPECT_EQ(kept.front(), end);
  EXPECT_EQ(plain->Decode(kept, false), "<|end|> \n  a");  // prefix space after the token
}

TEST(SpmTokenizerTest, AccessorsAndLookups) {
  auto t = Make(Base());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->vocab_size(), 268);
  EXPECT_EQ(t->model_name(), "llama");
  EXPECT_EQ(t->pre_name(), "");
  EXPECT_EQ(t->TokenText(kAbc), "abc");
  EXPECT_EQ(t->TokenText(-1), "");
  EXPECT_EQ(t->TokenText(268), "");
  EXPECT_TRUE(t->IsControl(1));
  EXPECT_FALSE(t->IsControl(kA));
  EXPECT_FALSE(t->IsControl(-3));
  EXPECT_FALSE(t->IsControl(100000));
  EXPECT_EQ(t->FindToken("abc"), kAbc);
  EXPECT_EQ(t->FindToken("zzz"), kNoToken);
  EXPECT_EQ(t->special().bos, 1);
  EXPECT_EQ(t->special().eos, 2);
  EXPECT_EQ(t->special().unk, 0);
  EXPECT_EQ(t->special().mask, kNoToken);
  EXPECT_EQ(t->special().eot, kNoToken);
  EXPECT_TRUE(t->IsEog(2));
  EXPECT_FALSE(t->IsEog(kA));
  EXPECT_FALSE(t->IsEog(kNoToken));
}

TEST(SpmTokenizerTest, EotFoundByTextAndMarkedControl) {
  Vocab v = Base();
  const TokenId endoftext = AddToken(&v, "<|endoftext|>", TokenType::kNormal);
  const TokenId im_end = AddToken(&v, "<|im_end|>", TokenType::kNormal);
  auto t = Make(v);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->special().eot, im_end);  // "<|im_end|>" is tried before "<|endoftext|>"
  EXPECT_TRUE(t->IsControl(im_end));
  EXPECT_FALSE(t->IsControl(endoftext));
  EXPECT_TRUE(t->IsEog(im_end));
  v.eot = endoftext;  // an explicit tokenizer.ggml.eot_token_id wins
  auto t2 = Make(v);
  ASSERT_TRUE(t2);
  EXPECT_EQ(t2->special().eot, endoftext);
}

TEST(SpmTokenizerTest, MaskAndPadIdsAreKept) {
  Vocab v = Base();
  const TokenId mask = AddToken(&v, "<|mdm_mask|>", TokenType::kControl);
  v.mask = mask;
  v.pad = 2;
  auto t = Make(v);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->special().mask, mask);
  EXPECT_EQ(t->special().pad, 2);
  EXPECT_EQ(t->Decode(Ids{mask, kSpA}, true), " a");
}

TEST(SpmTokenizerTest, DecodeOfUnusualTokenTypes) {
  Vocab v = Base();
  const TokenId bad_byte = AddToken(&v, "<0xZZ>", TokenType::kByte);
  const TokenId lower_byte = AddToken(&v, "<0x4a>", TokenType::kByte);
  const TokenId unused = AddToken(&v, "unused", TokenType::kUnused);
  const TokenId undefined = AddToken(&v, "undefined", TokenType::kUndefined);
  v.add_space_prefix = false;
  auto t = Make(v);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Decode(Ids{bad_byte}, false), "<0xZZ>");  // not a byte: its text
  EXPECT_EQ(t->Decode(Ids{lower_byte}, false), "J");
  // Unused and undefined tokens have no text (llama.cpp token_to_piece).
  EXPECT_EQ(t->Decode(Ids{kA, unused, undefined, kB}, false), "ab");
}

TEST(SpmTokenizerTest, EmptyTokenTextsAreRenamedAndNeverMatch) {
  Vocab v = Base();
  const TokenId empty = AddToken(&v, "", TokenType::kNormal);
  auto t = Make(v);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->TokenText(empty), "[EMPTY_" + std::to_string(empty) + "]");
  EXPECT_TRUE(t->Encode("", false, false).empty());
}

// ---- vocabulary errors (shared by both tokenizer kinds) ----

void ExpectError(Vocab v, StatusCode code, std::string_view needle) {
  auto t = Tokenizer::FromVocab(std::move(v));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), code) << t.status().ToString();
  EXPECT_NE(t.status().message().find(needle), std::string::npos) << t.status().ToString();
}

TEST(VocabErrorTest, MismatchedArrayLengths) {
  Vocab v = Base();
  v.scores.pop_back();
  ExpectError(v, StatusCode::kDataLoss, "tokenizer.ggml.scores");
  v = Base();
  v.token_types.push_back(1);
  ExpectError(v, StatusCode::kDataLoss, "tokenizer.ggml.token_type");
}

TEST(VocabErrorTest, BadTokenType) {
  Vocab v = Base();
  v.token_types[5] = 9;
  ExpectError(v, StatusCode::kDataLoss, "tokenizer.ggml.token_type[5]");
  v.token_types[5] = -1;
  ExpectError(v, StatusCode::kDataLoss, "tokenizer.ggml.token_type[5]");
}

TEST(VocabErrorTest, DuplicateToken) {
  Vocab v = Base();
  AddToken(&v, "abc", TokenType::kNormal);
  ExpectError(v, StatusCode::kDataLoss, "duplicate token 'abc'");
}

TEST(VocabErrorTest, SpecialIdsOutOfRange) {
  Vocab v = Base();
  v.bos = 999;
  ExpectError(v, StatusCode::kDataLoss, "tokenizer.ggml.bos_token_id = 999");
  v = Base();
  v.eos = -7;
  ExpectError(v, StatusCode::kDataLoss, "tokenizer.ggml.eos_token_id");
  v = Base();
  v.mask = 268;
  ExpectError(v, StatusCode::kDataLoss, "tokenizer.ggml.mask_token_id");
  v = Base();
  v.eot = 268;
  ExpectError(v, StatusCode::kDataLoss, "tokenizer.ggml.eot_token_id");
  v = Base();
  v.pad = 100000;
  ExpectError(v, StatusCode::kDataLoss, "tokenizer.ggml.padding_token_id");
  v = Base();
  v.unk = 268;
  ExpectError(v, StatusCode::kDataLoss, "tokenizer.ggml.unknown_token_id");
}

TEST(VocabErrorTest, AddSpecialWithoutTheId) {
  Vocab v = Base();
  v.bos = kNoToken;
  v.add_bos = true;
  ExpectError(v, StatusCode::kDataLoss, "tokenizer.ggml.add_bos_token");
  v = Base();
  v.eos = kNoToken;
  v.add_eos = true;
  ExpectError(v, StatusCode::kDataLoss, "tokenizer.ggml.add_eos_token");
  // The llama default (add_bos) without a bos id just turns off.
  v = Base();
  v.bos = kNoToken;
  auto t = Make(v);
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->special().add_bos);
  EXPECT_EQ(t->Encode("a", true, false), (Ids{kSpA}));
}

TEST(VocabErrorTest, ModelAndTokens) {
  Vocab v = Base();
  v.model = "bert";
  ExpectError(v, StatusCode::kUnimplemented, "'bert'");
  v.model = "";
  ExpectError(v, StatusCode::kNotFound, "tokenizer.ggml.model");
  v = Vocab();
  v.model = "llama";
  ExpectError(v, StatusCode::kDataLoss, "tokenizer.ggml.tokens is empty");
}

}  // namespace
}  // namespace unmask
