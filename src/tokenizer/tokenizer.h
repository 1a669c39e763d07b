// Tokenizers read from GGUF metadata (llama.cpp's `tokenizer.ggml.*` keys):
//   tokenizer.ggml.model = "llama": SentencePiece-style BPE over scores with byte fallback
//                          (llama.cpp llm_tokenizer_spm);
//   tokenizer.ggml.model = "gpt2":  byte-level BPE over merges, after the pre-tokenizer regexes
//                          named by tokenizer.ggml.pre (llama.cpp llm_tokenizer_bpe).
// Hugging Face checkpoint folders (tokenizer.json, ...) are read into the same Vocab by
// ReadHfTokenizer (tokenizer_hf.h).
// Special tokens (bos, eos, eot, pad, mask, unk) always come from the GGUF, never from constants.
#ifndef UNMASK_TOKENIZER_TOKENIZER_H_
#define UNMASK_TOKENIZER_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
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

// llama.cpp token types (tokenizer.ggml.token_type; gguf-py TokenType / llama_token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // bos, eos, im_end, mask, ...: dropped by Decode(skip_special=true)
  kUserDefined = 4,  // added tokens: always split out of the text before BPE/SPM
  kUnused = 5,
  kByte = 6,  // "<0xXX>" byte-fallback tokens (SentencePiece)
};

// How one Hugging Face added token (tokenizer.json `added_tokens[]`) is split out of the text
// (huggingface/tokenizers tokenizers/src/tokenizer/added_vocabulary.rs).
struct AddedTokenOptions {
  TokenId id = kNoToken;
  bool lstrip = false;      // the match also takes the Unicode whitespace left of it
  bool rstrip = false;      // ... and right of it
  bool normalized = false;  // matched in the normalized text (else in the raw text)
};

// Plain vocabulary data, as stored in the `tokenizer.ggml.*` GGUF keys. Tokenizer::FromGguf reads
// it from a file, ReadHfTokenizer (tokenizer_hf.h) from a Hugging Face folder; tests and tools may
// build one in memory and call Tokenizer::FromVocab. The fields after chat_template have no GGUF
// key: a GGUF vocabulary leaves them at their defaults, which keep llama.cpp's behaviour.
struct Vocab {
  std::string model;                 // tokenizer.ggml.model: "llama" (SPM) | "gpt2" (byte BPE)
  std::string pre;                   // tokenizer.ggml.pre (gpt2 only; "" means "default")
  std::string name;                  // general.name (llama.cpp keys some token attributes on it)
  std::vector<std::string> tokens;   // [num_tokens] tokenizer.ggml.tokens
  std::vector<float> scores;         // [num_tokens] tokenizer.ggml.scores, or empty (all 0)
  std::vector<int32_t> token_types;  // [num_tokens] TokenType values, or empty (all kNormal)
  std::vector<std::string> merges;   // gpt2: tokenizer.ggml.merges, "left right", rank = index
  // Special ids (kNoToken: not given). eot falls back to a lookup by text (see SpecialTokens).
  TokenId bos = kNoToken;
  TokenId eos = kNoToken;
  TokenId eot = kNoToken;
  TokenId pad = kNoToken;
  TokenId mask = kNoToken;
  TokenId unk = kNoToken;
  // Unset: llama.cpp's per-model default (llama: add_bos true, add_space_prefix true;
  // gpt2: add_bos false except the llama3 pre-tokenizer, add_space_prefix false).
  std::optional<bool> add_bos;           // tokenizer.ggml.add_bos_token
  std::optional<bool> add_eos;           // tokenizer.ggml.add_eos_token
  std::optional<bool> add_space_prefix;  // tokenizer.ggml.add_space_prefix
  std::string chat_template;             // tokenizer.chat_template

