// SentencePiece-style BPE over token scores, as llama.cpp llm_tokenizer_spm (src/llama-vocab.cpp):
// split into UTF-8 characters, then repeatedly merge the adjacent pair whose concatenation is a
// token with the highest score (ties: leftmost), using a priority queue over a linked list of
// symbols; symbols that are not tokens fall back to byte tokens.
#include <algorithm>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode_util.h"

namespace unmask {
namespace {

constexpr std::string_view kSpaceEscape = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

using Symbol = MergeSymbol;

struct Bigram {
  int left;
  int right;
  float score;
  size_t length;  // left.length + right.length when pushed; a mismatch later means stale
};

// Highest score first; equal scores: leftmost first (llama.cpp llm_bigram_spm::comparator).
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

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

  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue;
  const auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::string_view merged(text.data() + symbols[left].offset,
                                  symbols[left].length + symbols[right].length);
    const TokenId id = FindToken(merged);
    if (id == kNoToken) return;
    queue.push({left, right, scores_[id], merged.size()});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram bigram = queue.top();
    queue.pop();
    Symbol& left = symbols[bigram.left];
    Symbol& right = symbols[bigram.right];
    if (left.length == 0 || right.length == 0 || left.length + right.length != bigram.length) {
      continue;  // one side was merged away since this pair was queued
    }
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    try_add(left.prev, bigram.left);
    try_add(bigram.left, left.next);
  }

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
