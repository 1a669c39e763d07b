// Scaled dot-product attention (Vaswani et al. 2017) with grouped-query attention (Ainslie et al.
// 2023): query head h reads key/value head h / (num_heads / num_kv_heads).
// out = softmax(q k^T * scale + mask) v, softmax in f32 over the keys.
#ifndef UNMASK_OPS_ATTENTION_H_
#define UNMASK_OPS_ATTENTION_H_

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace unmask {

// Device dispatch (all ops): the tensors of one call must be on one device (else InvalidArgument);
// a device without a kernel (in this build every device but kCpu) gives Unimplemented.

enum class AttentionMask {
  kNone,    // bidirectional: every query sees every key (LLaDA, Dream)
  kCausal,  // query i (absolute position q_pos0 + i) sees keys at positions <= its own
  // Block-causal (block diffusion: SDAR, Fast-dLLM v2; ALGORITHMS.md §5.1): blocks of
  // block_length positions aligned to absolute position 0; query i (absolute position
  // p = q_pos0 + i) sees keys at positions < (p / block_length + 1) * block_length, i.e. every key
  // of its own block and of earlier blocks. Key j is at position j.
  kBlockCausal,
  // Token tree (speculative tree verification: SpecInfer, Miao et al. 2024; Medusa; EAGLE-2): the
  // keys [0, q_pos0) are a cached prefix that every query sees; key q_pos0 + r is node r of a
  // tree whose parent is tree_parents[r] (a node < r, or -1 for a child of the prefix); query i
  // is node tree_q0 + i and sees the prefix, its ancestors and itself, in key order. A chain
  // (tree_parents[r] = r - 1) is the causal mask with the same arithmetic, key for key.
  kTree,
};

struct AttentionParams {
  float scale = 1.0f;  // usually 1/sqrt(head_dim)
  AttentionMask mask = AttentionMask::kNone;
  int64_t q_pos0 = 0;        // causal, block-causal: absolute position of query 0; key j is at j
  int64_t block_length = 0;  // block-causal only: >= 1
  // kTree only: the parent of every tree node ([nodes]; the keys hold at least q_pos0 + nodes
  // rows) and the node of query 0. The span must outlive the call.
  std::span<const int32_t> tree_parents = {};
  int64_t tree_q0 = 0;
};

// kTree: the tree keys query `node` sees after the prefix, ascending: key q_pos0 + a for every
// ancestor a of `node` and for `node` itself. `out` is overwritten.
inline void TreeKeys(const AttentionParams& p, int64_t node, std::vector<int64_t>* out) {
  out->clear();
  for (int64_t a = node; a >= 0; a = p.tree_parents[static_cast<size_t>(a)]) {
    out->push_back(p.q_pos0 + a);
  }
  std::reverse(out->begin(), out->end());
}

// Keys [0, result) visible to the query at absolute position `pos` among `num_keys` keys.
inline int64_t VisibleKeyCount(const AttentionParams& p, int64_t pos, int64_t num_keys) {
  switch (p.mask) {
    case AttentionMask::kCausal:
      return pos + 1 < num_keys ? pos + 1 : num_keys;
    case AttentionMask::kBlockCausal: {
      const int64_t end = (pos / p.block_length + 1) * p.block_length;
      return end < num_keys ? end : num_keys;
    }
    case AttentionMask::kNone:
    case AttentionMask::kTree:  // not a prefix of the keys: see TreeKeys
      break;
  }
  return num_keys;
}

// q: [T, num_heads, head_dim], k/v: [S, num_kv_heads, head_dim], out: [T, num_heads, head_dim];
// all f32; num_heads % num_kv_heads == 0. out must not alias q, k or v.
// Errors: InvalidArgument on shape mismatch (names the tensors and dims), and for kTree a parent
// that is not an earlier node, queries past the last node or nodes past the keys.
Status Attention(const TensorView& q, const TensorView& k, const TensorView& v,
                 const AttentionParams& params, TensorView out);

}  // namespace unmask

#endif  // UNMASK_OPS_ATTENTION_H_
