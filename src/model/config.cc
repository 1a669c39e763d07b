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
    // LLaDA-MoE (inclusionAI LLaDA-MoE-7B-A1B; llama.cpp "llada-moe", conversion/llada.py
    // LLaDAMoEModel): bidirectional, per-head q/k RMSNorm, NEOX RoPE (no Q/K permutation),
    // softmax routing without renormalisation, every layer MoE (MODELS.md §2).
    {"llada-moe", AttentionKind::kBidirectional, RopeLayout::kNeox},
    // Qwen3-MoE (llama.cpp "qwen3moe"): the Qwen3 body with softmax top-k routing renormalised
    // (llama.cpp hard-codes norm_w true for it). The autoregressive MoE comparison.
    {"qwen3moe", AttentionKind::kCausal, RopeLayout::kNeox},
    // SDAR-MoE (JetAstra SDAR-30B-A3B; MODELS.md §4): the Qwen3-MoE body with block-causal
    // attention. llama.cpp has no such architecture; the name is unmask's (provisional).
    {"sdar-moe", AttentionKind::kBlockCausal, RopeLayout::kNeox},
    // LLaDA 2.x (inclusionAI LLaDA2.0/2.1-mini/-flash, HF LLaDA2MoeModelLM; MODELS.md §3): block
    // diffusion (block 32) on a BailingMoeV2 body: q/k RMSNorm, partial NEOX RoPE
    // (rope.dimension_count), leading dense layers, sigmoid routing with a selection bias and
    // group-limited top-k, renormalised (+1e-20) and scaled, shared experts. llama.cpp has no
    // such architecture yet (its PR #17454 is open); the name and the keys, llama.cpp's
    // bailingmoe2 ones, are unmask's (provisional).
    {"llada2-moe", AttentionKind::kBlockCausal, RopeLayout::kNeox},
};

bool IsMoeArch(std::string_view a) {
  return a == "llada-moe" || a == "qwen3moe" || a == "sdar-moe" || a == "llada2-moe";
}

// SDAR's released default block size (JetAstra/SDAR README, generate.py block_length).
constexpr int64_t kSdarDefaultBlockLength = 4;
// Fast-dLLM v2's bd_size (Efficient-Large-Model/Fast_dLLM_v2_7B config.json).
constexpr int64_t kFastDllmBlockLength = 32;
// LLaDA 2.x's block (SGLang python/sglang/srt/dllm/config.py; the HF generate's block_length).
constexpr int64_t kLlada2BlockLength = 32;

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

