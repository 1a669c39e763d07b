#include "decode/decoder.h"

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

}  // namespace unmask
