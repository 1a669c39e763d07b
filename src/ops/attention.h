// Scaled dot-product attention (Vaswani et al. 2017) with grouped-query attention (Ainslie et al.
// 2023): query head h reads key/value head h / (num_heads / num_kv_heads).
// out = softmax(q k^T * scale + mask) v, softmax in f32 over the keys.
#ifndef UNMASK_OPS_ATTENTION_H_
#define UNMASK_OPS_ATTENTION_H_

#include <cstdint>

#include "core/status.h"
#include "core/tensor.h"

namespace unmask {

// Device dispatch (all ops): the tensors of one call must be on one device (else InvalidArgument);
// a device without a kernel (in this build every device but kCpu) gives Unimplemented.

enum class AttentionMask {
  kNone,    // bidirectional: every query sees every key (LLaDA, Dream)
  kCausal,  // query i (absolute position q_pos0 + i) sees keys at positions <= its own
};

struct AttentionParams {
  float scale = 1.0f;  // usually 1/sqrt(head_dim)
  AttentionMask mask = AttentionMask::kNone;
  int64_t q_pos0 = 0;  // causal only: absolute position of query 0; key j is at position j
};

// q: [T, num_heads, head_dim], k/v: [S, num_kv_heads, head_dim], out: [T, num_heads, head_dim];
// all f32; num_heads % num_kv_heads == 0. out must not alias q, k or v.
// Errors: InvalidArgument on shape mismatch (names the tensors and dims).
Status Attention(const TensorView& q, const TensorView& k, const TensorView& v,
                 const AttentionParams& params, TensorView out);

}  // namespace unmask

#endif  // UNMASK_OPS_ATTENTION_H_
