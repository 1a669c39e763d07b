// Tokenizers read from GGUF metadata (llama.cpp's `tokenizer.ggml.*` keys):
//   tokenizer.ggml.model = "llama": SentencePiece-style BPE over scores with byte fallback
//                          (llama.cpp llm_tokenizer_spm);
//   tokenizer.ggml.model = "gpt2":  byte-level BPE over merges, after the pre-tokenizer regex named by
//                          tokenizer.ggml.pre (llama.cpp llm_tokenizer_bpe).
// Special tokens (bos, eos, eot, pad, mask, unk) always come from the GGUF, never from constants.
#ifndef UNMASK_TOKENIZER_TOKENIZER_H_
#define UNMASK_TOKENIZER_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "format/gguf.h"

namespace unmask {

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;

// Special token ids; kNoToken when the GGUF does not define one.
struct SpecialTokens {
  TokenId bos = kNoToken;   // tokenizer.ggml.bos_token_id
  TokenId eos = kNoToken;   // tokenizer.ggml.eos_token_id
  TokenId eot = kNoToken;   // tokenizer.ggml.eot_token_id (or found by text, e.g. "<|eot_id|>")
  TokenId pad = kNoToken;   // tokenizer.ggml.padding_token_id
  TokenId mask = kNoToken;  // tokenizer.ggml.mask_token_id (diffusion models)
  TokenId unk = kNoToken;   // tokenizer.ggml.unknown_token_id
  bool add_bos = false;     // tokenizer.ggml.add_bos_token
  bool add_eos = false;     // tokenizer.ggml.add_eos_token
};

struct ChatMessage {
  std::string role;  // "system" | "user" | "assistant" | ...
  std::string content;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Builds the tokenizer described by the GGUF metadata. Errors: NotFound for a missing required key
  // (names it), Unimplemented for an unknown tokenizer.ggml.model or tokenizer.ggml.pre, DataLoss for
  // inconsistent arrays (tokens/scores/types of different lengths, special ids out of range, malformed
  // merges).
  static StatusOr<std::unique_ptr<Tokenizer>> FromGguf(const gguf::GgufFile& file);

  // Text -> ids. add_special: prepend BOS when special().add_bos (append EOS when add_eos).
  // parse_special: text equal to a control/user-defined token (e.g. "<|eot_id|>") becomes that token;
  // otherwise such text is tokenized as plain text. Never fails: invalid UTF-8 is handled like llama.cpp.
  virtual std::vector<TokenId> Encode(std::string_view text, bool add_special,
                                      bool parse_special) const = 0;
  // Ids -> text (pieces concatenated, byte tokens merged, the SentencePiece leading space of the
  // first piece handled as llama.cpp does). Ids out of range are skipped. skip_special drops control
  // tokens (bos, eos, mask, ...).
  virtual std::string Decode(std::span<const TokenId> ids, bool skip_special) const = 0;
  // The stored piece of one token (for display); "" when out of range.
  virtual std::string_view TokenText(TokenId id) const = 0;
  // True for control tokens (token_type == CONTROL), e.g. bos/eos/mask.
  virtual bool IsControl(TokenId id) const = 0;

  virtual int vocab_size() const = 0;
  virtual std::string_view model_name() const = 0;  // "llama" | "gpt2"
  virtual std::string_view pre_name() const = 0;    // tokenizer.ggml.pre ("" for llama)
  const SpecialTokens& special() const { return special_; }

  // tokenizer.chat_template ("" when absent).
  const std::string& chat_template() const { return chat_template_; }
  // Renders `messages` with the chat template (a Jinja subset, see chat_template.h), with
  // bos_token/eos_token set from the vocabulary. Unimplemented (naming the construct) for a template
  // it cannot render; FailedPrecondition when the GGUF has no template.
  StatusOr<std::string> ApplyChatTemplate(std::span<const ChatMessage> messages,
                                          bool add_generation_prompt) const;

 protected:
  SpecialTokens special_;
  std::string chat_template_;
};

}  // namespace unmask

#endif  // UNMASK_TOKENIZER_TOKENIZER_H_
