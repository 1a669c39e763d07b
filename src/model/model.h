// The model interface: weights + forward pass, no request state (ARCHITECTURE.md "Main
// interfaces"). A model knows nothing about how tokens are chosen; which positions are fed and
// which rows need logits is the decoder's plan.
#ifndef UNMASK_MODEL_MODEL_H_
#define UNMASK_MODEL_MODEL_H_

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "core/compute.h"
#include "core/status.h"
#include "core/tensor.h"
#include "kv/kv_cache.h"
#include "model/config.h"
#include "ops/rope.h"

namespace unmask {

// One sequence of a forward batch. Sequences never attend to each other.
struct SequenceInput {
  std::span<const int32_t> tokens;      // [num_positions] token ids
  int32_t pos0 = 0;                     // absolute position of tokens[0] (RoPE)
  std::span<const int32_t> logit_rows;  // ascending indices into tokens whose logits are wanted
  // Sequence (slot) of the KvCache passed to Forward, or -1 for none. With a cache, positions
  // [0, pos0) come from it and the fed positions are written to it (kv/kv_cache.h: Plan drops
  // anything cached at or after pos0); attention spans [0, pos0 + len(tokens)).
  int32_t kv_seq = -1;
  // With kv_seq >= 0: overwrite the cached rows [pos0, pos0 + len(tokens)) in place instead of
  // dropping everything from pos0 on; attention then spans every cached position, so rows outside
  // the fed window keep their cached (possibly stale) keys and values. This is the dual cache /
  // vicinity refresh of Fast-dLLM and dInfer (ALGORITHMS.md §3.1, §4.3). The window must lie
  // inside the cached length.
  bool kv_replace = false;
  // Block-causal models: the attention blocks' length for this sequence (SDAR's generate builds
  // its mask from the block_length it decodes with, which may differ from the trained
  // diffusion.block_length); 0 = ModelConfig::block_length. Ignored by other kinds.
  int32_t block_length = 0;
  // Speculative tree verification (causal models with a KV cache; decode/decoder_ar.h): the fed
  // tokens form a tree. tree_parents[i] is the index among `tokens` of token i's parent (< i), or
  // -1 when token i follows the cached prefix [0, pos0) directly. Token i sits at position
  // pos0 + depth(i) (depth 0 for a parent of -1) and attends to the prefix, its ancestors and
  // itself (AttentionMask::kTree). Its keys and values are written to cache row pos0 + i, which is
  // not its position once the tree branches: the next plan's kv_keep moves the accepted path's
  // rows into place. Empty: a chain (the ordinary causal forward).
  std::span<const int32_t> tree_parents = {};
  // Applied before this forward (with kv_seq >= 0): cache rows kv_keep[j] move to rows
  // pos0 - kv_keep.size() + j (ascending, each row at or after its destination; see
  // KvCache::MoveRows). The accepted path of the previous tree verification.
  std::span<const int32_t> kv_keep = {};
  // Keep the final hidden state (after the output norm) of EVERY fed position in
  // Workspace::all_features, not only of the logit rows: an EAGLE drafter reads the prompt's
  // features after the prefill. The logit rows are computed exactly as without it (the last
  // layer runs a second time over all rows).
  bool all_features = false;
};

struct BatchPlan {
  std::vector<SequenceInput> sequences;

  int64_t num_positions() const;
  int64_t num_logit_rows() const;
};

// Scratch buffers of a forward pass. Grown by Reserve (never inside the layer loop); one Workspace
// per concurrent caller.
class Workspace {
 public:
  // Makes room for `num_positions` positions in total and `num_logit_rows` logit rows.
  void Reserve(const ModelConfig& config, int64_t num_positions, int64_t num_logit_rows);
  int64_t capacity() const { return capacity_; }

