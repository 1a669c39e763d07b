// Vocabulary checks (Tokenizer::FromVocab) and the parts shared by both algorithms: special-token
// partition, decoding, lookups. Reference: llama.cpp src/llama-vocab.cpp (llama_vocab::impl::load,
// tokenizer_st_partition, token_to_piece, detokenize).
#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode_util.h"

namespace unmask {
namespace {

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

// Texts llama.cpp recognises as end-of-turn when tokenizer.ggml.eot_token_id is absent, in the
// order tried here (llama.cpp walks an unordered map, so its pick among several is unspecified).
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>",      "<|im_end|>", "<|end|>", "<end_of_turn>",         "<|endoftext|>",
    "<|end_of_text|>", "<EOT>",      "_<EOT>",  "<｜end▁of▁sentence｜>", "<end_of_utterance>",
};

uint32_t AttrOfType(int32_t type) {
  switch (static_cast<TokenType>(type)) {
    case TokenType::kNormal:
      return kAttrNormal;
    case TokenType::kUnknown:
      return kAttrUnknown;
    case TokenType::kControl:
      return kAttrControl;
    case TokenType::kUserDefined:
      return kAttrUserDefined;
    case TokenType::kUnused:
      return kAttrUnused;
    case TokenType::kByte:
      return kAttrByte;
    case TokenType::kUndefined:
      break;
  }
  return kAttrUndefined;
}

// Checks one special id: kNoToken or in [0, num_tokens).
Status CheckSpecialId(TokenId id, std::string_view key, size_t num_tokens) {
  if (id == kNoToken || (id >= 0 && static_cast<size_t>(id) < num_tokens)) return Status::Ok();
  return DataLossError(std::string(key) + " = " + std::to_string(id) +
                       " is out of range (the vocabulary has " + std::to_string(num_tokens) +
                       " tokens)");
}

// Parses the byte value of a "<0xXX>" token; -1 when `text` is not of that form.
int ParseByteToken(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    int digit = 0;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return -1;
    }
    value = value * 16 + digit;
  }
  return value;
}

