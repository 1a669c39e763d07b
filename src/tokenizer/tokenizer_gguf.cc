// Tokenizer::FromGguf: reads the `tokenizer.ggml.*` keys (llama.cpp llama_vocab::impl::load,
// gguf-py constants Keys.Tokenizer) into a Vocab and hands it to Tokenizer::FromVocab.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace unmask {
namespace {

// A value stored with the wrong type is a malformed file: report DataLoss (the getter's message
// names the key and both types).
Status AsDataLoss(const Status& status) {
  if (status.code() == StatusCode::kInvalidArgument) return DataLossError(status.message());
  return status;
}

template <typename T>
using Getter = StatusOr<T> (gguf::GgufFile::*)(std::string_view) const;

// Reads an optional key into *out. Returns false when absent; DataLoss when present with the wrong
// type.
template <typename T>
StatusOr<bool> ReadOptional(const gguf::GgufFile& file, std::string_view key, Getter<T> getter,
                            T* out) {
  if (file.Find(key) == nullptr) return false;
  StatusOr<T> value = (file.*getter)(key);
  if (!value.ok()) return AsDataLoss(value.status());
  *out = std::move(value).value();
  return true;
}

// A special token id. Absent, or stored as -1 / 0xFFFFFFFF (how some converters write "none"):
// kNoToken. Out of [0, num_tokens): DataLoss naming the key.
StatusOr<TokenId> GetSpecialId(const gguf::GgufFile& file, std::string_view key,
                               size_t num_tokens) {
  int64_t value = -1;
  UNMASK_ASSIGN_OR_RETURN(const bool present,
                          ReadOptional<int64_t>(file, key, &gguf::GgufFile::GetInt, &value));
  if (!present || value == -1 || value == int64_t{0xFFFFFFFF}) return kNoToken;
  if (value < 0 || static_cast<uint64_t>(value) >= num_tokens) {
    return DataLossError(std::string(key) + " = " + std::to_string(value) +
                         " is out of range (the vocabulary has " + std::to_string(num_tokens) +
                         " tokens)");
  }
  return static_cast<TokenId>(value);
}

// An optional boolean key.
StatusOr<std::optional<bool>> GetOptionalBool(const gguf::GgufFile& file, std::string_view key) {
  bool value = false;
  UNMASK_ASSIGN_OR_RETURN(const bool present,
                          ReadOptional<bool>(file, key, &gguf::GgufFile::GetBool, &value));
  return present ? std::optional<bool>(value) : std::optional<bool>();
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const gguf::GgufFile& file) {
  using gguf::GgufFile;
  Vocab vocab;
  UNMASK_ASSIGN_OR_RETURN(
      bool present,
      ReadOptional<std::string>(file, "tokenizer.ggml.model", &GgufFile::GetString, &vocab.model));
  if (!present) return NotFoundError("tokenizer.ggml.model is missing in " + file.path());
  UNMASK_ASSIGN_OR_RETURN(
      present, ReadOptional<std::vector<std::string>>(file, "tokenizer.ggml.tokens",
                                                      &GgufFile::GetStringArray, &vocab.tokens));
  if (!present) return NotFoundError("tokenizer.ggml.tokens is missing in " + file.path());
  if (vocab.tokens.empty()) return DataLossError(file.path() + ": tokenizer.ggml.tokens is empty");
  UNMASK_ASSIGN_OR_RETURN(present, ReadOptional<std::string>(file, "tokenizer.ggml.pre",
                                                             &GgufFile::GetString, &vocab.pre));
  UNMASK_ASSIGN_OR_RETURN(
      present, ReadOptional<std::string>(file, "general.name", &GgufFile::GetString, &vocab.name));
  std::vector<double> scores;
  UNMASK_ASSIGN_OR_RETURN(present,
                          ReadOptional<std::vector<double>>(file, "tokenizer.ggml.scores",
                                                            &GgufFile::GetFloatArray, &scores));
  vocab.scores.assign(scores.begin(), scores.end());
  std::vector<int64_t> types;
  UNMASK_ASSIGN_OR_RETURN(present,
                          ReadOptional<std::vector<int64_t>>(file, "tokenizer.ggml.token_type",
                                                             &GgufFile::GetIntArray, &types));
  vocab.token_types.reserve(types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] < INT32_MIN || types[i] > INT32_MAX) {
      return DataLossError("tokenizer.ggml.token_type[" + std::to_string(i) +
                           "] = " + std::to_string(types[i]) + " is not a token type (0..6)");
    }
    vocab.token_types.push_back(static_cast<int32_t>(types[i]));
  }
  UNMASK_ASSIGN_OR_RETURN(
      present, ReadOptional<std::vector<std::string>>(file, "tokenizer.ggml.merges",
                                                      &GgufFile::GetStringArray, &vocab.merges));
  if (!present && vocab.model == "gpt2") {
    return NotFoundError(
        "tokenizer.ggml.merges is missing (required for tokenizer.ggml.model gpt2)");
  }

  const size_t n = vocab.tokens.size();
  UNMASK_ASSIGN_OR_RETURN(vocab.bos, GetSpecialId(file, "tokenizer.ggml.bos_token_id", n));
  UNMASK_ASSIGN_OR_RETURN(vocab.eos, GetSpecialId(file, "tokenizer.ggml.eos_token_id", n));
  UNMASK_ASSIGN_OR_RETURN(vocab.eot, GetSpecialId(file, "tokenizer.ggml.eot_token_id", n));
  UNMASK_ASSIGN_OR_RETURN(vocab.pad, GetSpecialId(file, "tokenizer.ggml.padding_token_id", n));
  UNMASK_ASSIGN_OR_RETURN(vocab.mask, GetSpecialId(file, "tokenizer.ggml.mask_token_id", n));
  UNMASK_ASSIGN_OR_RETURN(vocab.unk, GetSpecialId(file, "tokenizer.ggml.unknown_token_id", n));

  UNMASK_ASSIGN_OR_RETURN(vocab.add_bos, GetOptionalBool(file, "tokenizer.ggml.add_bos_token"));
  UNMASK_ASSIGN_OR_RETURN(vocab.add_eos, GetOptionalBool(file, "tokenizer.ggml.add_eos_token"));
  UNMASK_ASSIGN_OR_RETURN(vocab.add_space_prefix,
                          GetOptionalBool(file, "tokenizer.ggml.add_space_prefix"));
  UNMASK_ASSIGN_OR_RETURN(
      present, ReadOptional<std::string>(file, "tokenizer.chat_template", &GgufFile::GetString,
                                         &vocab.chat_template));

  StatusOr<std::unique_ptr<Tokenizer>> tokenizer = FromVocab(std::move(vocab));
  if (!tokenizer.ok()) return tokenizer.status().WithContext(file.path());
  return tokenizer;
}

}  // namespace unmask
