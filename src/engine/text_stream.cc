#include "engine/text_stream.h"

#include <algorithm>

#include "sampling/stop_strings.h"
#include "tokenizer/unicode_util.h"

namespace unmask {

TextStream::TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop,
                       int64_t max_tokens, bool ignore_eos, TokenId previous, bool verbatim)
    : tok_(tokenizer),
      stop_(std::move(stop)),
      max_tokens_(std::max<int64_t>(max_tokens, 1)),
      ignore_eos_(ignore_eos),
      previous_(previous),
      verbatim_(verbatim) {}

std::string TextStream::Update(std::span<const int32_t> tokens, bool no_more) {
  if (complete_) return "";
  const size_t n = std::min(tokens.size(), static_cast<size_t>(max_tokens_));
  size_t text_end = n;
  bool eos = false;
  if (!ignore_eos_) {
    for (size_t i = 0; i < n; ++i) {
      if (tok_.IsEog(tokens[i])) {
        text_end = i;
        eos = true;
        break;
      }
    }
  }
  text_ =
      tok_.DecodeContinuation(previous_, tokens.first(text_end), /*skip_special=*/true, !verbatim_);
  kept_tokens_ = static_cast<int64_t>(eos ? text_end + 1 : n);
  const size_t at = FindStopString(text_, stop_);
  if (at != std::string::npos) {
    text_.resize(at);
    // The shortest token prefix whose text contains the stop string (a step may commit more).
    for (size_t k = 1; k <= text_end; ++k) {
      if (FindStopString(tok_.DecodeContinuation(previous_, tokens.first(k), true, !verbatim_),
                         stop_) != std::string::npos) {
        kept_tokens_ = static_cast<int64_t>(k);
        break;
      }
    }
    complete_ = true;
    finish_ = FinishReason::kStop;
  } else if (eos) {
    complete_ = true;
    finish_ = FinishReason::kStop;
  } else if (n >= static_cast<size_t>(max_tokens_)) {
    complete_ = true;
    finish_ = FinishReason::kLength;
  }
  size_t sendable = text_.size();
  if (!complete_ && !no_more) {
    const size_t hold =
        std::max(PartialStopSuffix(text_, stop_), unicode::IncompleteUtf8Tail(text_));
    sendable -= std::min(hold, sendable);
  }
  if (sendable <= sent_) return "";
  std::string delta = text_.substr(sent_, sendable - sent_);
  sent_ = sendable;
  return delta;
}

}  // namespace unmask
