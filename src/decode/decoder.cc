#include "decode/decoder.h"

#include <string>

#include <algorithm>
#include <cmath>
#include <vector>

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

TokenLogprob LogprobOf(std::span<const float> row, int32_t token, int32_t k) {
  TokenLogprob lp;
  lp.token = token;
  if (row.empty()) return lp;
  // log_softmax in double: logit - max - log(sum exp(logit - max)).
  float max = row[0];
  for (float v : row) max = std::max(max, v);
  double sum = 0;
  for (float v : row) sum += std::exp(static_cast<double>(v) - max);
  const double log_z = static_cast<double>(max) + std::log(sum);
  if (token >= 0 && static_cast<size_t>(token) < row.size()) {
    lp.logprob = static_cast<float>(row[static_cast<size_t>(token)] - log_z);
  }
  const size_t n = std::min(static_cast<size_t>(std::max(k, 0)), row.size());
  if (n > 0) {
    std::vector<int32_t> ids(row.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    // Most likely first; ties to the lower id (deterministic).
    std::partial_sort(
        ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(),
        [&](int32_t a, int32_t b) {
          return row[static_cast<size_t>(a)] > row[static_cast<size_t>(b)] ||
                 (row[static_cast<size_t>(a)] == row[static_cast<size_t>(b)] && a < b);
        });
    for (size_t i = 0; i < n; ++i) {
      lp.top.emplace_back(ids[i], static_cast<float>(row[static_cast<size_t>(ids[i])] - log_z));
    }
  }
  return lp;
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

Status CheckInfillSuffix(std::span<const int32_t> suffix, int32_t mask_id, int64_t vocab_size,
                         int64_t prompt_length, int64_t gen_length, int64_t context_length) {
  for (size_t i = 0; i < suffix.size(); ++i) {
    if (suffix[i] < 0 || suffix[i] >= vocab_size) {
      return InvalidArgumentError("suffix token id " + std::to_string(suffix[i]) + " at index " +
                                  std::to_string(i) + " is outside the vocabulary [0, " +
                                  std::to_string(vocab_size) + ")");
    }
    if (suffix[i] == mask_id) {
      return InvalidArgumentError("the suffix contains the mask token (index " + std::to_string(i) +
                                  "): it would never be decoded");
    }
  }
  const int64_t suffix_length = static_cast<int64_t>(suffix.size());
  if (suffix_length > 0 && prompt_length + gen_length + suffix_length > context_length) {
    return OutOfRangeError("the prompt (" + std::to_string(prompt_length) + " tokens) + " +
                           std::to_string(gen_length) + " generated + the suffix (" +
                           std::to_string(suffix_length) + " tokens) exceed the context length " +
                           std::to_string(context_length));
  }
  return Status::Ok();
}

}  // namespace unmask
