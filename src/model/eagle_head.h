// An EAGLE draft layer (Li et al. 2024, "EAGLE: Speculative Sampling Requires Rethinking Feature
// Uncertainty", arXiv:2401.15077; SafeAILab/EAGLE, model/cnets.py): one decoder layer that runs
// autoregressively at the level of the target model's features. With f_j the target's final
// hidden state at position j (after its output RMSNorm: the row its output projection maps to the
// logits of token j+1; Workspace::last_normed) and t_{j+1} the token that followed, the input at
// position j is
//
//   x_j = W_fc [embed(t_{j+1}) ; f_j] (+ b_fc)                      [hidden]
//
// the layer is a llama decoder layer over the x (RoPE at position j, causal or tree attention
// over its own K/V cache; EAGLE-1 gives it no input RMSNorm, so the attention norm is optional),
//
//   a = x + Attn(norm_attn?(x));   g_j = a + FFN_SwiGLU(RMSNorm_ffn(a))
//
// and g_j is its guess of f_{j+1}: logits_draft = W_out g_j over the draft vocabulary give the
// token t_{j+2}, and g_j with a candidate token feeds the next draft position. W_out is the base
// model's output projection restricted to the draft vocabulary (`eagle.draft_vocab`, EAGLE-3 /
// FR-Spec's reduced draft head; the whole vocabulary when absent), copied into the file and kept
// frozen by the trainer (scripts/train/train_eagle.py). embed() is the base model's own token
// embedding (Model::EmbedTokens), not stored here.
//
// File: GGUF, general.architecture "eagle", beside the base model as BASE.eagle.gguf (folder:
// FOLDER/eagle.gguf), where `--spec eagle` looks for it. Metadata:
//   eagle.embedding_length          the base model's hidden size
//   eagle.vocab_size                the base model's vocabulary size
//   eagle.feed_forward_length       the layer's FFN size
//   eagle.attention.head_count      query heads; head_dim = hidden / head_count
//   eagle.attention.head_count_kv   key/value heads (divides head_count)
//   eagle.draft_vocab               optional int array (see above)
// RMSNorm epsilon, RoPE base and layout are the base model's. Tensors (f32, f16, bf16 or q8_0;
// [rows, cols] row-major): eagle.fc.weight [hidden, 2 hidden] (+ optional eagle.fc.bias),
// optional eagle.attn_norm.weight, eagle.attn_{q,k,v,output}.weight, eagle.ffn_norm.weight,
// eagle.ffn_{gate,up,down}.weight, eagle.output.weight [n_draft, hidden].
#ifndef UNMASK_MODEL_EAGLE_HEAD_H_
#define UNMASK_MODEL_EAGLE_HEAD_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "format/gguf.h"
#include "kv/kv_cache.h"
#include "model/config.h"
#include "ops/linear.h"
#include "ops/rope.h"

namespace unmask {

// Scratch of one caller of EagleHead::Forward (one per drafter); grown on demand.
struct EagleWorkspace {
  std::vector<float> in;       // [n, 2 hidden]  [embed ; feature]
  std::vector<float> x;        // [n, hidden]    residual stream
  std::vector<float> normed;   // [n, hidden]
  std::vector<float> q;        // [n, heads * head_dim]
  std::vector<float> k;        // [n, kv_heads * head_dim]
  std::vector<float> v;        // [n, kv_heads * head_dim]
  std::vector<float> attn;     // [n, heads * head_dim]
  std::vector<float> proj;     // [n, hidden]
  std::vector<float> gate_up;  // [n, 2 ffn]
  std::vector<float> ffn;      // [n, ffn]
  std::vector<float> logits;   // [n, n_draft]  after Forward: the draft logits
  RopeTable rope;
};

class EagleHead {
 public:
  // Reads the draft layer of `path` for a causal base model of configuration `base`.
  // Errors: NotFound / DataLoss for an unreadable or malformed file; InvalidArgument (naming the
  // key or tensor) for another architecture, sizes that are not the base model's, a head count
  // that does not divide the hidden size, a draft id outside the vocabulary or repeated, a
  // missing tensor or a wrong shape; Unimplemented for a base model that is not causal.
  static StatusOr<std::unique_ptr<EagleHead>> Load(const std::string& path,
                                                   const ModelConfig& base);
  // The same from an open file (tests, fuzzing).
  static StatusOr<std::unique_ptr<EagleHead>> FromFile(std::unique_ptr<gguf::GgufFile> file,
                                                       const ModelConfig& base);

