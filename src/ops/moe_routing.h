// Mixture-of-experts routing: router logits -> the experts each token is sent to and their
// weights. One op covers the routing variants of the MoE dLLMs (MODELS.md §6.1):
//   softmax -> top-k (-> renormalise)          Qwen3-MoE / SDAR-MoE, LLaDA-MoE (no renormalise)
//   sigmoid (+ selection bias) -> group limit -> top-k -> renormalise -> x routed scale
//                                              LLaDA 2.x, DeepSeek-V3 (`noaux_tc`)
// Sources: dInfer python/dinfer/model/modeling_llada2_moe.py `LLaDA2MoeGate.forward`,
// transformers modeling_qwen3_moe.py `Qwen3MoeSparseMoeBlock`, llama.cpp src/llama-graph.cpp
// `build_moe_ffn` (selection bias, group limit, norm_w, w_scale).
#ifndef UNMASK_OPS_MOE_ROUTING_H_
#define UNMASK_OPS_MOE_ROUTING_H_

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace unmask {

enum class MoeGating {
  kSoftmax,  // p = softmax over all experts (llama.cpp expert_gating_func 1)
  kSigmoid,  // p = sigmoid of each logit (expert_gating_func 2)
};

struct MoeRouting {
  int64_t num_experts = 0;  // E
  int64_t top_k = 0;        // experts per token, 1 <= top_k <= E
  MoeGating gating = MoeGating::kSoftmax;
  // Divide the top-k weights by (their sum + normalize_eps) (norm_topk_prob / expert_weights_norm).
  // Qwen3-MoE: eps 0; LLaDA 2.x: eps 1e-20 and only when top_k > 1 (the loader decides).
  bool normalize = false;
  float normalize_eps = 0.0f;
  float scale = 1.0f;  // routed_scaling_factor (expert_weights_scale), applied last
  // Group-limited selection: the E experts form num_groups equal groups of consecutive ids; a
  // group's score is the sum of its 2 best selection scores (its best one for groups of one
  // expert); only the groups_used best groups compete for the top-k. 1 / 1 = no limit.
  int64_t num_groups = 1;
  int64_t groups_used = 1;
};

// Checks a routing: E >= 1, 1 <= top_k <= E, num_groups dividing E, 1 <= groups_used <=
// num_groups, groups_used * (E / num_groups) >= top_k, finite scale and eps >= 0.
// Errors: InvalidArgument naming the field.
Status ValidateMoeRouting(const MoeRouting& r);

// Routes T tokens.
//   logits: [T, E] f32 router logits (x W_router^T, computed in f32 as every reference does).
//   selection_bias: [E] added to the scores for SELECTION only (LLaDA2 `expert_bias`, llama.cpp
//     `exp_probs_b`); the weights are the unbiased scores. Empty: none.
//   ids: [T, top_k] i32 out, slot j of token t = its j-th best expert (descending selection
//     score; equal scores: lower expert id first, also for groups).
//   weights: [T, top_k] f32 out: p[ids] (normalised and scaled as configured).
// Scores are computed in f32 (softmax with the max subtracted, sigmoid = 1 / (1 + e^-x)).
// A NaN logit makes that token's row fail (InvalidArgument naming the token).
// Errors: InvalidArgument for shapes that do not match the routing or an invalid routing.
Status RouteExperts(const TensorView& logits, std::span<const float> selection_bias,
                    const MoeRouting& routing, std::span<int32_t> ids, std::span<float> weights);

// The routed (token, slot) pairs grouped by expert (a counting sort, stable in token then slot
// order): the rows of expert e are order[offsets[e] .. offsets[e + 1]), each the flat index
// t * top_k + j of a slot. So every expert's weights are read once per forward.
struct MoeDispatch {
  std::vector<int32_t> offsets;  // [E + 1]
  std::vector<int32_t> order;    // [T * top_k]
  int64_t experts_hit() const;   // experts with at least one row
};
// ids: [T * top_k] from RouteExperts. Errors: InvalidArgument for an id outside [0, E).
Status DispatchExperts(std::span<const int32_t> ids, int64_t num_experts, MoeDispatch* out);

}  // namespace unmask

#endif  // UNMASK_OPS_MOE_ROUTING_H_
