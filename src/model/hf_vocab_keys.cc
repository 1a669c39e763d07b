#include "model/hf_vocab_keys.h"

#include <unordered_set>
#include <utility>

#include "format/hf_checkpoint.h"
#include "tokenizer/tokenizer_hf.h"

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

namespace {

// config.json mask_token_id, when it is an integer.
StatusOr<std::optional<int64_t>> ConfigMaskId(const std::string& dir) {
  UNMASK_ASSIGN_OR_RETURN(const nlohmann::json config, format::ReadJsonFile(dir + "/config.json"));
  if (!config.is_object() || !config.contains("mask_token_id") ||
      config["mask_token_id"].is_null()) {
    return std::optional<int64_t>();
  }
  if (!config["mask_token_id"].is_number_integer()) {
    return InvalidArgumentError(dir + "/config.json: mask_token_id must be an integer");
  }
  return std::optional<int64_t>(config["mask_token_id"].get<int64_t>());
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> LoadHfFolderTokenizer(const std::string& dir) {
  UNMASK_ASSIGN_OR_RETURN(Vocab vocab, ReadHfTokenizer(dir));
  UNMASK_ASSIGN_OR_RETURN(const std::optional<int64_t> mask_id, ConfigMaskId(dir));
  if (mask_id) {
    if (*mask_id < 0 || *mask_id >= static_cast<int64_t>(vocab.tokens.size())) {
      return InvalidArgumentError(dir + "/config.json: mask_token_id " + std::to_string(*mask_id) +
                                  " is not a token of tokenizer.json (" +
                                  std::to_string(vocab.tokens.size()) + " tokens)");
    }
    vocab.mask = static_cast<TokenId>(*mask_id);
  }
  auto tok = Tokenizer::FromVocab(std::move(vocab));
  if (!tok.ok()) return tok.status().WithContext(dir);
  return tok;
}

Status AppendHfVocabKeys(const std::string& dir, std::optional<int64_t> mask_id, int64_t vocab_size,
                         std::vector<gguf::MetadataEntry>* md) {
  UNMASK_ASSIGN_OR_RETURN(Vocab vocab, ReadHfTokenizer(dir));
  if (mask_id) vocab.mask = static_cast<TokenId>(*mask_id);
  const auto n = static_cast<int64_t>(vocab.tokens.size());
  if (n > vocab_size) {
    return InvalidArgumentError(dir + "/tokenizer.json: " + std::to_string(n) +
                                " tokens, more than config.json vocab_size " +
                                std::to_string(vocab_size));
  }
  // llama.cpp's convert_hf_to_gguf.py pads the list to the embedding's rows.
  if (n < vocab_size) {
    const std::unordered_set<std::string> taken(vocab.tokens.begin(), vocab.tokens.end());
    vocab.token_types.resize(static_cast<size_t>(n), static_cast<int32_t>(TokenType::kNormal));
    for (int64_t i = n; i < vocab_size; ++i) {
      std::string pad = "[PAD" + std::to_string(i) + "]";
      while (taken.count(pad) != 0) pad += "#";
      vocab.tokens.push_back(std::move(pad));
      if (!vocab.scores.empty()) vocab.scores.push_back(0.0f);
      vocab.token_types.push_back(static_cast<int32_t>(TokenType::kUnused));
    }
  }
  // ReadHfTokenizer names the regex lists llama.cpp knows (Vocab::pre) and leaves the others "".
  if (vocab.model == "gpt2" && !vocab.pre_patterns.empty() && vocab.pre.empty()) {
    return UnimplementedError(dir +
                              "/tokenizer.json: pre_tokenizer's regexes have no llama.cpp "
                              "name (tokenizer.ggml.pre), so a GGUF file cannot carry them; the "
                              "folder itself loads (-m " +
                              dir + ")");
  }
  AppendVocabKeys(vocab, md);
  return Status::Ok();
}

}  // namespace unmask