// C-locale isspace, as llama.cpp's lstrip/rstrip handling.
bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// clean_up_tokenization_spaces as llama.cpp detokenize (three passes over bytes).
void CleanSpaces(std::string* text) {
  std::string& t = *text;
  if (t.empty()) return;
  // " ?", " !", " .", " ,": drop the space.
  std::string a;
  a.reserve(t.size());
  a.push_back(t[0]);
  for (size_t i = 1; i < t.size(); ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) a.pop_back();
    a.push_back(x);
  }
  // " ' " -> "'": a single apostrophe between spaces loses both spaces. The skipped space is
  // overwritten with NUL in `a`, as llama.cpp does in place, so it no longer counts as a space.
  std::string b;
  b.reserve(a.size());
  b.push_back(a[0]);
  for (size_t i = 1; i < a.size(); ++i) {
    const char x = a[i];
    if (x == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ') {
      b.pop_back();
      a[++i] = '\0';
    }
    b.push_back(x);
  }
  // " 's", " 'm", " 're", " 've": drop the space ("'t", "'d", "'ll" keep it).
  std::string c;
  c.reserve(b.size());
  c.push_back(b[0]);
  for (size_t i = 1; i < b.size(); ++i) {
    const char x = b[i];
    if (b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
      const char x1 = b[i + 1];
      if (x1 == 's' || x1 == 'm') {
        c.pop_back();
      } else if (i + 2 < b.size()) {
        const char x2 = b[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) c.pop_back();
      }
    }
    c.push_back(x);
  }
  t.swap(c);
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromVocab(Vocab vocab) {
  if (vocab.model.empty()) return NotFoundError("tokenizer.ggml.model is missing");
  if (vocab.model != "llama" && vocab.model != "gpt2") {
    return UnimplementedError("unsupported tokenizer.ggml.model " + Quote(vocab.model) +
                              " (supported: 'llama', 'gpt2')");
  }
  const size_t n = vocab.tokens.size();
  if (n == 0) return DataLossError("tokenizer.ggml.tokens is empty");
  if (n > static_cast<size_t>(INT32_MAX)) return DataLossError("tokenizer.ggml.tokens is too long");
  if (!vocab.scores.empty() && vocab.scores.size() != n) {
    return DataLossError("tokenizer.ggml.scores has " + std::to_string(vocab.scores.size()) +
                         " entries but tokenizer.ggml.tokens has " + std::to_string(n));
  }
  if (!vocab.token_types.empty() && vocab.token_types.size() != n) {
    return DataLossError("tokenizer.ggml.token_type has " +
                         std::to_string(vocab.token_types.size()) +
                         " entries but tokenizer.ggml.tokens has " + std::to_string(n));
  }
  for (size_t i = 0; i < vocab.token_types.size(); ++i) {
    const int32_t type = vocab.token_types[i];
    if (type < 0 || type > static_cast<int32_t>(TokenType::kByte)) {
      return DataLossError("tokenizer.ggml.token_type[" + std::to_string(i) +
                           "] = " + std::to_string(type) + " is not a token type (0..6)");
    }
  }
  const std::pair<TokenId, std::string_view> special_ids[] = {
      {vocab.bos, "tokenizer.ggml.bos_token_id"},   {vocab.eos, "tokenizer.ggml.eos_token_id"},
      {vocab.eot, "tokenizer.ggml.eot_token_id"},   {vocab.pad, "tokenizer.ggml.padding_token_id"},
      {vocab.mask, "tokenizer.ggml.mask_token_id"}, {vocab.unk, "tokenizer.ggml.unknown_token_id"},
  };
  for (const auto& [id, key] : special_ids) {
    UNMASK_RETURN_IF_ERROR(CheckSpecialId(id, key, n));
  }

  if (vocab.added_tokens && vocab.model != "gpt2") {
    return UnimplementedError(
        "added_tokens (Hugging Face rules) apply to byte-level BPE "
        "(tokenizer.ggml.model 'gpt2') only");
  }
  if (!vocab.normalizer.empty() && vocab.normalizer != "nfc") {
    return UnimplementedError("unsupported normalizer " + Quote(vocab.normalizer) +
                              " (supported: '' (none), 'nfc')");
  }

  if (vocab.model == "llama") {
    if (vocab.byte_level_prefix_space || !vocab.pre_patterns.empty()) {
      return UnimplementedError(
          "byte_level_prefix_space and pre_patterns apply to tokenizer.ggml.model 'gpt2' only");
    }
    return SpmTokenizer::Create(std::move(vocab));
  }

  // An empty merge list is valid (a pure byte-level vocabulary); a missing key is checked by
  // FromGguf, as llama.cpp requires the key to exist.
  PreTokenizerSpec spec;
  if (vocab.pre_patterns.empty()) {
    UNMASK_ASSIGN_OR_RETURN(spec, FindPreTokenizerSpec(vocab.pre));
  } else {
    // The vocabulary's own patterns; the flags of a known name, else none.
    StatusOr<PreTokenizerSpec> named = FindPreTokenizerSpec(vocab.pre);
    if (!vocab.pre.empty() && named.ok()) {
      spec = std::move(named).value();
    } else {
      spec.name = "custom";
      spec.clean_spaces = false;
    }
    spec.patterns = vocab.pre_patterns;
  }
  spec.clean_spaces = vocab.clean_spaces.value_or(spec.clean_spaces);
  spec.ignore_merges = vocab.ignore_merges.value_or(spec.ignore_merges);
  UNMASK_ASSIGN_OR_RETURN(PreTokenizer pre_tokenizer, PreTokenizer::Compile(spec.patterns));
  return BpeTokenizer::Create(std::move(vocab), std::move(spec), std::move(pre_tokenizer));
}

