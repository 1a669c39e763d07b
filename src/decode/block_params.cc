#include "decode/block_params.h"

#include <cmath>
#include <string>

namespace unmask {
namespace {

constexpr std::pair<BlockRemasking, std::string_view> kNames[] = {
    {BlockRemasking::kSequential, "sequential"},
    {BlockRemasking::kLowConfidenceStatic, "low_confidence_static"},
    {BlockRemasking::kLowConfidenceDynamic, "low_confidence_dynamic"},
    {BlockRemasking::kEntropyBounded, "entropy_bounded"},
    {BlockRemasking::kJointThreshold, "joint_threshold"},
};

}  // namespace

std::string_view BlockRemaskingName(BlockRemasking r) {
  for (const auto& [value, name] : kNames) {
    if (value == r) return name;
  }
  return "unknown";
}

std::optional<BlockRemasking> BlockRemaskingFromName(std::string_view name) {
  for (const auto& [value, n] : kNames) {
    if (n == name) return value;
  }
  return std::nullopt;
}

std::string_view BlockRemaskingNames() {
  return "sequential, low_confidence_static, low_confidence_dynamic, entropy_bounded, "
         "joint_threshold";
}

Status ValidateBlockParams(const BlockParams& p, int64_t prompt_length, int64_t context_length) {
  if (p.gen_length < 1) return InvalidArgumentError("gen_length must be at least 1");
  if (p.block_length < 1) return InvalidArgumentError("block_length must be at least 1");
  if (p.denoising_steps < 1 || p.denoising_steps > p.block_length) {
    return InvalidArgumentError(
        "denoising_steps must be in [1, block_length = " + std::to_string(p.block_length) +
        "], got " + std::to_string(p.denoising_steps));
  }
  if (!(p.temperature >= 0) || !std::isfinite(p.temperature)) {
    return InvalidArgumentError("temperature must be a finite number >= 0");
  }
  if (p.top_k < 0) return InvalidArgumentError("top_k must be >= 0");
  if (!(p.top_p > 0 && p.top_p <= 1)) return InvalidArgumentError("top_p must be in (0, 1]");
  if (!(p.confidence_threshold >= 0 && p.confidence_threshold <= 1)) {
    return InvalidArgumentError("threshold must be in [0, 1]");
  }
  if (!(p.eb_threshold > 0) || !std::isfinite(p.eb_threshold)) {
    return InvalidArgumentError("eb_threshold must be a finite number > 0");
  }
  if (!(p.edit_threshold >= 0 && p.edit_threshold <= 1)) {
    return InvalidArgumentError("edit_threshold must be in [0, 1]");
  }
  if (p.max_post_edit_steps < 0 || p.max_post_edit_steps > 4096) {
    return InvalidArgumentError("max_post_edit_steps must be in [0, 4096]");
  }
  if (p.remasking == BlockRemasking::kJointThreshold && p.temperature > 0) {
    return InvalidArgumentError(
        "remasking joint_threshold runs at temperature 0 only (token editing with sampling has "
        "no reference and no termination guarantee beyond max_post_edit_steps)");
  }
  if (prompt_length < 1) return InvalidArgumentError("the prompt is empty");
  const int64_t canvas = p.num_blocks(prompt_length) * p.block_length;
  if (canvas > context_length) {
    return OutOfRangeError("the prompt (" + std::to_string(prompt_length) + " tokens) + " +
                           std::to_string(p.gen_length) + " generated tokens fill " +
                           std::to_string(canvas) + " positions in blocks of " +
                           std::to_string(p.block_length) + ", more than the context of " +
                           std::to_string(context_length));
  }
  return Status::Ok();
}

std::vector<int64_t> BlockTransferSchedule(int64_t block_length, int64_t steps) {
  std::vector<int64_t> n(static_cast<size_t>(steps), block_length / steps);
  for (int64_t i = 0; i < block_length % steps; ++i) ++n[static_cast<size_t>(i)];
  return n;
}

}  // namespace unmask
