#include "model/hf_vocab_keys.h"

#include <utility>

#if __has_include("tokenizer/tokenizer_hf.h")
#include "tokenizer/tokenizer_hf.h"
#define UNMASK_HAVE_HF_TOKENIZER 1
#endif

namespace unmask {

void AppendVocabKeys(const Vocab& v, std::vector<gguf::MetadataEntry>* md) {
  auto set = [md](std::string key, gguf::Value value) {
    md->push_back({std::move(key), std::move(value)});
  };
  set("tokenizer.ggml.model", gguf::Value::String(v.model));
  if (!v.pre.empty()) set("tokenizer.ggml.pre", gguf::Value::String(v.pre));
  set("tokenizer.ggml.tokens", gguf::Value::StringArray(v.tokens));
  if (!v.scores.empty()) set("tokenizer.ggml.scores", gguf::Value::F32Array(v.scores));
  if (!v.token_types.empty())
    set("tokenizer.ggml.token_type", gguf::Value::I32Array(v.token_types));
  if (!v.merges.empty()) set("tokenizer.ggml.merges", gguf::Value::StringArray(v.merges));
  auto id = [&](const char* key, TokenId t) {
    if (t != kNoToken) set(key, gguf::Value::U32(static_cast<uint32_t>(t)));
  };
  id("tokenizer.ggml.bos_token_id", v.bos);
  id("tokenizer.ggml.eos_token_id", v.eos);
  id("tokenizer.ggml.eot_token_id", v.eot);
  id("tokenizer.ggml.padding_token_id", v.pad);
  id("tokenizer.ggml.mask_token_id", v.mask);
  id("tokenizer.ggml.unknown_token_id", v.unk);
  if (v.add_bos) set("tokenizer.ggml.add_bos_token", gguf::Value::Bool(*v.add_bos));
  if (v.add_eos) set("tokenizer.ggml.add_eos_token", gguf::Value::Bool(*v.add_eos));
  if (v.add_space_prefix) {
    set("tokenizer.ggml.add_space_prefix", gguf::Value::Bool(*v.add_space_prefix));
  }
  if (!v.chat_template.empty()) {
    set("tokenizer.chat_template", gguf::Value::String(v.chat_template));
  }
}

Status AppendHfVocabKeys(const std::string& dir, std::optional<int64_t> mask_id,
                         std::vector<gguf::MetadataEntry>* md) {
#ifdef UNMASK_HAVE_HF_TOKENIZER
  UNMASK_ASSIGN_OR_RETURN(Vocab vocab, ReadHfTokenizer(dir));
  if (mask_id) vocab.mask = static_cast<TokenId>(*mask_id);
  AppendVocabKeys(vocab, md);
  return Status::Ok();
#else
  (void)mask_id;
  (void)md;
  return UnimplementedError(dir + ": reading tokenizer.json is not built in");
#endif
}

}  // namespace unmask
