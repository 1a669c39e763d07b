// Small in-memory vocabularies for the tokenizer unit tests.
#ifndef UNMASK_TESTS_TOKENIZER_TOY_VOCABS_H_
#define UNMASK_TESTS_TOKENIZER_TOY_VOCABS_H_

#include <cstdio>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_util.h"

namespace unmask::testing {

inline constexpr const char* kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's escaped space

// SentencePiece vocabulary: 0 <unk> (unknown), 1 <s>, 2 </s> (control), 3..258 <0x00>..<0xFF>
// (byte), then `pieces` as normal tokens with the given scores (ids from 259 in order).
inline Vocab SpmVocab(std::initializer_list<std::pair<std::string, float>> pieces) {
  Vocab v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.scores = {0, 0, 0};
  v.token_types = {static_cast<int32_t>(TokenType::kUnknown),
                   static_cast<int32_t>(TokenType::kControl),
                   static_cast<int32_t>(TokenType::kControl)};
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
    v.tokens.push_back(hex);
    v.scores.push_back(0);
    v.token_types.push_back(static_cast<int32_t>(TokenType::kByte));
  }
  for (const auto& [piece, score] : pieces) {
    v.tokens.push_back(piece);
    v.scores.push_back(score);
    v.token_types.push_back(static_cast<int32_t>(TokenType::kNormal));
  }
  v.unk = 0;
  v.bos = 1;
  v.eos = 2;
  return v;
}

// Adds a token of `type` and returns its id.
inline TokenId AddToken(Vocab* v, std::string text, TokenType type, float score = 0) {
  v->tokens.push_back(std::move(text));
  if (!v->scores.empty()) v->scores.push_back(score);
  if (!v->token_types.empty()) v->token_types.push_back(static_cast<int32_t>(type));
  return static_cast<TokenId>(v->tokens.size() - 1);
}

// The GPT-2 byte-level form of `text` (each byte replaced by its printable stand-in).
inline std::string ByteLevel(std::string_view text) {
  std::string out;
  for (char c : text) out += unicode::ByteToUnicode(static_cast<uint8_t>(c));
  return out;
}

// Byte-level BPE vocabulary: ids 0..255 are the byte stand-ins in byte order (so the id of a
// single byte b is b), then one token per merge result, in merge order, then `extra` tokens.
// `merges` are given in plain text ("a b" -> ByteLevel("a") + " " + ByteLevel("b")).
inline Vocab BpeVocab(std::string pre,
                      std::initializer_list<std::pair<std::string, std::string>> merges,
                      std::initializer_list<std::string> extra = {}) {
  Vocab v;
  v.model = "gpt2";
  v.pre = std::move(pre);
  for (int b = 0; b < 256; ++b) v.tokens.push_back(unicode::ByteToUnicode(static_cast<uint8_t>(b)));
  for (const auto& [left, right] : merges) {
    v.merges.push_back(ByteLevel(left) + " " + ByteLevel(right));
    const std::string merged = ByteLevel(left + right);
    bool exists = false;
    for (const std::string& t : v.tokens) exists = exists || t == merged;
    if (!exists) v.tokens.push_back(merged);
  }
  for (const std::string& e : extra) v.tokens.push_back(ByteLevel(e));
  v.token_types.assign(v.tokens.size(), static_cast<int32_t>(TokenType::kNormal));
  return v;
}

}  // namespace unmask::testing

#endif  // UNMASK_TESTS_TOKENIZER_TOY_VOCABS_H_
