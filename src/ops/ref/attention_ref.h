// Scalar reference attention (Vaswani et al. 2017; GQA as in Ainslie et al. 2023: query head h
// reads kv head h / (num_heads / num_kv_heads)), everything in double, rounded once per output.
#ifndef UNMASK_OPS_REF_ATTENTION_REF_H_
#define UNMASK_OPS_REF_ATTENTION_REF_H_

#include <cstdint>

#include "ops/attention.h"

namespace unmask::ref {

// q: [t, num_heads, head_dim], k/v: [s, num_kv_heads, head_dim], out: [t, num_heads, head_dim].
// Causal: query i sees keys j <= params.q_pos0 + i; block-causal: VisibleKeyCount; tree: the
// prefix [0, q_pos0) and TreeKeys. s >= 1.
void Attention(const float* q, const float* k, const float* v, int64_t t, int64_t s,
               int64_t num_heads, int64_t num_kv_heads, int64_t head_dim,
               const AttentionParams& params, float* out);

}  // namespace unmask::ref

#endif  // UNMASK_OPS_REF_ATTENTION_REF_H_
