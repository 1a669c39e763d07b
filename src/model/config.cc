#include "model/config.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace unmask {
namespace {

// Architectures unmask can run, with their attention kind and RoPE layout as stored in GGUF.
struct ArchTraits {
  std::string_view name;
  AttentionKind attention;
  RopeLayout rope_layout;
};
constexpr ArchTraits kArchs[] = {
    // llama.cpp's converter permutes Q/K rows for the interleaved ("normal") RoPE (LLAMACPP.md).
    {"llada", AttentionKind::kBidirectional, RopeLayout::kInterleaved},
    // Llama (autoregressive): the same block layout with causal attention. unmask loads and runs
    // its forward pass; autoregressive generation (KV cache, sampling) is not implemented yet.
    {"llama", AttentionKind::kCausal, RopeLayout::kInterleaved},
    // Dream (Qwen2 layout): q/k/v biases, Q/K rows in HF order for NEOX RoPE, shifted logits
    // (LLAMACPP.md "Dream GGUF").
    {"dream", AttentionKind::kBidirectional, RopeLayout::kNeox},
    // Qwen2 / Qwen2.5 (llama.cpp "qwen2"): q/k/v biases, NEOX RoPE, causal.
    {"qwen2", AttentionKind::kCausal, RopeLayout::kNeox},
    // Qwen3 (llama.cpp "qwen3"): per-head q/k RMSNorm before RoPE, head size apart from
    // hidden / heads (attention.key_length), no biases, NEOX RoPE, causal.
    {"qwen3", AttentionKind::kCausal, RopeLayout::kNeox},
    // SDAR (JetAstra/SDAR; MODELS.md §4): the Qwen3 body with block-causal attention
    // (diffusion.block_length). llama.cpp has no such architecture; unmask writes the qwen3 names.
    {"sdar", AttentionKind::kBlockCausal, RopeLayout::kNeox},
    // Fast-dLLM v2 (NVlabs/Fast-dLLM v2; MODELS.md §5): the Qwen2 body (q/k/v biases) with
    // block-causal attention over blocks of bd_size and the token shift (shifted logits).
    {"fast_dllm_v2", AttentionKind::kBlockCausal, RopeLayout::kNeox},
};

// SDAR's released default block size (JetAstra/SDAR README, generate.py block_length).
constexpr int64_t kSdarDefaultBlockLength = 4;
// Fast-dLLM v2's bd_size (Efficient-Large-Model/Fast_dLLM_v2_7B config.json).
constexpr int64_t kFastDllmBlockLength = 32;

// Upper bounds far above any real model, so that a corrupt header cannot make unmask allocate
// or compute with absurd sizes before the tensors are checked.
constexpr int64_t kMaxDim = int64_t{1} << 20;  // hidden, ffn, heads
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxContext = int64_t{1} << 24;  // 16M positions

StatusOr<int64_t> GetPositive(const gguf::GgufFile& f, const std::string& key,
                              int64_t max = kMaxDim) {
  UNMASK_ASSIGN_OR_RETURN(int64_t v, f.GetInt(key));
  if (v <= 0 || v > max) {
    return InvalidArgumentError(f.path() + ": " + key + " must be in [1, " + std::to_string(max) +
                                "], got " + std::to_string(v));
  }
  return v;
}

}  // namespace

int64_t ModelConfig::NumParameters() const {
  // In double: the bounds of ReadModelConfig keep it exact for real models, and a corrupt header
  // cannot overflow.
  const double d = static_cast<double>(hidden_size);
  const double q = static_cast<double>(num_heads) * static_cast<double>(head_dim);
  const double kv = static_cast<double>(num_kv_heads) * static_cast<double>(head_dim);
  const double per_layer = d * (q + 2 * kv) + q * d + 3 * d * static_cast<double>(ffn_size) + 2 * d;
  const double total = static_cast<double>(num_layers) * per_layer +
                       static_cast<double>(vocab_size) * d * (tied_output ? 1 : 2) + d;
  return total >= 9.2e18 ? INT64_MAX : static_cast<int64_t>(total);
}

