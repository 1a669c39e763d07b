// Tokenizer implementations (internal to src/tokenizer/): a vocabulary-backed base that does the
// special-token partition, decoding and lookups, and the two algorithms on top of it.
// Behavioural reference: llama.cpp src/llama-vocab.cpp.
#ifndef UNMASK_TOKENIZER_TOKENIZER_IMPL_H_
#define UNMASK_TOKENIZER_TOKENIZER_IMPL_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace unmask {

// One symbol of a BPE/SPM merge loop: a UTF-8 character at first, then a merged run. Symbols form a
// doubly linked list by index (llama.cpp llm_symbol).
struct MergeSymbol {
  int prev;
  int next;
  size_t offset;  // into the text being merged
  size_t length;  // 0 once merged into its left neighbour
};

// Splits `text` into one linked symbol per UTF-8 character (a truncated trailing sequence is kept
// as one symbol).
std::vector<MergeSymbol> SplitIntoCharSymbols(std::string_view text);

// The bigram merge loop of llama.cpp's BPE and SPM tokenizers (llm_tokenizer_bpe_session,
// llm_tokenizer_spm_session): every adjacent pair of `symbols` that `score(left, right)` accepts —
// it returns the pair's std::optional<Priority>, nullopt when the pair cannot merge — is queued;
// the queued pair that is greatest under `Compare` is merged first (std::less: highest priority;
// std::greater: lowest), equal priorities leftmost first; the left symbol absorbs the right one
// and its new neighbour pairs are scored. A queued pair is stale, and skipped, once either symbol
// changed length (the left one only grows by absorbing the right one, so this also covers
// "merged length changed"). Afterwards the symbols still linked from index 0 are the pieces.
template <typename Priority, typename Compare, typename ScoreFn>
void MergeBigrams(std::vector<MergeSymbol>& symbols, const ScoreFn& score) {
  struct Bigram {
    int left;
    int right;
    Priority priority;
    size_t left_length;  // symbol lengths when queued; a mismatch later means the pair is stale
    size_t right_length;
  };
  struct Order {  // std::priority_queue pops the greatest: by priority, then the leftmost
    bool operator()(const Bigram& a, const Bigram& b) const {
      return Compare()(a.priority, b.priority) || (a.priority == b.priority && a.left > b.left);
    }
  };
  std::priority_queue<Bigram, std::vector<Bigram>, Order> queue;
  const auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const MergeSymbol& l = symbols[static_cast<size_t>(left)];
    const MergeSymbol& r = symbols[static_cast<size_t>(right)];
    if (const std::optional<Priority> p = score(l, r)) {
      queue.push({left, right, *p, l.length, r.length});
    }
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram bigram = queue.top();
    queue.pop();
    MergeSymbol& left = symbols[static_cast<size_t>(bigram.left)];
    MergeSymbol& right = symbols[static_cast<size_t>(bigram.right)];
    if (left.length == 0 || right.length == 0 || left.length != bigram.left_length ||
        right.length != bigram.right_length) {
      continue;  // outdated: one side changed since this pair was queued
    }
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = bigram.left;
    try_add(left.prev, bigram.left);
    try_add(bigram.left, left.next);
  }
}

// Token attribute bits (llama.cpp llama_token_attr, reduced to what unmask uses).
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrLstrip = 1u << 6,  // strip whitespace left of the token when splitting it out
  kAttrRstrip = 1u << 7,  // strip whitespace right of it
};

// Hash for heterogeneous std::string / std::string_view lookups.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// A piece of the input after the special-token partition: raw text or one special token.
struct Fragment {
  TokenId token = kNoToken;  // kNoToken: raw text [offset, offset + length) of the input
  size_t offset = 0;
  size_t length = 0;
};

