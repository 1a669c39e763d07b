// Byte-level BPE, as llama.cpp llm_tokenizer_bpe (src/llama-vocab.cpp): invalid UTF-8 becomes
// U+FFFD, the regex pre-tokenizer splits the text into words, each word's bytes are mapped to the
// GPT-2 printable stand-ins, then adjacent symbols are merged lowest merge rank first (ties:
// leftmost) with a priority queue over a linked list of symbols.
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode_util.h"

namespace unmask {
namespace {

using Symbol = MergeSymbol;

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> BpeTokenizer::Create(Vocab&& vocab, PreTokenizerSpec spec,
                                                          PreTokenizer pre_tokenizer) {
  auto tokenizer = std::unique_ptr<BpeTokenizer>(new BpeTokenizer(std::move(pre_tokenizer)));
  tokenizer->ignore_merges_ = spec.ignore_merges;
  tokenizer->prefix_space_ = vocab.byte_level_prefix_space;
  tokenizer->merge_ranks_.reserve(vocab.merges.size());
  for (size_t i = 0; i < vocab.merges.size(); ++i) {
    const std::string& merge = vocab.merges[i];
    // llama.cpp splits at the first space after the first byte.
    const size_t space = merge.size() > 1 ? merge.find(' ', 1) : std::string::npos;
    if (space == std::string::npos) {
      return DataLossError("tokenizer.ggml.merges[" + std::to_string(i) + "] = '" + merge +
                           "' is not of the form 'left right'");
    }
    // The first occurrence of a pair keeps its rank (llama.cpp bpe_ranks.emplace).
    tokenizer->merge_ranks_.emplace(std::make_pair(merge.substr(0, space), merge.substr(space + 1)),
                                    static_cast<int>(i));
  }
  std::string pre = spec.name;
  // llama.cpp: byte-level BPE never adds a space prefix; BOS default depends on the pre-tokenizer.
  UNMASK_RETURN_IF_ERROR(tokenizer->InitBase(std::move(vocab), spec.add_bos,
                                             /*default_add_space_prefix=*/false,
                                             spec.clean_spaces));
  tokenizer->pre_ = std::move(pre);
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

int BpeTokenizer::MergeRank(std::string_view left, std::string_view right) const {
  const auto it = merge_ranks_.find(std::pair<std::string_view, std::string_view>(left, right));
  return it == merge_ranks_.end() ? -1 : it->second;
}

void BpeTokenizer::EncodeText(std::string_view raw, bool /*after_special*/,
                              std::vector<TokenId>* out) const {
  std::string text = unicode::Sanitize(raw);
  // Hugging Face ByteLevel add_prefix_space: per piece of text, not once per input.
  if (prefix_space_ && !text.empty() && text[0] != ' ') text.insert(text.begin(), ' ');
  std::string word;
  for (const std::string_view piece : pre_tokenizer_.Split(text)) {
    word.clear();
    for (char c : piece) word.append(unicode::ByteToUnicode(static_cast<uint8_t>(c)));
    EncodeWord(word, out);
  }
}

void BpeTokenizer::EncodeWord(std::string_view word, std::vector<TokenId>* out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (const TokenId id = FindToken(word); id != kNoToken) {
      out->push_back(id);
      return;
    }
  }
  std::vector<Symbol> symbols = SplitIntoCharSymbols(word);

  // Lowest merge rank first; equal ranks: leftmost (llama.cpp llm_bigram_bpe::comparator).
  MergeBigrams<int, std::greater<int>>(
      symbols, [&](const Symbol& l, const Symbol& r) -> std::optional<int> {
        const int rank =
            MergeRank(word.substr(l.offset, l.length), word.substr(r.offset, r.length));
        if (rank < 0) return std::nullopt;
        return rank;
      });

  for (int i = 0; i != -1; i = symbols[i].next) {
    const std::string_view piece = word.substr(symbols[i].offset, symbols[i].length);
    const TokenId id = FindToken(piece);
    if (id != kNoToken) {
      out->push_back(id);
      continue;
    }
    // Not a token: each byte alone, when that byte is a token (llama.cpp does the same).
    for (size_t k = 0; k < piece.size(); ++k) {
      const TokenId byte_id = FindToken(piece.substr(k, 1));
      if (byte_id != kNoToken) out->push_back(byte_id);
    }
  }
}

void BpeTokenizer::AppendNormalPiece(const std::string& token, std::string* out) const {
  // Inverse byte mapping (llama.cpp llama_decode_text); a code point that is not a byte stand-in
  // is written as "[UNK_BYTE_0x<utf8 hex><token>]" like llama.cpp.
  size_t pos = 0;
  while (pos < token.size()) {
    const size_t start = pos;
    const uint32_t cp = unicode::DecodeOne(token, &pos);
    const int byte = unicode::UnicodeToByte(cp);
    if (byte >= 0) {
      out->push_back(static_cast<char>(byte));
      continue;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    out->append("[UNK_BYTE_0x");
    for (size_t k = start; k < pos; ++k) {
      const auto b = static_cast<uint8_t>(token[k]);
      out->push_back(kHex[b >> 4]);
      out->push_back(kHex[b & 15]);
    }
    out->append(token).append("]");
  }
}

}  // namespace unmask