Status VocabTokenizer::InitBase(Vocab&& vocab, bool default_add_bos, bool default_add_space_prefix,
                                bool clean_spaces) {
  model_ = std::move(vocab.model);
  nfc_ = vocab.normalizer == "nfc";
  add_space_prefix_ = vocab.add_space_prefix.value_or(default_add_space_prefix);
  clean_spaces_ = clean_spaces;
  chat_template_ = std::move(vocab.chat_template);
  const size_t n = vocab.tokens.size();
  tokens_ = std::move(vocab.tokens);
  token_to_id_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    // llama.cpp renames empty tokens so that they stay unique and never match text.
    if (tokens_[i].empty()) tokens_[i] = "[EMPTY_" + std::to_string(i) + "]";
    const auto [it, inserted] = token_to_id_.emplace(tokens_[i], static_cast<TokenId>(i));
    if (!inserted) {
      return DataLossError("tokenizer.ggml.tokens has a duplicate token " + Quote(tokens_[i]) +
                           " at ids " + std::to_string(it->second) + " and " + std::to_string(i));
    }
  }
  scores_ = vocab.scores.empty() ? std::vector<float>(n, 0.0f) : std::move(vocab.scores);
  attrs_.assign(n, kAttrNormal);
  for (size_t i = 0; i < vocab.token_types.size(); ++i) {
    attrs_[i] = AttrOfType(vocab.token_types[i]);
  }
  // Before the end-of-turn lookup below can mark a token as control: `special` comes from the
  // types alone.
  if (vocab.added_tokens) UNMASK_RETURN_IF_ERROR(InitAddedTokens(*vocab.added_tokens));

  special_.bos = vocab.bos;
  special_.eos = vocab.eos;
  special_.eot = vocab.eot;
  special_.pad = vocab.pad;
  special_.mask = vocab.mask;
  special_.unk = vocab.unk;
  // add_bos/add_eos: an explicit true needs the id; a default true without the id turns off.
  if (vocab.add_bos.value_or(false) && vocab.bos == kNoToken) {
    return DataLossError(
        "tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is not set");
  }
  if (vocab.add_eos.value_or(false) && vocab.eos == kNoToken) {
    return DataLossError(
        "tokenizer.ggml.add_eos_token is true but tokenizer.ggml.eos_token_id is not set");
  }
  special_.add_bos = vocab.add_bos.value_or(default_add_bos) && vocab.bos != kNoToken;
  special_.add_eos = vocab.add_eos.value_or(false);

  // End of turn by text (llama.cpp marks such a token as control).
  if (special_.eot == kNoToken) {
    for (std::string_view text : kEotTexts) {
      if (const TokenId id = FindToken(text); id != kNoToken) {
        special_.eot = id;
        break;
      }
    }
  }
  // Hugging Face vocabularies keep the file's notion of special (Decode skips exactly those).
  if (special_.eot != kNoToken && !hf_added_tokens_) attrs_[special_.eot] |= kAttrControl;

  // Phi-3 (llama.cpp keys this on general.name): special tokens swallow whitespace to their right.
  std::string name = vocab.name;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool phi3 =
      name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos;

  for (size_t id = 0; id < n; ++id) {
    if (attrs_[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) {
      special_cache_.push_back(static_cast<TokenId>(id));
    }
  }
  std::stable_sort(special_cache_.begin(), special_cache_.end(),
                   [&](TokenId a, TokenId b) { return tokens_[a].size() > tokens_[b].size(); });
  if (phi3) {
    for (TokenId id : special_cache_) attrs_[id] |= kAttrRstrip;
    if (const TokenId id = FindToken("</s>"); id != kNoToken) attrs_[id] |= kAttrRstrip;
    for (std::string_view text : {"<unk>", "<s>", "<|endoftext|>"}) {
      if (const TokenId id = FindToken(text); id != kNoToken) attrs_[id] &= ~kAttrRstrip;
    }
  }

  // SentencePiece byte fallback: "<0xXX>", else the single byte as a token, else unk.
  for (int b = 0; b < 256; ++b) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    const char hex[7] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>', 0};
    TokenId id = FindToken(hex);
    if (id == kNoToken) id = FindToken(std::string(1, static_cast<char>(b)));
    byte_tokens_[b] = id != kNoToken ? id : special_.unk;
  }
  return Status::Ok();
}

std::string_view VocabTokenizer::TokenText(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) return {};
  return tokens_[id];
}

bool VocabTokenizer::IsControl(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) return false;
  return (attrs_[id] & kAttrControl) != 0;
}

TokenId VocabTokenizer::FindToken(std::string_view text) const {
  const auto it = token_to_id_.find(text);
  return it == token_to_id_.end() ? kNoToken : it->second;
}

std::vector<Fragment> VocabTokenizer::Partition(std::string_view text, bool parse_special) const {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({kNoToken, 0, text.size()});
  std::vector<Fragment> next;
  for (const TokenId id : special_cache_) {
    const uint32_t attr = attrs_[id];
    if (!parse_special && (attr & (kAttrControl | kAttrUnknown))) continue;
    const std::string& token = tokens_[id];
    if (token.empty() || text.find(token) == std::string_view::npos) continue;
    next.clear();
    for (const Fragment& fragment : fragments) {
      if (fragment.token != kNoToken) {
        next.push_back(fragment);
        continue;
      }
      size_t offset = fragment.offset;
      size_t length = fragment.length;
      while (length > 0) {
        const size_t match = text.substr(offset, length).find(token);
        if (match == std::string_view::npos) {
          next.push_back({kNoToken, offset, length});
          break;
        }
        size_t left_length = match;
        if (attr & kAttrLstrip) {
          while (left_length > 0 && IsAsciiSpace(text[offset + left_length - 1])) --left_length;
        }
        if (left_length > 0) next.push_back({kNoToken, offset, left_length});
        next.push_back({id, 0, 0});
        size_t right_offset = offset + match + token.size();
        size_t right_length = offset + length - right_offset;
        if (attr & kAttrRstrip) {
          while (right_length > 0 && IsAsciiSpace(text[right_offset])) {
            ++right_offset;
            --right_length;
          }
        }
        offset = right_offset;
        length = right_length;
      }
    }
    fragments.swap(next);
  }
  return fragments;
}

