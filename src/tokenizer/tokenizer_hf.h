// Hugging Face checkpoint tokenizers: a folder's tokenizer.json (huggingface/tokenizers, format of
// tokenizers/src/tokenizer/serialization.rs) read into the same Vocab the GGUF keys give, with
// tokenizer_config.json, generation_config.json and chat_template.jinja for special tokens and the
// chat template (docs MODELS.md §1.5-1.7).
//
// Supported (anything else is refused with Unimplemented naming the file and the JSON field):
//   model        BPE, byte-level (the pre-tokenizer chain ends in ByteLevel, the decoder is
//                ByteLevel; every byte has its GPT-2 stand-in token); merges as [a, b] pairs or
//                legacy "a b" strings (rank = index; a pair listed twice keeps its last rank, as
//                the tokenizers crate does); dropout null/0; continuing_subword_prefix and
//                end_of_word_suffix null/""; ignore_merges; token ids may have holes, which become
//                "[PAD<id>]" tokens of type kUnused. unk_token, fuse_unk and byte_fallback are
//                accepted (with every byte present they never take effect).
//   added_tokens special -> kControl, else kUserDefined; content, normalized, lstrip and rstrip
//                are honoured by Hugging Face's rules (Vocab::added_tokens); single_word = true is
//                refused. Ids must be the ones the tokenizers crate assigns when it loads the file
//                (the model's id for a content in the vocabulary, else the next id after the
//                model and the earlier added tokens).
//   normalizer   null, NFC, Sequence of NFC.
//   pre_tokenizer ByteLevel (add_prefix_space, use_regex: GPT-2's regex), or Sequence of Split
//                (pattern Regex or String, behavior Isolated, invert false) and Digits, ending in
//                ByteLevel (add_prefix_space only when ByteLevel is the only step). Regexes are
//                Oniguruma syntax run by PCRE2 (pre_tokenizer.h); constructs whose meaning differs
//                (^, $, \h, \H, inline flags other than i) are refused. Known lists set Vocab::pre
//                to llama.cpp's name (gpt-2, qwen2, llama3, smollm); the file's own regexes always
//                run (Vocab::pre_patterns).
//   decoder      ByteLevel.
//   post_processor null, ByteLevel, TemplateProcessing whose `single` is [special]? A [special]?
//                (-> add_bos / add_eos), Sequence of those.
//   truncation, padding: ignored (they shape batches, not ids of one text).
// Special ids: tokenizer_config.json bos/eos/pad/unk/mask_token (string or {"content": ...}),
// add_bos_token/add_eos_token (these override the post-processor, as transformers' Llama
// tokenizers do), clean_up_tokenization_spaces (default false); else generation_config.json
// bos/eos/pad_token_id (eos may be a list: the first is eos, the next different one eot); mask by
// content <|mask|>, <|MASK|>, <mask>, <|mdm_mask|> when none is named. chat_template.jinja, else
// chat_template.json, else tokenizer_config.json chat_template (a string, or a list of
// {name, template} of which "default" is taken).
#ifndef UNMASK_TOKENIZER_TOKENIZER_HF_H_
#define UNMASK_TOKENIZER_TOKENIZER_HF_H_

#include <memory>
#include <string>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace unmask {

// Reads the tokenizer of the Hugging Face checkpoint folder `dir`: tokenizer.json (required),
// tokenizer_config.json, chat_template.jinja, chat_template.json and generation_config.json
// (optional). Vocab::name is the folder's name. Errors name the file and the JSON field:
// NotFound when tokenizer.json is missing; DataLoss for a file that is not JSON, fields of the
// wrong type, inconsistent ids (holes beyond the limit, duplicates, ids the tokenizers crate
// would not assign, merges of tokens not in the vocabulary) and special ids out of range;
// Unimplemented for valid files that ask for something unmask does not run (see above).
// Cost: one parse of each file; O(vocabulary + merges).
StatusOr<Vocab> ReadHfTokenizer(const std::string& dir);

// ReadHfTokenizer then Tokenizer::FromVocab; errors of the latter carry `dir` as context.
StatusOr<std::unique_ptr<Tokenizer>> LoadHfTokenizer(const std::string& dir);

}  // namespace unmask

#endif  // UNMASK_TOKENIZER_TOKENIZER_HF_H_
