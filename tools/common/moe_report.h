// What a run of a mixture-of-experts model reports about its routing (the `moe` object of
// `generate --json`, the bench and arena lines): experts touched per layer forward and the
// expert bytes that follow. Dense models report nothing.
#ifndef UNMASK_TOOLS_COMMON_MOE_REPORT_H_
#define UNMASK_TOOLS_COMMON_MOE_REPORT_H_

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "model/config.h"

namespace unmask {

// null for a dense model; else {"experts", "top_k", "shared_expert_ffn", "dense_layers",
// "gating", "active_parameters", "experts_hit_per_layer_forward" (mean distinct experts a MoE
// layer read per forward), "experts_hit_fraction" (that / experts), "expert_bytes" (bytes of
// hit experts' weights over the run), "expert_bytes_per_forward"}.
nlohmann::json MoeJson(const ModelConfig& c, const GenerationStats& st);

// "experts 8 top-2 (softmax), hit 5.1/8 per layer forward, 0.41 MB experts per forward" or ""
// for a dense model: one line for the human-readable summaries.
std::string MoeSummary(const ModelConfig& c, const GenerationStats& st);

}  // namespace unmask

#endif  // UNMASK_TOOLS_COMMON_MOE_REPORT_H_
