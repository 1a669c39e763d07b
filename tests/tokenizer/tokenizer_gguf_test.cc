// Tokenizer::FromGguf on GGUF images written in memory: key handling and errors.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "tokenizer/tokenizer.h"

namespace unmask {
namespace {

using gguf::GgufWriter;
using gguf::Value;

// A small SentencePiece vocabulary: <unk> <s> </s> ▁ a b ▁a.
GgufWriter SpmWriter() {
  GgufWriter w;
  w.Set("general.architecture", Value::String("llama"));
  w.Set("tokenizer.ggml.model", Value::String("llama"));
  w.Set("tokenizer.ggml.tokens",
        Value::StringArray({"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b",
                            "\xE2\x96\x81"
                            "a"}));
  w.Set("tokenizer.ggml.scores", Value::F32Array({0, 0, 0, -1, -2, -2, -1}));
  w.Set("tokenizer.ggml.token_type", Value::I32Array({2, 3, 3, 1, 1, 1, 1}));
  w.Set("tokenizer.ggml.bos_token_id", Value::U32(1));
  w.Set("tokenizer.ggml.eos_token_id", Value::U32(2));
  w.Set("tokenizer.ggml.unknown_token_id", Value::U32(0));
  return w;
}

StatusOr<std::unique_ptr<Tokenizer>> Load(const GgufWriter& w) {
  auto bytes = w.WriteToBytes();
  if (!bytes.ok()) return bytes.status();
  auto file = gguf::GgufFile::FromBytes(std::move(bytes).value(), "test.gguf");
  if (!file.ok()) return file.status();
  return Tokenizer::FromGguf(**file);
}

void ExpectError(const GgufWriter& w, StatusCode code, std::string_view needle) {
  auto t = Load(w);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), code) << t.status().ToString();
  EXPECT_NE(t.status().message().find(needle), std::string::npos) << t.status().ToString();
}

TEST(TokenizerGgufTest, LoadsASentencePieceVocabulary) {
  GgufWriter w = SpmWriter();
  w.Set("tokenizer.ggml.padding_token_id", Value::U32(0xFFFFFFFFu));  // "none"
  w.Set("tokenizer.ggml.mask_token_id", Value::I32(-1));              // "none"
  w.Set("tokenizer.ggml.eot_token_id", Value::U32(2));
  w.Set("tokenizer.ggml.add_eos_token", Value::Bool(true));
  auto t = Load(w);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const Tokenizer& tok = **t;
  EXPECT_EQ(tok.vocab_size(), 7);
  EXPECT_EQ(tok.special().pad, kNoToken);
  EXPECT_EQ(tok.special().mask, kNoToken);
  EXPECT_EQ(tok.special().eot, 2);
  EXPECT_TRUE(tok.special().add_bos);
  EXPECT_TRUE(tok.special().add_eos);
  EXPECT_EQ(tok.Encode("a b", true, false), (std::vector<TokenId>{1, 6, 3, 5, 2}));
  EXPECT_EQ(tok.Decode(std::vector<TokenId>{6, 3, 5}, false), "a b");
  EXPECT_EQ(tok.chat_template(), "");
}

TEST(TokenizerGgufTest, AddSpacePrefixKey) {
  GgufWriter w = SpmWriter();
  w.Set("tokenizer.ggml.add_space_prefix", Value::Bool(false));
  auto t = Load(w);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->Encode("a", false, false), (std::vector<TokenId>{4}));
}

TEST(TokenizerGgufTest, MissingRequiredKeys) {
  GgufWriter no_model;
  no_model.Set("tokenizer.ggml.tokens", Value::StringArray({"a"}));
  ExpectError(no_model, StatusCode::kNotFound, "tokenizer.ggml.model");
  GgufWriter no_tokens;
  no_tokens.Set("tokenizer.ggml.model", Value::String("llama"));
  ExpectError(no_tokens, StatusCode::kNotFound, "tokenizer.ggml.tokens");
  GgufWriter no_merges;
  no_merges.Set("tokenizer.ggml.model", Value::String("gpt2"));
  no_merges.Set("tokenizer.ggml.pre", Value::String("gpt-2"));
  no_merges.Set("tokenizer.ggml.tokens", Value::StringArray({"a", "b"}));
  ExpectError(no_merges, StatusCode::kNotFound, "tokenizer.ggml.merges");
}

