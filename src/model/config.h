// Model hyper-parameters read from GGUF metadata (llama.cpp key names, LLAMACPP.md).
#ifndef UNMASK_MODEL_CONFIG_H_
#define UNMASK_MODEL_CONFIG_H_

#include <cstdint>
#include <string>

#include "core/status.h"
#include "format/gguf.h"
#include "ops/moe_routing.h"
#include "ops/rope.h"

namespace unmask {

// Whether position i may attend to position j > i. A property of the architecture
// (ARCHITECTURE.md): LLaDA/Dream are bidirectional, Llama/Qwen are causal, SDAR is block-causal
// (bidirectional inside blocks of block_length positions aligned to position 0, causal across
// them; ALGORITHMS.md §5.1).
enum class AttentionKind { kCausal, kBidirectional, kBlockCausal };

struct ModelConfig {
  std::string architecture;  // general.architecture, e.g. "llada"
  std::string name;          // general.name ("" when absent)
  int64_t vocab_size = 0;    // rows of token_embd
  int64_t hidden_size = 0;   // <arch>.embedding_length
  int64_t num_layers = 0;    // <arch>.block_count
  int64_t num_heads = 0;     // <arch>.attention.head_count
  int64_t num_kv_heads = 0;  // <arch>.attention.head_count_kv (defaults to num_heads)
  // <arch>.attention.key_length (Qwen3 sets head_dim apart from hidden / heads), else
  // hidden_size / num_heads.
  int64_t head_dim = 0;
  int64_t ffn_size = 0;        // <arch>.feed_forward_length
  int64_t context_length = 0;  // <arch>.context_length: longest canvas (prompt + generation)
  float rms_eps = 1e-5f;       // <arch>.attention.layer_norm_rms_epsilon
  double rope_base = 10000.0;  // <arch>.rope.freq_base
  int64_t rope_dim = 0;        // <arch>.rope.dimension_count (defaults to head_dim)
  RopeLayout rope_layout = RopeLayout::kInterleaved;
  AttentionKind attention = AttentionKind::kBidirectional;
  // diffusion.shift_logits: position p is predicted by output row p-1 (position 0 by row 0).
  // Default (key absent): true for "dream", false otherwise; true is refused for other archs.
  // The model returns unshifted rows; the decoder applies the shift.
  bool shift_logits = false;
  bool tied_output = false;  // no output.weight: the output projection reuses token_embd
  // Block-causal models: diffusion.block_length, the block size the model was trained with
  // (SDAR: 4, Fast-dLLM v2: 32 unless the file says otherwise); 0 for the other kinds.
  int64_t block_length = 0;

  // Mixture of experts (llama.cpp's keys; MODELS.md §6). num_experts 0: a dense SwiGLU FFN in
  // every layer. Otherwise layers [0, leading_dense_layers) keep the dense FFN (ffn_size) and the
  // others route each position to routing.top_k of num_experts SwiGLU experts of width
  // expert_ffn_size (blk.N.ffn_{gate,up,down}_exps, stacked [E, rows, cols]), plus a shared
  // SwiGLU expert of width shared_expert_ffn_size on every position when that is > 0
  // (blk.N.ffn_{gate,up,down}_shexp; LLaDA 2.x). The router blk.N.ffn_gate_inp [E, hidden] is
  // multiplied in f32 whatever the compute type (LLaDA2 `router_dtype` fp32).
  int64_t num_experts = 0;             // <arch>.expert_count
  int64_t expert_ffn_size = 0;         // <arch>.expert_feed_forward_length
  int64_t shared_expert_ffn_size = 0;  // expert_shared_feed_forward_length x expert_shared_count
  int64_t leading_dense_layers = 0;    // <arch>.leading_dense_block_count
  // top_k = <arch>.expert_used_count, gating = expert_gating_func (1 softmax, 2 sigmoid),
  // normalize = expert_weights_norm, scale = expert_weights_scale, groups =
  // expert_group_count / expert_group_used_count; defaults per architecture (config.cc).
  MoeRouting routing;

