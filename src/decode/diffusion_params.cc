#include "decode/diffusion_params.h"

#include <cmath>
#include <string>

namespace unmask {

std::string_view RemaskingName(Remasking r) {
  return r == Remasking::kRandom ? "random" : "low_confidence";
}

std::optional<Remasking> RemaskingFromName(std::string_view name) {
  if (name == "low_confidence") return Remasking::kLowConfidence;
  if (name == "random") return Remasking::kRandom;
  return std::nullopt;
}

Status ValidateDiffusionParams(const DiffusionParams& p, int64_t prompt_length,
                               int64_t context_length) {
  auto s = [](auto v) { return std::to_string(v); };
  if (p.gen_length <= 0)
    return InvalidArgumentError("gen_length must be positive, got " + s(p.gen_length));
  if (p.block_length <= 0) {
    return InvalidArgumentError("block_length must be positive, got " + s(p.block_length));
  }
  if (prompt_length <= 0) return InvalidArgumentError("the prompt is empty (no tokens)");
  if (p.gen_length > context_length - prompt_length) {  // (no overflow for any int64 inputs)
    return OutOfRangeError("prompt (" + s(prompt_length) + " tokens) + gen_length (" +
                           s(p.gen_length) + ") exceeds the model's context length " +
                           s(context_length));
  }
  if (p.gen_length % p.block_length != 0) {
    return InvalidArgumentError("gen_length (" + s(p.gen_length) +
                                ") must be divisible by block_length (" + s(p.block_length) + ")");
  }
  const int64_t blocks = p.gen_length / p.block_length;
  if (p.steps <= 0) return InvalidArgumentError("steps must be positive, got " + s(p.steps));
  if (p.steps > p.gen_length) {
    return InvalidArgumentError("steps (" + s(p.steps) + ") exceeds gen_length (" +
                                s(p.gen_length) +
                                "): steps beyond one per token would commit nothing");
  }
  if (p.steps % blocks != 0) {
    return InvalidArgumentError("steps (" + s(p.steps) +
                                ") must be divisible by the number of blocks (" + s(blocks) +
                                " = gen_length / block_length)");
  }
  if (!std::isfinite(p.temperature) || p.temperature < 0) {
    return InvalidArgumentError("temperature must be a finite number >= 0");
  }
  if (!std::isfinite(p.cfg_scale) || p.cfg_scale < 0) {
    return InvalidArgumentError("cfg_scale must be a finite number >= 0");
  }
  return Status::Ok();
}

}  // namespace unmask
