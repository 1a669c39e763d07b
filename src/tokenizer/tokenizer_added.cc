// Hugging Face's added-token rules (Vocab::added_tokens), as huggingface/tokenizers does it in
// tokenizers/src/tokenizer/added_vocabulary.rs (AddedVocabulary::find_matches,
// extract_and_normalize): non-normalized tokens are split out of the raw text, the rest is
// normalized, then normalized tokens are split out of that; each pass matches leftmost-longest.
#include <algorithm>
#include <string>
#include <utility>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode_util.h"

namespace unmask {
namespace {

// Start of the run of Unicode whitespace that ends `text` (valid UTF-8); text.size() when none
// (added_vocabulary.rs space_leftmost_at_end: `\s*$`).
size_t TrailingWhitespaceStart(std::string_view text) {
  size_t start = text.size();
  while (start > 0) {
    size_t lead = start - 1;
    while (lead > 0 && (static_cast<uint8_t>(text[lead]) & 0xC0) == 0x80) --lead;
    size_t pos = lead;
    if (!unicode::IsWhitespace(unicode::DecodeOne(text, &pos))) break;
    start = lead;
  }
  return start;
}

// Length of the run of Unicode whitespace that starts `text` (space_rightmost_at_start: `^\s*`).
size_t LeadingWhitespaceLength(std::string_view text) {
  size_t end = 0;
  while (end < text.size()) {
    size_t pos = end;
    if (!unicode::IsWhitespace(unicode::DecodeOne(text, &pos))) break;
    end = pos;
  }
  return end;
}

}  // namespace

void AddedTokenMatcher::Add(Entry entry) {
  if (entry.text.empty()) return;
  const auto index = static_cast<uint32_t>(entries_.size());
  std::vector<uint32_t>& bucket = by_first_byte_[static_cast<uint8_t>(entry.text[0])];
  entries_.push_back(std::move(entry));
  bucket.push_back(index);
  // Longest first, so that the first hit at a position is the longest one there.
  std::stable_sort(bucket.begin(), bucket.end(), [&](uint32_t a, uint32_t b) {
    return entries_[a].text.size() > entries_[b].text.size();
  });
}

const AddedTokenMatcher::Entry* AddedTokenMatcher::LongestAt(std::string_view text,
                                                             size_t at) const {
  for (const uint32_t index : by_first_byte_[static_cast<uint8_t>(text[at])]) {
    const Entry& e = entries_[index];
    if (text.compare(at, e.text.size(), e.text) == 0) return &e;
  }
  return nullptr;
}

std::vector<Fragment> AddedTokenMatcher::Split(std::string_view text, bool parse_special) const {
  std::vector<Fragment> out;
  size_t start_offset = 0;  // end of the last token's span: where pending text starts
  size_t scan = 0;          // where the search for the next match starts
  while (scan < text.size()) {
    const Entry* found = nullptr;
    size_t start = scan;
    for (; start < text.size(); ++start) {
      found = LongestAt(text, start);
      if (found != nullptr) break;
    }
    if (found == nullptr) break;
    size_t stop = start + found->text.size();
    scan = stop;
    if (found->special && !parse_special) continue;  // the text stays text
    if (found->lstrip) {
      start = std::max(TrailingWhitespaceStart(text.substr(0, start)), start_offset);
    }
    if (found->rstrip) stop += LeadingWhitespaceLength(text.substr(stop));
    if (start_offset < start) out.push_back({kNoToken, start_offset, start - start_offset});
    out.push_back({found->id, start, stop - start});
    start_offset = stop;
  }
  if (start_offset < text.size()) {
    out.push_back({kNoToken, start_offset, text.size() - start_offset});
  }
  return out;
}

Status VocabTokenizer::InitAddedTokens(const std::vector<AddedTokenOptions>& added) {
  hf_added_tokens_ = true;
  std::vector<bool> seen(tokens_.size(), false);
  for (size_t i = 0; i < added.size(); ++i) {
    const AddedTokenOptions& a = added[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    if (a.id < 0 || static_cast<size_t>(a.id) >= tokens_.size()) {
      return DataLossError(where + ".id = " + std::to_string(a.id) +
                           " is out of range (the vocabulary has " +
                           std::to_string(tokens_.size()) + " tokens)");
    }
    if (seen[a.id]) {
      return DataLossError(where + ".id = " + std::to_string(a.id) + " is listed twice");
    }
    seen[a.id] = true;
    const uint32_t attr = attrs_[a.id];
    if ((attr & (kAttrControl | kAttrUserDefined)) == 0) {
      return DataLossError(where + ".id = " + std::to_string(a.id) +
                           " is not a control or user-defined token");
    }
    AddedTokenMatcher::Entry entry;
    entry.id = a.id;
    entry.special = (attr & kAttrControl) != 0;
    entry.lstrip = a.lstrip;
    entry.rstrip = a.rstrip;
    if (a.normalized) {
      entry.text = Normalize(unicode::Sanitize(tokens_[a.id]));
      added_normalized_.Add(std::move(entry));
    } else {
      entry.text = tokens_[a.id];
      added_raw_.Add(std::move(entry));
    }
  }
  return Status::Ok();
}

void VocabTokenizer::AppendHfPiece(TokenId id, bool render_special, std::string* out) const {
  const uint32_t attr = attrs_[id];
  if ((attr & (kAttrNormal | kAttrControl | kAttrUserDefined | kAttrUnknown)) == 0) return;
  if ((attr & (kAttrControl | kAttrUnknown)) && !render_special) return;
  const std::string& token = tokens_[id];
  const size_t start = out->size();
  for (size_t pos = 0; pos < token.size();) {
    const int byte = unicode::UnicodeToByte(unicode::DecodeOne(token, &pos));
    if (byte < 0) {  // not all stand-ins: the token's own bytes
      out->resize(start);
      out->append(token);
      return;
    }
    out->push_back(static_cast<char>(byte));
  }
}

std::string VocabTokenizer::Normalize(std::string_view text) const {
  return nfc_ ? unicode::NormalizeNfc(text) : std::string(text);
}

std::vector<TokenId> VocabTokenizer::EncodeWithAddedTokens(std::string_view text, bool add_special,
                                                           bool parse_special) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && special_.add_bos) out.push_back(special_.bos);
  const std::string clean = unicode::Sanitize(text);
  for (const Fragment& raw : added_raw_.Split(clean, parse_special)) {
    if (raw.token != kNoToken) {
      out.push_back(raw.token);
      continue;
    }
    const std::string normalized =
        Normalize(std::string_view(clean).substr(raw.offset, raw.length));
    if (added_normalized_.empty()) {
      EncodeText(normalized, /*after_special=*/false, &out);
      continue;
    }
    for (const Fragment& piece : added_normalized_.Split(normalized, parse_special)) {
      if (piece.token != kNoToken) {
        out.push_back(piece.token);
      } else {
        EncodeText(std::string_view(normalized).substr(piece.offset, piece.length),
                   /*after_special=*/false, &out);
      }
    }
  }
  if (add_special && special_.add_eos) out.push_back(special_.eos);
  return out;
}

}  // namespace unmask