// The MoE keys (llama.cpp's names, src/llama-arch.cpp LLM_KV_EXPERT_*). Defaults: softmax
// gating for every MoE architecture here; expert_weights_norm false for llada-moe (its HF code
// hard-wires norm_topk_prob False) and true for qwen3moe / sdar-moe (llama.cpp hard-codes
// norm_w for qwen3moe); no group limit; scale 1.
Status ReadMoeConfig(const gguf::GgufFile& f, ModelConfig* cp) {
  ModelConfig& c = *cp;
  const std::string p = c.architecture + ".";
  UNMASK_ASSIGN_OR_RETURN(c.num_experts, GetPositive(f, p + "expert_count", int64_t{1} << 16));
  MoeRouting& r = c.routing;
  r.num_experts = c.num_experts;
  UNMASK_ASSIGN_OR_RETURN(r.top_k, GetPositive(f, p + "expert_used_count", int64_t{1} << 16));
  UNMASK_ASSIGN_OR_RETURN(c.expert_ffn_size, GetPositive(f, p + "expert_feed_forward_length"));
  if (f.Find(p + "expert_shared_count")) {
    UNMASK_ASSIGN_OR_RETURN(const int64_t shared, f.GetInt(p + "expert_shared_count"));
    if (shared < 0 || shared > 64) {
      return InvalidArgumentError(f.path() + ": " + p + "expert_shared_count must be in [0, 64]");
    }
    int64_t width = c.expert_ffn_size;
    if (f.Find(p + "expert_shared_feed_forward_length")) {
      UNMASK_ASSIGN_OR_RETURN(width, GetPositive(f, p + "expert_shared_feed_forward_length"));
    }
    c.shared_expert_ffn_size = shared * width;
  }
  if (f.Find(p + "leading_dense_block_count")) {
    UNMASK_ASSIGN_OR_RETURN(c.leading_dense_layers, f.GetInt(p + "leading_dense_block_count"));
    if (c.leading_dense_layers < 0 || c.leading_dense_layers > c.num_layers) {
      return InvalidArgumentError(f.path() + ": " + p + "leading_dense_block_count (" +
                                  std::to_string(c.leading_dense_layers) + ") must be in [0, " + p +
                                  "block_count = " + std::to_string(c.num_layers) + "]");
    }
    if (c.leading_dense_layers > 0 && c.ffn_size == 0) {
      return NotFoundError(f.path() + ": " + p + "leading_dense_block_count is " +
                           std::to_string(c.leading_dense_layers) + " but " + p +
                           "feed_forward_length (the dense layers' width) is missing");
    }
  }
  const bool llada2 = c.architecture == "llada2-moe";
  r.normalize = c.architecture != "llada-moe";
  if (llada2) {
    // LLaDA2MoeGate: sigmoid scores; the top-k weights divided by (sum + 1e-20) only when k > 1.
    r.gating = MoeGating::kSigmoid;
    r.normalize_eps = 1e-20f;
  }
  if (f.Find(p + "expert_weights_norm")) {
    UNMASK_ASSIGN_OR_RETURN(r.normalize, f.GetBool(p + "expert_weights_norm"));
  }
  if (f.Find(p + "expert_weights_scale")) {
    UNMASK_ASSIGN_OR_RETURN(const double scale, f.GetFloat(p + "expert_weights_scale"));
    // llama.cpp writes 0 for "no scale" in some converters.
    if (!(scale >= 0) || !std::isfinite(static_cast<float>(scale))) {
      return InvalidArgumentError(f.path() + ": " + p + "expert_weights_scale must be a finite " +
                                  "number >= 0 (0: no scale), got " + std::to_string(scale));
    }
    r.scale = scale == 0.0 ? 1.0f : static_cast<float>(scale);
  }
  if (f.Find(p + "expert_gating_func")) {
    UNMASK_ASSIGN_OR_RETURN(const int64_t g, f.GetInt(p + "expert_gating_func"));
    if (g != 1 && g != 2) {
      return UnimplementedError(f.path() + ": " + p + "expert_gating_func " + std::to_string(g) +
                                " is not supported (1 softmax, 2 sigmoid)");
    }
    r.gating = g == 1 ? MoeGating::kSoftmax : MoeGating::kSigmoid;
  }
  if (f.Find(p + "expert_group_count")) {
    UNMASK_ASSIGN_OR_RETURN(r.num_groups, GetPositive(f, p + "expert_group_count"));
    r.groups_used = r.num_groups;
    if (f.Find(p + "expert_group_used_count")) {
      UNMASK_ASSIGN_OR_RETURN(r.groups_used, GetPositive(f, p + "expert_group_used_count"));
    }
  }
  if (llada2 && r.top_k == 1) r.normalize = false;
  // The routing's constraints, named by their keys.
  const std::string count = p + "expert_count (" + std::to_string(r.num_experts) + ")";
  if (r.top_k > r.num_experts) {
    return InvalidArgumentError(f.path() + ": " + p + "expert_used_count (" +
                                std::to_string(r.top_k) + ") exceeds " + count);
  }
  if (r.num_experts % r.num_groups != 0) {
    return InvalidArgumentError(f.path() + ": " + p + "expert_group_count (" +
                                std::to_string(r.num_groups) + ") does not divide " + count);
  }
  if (r.groups_used > r.num_groups || r.groups_used * (r.num_experts / r.num_groups) < r.top_k) {
    return InvalidArgumentError(
        f.path() + ": " + p + "expert_group_used_count (" + std::to_string(r.groups_used) +
        ") must be at most expert_group_count (" + std::to_string(r.num_groups) +
        ") and its groups must hold expert_used_count (" + std::to_string(r.top_k) + ") experts");
  }
  if (Status s = ValidateMoeRouting(r); !s.ok()) {
    return InvalidArgumentError(f.path() + ": " + p + "expert_* keys: " + s.message());
  }
  return Status::Ok();
}

}  // namespace

int64_t ModelConfig::ActiveFfnWidth(int64_t layer) const {
  if (!is_moe_layer(layer)) return ffn_size;
  return routing.top_k * expert_ffn_size + shared_expert_ffn_size;
}

int64_t ModelConfig::ExpertParameters() const { return 3 * hidden_size * expert_ffn_size; }

double ModelConfig::ExpectedExpertsHit(double positions) const {
  if (!is_moe() || !(positions > 0)) return 0;
  const double e = static_cast<double>(num_experts), k = static_cast<double>(routing.top_k);
  return e * (1.0 - std::pow(1.0 - k / e, positions));
}

