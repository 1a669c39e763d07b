// The llama-family transformer shared by "llada" (bidirectional), "llama", "qwen2", "qwen3"
// (causal), "dream" (bidirectional, Qwen2 layout), "sdar" (block-causal, Qwen3 layout) and the
// mixture-of-experts bodies "llada-moe" (bidirectional), "qwen3moe" (causal) and "sdar-moe"
// (block-causal), whose FFN is model/moe_ffn.h:
// pre-norm RMSNorm, RoPE, (grouped-query) attention, SwiGLU FFN, final RMSNorm and an output
// projection (tied to the token embedding when output.weight is absent). Biases: q/k/v projection
// biases and output.bias are used when the file has them (Dream, Qwen2); per-head q/k RMSNorm
// before RoPE when the file has attn_q_norm/attn_k_norm (Qwen3, SDAR; required for them).
// LLaDA: NVlabs/Fast-dLLM llada/model/modeling_llada.py; GGUF naming: llama.cpp
// src/models/llada.cpp.
#ifndef UNMASK_MODEL_TRANSFORMER_H_
#define UNMASK_MODEL_TRANSFORMER_H_

#include <functional>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "format/gguf.h"
#include "model/model.h"
#include "model/moe_ffn.h"
#include "ops/linear.h"
#include "ops/rope.h"

namespace unmask {

struct TransformerLayer {
  std::vector<float> attn_norm;  // [hidden]
  LinearWeight wq;               // [heads * head_dim, hidden]
  LinearWeight wk;               // [kv_heads * head_dim, hidden]
  LinearWeight wv;               // [kv_heads * head_dim, hidden]
  // Projection biases (Dream/Qwen2: blk.N.attn_{q,k,v}.bias); empty when the file has none.
  std::vector<float> bq;  // [heads * head_dim]
  std::vector<float> bk;  // [kv_heads * head_dim]
  std::vector<float> bv;  // [kv_heads * head_dim]
  // Per-head RMSNorm of queries and keys before RoPE (Qwen3/SDAR: blk.N.attn_{q,k}_norm.weight);
  // empty when the file has none.
  std::vector<float> q_norm;    // [head_dim]
  std::vector<float> k_norm;    // [head_dim]
  LinearWeight wo;              // [hidden, heads * head_dim]
  std::vector<float> ffn_norm;  // [hidden]
  LinearWeight gate_up;         // [2 * ffn, hidden]: ffn_gate rows then ffn_up rows (dense)
  LinearWeight down;            // [hidden, ffn] (dense)
  // Mixture-of-experts layers (ModelConfig::is_moe_layer): the routed experts instead of
  // gate_up / down; null in dense layers.
  std::unique_ptr<MoeFfnWeights> moe;
};

class TransformerModel final : public Model {
 public:
  // Builds the model from an opened GGUF (kept alive by `file`: the embedding and on-the-fly
  // weights point into its mapping). `progress(done, total)` is called once per prepared tensor.
  // `backend` (non-null) is kept for the model's lifetime. The weights and activations live in
  // host memory, so it must be a CPU backend.
  // Errors: NotFound naming a missing tensor; InvalidArgument naming a tensor whose shape or dtype
  // does not match the hyper-parameters or for a null backend; Unimplemented for a backend whose
  // device is not kCpu. `compute` is the packed weights' compute type (kF32 with kOnTheFly);
  // errors of LinearWeight::Prepare name the tensor.
  static StatusOr<std::unique_ptr<TransformerModel>> Create(
      std::shared_ptr<const gguf::GgufFile> file, ModelConfig config, WeightMode mode,
      ComputeType compute, const std::function<void(int, int)>& progress,
      std::shared_ptr<const Backend> backend);

  const ModelConfig& config() const override { return config_; }
  const Backend& backend() const override { return *backend_; }
  using Model::Forward;
  Status Forward(const BatchPlan& plan, KvCache* kv, Workspace& ws, TensorView logits,
                 ForwardStats* stats) const override;
  size_t weight_bytes() const override { return weight_bytes_; }
  ComputeType compute() const override { return compute_; }
  Status EmbedTokens(std::span<const int32_t> ids, TensorView out) const override;

 private:
  TransformerModel() = default;
  Status ValidatePlan(const BatchPlan& plan, const KvCache* kv, const TensorView& logits) const;

  std::shared_ptr<const gguf::GgufFile> file_;
  std::shared_ptr<const Backend> backend_;
  ModelConfig config_;
  TensorView token_embd_;  // [vocab, hidden] in the stored dtype (mmap'd)
  std::vector<TransformerLayer> layers_;
  std::vector<float> output_norm_;  // [hidden]
  LinearWeight output_;             // [vocab, hidden]
  std::vector<float> output_bias_;  // [vocab] (output.bias, Dream); empty when absent
  size_t weight_bytes_ = 0;
  double expert_bytes_ = 0;      // bytes of one routed expert (every MoE layer alike)
  double all_expert_bytes_ = 0;  // bytes of every routed expert of every layer
  ComputeType compute_ = ComputeType::kF32;
};

}  // namespace unmask

#endif  // UNMASK_MODEL_TRANSFORMER_H_
