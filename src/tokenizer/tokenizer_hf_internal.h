// The pieces of ReadHfTokenizer (internal to src/tokenizer/): tokenizer.json's pipeline
// (tokenizer_hf_pipeline.cc) and the folder's configuration files (tokenizer_hf_config.cc).
#ifndef UNMASK_TOKENIZER_TOKENIZER_HF_INTERNAL_H_
#define UNMASK_TOKENIZER_TOKENIZER_HF_INTERNAL_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizer/hf_json.h"
#include "tokenizer/tokenizer.h"

namespace unmask::hf {

// GPT-2's regex, as the ByteLevel pre-tokenizer runs it when use_regex is true
// (tokenizers/src/pre_tokenizers/byte_level.rs).
inline constexpr std::string_view kGpt2Regex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// What tokenizer.json's normalizer, pre_tokenizer, decoder and post_processor ask for.
struct Pipeline {
  std::string normalizer;             // Vocab::normalizer
  std::vector<std::string> patterns;  // Split regexes in order (PCRE2-ready), see Vocab
  std::string pre_name;               // the llama.cpp name of `patterns`, "" when none fits
  bool prefix_space = false;          // ByteLevel add_prefix_space
  bool byte_level = false;            // a ByteLevel pre-tokenizer was seen
  // post_processor TemplateProcessing: the ids it puts before / after the text (range unchecked).
  std::optional<int64_t> post_first_id;
  std::optional<int64_t> post_last_id;
};

// Reads `normalizer`, `pre_tokenizer`, `decoder` and `post_processor` of the document `root`.
// Unimplemented naming the field for what unmask cannot run (see tokenizer_hf.h), DataLoss for
// wrong types.
StatusOr<Pipeline> ReadPipeline(const JsonField& root);

// Looks a token text up in the assembled vocabulary (model and added tokens).
using TokenLookup = std::function<TokenId(std::string_view)>;

// Fills the special ids, add_bos/add_eos, clean_spaces and chat_template of `vocab` (whose tokens
// are final) from tokenizer_config.json, generation_config.json, chat_template.jinja and
// chat_template.json in `dir` (each optional: a missing file is skipped), and from the
// post-processor. DataLoss for malformed files, wrong types and ids out of range; Unimplemented
// when the post-processor adds another token than the one named as BOS/EOS.
Status ReadSpecialTokens(const std::string& dir, const Pipeline& pipeline,
                         const TokenLookup& lookup, Vocab* vocab);

// `dir` + "/" + `name`.
std::string JoinPath(const std::string& dir, std::string_view name);

}  // namespace unmask::hf

#endif  // UNMASK_TOKENIZER_TOKENIZER_HF_INTERNAL_H_
