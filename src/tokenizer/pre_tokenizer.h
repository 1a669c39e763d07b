// Regex pre-tokenizers for byte-level BPE vocabularies (tokenizer.ggml.pre), internal to
// src/tokenizer/. The pattern lists are llama.cpp's (src/llama-vocab.cpp, llm_tokenizer_bpe), run
// with PCRE2 in UTF + UCP mode. Where llama.cpp's own regex engine differs from PCRE2 the patterns
// are adjusted so that both split alike (see pre_tokenizer.cc):
//   - `\s` means the Unicode White_Space set that llama.cpp uses (unicode_set_whitespace), not
//     PCRE2's \s (which adds U+180E);
//   - character ranges written without \p{..} never match non-ASCII whitespace (llama.cpp maps
//     those to U+000B before running std::wregex);
//   - `$` matches only at the end of a fragment (std::regex semantics).
#ifndef UNMASK_TOKENIZER_PRE_TOKENIZER_H_
#define UNMASK_TOKENIZER_PRE_TOKENIZER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

struct pcre2_real_code_8;  // pcre2_code (pcre2.h), kept out of this header

namespace unmask {

// What llama.cpp attaches to a tokenizer.ggml.pre name (llama_vocab::impl::load).
struct PreTokenizerSpec {
  std::string name;
  std::vector<std::string> patterns;  // applied in sequence, each to every fragment of the last
  bool clean_spaces = true;           // clean_up_tokenization_spaces in Decode
  bool ignore_merges = false;         // a word that is a whole token skips BPE
  bool add_bos = false;               // default for tokenizer.ggml.add_bos_token
};

// The spec for `pre` ("" means "default"). Unimplemented naming `pre` for an unknown name.
// Known: default, gpt-2, phi-2, mpt, olmo, llama3, llama-v3, llama-bpe, falcon3, dbrx, smaug-bpe,
// qwen2, deepseek-r1-qwen, stablelm2, deepseek-coder, deepseek-llm, starcoder, refact, smollm.
StatusOr<PreTokenizerSpec> FindPreTokenizerSpec(std::string_view pre);

// A compiled pattern list. Immutable after Compile; Split is const and thread-safe (match data is
// allocated per call).
class PreTokenizer {
 public:
  // Compiles `patterns` (written with llama.cpp's \s meaning, see above). InvalidArgument naming
  // the pattern and PCRE2's message when one does not compile.
  static StatusOr<PreTokenizer> Compile(const std::vector<std::string>& patterns);

  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  ~PreTokenizer();

  // Splits `text` (must be valid UTF-8: see unicode::Sanitize) into words, as llama.cpp
  // unicode_regex_split: each pattern in turn splits every current fragment into its matches and
  // the unmatched runs between them; a fragment is the whole subject of a match (lookaheads and
  // `$` see its end). Returns views into `text`, in order, none empty, covering all of it.
  // Cost: O(len) matching per pattern for these patterns.
  std::vector<std::string_view> Split(std::string_view text) const;

 private:
  PreTokenizer() = default;
  std::vector<pcre2_real_code_8*> codes_;  // owned
};

// `pattern` with \s / \S replaced by explicit classes of llama.cpp's whitespace set (exposed for
// tests).
std::string ExpandWhitespaceClasses(std::string_view pattern);

}  // namespace unmask

#endif  // UNMASK_TOKENIZER_PRE_TOKENIZER_H_
