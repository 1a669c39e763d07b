#include "decode/dream_params.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace unmask {
namespace {

constexpr DreamAlg kAlgs[] = {DreamAlg::kOrigin, DreamAlg::kMaskGitPlus, DreamAlg::kTopKMargin,
                              DreamAlg::kEntropy};

// Rounds through memory so that the compiler cannot fuse a product into a following add (the
// float32 schedule must not depend on -ffp-contract or the target's FMA).
float RoundF32(float x) {
  volatile float v = x;
  return v;
}

}  // namespace

std::string_view DreamAlgName(DreamAlg a) {
  switch (a) {
    case DreamAlg::kMaskGitPlus:
      return "maskgit_plus";
    case DreamAlg::kTopKMargin:
      return "topk_margin";
    case DreamAlg::kEntropy:
      return "entropy";
    case DreamAlg::kOrigin:
      break;
  }
  return "origin";
}

std::optional<DreamAlg> DreamAlgFromName(std::string_view name) {
  for (DreamAlg a : kAlgs) {
    if (DreamAlgName(a) == name) return a;
  }
  return std::nullopt;
}

Status ValidateDreamParams(const DreamParams& p, int64_t prompt_length, int64_t context_length) {
  if (p.gen_length <= 0) return InvalidArgumentError("gen_length must be positive");
  if (p.steps <= 0) return InvalidArgumentError("steps must be positive");
  if (!(p.eps > 0.0 && p.eps < 1.0)) {
    return InvalidArgumentError("eps must be in (0, 1), got " + std::to_string(p.eps));
  }
  if (!(p.temperature >= 0.0) || !std::isfinite(p.temperature)) {
    return InvalidArgumentError("temperature must be a finite number >= 0");
  }
  if (!(p.alg_temp >= 0.0) || !std::isfinite(p.alg_temp)) {
    return InvalidArgumentError("alg_temp must be a finite number >= 0");
  }
  if (!(p.top_p > 0.0 && p.top_p <= 1.0)) {
    return InvalidArgumentError("top_p must be in (0, 1], got " + std::to_string(p.top_p));
  }
  if (p.top_k < 0) return InvalidArgumentError("top_k must be >= 0 (0 = off)");
  if (prompt_length <= 0) return InvalidArgumentError("the prompt is empty");
  if (prompt_length > context_length || p.gen_length > context_length - prompt_length) {
    return OutOfRangeError("prompt (" + std::to_string(prompt_length) + ") + gen_length (" +
                           std::to_string(p.gen_length) + ") exceeds the context length " +
                           std::to_string(context_length));
  }
  return Status::Ok();
}

std::vector<float> DreamTimesteps(int64_t steps, double eps) {
  const int64_t n = steps + 1;
  std::vector<float> ts(static_cast<size_t>(std::max<int64_t>(n, 0)));
  if (n <= 0) return ts;
  if (n == 1) {
    ts[0] = 1.0f;
    return ts;
  }
  const float start = 1.0f;
  const float end = static_cast<float>(eps);
  const float step = RoundF32(end - start) / static_cast<float>(n - 1);
  for (int64_t i = 0; i < n; ++i) {
    ts[static_cast<size_t>(i)] = i < n / 2 ? start + RoundF32(step * static_cast<float>(i))
                                           : end - RoundF32(step * static_cast<float>(n - 1 - i));
  }
  return ts;
}

float DreamTransferFraction(std::span<const float> ts, int64_t step) {
  const float ratio = ts[static_cast<size_t>(step + 1)] / ts[static_cast<size_t>(step)];
  return 1.0f - RoundF32(ratio);
}

int64_t DreamNumTransfer(int64_t num_masked, std::span<const float> ts, int64_t step) {
  if (step + 2 >= static_cast<int64_t>(ts.size())) return num_masked;  // the last step
  const float k = RoundF32(static_cast<float>(num_masked) * DreamTransferFraction(ts, step));
  return static_cast<int64_t>(k);
}

}  // namespace unmask