  Tensor hidden;        // [positions, hidden]        residual stream
  Tensor normed;        // [positions, hidden]        RMSNorm output
  Tensor q;             // [positions, heads * head_dim]
  Tensor k;             // [positions, kv_heads * head_dim]
  Tensor v;             // [positions, kv_heads * head_dim]
  Tensor attn;          // [positions, heads * head_dim]
  Tensor proj;          // [positions, hidden]        attention / FFN output projection
  Tensor gate_up;       // [positions, 2 * ffn]
  Tensor ffn;           // [positions, ffn]
  Tensor last_hidden;   // [logit rows, hidden]     rows kept for the last layer and logits
  Tensor last_normed;   // [logit rows, hidden]     after Forward: the output norm's rows, i.e.
                        // the input of the output projection (Medusa / EAGLE features)
  Tensor all_features;  // [positions, hidden]    after a Forward with SequenceInput::all_features:
                        // the output norm's rows of every fed position (rows of the other
                        // sequences unspecified)
  // Mixture-of-experts layers (ModelConfig::is_moe), for n rows and top_k slots per row:
  Tensor moe_logits;                  // [n, experts]              router logits
  Tensor moe_x;                       // [n * top_k, hidden]       rows gathered by expert
  Tensor moe_gate_up;                 // [n * top_k, 2 * expert_ffn]
  Tensor moe_act;                     // [n * top_k, expert_ffn]
  Tensor moe_y;                       // [n * top_k, hidden]       expert outputs, by expert
  Tensor shared_gate_up;              // [n, 2 * shared_expert_ffn]
  Tensor shared_act;                  // [n, shared_expert_ffn]
  std::vector<int32_t> moe_ids;       // [n * top_k]
  std::vector<float> moe_weights;     // [n * top_k]
  std::vector<int32_t> moe_slot_row;  // [n * top_k]: row of moe_y holding slot t * top_k + j
  MoeDispatch moe_dispatch;
  // RoPE cos/sin for positions [0, rope.max_positions()), grown on demand up to the context
  // length (a model with a 1M context does not pay for 1M positions it never uses).
  RopeTable rope;

 private:
  int64_t capacity_ = 0;
  int64_t logit_capacity_ = 0;
};

// Work done by one Forward call: FLOPs and the bytes it moves (the roofline's two axes).
struct ForwardStats {
  int64_t num_positions = 0;
  int64_t num_logit_rows = 0;
  double flops = 0;             // 2 per multiply-accumulate, from ModelConfig::ForwardFlops
  double weight_bytes = 0;      // weights read: every weight once per forward (Model::weight_bytes)
  double kv_bytes = 0;          // KV cache read + written (ModelConfig::ForwardKvBytes)
  double activation_bytes = 0;  // ModelConfig::ForwardActivationBytes
  double ms = 0;                // wall time
  // Mixture-of-experts models (zero for dense ones). weight_bytes then counts the non-expert
  // weights once plus expert_bytes: an expert no position was routed to is never read.
  int64_t moe_layers = 0;   // MoE layers the forward ran (a pruned last layer counts)
  int64_t experts_hit = 0;  // distinct experts with at least one row, summed over the layers
  int64_t expert_rows = 0;  // (position, expert) pairs computed, summed over the layers
  double expert_bytes = 0;  // bytes of the hit experts' weights (experts_hit x expert size)

  double bytes() const { return weight_bytes + kv_bytes + activation_bytes; }
  // FLOPs per byte moved (0 when nothing was moved).
  double arithmetic_intensity() const { return bytes() > 0 ? flops / bytes() : 0; }
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;
  // The backend the model computes on (LoadOptions::backend), alive as long as the model.
  virtual const Backend& backend() const = 0;

  // Runs the batch and writes logits [plan.num_logit_rows(), vocab] f32, sequence-major in plan
  // order. `kv` may be null when no sequence has kv_seq >= 0. Thread-compatible: concurrent calls
  // need separate Workspaces (and KV caches).
  // Errors: InvalidArgument for a token id outside the vocabulary, a position beyond the context,
  // unsorted/out-of-range logit rows, a logits tensor of the wrong shape, a kv_seq without a
  // cache or a cache of another shape; FailedPrecondition when pos0 is past the cached length.
  virtual Status Forward(const BatchPlan& plan, KvCache* kv, Workspace& ws, TensorView logits,
                         ForwardStats* stats) const = 0;
  // Without a KV cache.
  Status Forward(const BatchPlan& plan, Workspace& ws, TensorView logits,
                 ForwardStats* stats) const {
    return Forward(plan, nullptr, ws, logits, stats);
  }
  // A KV cache shaped for this model: `num_sequences` slots of up to context_length positions.
  StatusOr<KvCache> MakeKvCache(int64_t num_sequences) const;

  // The token embedding rows of `ids` into `out` [ids.size(), hidden] f32: an EAGLE draft layer
  // reads its target's embeddings (model/eagle_head.h). Errors: InvalidArgument for an id
  // outside the vocabulary or `out` of another shape; Unimplemented for a model without a table.
  virtual Status EmbedTokens(std::span<const int32_t> ids, TensorView out) const {
    (void)ids;
    (void)out;
    return UnimplementedError("this model has no token embedding table");
  }
  // Bytes of weights resident in memory (packed copies plus mmap'd data in use).
  virtual size_t weight_bytes() const = 0;
  // The number type of the projections' products (the packed weights' compute type; f32 for
  // weights kept in their stored type). Attention, norms and the KV cache are f32 in every case.
  virtual ComputeType compute() const { return ComputeType::kF32; }
};

}  // namespace unmask

#endif  // UNMASK_MODEL_MODEL_H_