TEST(TokenizerGgufTest, WrongTypesAreDataLoss) {
  GgufWriter w = SpmWriter();
  w.Set("tokenizer.ggml.tokens", Value::I32Array({1, 2, 3}));
  ExpectError(w, StatusCode::kDataLoss, "tokenizer.ggml.tokens");
  w = SpmWriter();
  w.Set("tokenizer.ggml.model", Value::U32(3));
  ExpectError(w, StatusCode::kDataLoss, "tokenizer.ggml.model");
  w = SpmWriter();
  w.Set("tokenizer.ggml.bos_token_id", Value::String("1"));
  ExpectError(w, StatusCode::kDataLoss, "tokenizer.ggml.bos_token_id");
  w = SpmWriter();
  w.Set("tokenizer.ggml.add_bos_token", Value::U32(1));
  ExpectError(w, StatusCode::kDataLoss, "tokenizer.ggml.add_bos_token");
}

TEST(TokenizerGgufTest, TokenTypeOutsideInt32IsDataLoss) {
  GgufWriter w = SpmWriter();
  Value types;
  types.type = gguf::ValueType::kArray;
  types.array_type = gguf::ValueType::kInt64;
  types.ints = {2, 3, 3, 1, int64_t{1} << 40, 1, 1};
  w.Set("tokenizer.ggml.token_type", types);
  ExpectError(w, StatusCode::kDataLoss, "tokenizer.ggml.token_type[4]");
}

TEST(TokenizerGgufTest, IntegerScoresAreAccepted) {
  GgufWriter w = SpmWriter();
  w.Set("tokenizer.ggml.scores", Value::I32Array({0, 0, 0, -1, -2, -2, -1}));
  auto t = Load(w);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->Encode("a", false, false), (std::vector<TokenId>{6}));
}

TEST(TokenizerGgufTest, SpecialIdOutOfRangeNamesTheKey) {
  GgufWriter w = SpmWriter();
  w.Set("tokenizer.ggml.eos_token_id", Value::U32(7));
  ExpectError(w, StatusCode::kDataLoss, "tokenizer.ggml.eos_token_id = 7");
  w = SpmWriter();
  w.Set("tokenizer.ggml.mask_token_id", Value::I32(-2));
  ExpectError(w, StatusCode::kDataLoss, "tokenizer.ggml.mask_token_id");
}

TEST(TokenizerGgufTest, MismatchedArraysAreDataLoss) {
  GgufWriter w = SpmWriter();
  w.Set("tokenizer.ggml.scores", Value::F32Array({0, 0}));
  ExpectError(w, StatusCode::kDataLoss, "tokenizer.ggml.scores");
  w = SpmWriter();
  w.Set("tokenizer.ggml.token_type", Value::I32Array({1}));
  ExpectError(w, StatusCode::kDataLoss, "tokenizer.ggml.token_type");
}

TEST(TokenizerGgufTest, ErrorsNameTheFile) {
  GgufWriter w = SpmWriter();
  w.Set("tokenizer.ggml.model", Value::String("t5"));
  ExpectError(w, StatusCode::kUnimplemented, "test.gguf");
}

TEST(TokenizerGgufTest, ChatTemplateUsesVocabularyTokenTexts) {
  GgufWriter w = SpmWriter();
  w.Set("tokenizer.chat_template",
        Value::String("{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m['content'] }}"
                      "{% endfor %}{% if add_generation_prompt %}>{% endif %}{{ eos_token }}"));
  auto t = Load(w);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const std::vector<ChatMessage> messages = {{"user", "hi"}, {"assistant", "yo"}};
  auto text = (*t)->ApplyChatTemplate(messages, true);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "<s>[user]hi[assistant]yo></s>");
  auto no_prompt = (*t)->ApplyChatTemplate(messages, false);
  ASSERT_TRUE(no_prompt.ok());
  EXPECT_EQ(*no_prompt, "<s>[user]hi[assistant]yo</s>");
}

TEST(TokenizerGgufTest, NoChatTemplateIsFailedPrecondition) {
  auto t = Load(SpmWriter());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const std::vector<ChatMessage> messages = {{"user", "hi"}};
  auto text = (*t)->ApplyChatTemplate(messages, true);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kFailedPrecondition);
}

TEST(TokenizerGgufTest, BadChatTemplateIsReportedNotFatal) {
  GgufWriter w = SpmWriter();
  w.Set("tokenizer.chat_template", Value::String("{% macro m() %}{% endmacro %}"));
  auto t = Load(w);
  ASSERT_TRUE(t.ok()) << t.status().ToString();  // loading does not need the template
  const std::vector<ChatMessage> messages = {{"user", "hi"}};
  EXPECT_EQ((*t)->ApplyChatTemplate(messages, true).status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace unmask
