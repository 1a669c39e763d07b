// Scalar references for mixture-of-experts routing and the MoE SwiGLU FFN, in double, written
// straight from the published forward (MODELS.md §6.1; dInfer modeling_llada2_moe.py
// `LLaDA2MoeGate`, transformers modeling_qwen3_moe.py): a full sort per token instead of the
// op's partial selection, and a dense loop over tokens and slots instead of grouping by expert.
#ifndef UNMASK_OPS_REF_MOE_REF_H_
#define UNMASK_OPS_REF_MOE_REF_H_

#include <cstdint>
#include <vector>

#include "ops/moe_routing.h"

namespace unmask::ref {

// logits: [t, E]; bias: [E] or nullptr. ids / weights: [t, top_k]. Same tie rule as the op (lower
// id / group index first); scores in double.
void RouteExperts(const float* logits, int64_t t, const float* bias, const MoeRouting& r,
                  int32_t* ids, float* weights);

// One SwiGLU expert's weights, row-major f32: gate, up [f, d]; down [d, f].
struct ExpertRef {
  const float* gate;
  const float* up;
  const float* down;
  int64_t f;
};

// out[t, d] = sum_j weights[t, j] * expert_{ids[t, j]}(x[t]) (+ shared(x[t]) when shared.f > 0),
// expert(x) = down (silu(gate x) * up x). x: [t, d]; ids / weights: [t, top_k].
void MoeFfn(const float* x, int64_t t, int64_t d, const std::vector<ExpertRef>& experts,
            const int32_t* ids, const float* weights, int64_t top_k, const ExpertRef& shared,
            float* out);

}  // namespace unmask::ref

#endif  // UNMASK_OPS_REF_MOE_REF_H_