// Hugging Face's added-token matcher for one pass (raw or normalized text): AddedVocabulary
// find_matches of huggingface/tokenizers (tokenizers/src/tokenizer/added_vocabulary.rs).
class AddedTokenMatcher {
 public:
  struct Entry {
    std::string text;  // what is matched (the token's content, normalized for the second pass)
    TokenId id = kNoToken;
    bool special = false;  // kControl: only a match when parse_special
    bool lstrip = false;
    bool rstrip = false;
  };

  void Add(Entry entry);
  bool empty() const { return entries_.empty(); }
  // Splits `text` into fragments (offsets into `text`): the leftmost match first, the longest at
  // one position, matches never overlap and the scan resumes after each match (also after a
  // special match skipped because !parse_special, whose text stays in the surrounding fragment).
  // lstrip/rstrip widen a token's span over adjacent Unicode whitespace, which then belongs to no
  // fragment. Cost: O(len(text) x tokens sharing a first byte) comparisons.
  std::vector<Fragment> Split(std::string_view text, bool parse_special) const;

 private:
  // The longest entry whose text starts at text[at]; nullptr when none.
  const Entry* LongestAt(std::string_view text, size_t at) const;

  std::vector<Entry> entries_;
  std::array<std::vector<uint32_t>, 256> by_first_byte_;  // entry indices, longest text first
};

class VocabTokenizer : public Tokenizer {
 public:
  std::vector<TokenId> Encode(std::string_view text, bool add_special,
                              bool parse_special) const override;
  std::string Decode(std::span<const TokenId> ids, bool skip_special) const override;
  std::string TokenBytes(TokenId id) const override;
  std::string DecodeContinuation(TokenId previous, std::span<const TokenId> ids, bool skip_special,
                                 bool clean_spaces = true) const override;
  std::string_view TokenText(TokenId id) const override;
  bool IsControl(TokenId id) const override;
  TokenId FindToken(std::string_view text) const override;
  int vocab_size() const override { return static_cast<int>(tokens_.size()); }
  std::string_view model_name() const override { return model_; }
  std::string_view pre_name() const override { return pre_; }

  // Splits `text` on the texts of special tokens as llama.cpp tokenizer_st_partition does:
  // user-defined tokens always, control and unknown tokens only when parse_special; longer tokens
  // first (ties: lower id), each over all raw fragments left to right.
  std::vector<Fragment> Partition(std::string_view text, bool parse_special) const;
  // Encode under Hugging Face's added-token rules (Vocab::added_tokens), see tokenizer_added.cc.
  std::vector<TokenId> EncodeWithAddedTokens(std::string_view text, bool add_special,
                                             bool parse_special) const;

 protected:
  // Fills the shared tables from a vocabulary whose array lengths and special ids were checked by
  // Tokenizer::FromVocab. DataLoss for duplicate tokens, add_bos/add_eos set without the id, or
  // added_tokens entries out of range, repeated or not of type control/user-defined.
  Status InitBase(Vocab&& vocab, bool default_add_bos, bool default_add_space_prefix,
                  bool clean_spaces);
  // The added-token matchers of Vocab::added_tokens (called by InitBase).
  Status InitAddedTokens(const std::vector<AddedTokenOptions>& added);
  // `text` (valid UTF-8) as the normalizer leaves it.
  std::string Normalize(std::string_view text) const;

  // Appends the ids of one raw-text fragment. `after_special`: the fragment starts the input or
  // follows a special token (SentencePiece then prepends a space).
  virtual void EncodeText(std::string_view text, bool after_special,
                          std::vector<TokenId>* out) const = 0;
  // Appends the text of a NORMAL token.
  virtual void AppendNormalPiece(const std::string& token, std::string* out) const = 0;

  // The id of byte `b` in SentencePiece byte fallback ("<0xXX>", else the one-byte token, else
  // unk); kNoToken when there is none.
  TokenId ByteToken(uint8_t b) const { return byte_tokens_[b]; }

