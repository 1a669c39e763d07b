// SentencePiece-style BPE over token scores, as llama.cpp llm_tokenizer_spm (src/llama-vocab.cpp):
// split into UTF-8 characters, then repeatedly merge the adjacent pair whose concatenation is a
// token with the highest score (ties: leftmost), using a priority queue over a linked list of
// symbols; symbols that are not tokens fall back to byte tokens.
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

constexpr std::string_view kSpaceEscape = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

using Symbol = MergeSymbol;

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> SpmTokenizer::Create(Vocab&& vocab) {
  auto tokenizer = std::unique_ptr<SpmTokenizer>(new SpmTokenizer());
  // llama.cpp: SPM vocabularies add BOS and a space prefix unless the GGUF says otherwise, and do
  // not clean up spaces when decoding.
  UNMASK_RETURN_IF_ERROR(tokenizer->InitBase(std::move(vocab), /*default_add_bos=*/true,
                                             /*default_add_space_prefix=*/true,
                                             /*clean_spaces=*/false));
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

void SpmTokenizer::EncodeText(std::string_view raw, bool after_special,
                              std::vector<TokenId>* out) const {
  // Space prefix (only at the start of the input or after a special token), then ' ' -> U+2581.
  std::string text;
  text.reserve(raw.size() + 8);
  if (add_space_prefix_ && after_special) text.append(kSpaceEscape);
  for (char c : raw) {
    if (c == ' ') {
      text.append(kSpaceEscape);
    } else {
      text.push_back(c);
    }
  }
  if (text.empty()) return;

  std::vector<Symbol> symbols = SplitIntoCharSymbols(text);

  // Highest score of the merged token first; equal scores: leftmost (llama.cpp
  // llm_bigram_spm::comparator).
  MergeBigrams<float, std::less<float>>(
      symbols, [&](const Symbol& l, const Symbol& r) -> std::optional<float> {
        const TokenId id = FindToken(std::string_view(text.data() + l.offset, l.length + r.length));
        if (id == kNoToken) return std::nullopt;
        return scores_[id];
      });

  for (int i = 0; i != -1; i = symbols[i].next) {
    const std::string_view piece(text.data() + symbols[i].offset, symbols[i].length);
    const TokenId id = FindToken(piece);
    if (id != kNoToken) {
      out->push_back(id);
      continue;
    }
    for (char c : piece) {
      const TokenId byte_id = ByteToken(static_cast<uint8_t>(c));
      if (byte_id != kNoToken) out->push_back(byte_id);
    }
  }
}

void SpmTokenizer::AppendNormalPiece(const std::string& token, std::string* out) const {
  size_t pos = 0;
  while (pos < token.size()) {
    const size_t hit = token.find(kSpaceEscape, pos);
    if (hit == std::string::npos) {
      out->append(token, pos, std::string::npos);
      break;
    }
    out->append(token, pos, hit - pos);
    out->push_back(' ');
    pos = hit + kSpaceEscape.size();
  }
}

}  // namespace unmask