  // Text normalization before the pre-tokenizer: "" (none) | "nfc" (Unicode NFC). It applies to
  // the text between special tokens, never to special tokens themselves.
  std::string normalizer;
  // gpt2: when non-empty, these regexes run instead of the patterns of `pre` (same rules: applied
  // in sequence, `\s` as described in pre_tokenizer.h); `pre` then only names them, and an empty
  // or unknown `pre` is reported as "custom". The flags below default to those of a known `pre`,
  // else to false.
  std::vector<std::string> pre_patterns;
  // Unset: the default of the pre-tokenizer `pre` (llama.cpp's per-name flags).
  std::optional<bool> ignore_merges;  // a pre-tokenized word that is a token skips BPE
  std::optional<bool> clean_spaces;   // clean_up_tokenization_spaces in Decode
  // gpt2: prepend " " to every text piece between special tokens that does not start with one
  // (Hugging Face ByteLevel add_prefix_space, when ByteLevel is the first pre-tokenizer).
  bool byte_level_prefix_space = false;
  // Set: Hugging Face's added-token rules replace llama.cpp's partition. Exactly these tokens are
  // split out (their token_types must be kControl or kUserDefined): first those with normalized =
  // false in the raw text, then the text between them is normalized and those with normalized =
  // true are split out of it. In each pass the leftmost match wins, the longest at one position
  // (Aho-Corasick leftmost-longest); a kControl match counts only when Encode's parse_special is
  // true (and is otherwise kept as text); lstrip/rstrip take the adjacent Unicode whitespace.
  std::optional<std::vector<AddedTokenOptions>> added_tokens;
};

// One tool call of an assistant message (OpenAI's tool_calls[i]): the template sees it as
// {"id", "type": "function", "function": {"name", "arguments"}} with the arguments as a mapping
// (the JSON text parsed) as transformers' templates expect.
struct ChatToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text of an object
};

struct ChatMessage {
  std::string role;  // "system" | "user" | "assistant" | "tool" | ...
  std::string content;
  std::vector<ChatToolCall> tool_calls = {};  // assistant messages that called tools
  std::string tool_call_id = {};              // tool messages: the call answered
  std::string name = {};                      // optional author / tool name
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Builds the tokenizer described by the GGUF metadata. Errors: NotFound for a missing required
  // key (names it), Unimplemented for an unknown tokenizer.ggml.model or tokenizer.ggml.pre,
  // DataLoss for inconsistent arrays (tokens/scores/types of different lengths, special ids out of
  // range, malformed merges).
  static StatusOr<std::unique_ptr<Tokenizer>> FromGguf(const gguf::GgufFile& file);
  // Builds the tokenizer from plain data, with the same checks and errors as FromGguf (messages
  // name the GGUF key of the offending field, or the Vocab field for those without a key).
  // Unimplemented for a normalizer other than "" / "nfc", and for pre_patterns,
  // byte_level_prefix_space or added_tokens with a model other than gpt2; InvalidArgument for
  // pre_patterns that do not compile. Cost: O(num_tokens + num_merges) hash inserts.
  static StatusOr<std::unique_ptr<Tokenizer>> FromVocab(Vocab vocab);