namespace {
// Parameters of the model; `active`: only those one position multiplies by (top_k experts).
int64_t CountParameters(const ModelConfig& c, bool active) {
  // In double: the bounds of ReadModelConfig keep it exact for real models, and a corrupt header
  // cannot overflow.
  const double d = static_cast<double>(c.hidden_size);
  const double q = static_cast<double>(c.num_heads) * static_cast<double>(c.head_dim);
  const double kv = static_cast<double>(c.num_kv_heads) * static_cast<double>(c.head_dim);
  const double attention = d * (q + 2 * kv) + q * d + 2 * d;
  double total = 0;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    double ffn = 3 * d * static_cast<double>(c.ffn_size);
    if (c.is_moe_layer(l)) {
      const double experts = static_cast<double>(active ? c.routing.top_k : c.num_experts);
      ffn = experts * static_cast<double>(c.ExpertParameters()) +
            3 * d * static_cast<double>(c.shared_expert_ffn_size) +
            d * static_cast<double>(c.num_experts);  // router
    }
    total += attention + ffn;
  }
  const double embeddings = static_cast<double>(c.vocab_size) * d;
  total += (active ? 1 : (c.tied_output ? 1 : 2)) * embeddings + d;
  return total >= 9.2e18 ? INT64_MAX : static_cast<int64_t>(total);
}
}  // namespace

int64_t ModelConfig::NumParameters() const { return CountParameters(*this, false); }
int64_t ModelConfig::ActiveParameters() const { return CountParameters(*this, true); }

double ModelConfig::ForwardFlops(int64_t num_positions, int64_t num_logit_rows,
                                 bool prune_last_layer, int64_t num_cached) const {
  const double n = static_cast<double>(num_positions);
  const double r = static_cast<double>(num_logit_rows);
  const double d = static_cast<double>(hidden_size);
  const double q = static_cast<double>(num_heads * head_dim);
  const double kv = static_cast<double>(num_kv_heads * head_dim);
  const double cached = static_cast<double>(num_cached);
  // Query-key pairs per layer for `rows` queries (causal: the last `rows` of the fed positions).
  auto pairs = [&](double rows) {
    return attention == AttentionKind::kCausal ? rows * (cached + n - rows) + rows * (rows + 1) / 2
                                               : rows * (cached + n);
  };
  const double kv_proj = 2.0 * n * d * 2.0 * kv;
  // Q and output projections, attention, FFN (MoE: router + top_k experts + shared) for `rows`
  // queries of `layer`.
  auto rest = [&](int64_t layer, double rows) {
    const double f = static_cast<double>(ActiveFfnWidth(layer));
    const double router = is_moe_layer(layer) ? d * static_cast<double>(num_experts) : 0.0;
    return 2.0 * rows * (2.0 * d * q + 3.0 * d * f + router) + 4.0 * pairs(rows) * q;
  };
  double total = 0;
  for (int64_t l = 0; l < num_layers; ++l) {
    const bool pruned = prune_last_layer && l == num_layers - 1;
    total += kv_proj + rest(l, pruned ? r : n);
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
  // Per position and layer, floats read + written: norm (d + d), Q/K/V projections (d + q + 2kv),
  // attention output (q), output projection (q + d), residual add (2d), FFN norm (2d),
  // gate/up (d + 2f), activation (2f + f), down projection (f + d), residual add (2d); f the
  // active FFN width (MoE: the routed experts' and the shared expert's).
  double per_position = 0;
  for (int64_t l = 0; l < num_layers; ++l) {
    const double f = static_cast<double>(ActiveFfnWidth(l));
    per_position += 2 * d + (d + q + 2 * kv) + q + (q + d) + 2 * d + 2 * d + (d + 2 * f) + 3 * f +
                    (f + d) + 2 * d;
  }
  return element_bytes * (static_cast<double>(num_positions) * per_position +
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
  const bool moe = IsMoeArch(c.architecture);
  // All-MoE files may omit the dense width (it sizes only leading dense layers).
  if (!moe || f.Find(p + "feed_forward_length")) {
    UNMASK_ASSIGN_OR_RETURN(c.ffn_size, GetPositive(f, p + "feed_forward_length"));
  }
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
    c.block_length = c.architecture == "sdar" || c.architecture == "sdar-moe"
                         ? kSdarDefaultBlockLength
                     : c.architecture == "llada2-moe" ? kLlada2BlockLength
                                                      : kFastDllmBlockLength;
    if (f.Find("diffusion.block_length")) {
      UNMASK_ASSIGN_OR_RETURN(c.block_length, GetPositive(f, "diffusion.block_length", kMaxDim));
    }
  } else if (f.Find("diffusion.block_length")) {
    return InvalidArgumentError(f.path() + ": diffusion.block_length is set but '" +
                                c.architecture + "' is not a block-diffusion architecture");
  }
  if (moe) {
    UNMASK_RETURN_IF_ERROR(ReadMoeConfig(f, &c));
  } else if (f.Find(p + "expert_count")) {
    return UnimplementedError(f.path() + ": " + p + "expert_count is set but '" + c.architecture +
                              "' is a dense architecture (mixture-of-experts ones: llada-moe, "
                              "qwen3moe, sdar-moe)");
  }
  // vocab_size and tied_output are filled from the tensors by the loader.
  return c;
}

}  // namespace unmask