  std::string model_;
  std::string pre_;
  std::vector<std::string> tokens_;  // [num_tokens]
  std::vector<float> scores_;        // [num_tokens]
  std::vector<uint32_t> attrs_;      // [num_tokens] TokenAttr bits
  std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>> token_to_id_;
  std::vector<TokenId> special_cache_;  // control/user-defined/unknown ids, longest text first
  std::array<TokenId, 256> byte_tokens_{};
  bool add_space_prefix_ = false;
  bool clean_spaces_ = false;
  bool nfc_ = false;  // Vocab::normalizer == "nfc"
  // Vocab::added_tokens was set: the two passes of Hugging Face's added-token split.
  bool hf_added_tokens_ = false;
  AddedTokenMatcher added_raw_;
  AddedTokenMatcher added_normalized_;

 private:
  // Appends the piece of token `id` (in range) as llama.cpp token_to_piece.
  void AppendPiece(TokenId id, bool render_special, std::string* out) const;
  // AppendPiece for Hugging Face vocabularies (tokenizer_added.cc): the ByteLevel decoder's rule
  // for every token, added ones included (huggingface/tokenizers decoders/byte_level.rs): a token
  // whose characters are all byte stand-ins becomes those bytes, any other stays as it is; control
  // tokens only when render_special; unused placeholders have no text.
  void AppendHfPiece(TokenId id, bool render_special, std::string* out) const;
  // Decode with the SentencePiece leading space of the first piece dropped or kept.
  std::string DecodeImpl(std::span<const TokenId> ids, bool skip_special, bool remove_leading_space,
                         bool clean_spaces = true) const;
};

// tokenizer.ggml.model = "llama": SentencePiece BPE over scores (llama.cpp llm_tokenizer_spm).
class SpmTokenizer final : public VocabTokenizer {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> Create(Vocab&& vocab);

 protected:
  void EncodeText(std::string_view text, bool after_special,
                  std::vector<TokenId>* out) const override;
  void AppendNormalPiece(const std::string& token, std::string* out) const override;
};

// tokenizer.ggml.model = "gpt2": byte-level BPE over merge ranks after a regex pre-tokenizer
// (llama.cpp llm_tokenizer_bpe).
class BpeTokenizer final : public VocabTokenizer {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> Create(Vocab&& vocab, PreTokenizerSpec spec,
                                                     PreTokenizer pre_tokenizer);

  // Merge rank of (left, right); -1 when the pair is not a merge.
  int MergeRank(std::string_view left, std::string_view right) const;

 protected:
  void EncodeText(std::string_view text, bool after_special,
                  std::vector<TokenId>* out) const override;
  void AppendNormalPiece(const std::string& token, std::string* out) const override;

 private:
  explicit BpeTokenizer(PreTokenizer pre_tokenizer) : pre_tokenizer_(std::move(pre_tokenizer)) {}
  // Vocab::byte_level_prefix_space.
  bool prefix_space_ = false;
  // Byte-level BPE of one pre-tokenized word (already mapped to GPT-2 byte stand-ins).
  void EncodeWord(std::string_view word, std::vector<TokenId>* out) const;

  struct PairHash {
    using is_transparent = void;
    size_t operator()(const std::pair<std::string_view, std::string_view>& p) const {
      const size_t h1 = std::hash<std::string_view>{}(p.first);
      const size_t h2 = std::hash<std::string_view>{}(p.second);
      return h1 ^ (h2 + 0x9e3779b97f4a7c15ULL + (h1 << 6) + (h1 >> 2));
    }
    size_t operator()(const std::pair<std::string, std::string>& p) const {
      return (*this)(std::pair<std::string_view, std::string_view>(p.first, p.second));
    }
  };
  struct PairEq {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return std::string_view(a.first) == std::string_view(b.first) &&
             std::string_view(a.second) == std::string_view(b.second);
    }
  };

  PreTokenizer pre_tokenizer_;
  bool ignore_merges_ = false;
  std::unordered_map<std::pair<std::string, std::string>, int, PairHash, PairEq> merge_ranks_;
};

}  // namespace unmask

#endif  // UNMASK_TOKENIZER_TOKENIZER_IMPL_H_