  // Text -> ids. add_special: prepend BOS when special().add_bos (append EOS when add_eos).
  // parse_special: text equal to a control/user-defined token (e.g. "<|eot_id|>") becomes that
  // token; otherwise such text is tokenized as plain text. As in llama.cpp, user-defined tokens
  // (token_type 4) are split out even when parse_special is false, and longer special texts win.
  // Vocabularies with Vocab::added_tokens (Hugging Face) split by Hugging Face's rules instead
  // (see Vocab); parse_special = true is the tokenizers crate's default. The normalizer applies
  // to the text between special tokens.
  // Never fails: invalid UTF-8 is handled like llama.cpp (SentencePiece: byte tokens; byte-level
  // BPE: U+FFFD). Thread-safe (const, no shared mutable state).
  virtual std::vector<TokenId> Encode(std::string_view text, bool add_special,
                                      bool parse_special) const = 0;
  // Ids -> text (pieces concatenated, byte tokens merged, the SentencePiece leading space of the
  // first piece handled as llama.cpp does: it is dropped only when that piece is the first id).
  // Ids out of range are skipped. skip_special drops control tokens (bos, eos, mask, ...). Byte
  // pieces are concatenated as bytes, so invalid UTF-8 sequences come out unchanged. Byte-level
  // BPE vocabularies whose pre-tokenizer asks for it (gpt-2, llama3, default) apply llama.cpp's
  // clean_up_tokenization_spaces (" ," -> ","). Thread-safe.
  virtual std::string Decode(std::span<const TokenId> ids, bool skip_special) const = 0;
  // The text that `ids` add after a sequence ending in `previous` (the last prompt token, kNoToken
  // when nothing precedes them): Decode, except that the SentencePiece leading space of the first
  // piece is kept unless `previous` is kNoToken or BOS. This is llama2.c's decode(prev, token)
  // (the space is stripped only after BOS) and what llama.cpp prints per generated token, so that
  // prompt text + continuation text is the text of the whole sequence ("Lily went." + " They").
  // Byte-level BPE vocabularies (no space prefix) decode as Decode does. clean_spaces false:
  // no clean_up_tokenization_spaces, so the text is the tokens' bytes (TokenBytes) exactly, as a
  // grammar constraint matched them. Thread-safe.
  virtual std::string DecodeContinuation(TokenId previous, std::span<const TokenId> ids,
                                         bool skip_special, bool clean_spaces = true) const = 0;
  // The bytes token `id` adds in the middle of a sequence: its piece as Decode renders it (byte
  // tokens as their byte, SentencePiece's space marker as a space), with no leading space removed
  // and no clean-up of spaces; "" for control tokens, unused tokens and ids out of range. What a
  // grammar constraint matches token by token (grammar/token_constraint.h).
  virtual std::string TokenBytes(TokenId id) const = 0;
  // The stored piece of one token (for display); "" when out of range.
  virtual std::string_view TokenText(TokenId id) const = 0;
  // True for control tokens (token_type == CONTROL), e.g. bos/eos/mask.
  virtual bool IsControl(TokenId id) const = 0;
  // The id of the token whose stored text is exactly `text`; kNoToken when there is none.
  virtual TokenId FindToken(std::string_view /*text*/) const { return kNoToken; }
  // End of generation: eos or eot (llama.cpp llama_vocab::is_eog for these two ids).
  bool IsEog(TokenId id) const {
    return id != kNoToken && (id == special_.eos || id == special_.eot);
  }

  virtual int vocab_size() const = 0;
  virtual std::string_view model_name() const = 0;  // "llama" | "gpt2"
  virtual std::string_view pre_name() const = 0;    // tokenizer.ggml.pre ("" for llama)
  const SpecialTokens& special() const { return special_; }

  // tokenizer.chat_template ("" when absent).
  const std::string& chat_template() const { return chat_template_; }
  // Replaces the chat template (llama.cpp's --chat-template-file); not thread-safe: call before
  // the tokenizer is shared.
  void set_chat_template(std::string source) { chat_template_ = std::move(source); }
  // Renders `messages` with the chat template (a Jinja subset, see chat_template.h), with
  // bos_token/eos_token set from the vocabulary. Unimplemented (naming the construct) for a
  // template it cannot render; FailedPrecondition when the GGUF has no template.
  // `tools_json`: the template's `tools` variable as a JSON array text ("" : undefined).
  StatusOr<std::string> ApplyChatTemplate(std::span<const ChatMessage> messages,
                                          bool add_generation_prompt,
                                          std::string_view tools_json = {}) const;

 protected:
  SpecialTokens special_;
  std::string chat_template_;
};

}  // namespace unmask

#endif  // UNMASK_TOKENIZER_TOKENIZER_H_