  int64_t hidden_size() const { return hidden_; }
  int64_t draft_vocab_size() const { return static_cast<int64_t>(draft_ids_.size()); }
  // Base-vocabulary id of draft-vocabulary index i.
  int32_t draft_id(int64_t i) const { return draft_ids_[static_cast<size_t>(i)]; }
  const std::string& path() const { return path_; }
  // Bytes of the layer's weights; FLOPs of one row through the layer and the draft head (2 per
  // multiply-accumulate; attention not counted).
  size_t weight_bytes() const { return weight_bytes_; }
  double flops_per_row() const;

  // A K/V cache for the layer: one sequence of up to `max_positions` rows.
  StatusOr<KvCache> MakeKvCache(int64_t max_positions) const;

  // One pass over n rows. embed [n, hidden]: the base embedding of the token after each row's
  // feature; features [n, hidden]; positions [n] (RoPE). The cache holds rows [0, prefix) (earlier
  // positions, and before them nothing); the n rows are written at rows prefix + tree_rows - n ..
  // prefix + tree_rows - 1 where tree_rows = max(n, tree_parents.size()), dropping anything after.
  // Attention: with tree_parents empty, row i sees cache rows [0, prefix + i] (causal); else the
  // rows after `prefix` form a tree (tree_parents over all of them, the n new rows last; -1: a
  // child of the prefix) and row i sees the prefix, its ancestors and itself
  // (AttentionMask::kTree). Results in ws: x [n, hidden] (each row's guess of the next feature)
  // and logits [n, n_draft].
  // Errors: InvalidArgument for inconsistent sizes, a position beyond the context or a cache of
  // another shape; the cache's errors for a prefix past its length.
  Status Forward(std::span<const float> embed, std::span<const float> features,
                 std::span<const int32_t> positions, std::span<const int32_t> tree_parents,
                 int64_t prefix, KvCache& kv, EagleWorkspace& ws) const;

 private:
  EagleHead() = default;

  std::string path_;
  std::unique_ptr<gguf::GgufFile> file_;  // the weights' storage (kOnTheFly references it)
  int64_t hidden_ = 0, heads_ = 0, kv_heads_ = 0, head_dim_ = 0, ffn_ = 0;
  int64_t context_ = 0;
  float rms_eps_ = 1e-5f;
  double rope_base_ = 10000.0;
  int64_t rope_dim_ = 0;
  RopeLayout rope_layout_ = RopeLayout::kInterleaved;
  LinearWeight fc_;
  std::vector<float> fc_bias_;
  std::vector<float> attn_norm_;  // empty: no input norm (EAGLE-1)
  LinearWeight wq_, wk_, wv_, wo_;
  std::vector<float> ffn_norm_;
  LinearWeight gate_up_, down_;
  LinearWeight output_;             // [n_draft, hidden]
  std::vector<int32_t> draft_ids_;  // [n_draft]
  size_t weight_bytes_ = 0;
};

// BASE.eagle.gguf for BASE.gguf (a folder: FOLDER/eagle.gguf): where the draft layer is looked
// for when no --draft-heads is given.
std::string EagleHeadPathFor(const std::string& model_path);

}  // namespace unmask

#endif  // UNMASK_MODEL_EAGLE_HEAD_H_
