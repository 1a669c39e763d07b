#include "common/moe_report.h"

#include <cstdio>
#include <string>

namespace unmask {

nlohmann::json MoeJson(const ModelConfig& c, const GenerationStats& st) {
  if (!c.is_moe()) return nullptr;
  const double per_layer = st.experts_per_layer_forward();
  return {{"experts", c.num_experts},
          {"top_k", c.routing.top_k},
          {"expert_ffn", c.expert_ffn_size},
          {"shared_expert_ffn", c.shared_expert_ffn_size},
          {"dense_layers", c.leading_dense_layers},
          {"gating", c.routing.gating == MoeGating::kSoftmax ? "softmax" : "sigmoid"},
          {"active_parameters", c.ActiveParameters()},
          {"experts_hit_per_layer_forward", per_layer},
          {"experts_hit_fraction", per_layer / static_cast<double>(c.num_experts)},
          {"expert_bytes", st.expert_bytes},
          {"expert_bytes_per_forward",
           st.nfe > 0 ? st.expert_bytes / static_cast<double>(st.nfe) : 0.0}};
}

std::string MoeSummary(const ModelConfig& c, const GenerationStats& st) {
  if (!c.is_moe()) return "";
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                "experts %lld top-%lld (%s): hit %.1f/%lld per layer forward, %.2f MB of "
                "experts per forward",
                static_cast<long long>(c.num_experts), static_cast<long long>(c.routing.top_k),
                c.routing.gating == MoeGating::kSoftmax ? "softmax" : "sigmoid",
                st.experts_per_layer_forward(), static_cast<long long>(c.num_experts),
                st.nfe > 0 ? st.expert_bytes / static_cast<double>(st.nfe) / 1e6 : 0.0);
  return buf;
}

}  // namespace unmask