double ModelConfig::ForwardFlops(int64_t num_positions, int64_t num_logit_rows,
                                 bool prune_last_layer, int64_t num_cached) const {
  const double n = static_cast<double>(num_positions);
  const double r = static_cast<double>(num_logit_rows);
  const double d = static_cast<double>(hidden_size);
  const double q = static_cast<double>(num_heads * head_dim);
  const double kv = static_cast<double>(num_kv_heads * head_dim);
  const double f = static_cast<double>(ffn_size);
  const double cached = static_cast<double>(num_cached);
  // Query-key pairs per layer for `rows` queries (causal: the last `rows` of the fed positions).
  auto pairs = [&](double rows) {
    return attention == AttentionKind::kCausal ? rows * (cached + n - rows) + rows * (rows + 1) / 2
                                               : rows * (cached + n);
  };
  const double kv_proj = 2.0 * n * d * 2.0 * kv;
  auto rest = [&](double rows) {  // Q and output projections, attention, FFN for `rows` queries
    return 2.0 * rows * (2.0 * d * q + 3.0 * d * f) + 4.0 * pairs(rows) * q;
  };
  const double layers = static_cast<double>(num_layers);
  double total = layers * kv_proj;
  if (prune_last_layer && num_layers > 0) {
    total += (layers - 1) * rest(n) + rest(r);
  } else {
    total += layers * rest(n);
  }
  return total + 2.0 * r * d * static_cast<double>(vocab_size);
}

double ModelConfig::ForwardKvBytes(int64_t num_positions, int64_t num_cached, bool writes_cache,
                                   double element_bytes) const {
  const double read =
      KvCacheBytes(num_cached, element_bytes) + KvCacheBytes(num_positions, element_bytes);
  const double written = writes_cache ? KvCacheBytes(num_positions, element_bytes) : 0.0;
  return read + written;
}

double ModelConfig::KvCacheBytes(int64_t num_positions, double element_bytes) const {
  const double kv = static_cast<double>(num_kv_heads * head_dim);
  return static_cast<double>(num_layers) * static_cast<double>(num_positions) * 2.0 * kv *
         element_bytes;
}

double ModelConfig::ForwardActivationBytes(int64_t num_positions, int64_t num_logit_rows,
                                           double element_bytes) const {
  const double d = static_cast<double>(hidden_size);
  const double q = static_cast<double>(num_heads * head_dim);
  const double kv = static_cast<double>(num_kv_heads * head_dim);
  const double f = static_cast<double>(ffn_size);
  // Per position and layer, floats read + written: norm (d + d), Q/K/V projections (d + q + 2kv),
  // attention output (q), output projection (q + d), residual add (2d), FFN norm (2d),
  // gate/up (d + 2f), activation (2f + f), down projection (f + d), residual add (2d).
  const double per = 2 * d + (d + q + 2 * kv) + q + (q + d) + 2 * d + 2 * d + (d + 2 * f) + 3 * f +
                     (f + d) + 2 * d;
  return element_bytes *
         (static_cast<double>(num_positions) * static_cast<double>(num_layers) * per +
          static_cast<double>(num_logit_rows) * static_cast<double>(vocab_size));
}

