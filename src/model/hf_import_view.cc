#include <cstring>

#include "core/half.h"
#include "model/hf_import_internal.h"
#include "model/hf_vocab_keys.h"
#include "model/sampling_defaults.h"

namespace unmask::hf_import {

std::string ShortDump(const json& v) {
  // Depth first, iteratively: refuse to print anything nested deeper than 16 levels.
  std::vector<std::pair<const json*, int>> stack = {{&v, 0}};
  size_t visited = 0;
  while (!stack.empty() && visited < 4096) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    ++visited;
    if (depth > 16) return std::string("a value nested more than 16 levels deep");
    if (node->is_structured()) {
      for (const json& child : *node) stack.push_back({&child, depth + 1});
    }
  }
  if (!stack.empty()) return std::string("a ") + v.type_name() + " of more than 4096 values";
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

bool IsMoe(const HfArch& a) {
  return a.gguf == "qwen3moe" || a.gguf == "sdar-moe" || a.gguf == "llada-moe" ||
         a.gguf == "llada2-moe";
}

StatusOr<gguf::GgmlType> GgmlTypeOf(const safetensors::TensorInfo& t, const std::string& where) {
  if (t.dtype == DType::kF32) return gguf::GgmlType::kF32;
  if (t.dtype == DType::kF16) return gguf::GgmlType::kF16;
  if (t.dtype == DType::kBF16) return gguf::GgmlType::kBF16;
  return UnimplementedError(where + ": tensor '" + t.name + "' has dtype " + t.dtype_name +
                            " (supported: F32, F16, BF16)");
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<uint8_t> PermuteRows(const uint8_t* src, int64_t rows, int64_t row_bytes,
                                 int64_t heads) {
  std::vector<uint8_t> out(static_cast<size_t>(rows * row_bytes));
  const int64_t per_head = rows / heads, half = per_head / 2;
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t j = 0; j < 2; ++j) {
      for (int64_t i = 0; i < half; ++i) {
        const int64_t from = h * per_head + j * half + i, to = h * per_head + 2 * i + j;
        std::memcpy(out.data() + to * row_bytes, src + from * row_bytes,
                    static_cast<size_t>(row_bytes));
      }
    }
  }
  return out;
}

std::string FolderName(const std::string& dir) {
  const size_t slash = dir.find_last_of('/');
  return slash == std::string::npos ? dir : dir.substr(slash + 1);
}

// config.json's mask_token_id (SDAR fine-tunes, Dream, LLaDA) names the mask when the tokenizer
// files do not; then the tokenizer keys and the view.
StatusOr<std::unique_ptr<gguf::GgufFile>> FinishView(const ConfigReader& cfg,
                                                     std::shared_ptr<Owned> owned,
                                                     std::vector<gguf::MetadataEntry> md,
                                                     TensorMapper& m, int64_t vocab,
                                                     bool with_tokenizer) {
  const format::HfCheckpoint& ck = *owned->checkpoint;
  std::optional<int64_t> mask_id;
  if (cfg.Has("mask_token_id")) {
    UNMASK_ASSIGN_OR_RETURN(mask_id, cfg.Int("mask_token_id"));
    if (*mask_id >= vocab) return cfg.Bad("mask_token_id", "below vocab_size");
  }
  if (with_tokenizer) UNMASK_RETURN_IF_ERROR(AppendHfVocabKeys(ck.dir(), mask_id, vocab, &md));
  UNMASK_RETURN_IF_ERROR(AppendGenerationConfigSampling(ck.dir(), &md));
  const std::string dir = ck.dir();
  return gguf::GgufFile::FromParts(dir, std::move(md), m.Take(), std::move(owned));
}

}  // namespace unmask::hf_import
