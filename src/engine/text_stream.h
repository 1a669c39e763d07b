// Incremental output text of one request: the generated tokens known to be final (AR: every
// committed token; diffusion: the committed prefix of the canvas) become text, which ends at the
// first end-of-generation token, at a stop string (not included, as OpenAI and llama.cpp do) or
// after max_tokens tokens. While more tokens may come, bytes that could still change are held back:
// an incomplete UTF-8 sequence, and a suffix that may be the start of a stop string.
#ifndef UNMASK_ENGINE_TEXT_STREAM_H_
#define UNMASK_ENGINE_TEXT_STREAM_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/request.h"
#include "tokenizer/tokenizer.h"

namespace unmask {

class TextStream {
 public:
  // `tokenizer` must outlive this. max_tokens >= 1. `previous`: the last prompt token (kNoToken
  // when there is none); the text is decoded as its continuation (Tokenizer::DecodeContinuation:
  // a SentencePiece model's leading space is kept unless the prompt is only BOS).
  // `verbatim`: no clean-up of spaces (the text is the tokens' bytes, as a grammar constraint
  // matched them).
  TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop, int64_t max_tokens,
             bool ignore_eos = false, TokenId previous = kNoToken, bool verbatim = false);

  // `tokens`: the final generated tokens so far (a growing sequence: each call's tokens extend the
  // previous call's). `no_more`: generation has ended. Returns the text not yet returned.
  std::string Update(std::span<const int32_t> tokens, bool no_more);

  // True once the output is complete (EOS, a stop string or max_tokens reached); the caller can
  // stop generating.
  bool complete() const { return complete_; }
  FinishReason finish() const { return finish_; }  // kStop or kLength once complete
  // Tokens of the output: up to and including the EOS or the token that completed the stop
  // string, at most max_tokens.
  int64_t kept_tokens() const { return kept_tokens_; }
  const std::string& text() const { return text_; }  // the whole output text so far

 private:
  const Tokenizer& tok_;
  std::vector<std::string> stop_;
  int64_t max_tokens_;
  bool ignore_eos_;
  TokenId previous_;
  bool verbatim_;
  bool complete_ = false;
  FinishReason finish_ = FinishReason::kLength;
  int64_t kept_tokens_ = 0;
  std::string text_;
  size_t sent_ = 0;
};

}  // namespace unmask

#endif  // UNMASK_ENGINE_TEXT_STREAM_H_
