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

std::string_view CacheModeName(CacheMode c) {
  switch (c) {
    case CacheMode::kPrefix:
      return "prefix";
    case CacheMode::kDual:
      return "dual";
    case CacheMode::kVicinity:
      return "vicinity";
    case CacheMode::kNone:
      break;
  }
  return "none";
}

std::optional<CacheMode> CacheModeFromName(std::string_view name) {
  for (CacheMode c :
       {CacheMode::kNone, CacheMode::kPrefix, CacheMode::kDual, CacheMode::kVicinity}) {
    if (CacheModeName(c) == name) return c;
  }
  return std::nullopt;
}

std::string_view CommitRuleName(CommitRule r) {
  switch (r) {
    case CommitRule::kThreshold:
      return "threshold";
    case CommitRule::kFactor:
      return "factor";
    case CommitRule::kHierarchy:
      return "hierarchy";
    case CommitRule::kCredit:
      return "credit";
    case CommitRule::kFixed:
      break;
  }
  return "fixed";
}

std::optional<CommitRule> CommitRuleFromName(std::string_view name) {
  for (CommitRule r : {CommitRule::kFixed, CommitRule::kThreshold, CommitRule::kFactor,
                       CommitRule::kHierarchy, CommitRule::kCredit}) {
    if (CommitRuleName(r) == name) return r;
  }
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
  // steps only drives the fixed schedule; the other rules run each block until it is full.
  if (p.commit == CommitRule::kFixed) {
    if (p.steps <= 0) return InvalidArgumentError("steps must be positive, got " + s(p.steps));
    // steps > gen_length is allowed, as in the LLaDA reference: get_num_transfer_tokens gives the
    // steps beyond one per masked token 0 tokens, and they still run a forward (NFE = steps).
    if (p.steps % blocks != 0) {
      return InvalidArgumentError("steps (" + s(p.steps) +
                                  ") must be divisible by the number of blocks (" + s(blocks) +
                                  " = gen_length / block_length)");
    }
  }
  if (!std::isfinite(p.temperature) || p.temperature < 0) {
    return InvalidArgumentError("temperature must be a finite number >= 0");
  }
  if (!std::isfinite(p.cfg_scale) || p.cfg_scale < 0) {
    return InvalidArgumentError("cfg_scale must be a finite number >= 0");
  }
  // Written as !(a <= x && x <= b) so that NaN fails too.
  if (!(p.threshold > 0 && p.threshold <= 1)) {
    return InvalidArgumentError("threshold must be in (0, 1], got " + s(p.threshold));
  }
  if (!(p.factor > 0) || !std::isfinite(p.factor)) {
    return InvalidArgumentError("factor must be a finite number > 0, got " + s(p.factor));
  }
  if (!(p.low_threshold >= 0 && p.low_threshold <= 1)) {
    return InvalidArgumentError("low_threshold must be in [0, 1], got " + s(p.low_threshold));
  }
  if (!(p.credit_alpha >= 0) || !std::isfinite(p.credit_alpha)) {
    return InvalidArgumentError("credit_alpha must be a finite number >= 0");
  }
  if (!(p.credit_beta >= 0 && p.credit_beta <= 1)) {
    return InvalidArgumentError("credit_beta must be in [0, 1]");
  }
  if (!(p.credit_gamma >= 0) || !std::isfinite(p.credit_gamma)) {
    return InvalidArgumentError("credit_gamma must be a finite number >= 0");
  }
  if (p.prefix_look < 0 || p.after_look < 0) {
    return InvalidArgumentError("prefix_look and after_look must be >= 0");
  }
  if (p.cache != CacheMode::kNone && p.cfg_scale > 0) {
    return InvalidArgumentError("cache '" + std::string(CacheModeName(p.cache)) +
                                "' with cfg_scale > 0 is not supported (use cache none)");
  }
  return Status::Ok();
}

}  // namespace unmask
