#include "decode/decoder.h"

#include <string>

#include <algorithm>

namespace unmask {

std::string_view DecoderKindName(DecoderKind k) {
  switch (k) {
    case DecoderKind::kAr:
      return "ar";
    case DecoderKind::kDiffusion:
      return "diffusion";
    case DecoderKind::kDream:
      return "dream";
    case DecoderKind::kBlockDiffusion:
      return "block_diffusion";
    case DecoderKind::kFastDllmV2:
      return "fast_dllm_v2";
  }
  return "?";
}

std::span<const int32_t> Decoder::committed() const {
  const std::span<const int32_t> gen = generated();
  const int32_t mask = mask_id();
  if (mask < 0) return gen;
  const auto first_mask = std::find(gen.begin(), gen.end(), mask);
  return gen.first(static_cast<size_t>(first_mask - gen.begin()));
}

Status CheckMaskAndPrompt(int32_t mask_id, std::span<const int32_t> prompt, int64_t vocab_size) {
  if (mask_id < 0 || mask_id >= vocab_size) {
    return InvalidArgumentError("mask token id " + std::to_string(mask_id) +
                                " is outside the vocabulary [0, " + std::to_string(vocab_size) +
                                ")");
  }
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= vocab_size) {
      return InvalidArgumentError("prompt token " + std::to_string(prompt[i]) + " at index " +
                                  std::to_string(i) + " is outside the vocabulary");
    }
  }
  return Status::Ok();
}

int32_t BestNonMaskToken(std::span<const float> logits, int32_t mask_id) {
  if (logits.size() < 2) return mask_id;
  int32_t best = mask_id == 0 ? 1 : 0;
  for (size_t v = 0; v < logits.size(); ++v) {
    if (static_cast<int32_t>(v) != mask_id && logits[v] > logits[static_cast<size_t>(best)]) {
      best = static_cast<int32_t>(v);
    }
  }
  return best;
}

Status CheckLogitsShape(const TensorView& logits, int64_t rows, int64_t vocab_size) {
  if (logits.dtype != DType::kF32 || logits.shape.rank() != 2 || logits.shape[0] != rows ||
      logits.shape[1] != vocab_size) {
    return InvalidArgumentError("logits must be f32 [" + std::to_string(rows) + ", " +
                                std::to_string(vocab_size) + "], got " + logits.shape.ToString());
  }
  return Status::Ok();
}

}  // namespace unmask