  bool is_moe() const { return num_experts > 0; }
  bool is_moe_layer(int64_t layer) const { return is_moe() && layer >= leading_dense_layers; }
  // The FFN width one position's forward multiplies through in `layer` (dense: ffn_size; MoE:
  // top_k * expert_ffn_size + shared_expert_ffn_size), for FLOP and activation counts.
  int64_t ActiveFfnWidth(int64_t layer) const;

  // A full-canvas diffusion model (bidirectional: LLaDA, Dream).
  bool is_diffusion() const { return attention == AttentionKind::kBidirectional; }
  // A block-diffusion model (block-causal: SDAR).
  bool is_block_diffusion() const { return attention == AttentionKind::kBlockCausal; }
  // Whether decoding needs a mask token (every diffusion kind).
  bool needs_mask_token() const { return attention != AttentionKind::kCausal; }
  // Parameters of the weights (embedding counted once when tied; every expert counted).
  int64_t NumParameters() const;
  // Parameters one position's forward multiplies by (MoE: top_k experts + shared + router; the
  // embedding row gather not counted, the output projection counted). Dense: NumParameters()
  // minus the embedding when untied.
  int64_t ActiveParameters() const;
  // Parameters of one routed expert (gate, up and down: 3 * hidden * expert_ffn_size).
  int64_t ExpertParameters() const;
  // Expected distinct experts one MoE layer reads for `positions` positions routed
  // independently and uniformly: E (1 - (1 - k / E)^N) (MODELS.md §6.4). Real routing is
  // correlated, so this is an upper bound; 0 for dense models or N <= 0.
  double ExpectedExpertsHit(double positions) const;
  // FLOPs (2 per multiply-accumulate) of one forward of ONE sequence of `num_positions` positions
  // with logits for `num_logit_rows` of them. prune_last_layer: the last layer computes queries,
  // attention output and FFN only for the logit rows (keys/values for all), as TransformerModel
  // does for bidirectional models. Attention counts every query-key pair it computes (causal: the
  // lower triangle; block-causal: counted as bidirectional, an upper bound that is exact for one
  // fed block). num_cached: positions read from a KV cache before the fed ones (every query
  // also attends to them). Elementwise ops (norms, RoPE, softmax) are not counted.
  double ForwardFlops(int64_t num_positions, int64_t num_logit_rows, bool prune_last_layer,
                      int64_t num_cached = 0) const;
  // Bytes of KV cache traffic of one sequence's forward: the attention of every layer reads the
  // keys and values of `num_cached` + `num_positions` positions, and with a cache (`writes_cache`)
  // the fed positions' keys and values are written. element_bytes: 4 (f32, this engine's cache);
  // the planner passes 2 for a bf16 cache.
  double ForwardKvBytes(int64_t num_positions, int64_t num_cached, bool writes_cache,
                        double element_bytes = 4.0) const;
  // Bytes of activations one forward moves (a first-order model: each layer reads its input and
  // writes its output once per position for the norm, Q/K/V, attention output, output projection,
  // gate/up, FFN activation and down projection; plus the logits written). element_bytes as above.
  double ForwardActivationBytes(int64_t num_positions, int64_t num_logit_rows,
                                double element_bytes = 4.0) const;
  // Bytes of one sequence's KV cache holding `num_positions` positions.
  double KvCacheBytes(int64_t num_positions, double element_bytes = 4.0) const;
};

// Reads and validates the hyper-parameters of a llama-family architecture ("llada", "llama",
// "dream", "qwen2", "qwen3", "sdar", "fast_dllm_v2") or a mixture-of-experts one ("llada-moe",
// "qwen3moe", "sdar-moe", "llada2-moe").
// Errors: NotFound naming a missing required key; InvalidArgument naming an inconsistent value
// (e.g. head_count not dividing embedding_length, head_count_kv not dividing head_count).
StatusOr<ModelConfig> ReadModelConfig(const gguf::GgufFile& file);

}  // namespace unmask

#endif  // UNMASK_MODEL_CONFIG_H_
