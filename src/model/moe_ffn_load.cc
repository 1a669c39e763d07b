#include <cmath>
#include <memory>
#include <string>

#include "model/gguf_tensors.h"
#include "model/moe_ffn.h"

namespace unmask {

StatusOr<std::unique_ptr<MoeFfnWeights>> LoadMoeFfn(const gguf::GgufFile& f, const ModelConfig& c,
                                                    const std::string& p, WeightMode mode,
                                                    ComputeType compute) {
  auto w = std::make_unique<MoeFfnWeights>();
  const int64_t d = c.hidden_size, e_count = c.num_experts, fe = c.expert_ffn_size;
  const std::string arch = c.architecture + ".";
  const std::string keys = " (" + arch + "expert_count = " + std::to_string(e_count) + ", " + arch +
                           "expert_feed_forward_length = " + std::to_string(fe) + ")";
  auto with_keys = [&](Status s) {
    return s.code() == StatusCode::kInvalidArgument ? InvalidArgumentError(s.message() + keys) : s;
  };
  {
    auto router = GetTensor(f, p + "ffn_gate_inp.weight", {e_count, d});
    if (!router.ok()) return with_keys(router.status());
    const WeightMode router_mode = mode == WeightMode::kOnTheFly ? mode : WeightMode::kPacked;
    auto prepared = LinearWeight::Prepare(std::span<const TensorView>(&router.value(), 1),
                                          router_mode, ComputeType::kF32);
    if (!prepared.ok()) return prepared.status().WithContext(p + "ffn_gate_inp.weight");
    w->router = std::move(prepared).value();
  }
  if (f.FindTensor(p + "exp_probs_b.bias") != nullptr) {
    auto bias = GetVector(f, p + "exp_probs_b.bias", e_count);
    if (!bias.ok()) return with_keys(bias.status());
    w->selection_bias = std::move(bias).value();
    for (size_t e = 0; e < w->selection_bias.size(); ++e) {
      if (!std::isfinite(w->selection_bias[e])) {
        return InvalidArgumentError(f.path() + ": tensor '" + p + "exp_probs_b.bias' holds " +
                                    std::to_string(w->selection_bias[e]) + " at expert " +
                                    std::to_string(e) + " (the selection bias must be finite)");
      }
    }
  }
  auto gate = GetExperts(f, p + "ffn_gate_exps.weight", e_count, fe, d);
  if (!gate.ok()) return with_keys(gate.status());
  auto up = GetExperts(f, p + "ffn_up_exps.weight", e_count, fe, d);
  if (!up.ok()) return with_keys(up.status());
  auto down = GetExperts(f, p + "ffn_down_exps.weight", e_count, d, fe);
  if (!down.ok()) return with_keys(down.status());
  double bytes = 0;
  for (int64_t e = 0; e < e_count; ++e) {
    const TensorView parts[2] = {(*gate)[e], (*up)[e]};
    auto gu = LinearWeight::Prepare(parts, mode, compute);
    if (!gu.ok()) return gu.status().WithContext(f.path() + ": " + p + "ffn_gate/up_exps");
    auto dn = LinearWeight::Prepare(std::span<const TensorView>(&(*down)[e], 1), mode, compute);
    if (!dn.ok()) return dn.status().WithContext(f.path() + ": " + p + "ffn_down_exps");
    if (e == 0) {
      // Bytes one expert's product reads: the packed copy, or the stored rows.
      const size_t owned = gu->owned_bytes() + dn->owned_bytes();
      bytes = owned > 0 ? static_cast<double>(owned)
                        : static_cast<double>(*RowBytes((*gate)[0].dtype, d) * fe +
                                              *RowBytes((*up)[0].dtype, d) * fe +
                                              *RowBytes((*down)[0].dtype, fe) * d);
    }
    w->gate_up.push_back(std::move(gu).value());
    w->down.push_back(std::move(dn).value());
  }
  w->expert_bytes = bytes;
  if (c.shared_expert_ffn_size > 0) {
    const int64_t fs = c.shared_expert_ffn_size;
    UNMASK_ASSIGN_OR_RETURN(TensorView sg, GetTensor(f, p + "ffn_gate_shexp.weight", {fs, d}));
    UNMASK_ASSIGN_OR_RETURN(TensorView su, GetTensor(f, p + "ffn_up_shexp.weight", {fs, d}));
    const TensorView parts[2] = {sg, su};
    auto gu = LinearWeight::Prepare(parts, mode, compute);
    if (!gu.ok()) return gu.status().WithContext(f.path() + ": " + p + "ffn_gate/up_shexp");
    w->shared_gate_up = std::move(gu).value();
    UNMASK_ASSIGN_OR_RETURN(w->shared_down,
                            GetLinear(f, p + "ffn_down_shexp.weight", d, fs, mode, compute));
    w->has_shared = true;
  } else if (f.FindTensor(p + "ffn_gate_shexp.weight") != nullptr) {
    return InvalidArgumentError(f.path() + ": tensor '" + p +
                                "ffn_gate_shexp.weight' (a shared expert) but " + arch +
                                "expert_shared_count is 0 or missing");
  }
  return w;
}

}  // namespace unmask
