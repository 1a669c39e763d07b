// The tokenizer files of a Hugging Face checkpoint folder (tokenizer.json, tokenizer_config.json,
// generation_config.json, chat_template.jinja; read by tokenizer/tokenizer_hf.h) written as the
// `tokenizer.ggml.*` GGUF keys llama.cpp's converter writes (gguf-py Keys.Tokenizer), so that
// Tokenizer::FromGguf reads a folder like a file.
#ifndef UNMASK_MODEL_HF_VOCAB_KEYS_H_
#define UNMASK_MODEL_HF_VOCAB_KEYS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/gguf.h"
#include "tokenizer/tokenizer.h"

namespace unmask {

// Appends the keys of `vocab` (tokens, token types, merges, scores, special ids, add_* flags, the
// chat template) to `md`.
void AppendVocabKeys(const Vocab& vocab, std::vector<gguf::MetadataEntry>* md);

// The tokenizer of folder `dir` with Hugging Face's rules (LoadHfTokenizer), its mask token set by
// config.json mask_token_id when that is given (SDAR fine-tunes, Dream). Errors: those of
// ReadHfTokenizer and Tokenizer::FromVocab; InvalidArgument for a mask_token_id that is not a
// token id.
StatusOr<std::unique_ptr<Tokenizer>> LoadHfFolderTokenizer(const std::string& dir);

// Reads the tokenizer of folder `dir` and appends its keys (for GGUF files: the fields of a Vocab
// that have no GGUF key, such as pre_patterns and the NFC normalizer, are not written; a
// pre-tokenizer without a llama.cpp name is then Unimplemented); `mask_id` (config.json
// mask_token_id) overrides the tokenizer's mask token. A token list shorter than the model's
// `vocab_size` (config.json; checkpoints pad the embedding, e.g. Qwen2.5's 151,936 rows for
// 151,665 tokens) is padded with "[PAD<id>]" tokens of type UNUSED, as llama.cpp's
// convert_hf_to_gguf.py does, so llama.cpp accepts the file. Errors: those of ReadHfTokenizer
// (naming the file and field); NotFound when the folder has no tokenizer.json; InvalidArgument
// when the tokenizer has more tokens than vocab_size.
Status AppendHfVocabKeys(const std::string& dir, std::optional<int64_t> mask_id, int64_t vocab_size,
                         std::vector<gguf::MetadataEntry>* md);

}  // namespace unmask

#endif  // UNMASK_MODEL_HF_VOCAB_KEYS_H_