std::vector<TokenId> VocabTokenizer::Encode(std::string_view text, bool add_special,
                                            bool parse_special) const {
  if (hf_added_tokens_) return EncodeWithAddedTokens(text, add_special, parse_special);
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && special_.add_bos) out.push_back(special_.bos);
  bool after_special = true;  // the start of the input counts as following a special token
  for (const Fragment& fragment : Partition(text, parse_special)) {
    if (fragment.token != kNoToken) {
      out.push_back(fragment.token);
      after_special = true;
    } else {
      const std::string_view raw = text.substr(fragment.offset, fragment.length);
      if (nfc_) {
        EncodeText(Normalize(unicode::Sanitize(raw)), after_special, &out);
      } else {
        EncodeText(raw, after_special, &out);
      }
      after_special = false;
    }
  }
  if (add_special && special_.add_eos) out.push_back(special_.eos);
  return out;
}

void VocabTokenizer::AppendPiece(TokenId id, bool render_special, std::string* out) const {
  if (hf_added_tokens_) {
    AppendHfPiece(id, render_special, out);
    return;
  }
  const uint32_t attr = attrs_[id];
  if (attr & (kAttrControl | kAttrUnknown)) {
    if (render_special) out->append(tokens_[id]);
    return;
  }
  if (attr & kAttrUserDefined) {
    out->append(tokens_[id]);
  } else if (attr & kAttrNormal) {
    AppendNormalPiece(tokens_[id], out);
  } else if (attr & kAttrByte) {
    const int byte = ParseByteToken(tokens_[id]);
    if (byte >= 0) {
      out->push_back(static_cast<char>(byte));
    } else {
      out->append(tokens_[id]);
    }
  }
  // Unused and undefined tokens have no text (llama.cpp token_to_piece returns 0 for them).
}

std::string VocabTokenizer::Decode(std::span<const TokenId> ids, bool skip_special) const {
  return DecodeImpl(ids, skip_special, add_space_prefix_);
}

std::string VocabTokenizer::TokenBytes(TokenId id) const {
  std::string piece;
  if (id >= 0 && static_cast<size_t>(id) < tokens_.size()) AppendPiece(id, false, &piece);
  return piece;
}

std::string VocabTokenizer::DecodeContinuation(TokenId previous, std::span<const TokenId> ids,
                                               bool skip_special, bool clean_spaces) const {
  const bool after_bos = previous == kNoToken || (previous >= 0 && previous == special_.bos);
  return DecodeImpl(ids, skip_special, add_space_prefix_ && after_bos, clean_spaces);
}

std::string VocabTokenizer::DecodeImpl(std::span<const TokenId> ids, bool skip_special,
                                       bool remove_leading_space, bool clean_spaces) const {
  std::string out;
  std::string piece;
  bool remove_space = remove_leading_space;  // the space the encoder put before the first word
  for (const TokenId id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) continue;
    piece.clear();
    AppendPiece(id, !skip_special, &piece);
    if (remove_space && !piece.empty() && piece[0] == ' ') {
      out.append(piece, 1, std::string::npos);
    } else {
      out.append(piece);
    }
    remove_space = false;
  }
  if (clean_spaces_ && clean_spaces) CleanSpaces(&out);
  return out;
}

std::vector<MergeSymbol> SplitIntoCharSymbols(std::string_view text) {
  std::vector<MergeSymbol> symbols;
  symbols.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    const size_t length =
        std::min(unicode::SequenceLength(static_cast<uint8_t>(text[offset])), text.size() - offset);
    const int index = static_cast<int>(symbols.size());
    offset += length;
    symbols.push_back({index - 1, offset == text.size() ? -1 : index + 1, offset - length, length});
  }
  return symbols;
}

}  // namespace unmask