StatusOr<ModelConfig> ReadModelConfig(const gguf::GgufFile& f) {
  ModelConfig c;
  UNMASK_ASSIGN_OR_RETURN(c.architecture, f.GetString("general.architecture"));
  const ArchTraits* traits = nullptr;
  for (const ArchTraits& a : kArchs) {
    if (a.name == c.architecture) traits = &a;
  }
  if (traits == nullptr) {
    std::string known;
    for (const ArchTraits& a : kArchs) known += (known.empty() ? "" : ", ") + std::string(a.name);
    return UnimplementedError(f.path() + ": unsupported architecture '" + c.architecture +
                              "' (supported: " + known + ")");
  }
  c.attention = traits->attention;
  c.rope_layout = traits->rope_layout;
  if (f.Find("general.name")) {
    UNMASK_ASSIGN_OR_RETURN(c.name, f.GetString("general.name"));
  }
  const std::string p = c.architecture + ".";
  UNMASK_ASSIGN_OR_RETURN(c.hidden_size, GetPositive(f, p + "embedding_length"));
  UNMASK_ASSIGN_OR_RETURN(c.num_layers, GetPositive(f, p + "block_count", kMaxLayers));
  UNMASK_ASSIGN_OR_RETURN(c.ffn_size, GetPositive(f, p + "feed_forward_length"));
  UNMASK_ASSIGN_OR_RETURN(c.num_heads, GetPositive(f, p + "attention.head_count"));
  UNMASK_ASSIGN_OR_RETURN(c.context_length, GetPositive(f, p + "context_length", kMaxContext));
  c.num_kv_heads = c.num_heads;
  if (f.Find(p + "attention.head_count_kv")) {
    UNMASK_ASSIGN_OR_RETURN(c.num_kv_heads, GetPositive(f, p + "attention.head_count_kv"));
  }
  UNMASK_ASSIGN_OR_RETURN(double eps, f.GetFloat(p + "attention.layer_norm_rms_epsilon"));
  if (!(eps > 0.0 && eps < 1.0)) {
    return InvalidArgumentError(f.path() + ": " + p +
                                "attention.layer_norm_rms_epsilon must be in (0, 1)");
  }
  c.rms_eps = static_cast<float>(eps);
  if (f.Find(p + "rope.freq_base")) {
    UNMASK_ASSIGN_OR_RETURN(c.rope_base, f.GetFloat(p + "rope.freq_base"));
    if (!(c.rope_base > 0.0) || !std::isfinite(c.rope_base)) {
      return InvalidArgumentError(f.path() + ": " + p + "rope.freq_base must be a positive number");
    }
  }
  if (c.hidden_size % c.num_heads != 0 && !f.Find(p + "attention.key_length")) {
    return InvalidArgumentError(f.path() + ": " + p + "attention.head_count (" +
                                std::to_string(c.num_heads) + ") does not divide " + p +
                                "embedding_length (" + std::to_string(c.hidden_size) + ")");
  }
  if (c.num_heads % c.num_kv_heads != 0) {
    return InvalidArgumentError(f.path() + ": " + p + "attention.head_count_kv (" +
                                std::to_string(c.num_kv_heads) + ") does not divide head_count (" +
                                std::to_string(c.num_heads) + ")");
  }
  c.head_dim = c.hidden_size / c.num_heads;
  if (f.Find(p + "attention.key_length")) {
    UNMASK_ASSIGN_OR_RETURN(c.head_dim, GetPositive(f, p + "attention.key_length"));
    if (f.Find(p + "attention.value_length")) {
      UNMASK_ASSIGN_OR_RETURN(const int64_t value_length,
                              GetPositive(f, p + "attention.value_length"));
      if (value_length != c.head_dim) {
        return UnimplementedError(f.path() + ": " + p + "attention.value_length (" +
                                  std::to_string(value_length) + ") differs from " + p +
                                  "attention.key_length (" + std::to_string(c.head_dim) + ")");
      }
    }
  }
  c.rope_dim = c.head_dim;
  if (c.head_dim % 2 != 0 && !f.Find(p + "rope.dimension_count")) {
    return InvalidArgumentError(f.path() + ": the head size " + std::to_string(c.head_dim) + " (" +
                                p + "embedding_length / head_count) is odd; RoPE needs " + p +
                                "rope.dimension_count to be even");
  }
  if (f.Find(p + "rope.dimension_count")) {
    UNMASK_ASSIGN_OR_RETURN(c.rope_dim, GetPositive(f, p + "rope.dimension_count"));
    if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) {
      return InvalidArgumentError(
          f.path() + ": " + p + "rope.dimension_count (" + std::to_string(c.rope_dim) +
          ") must be even and at most the head size (" + std::to_string(c.head_dim) + ")");
    }
  }
  // A missing key means shifted logits for Dream (llama.cpp's converter writes none) and
  // Fast-dLLM v2 (its token shift).
  const bool shifts = c.architecture == "dream" || c.architecture == "fast_dllm_v2";
  c.shift_logits = shifts;
  if (f.Find("diffusion.shift_logits")) {
    UNMASK_ASSIGN_OR_RETURN(c.shift_logits, f.GetBool("diffusion.shift_logits"));
  }
  if (c.shift_logits && !shifts) {
    return UnimplementedError(f.path() + ": diffusion.shift_logits = true is not supported for '" +
                              c.architecture + "'");
  }
  if (f.Find(p + "attention.causal")) {
    UNMASK_ASSIGN_OR_RETURN(bool causal, f.GetBool(p + "attention.causal"));
    if (causal != (c.attention == AttentionKind::kCausal)) {
      return InvalidArgumentError(f.path() + ": " + p + "attention.causal = " +
                                  (causal ? "true" : "false") + " contradicts the architecture");
    }
  }
  if (c.attention == AttentionKind::kBlockCausal) {
    c.block_length = c.architecture == "sdar" ? kSdarDefaultBlockLength : kFastDllmBlockLength;
    if (f.Find("diffusion.block_length")) {
      UNMASK_ASSIGN_OR_RETURN(c.block_length, GetPositive(f, "diffusion.block_length", kMaxDim));
    }
  } else if (f.Find("diffusion.block_length")) {
    return InvalidArgumentError(f.path() + ": diffusion.block_length is set but '" +
                                c.architecture + "' is not a block-diffusion architecture");
  }
  // vocab_size and tied_output are filled from the tensors by the loader.
  return c;
}

}  // namespace unmask
