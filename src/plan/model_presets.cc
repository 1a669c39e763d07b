#include "plan/model_presets.h"

namespace unmask::plan {
namespace {

ModelConfig Make(std::string arch, AttentionKind attention, int64_t vocab, int64_t hidden,
                 int64_t layers, int64_t heads, int64_t kv_heads, int64_t ffn, int64_t context,
                 bool tied) {
  ModelConfig c;
  c.architecture = std::move(arch);
  c.attention = attention;
  c.vocab_size = vocab;
  c.hidden_size = hidden;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.head_dim = hidden / heads;
  c.rope_dim = c.head_dim;
  c.ffn_size = ffn;
  c.context_length = context;
  c.tied_output = tied;
  c.shift_logits = c.architecture == "dream";
  return c;
}

constexpr auto kBi = AttentionKind::kBidirectional;
constexpr auto kCausal = AttentionKind::kCausal;
constexpr auto kBlock = AttentionKind::kBlockCausal;

// A mixture-of-experts preset: `dense` leading dense layers of width `ffn`, the others `experts`
// experts of width `expert_ffn` (top-k), a shared expert of width `shared_ffn`.
struct MoeShape {
  int64_t head_dim, experts, top_k, expert_ffn, shared_ffn, dense;
  MoeGating gating;
  bool normalize;
  float scale;
  int64_t groups, groups_used;
};
ModelConfig MakeMoe(std::string arch, AttentionKind attention, int64_t vocab, int64_t hidden,
                    int64_t layers, int64_t heads, int64_t kv_heads, int64_t ffn, int64_t context,
                    const MoeShape& m) {
  ModelConfig c =
      Make(std::move(arch), attention, vocab, hidden, layers, heads, kv_heads, ffn, context, false);
  c.head_dim = m.head_dim;
  c.rope_dim = m.head_dim;
  c.num_experts = m.experts;
  c.expert_ffn_size = m.expert_ffn;
  c.shared_expert_ffn_size = m.shared_ffn;
  c.leading_dense_layers = m.dense;
  c.routing.num_experts = m.experts;
  c.routing.top_k = m.top_k;
  c.routing.gating = m.gating;
  c.routing.normalize = m.normalize;
  c.routing.scale = m.scale;
  c.routing.num_groups = m.groups;
  c.routing.groups_used = m.groups_used;
  if (attention == AttentionKind::kBlockCausal) c.block_length = 32;
  return c;
}
constexpr auto kSoftmax = MoeGating::kSoftmax;
constexpr auto kSigmoid = MoeGating::kSigmoid;

}  // namespace

const std::vector<ModelPreset>& ModelPresets() {
  static const std::vector<ModelPreset> presets = {
      {"llada-8b",
       "GSAI-ML/LLaDA-8B-Instruct config.json: 32 layers, d_model 4096, 32 "
       "heads (MHA), mlp_hidden_size 12288, vocab 126464, no weight tying",
       Make("llada", kBi, 126464, 4096, 32, 32, 32, 12288, 4096, false)},
      {"dream-7b",
       "Dream-org/Dream-v0-Instruct-7B (Qwen2.5-7B layout): 28 layers, hidden "
       "3584, 28 heads / 4 KV heads, intermediate 18944, vocab 152064, untied lm_head",
       Make("dream", kBi, 152064, 3584, 28, 28, 4, 18944, 32768, false)},
      {"llama-3-8b",
       "meta-llama/Meta-Llama-3-8B config.json: 32 layers, hidden 4096, 32 heads / 8 KV heads, "
       "intermediate 14336, vocab 128256, untied",
       Make("llama", kCausal, 128256, 4096, 32, 32, 8, 14336, 8192, false)},
      {"qwen2.5-7b",
       "Qwen/Qwen2.5-7B-Instruct config.json (Dream's AR counterpart): 28 layers, hidden 3584, 28 "
       "heads / 4 KV heads, intermediate 18944, vocab 152064, untied",
       Make("llama", kCausal, 152064, 3584, 28, 28, 4, 18944, 32768, false)},
      {"llama-3.2-1b",
       "meta-llama/Llama-3.2-1B config.json (a draft model for llama-3-8b): 16 layers, hidden "
       "2048, 32 heads / 8 KV heads, intermediate 8192, vocab 128256, tied embeddings",
       Make("llama", kCausal, 128256, 2048, 16, 32, 8, 8192, 131072, true)},
      {"llada-moe-7b-a1b",
       "inclusionAI/LLaDA-MoE-7B-A1B (config values UNVERIFIED, from a third-party "
       "copy; the size matches the 14.7 GB checkpoint): 16 layers, hidden 2048, 16 "
       "heads (MHA, head_dim 128), 64 experts of width 1024, top-8 softmax without "
       "renormalisation, every layer MoE, vocab 157184, untied",
       MakeMoe("llada-moe", kBi, 157184, 2048, 16, 16, 16, 0, 8192,
               {128, 64, 8, 1024, 0, 0, kSoftmax, false, 1.0f, 1, 1})},
      {"llada2.0-mini",
       "inclusionAI/LLaDA2.0-mini / LLaDA2.1-mini config.json: 20 layers, "
       "hidden 2048, 16 heads / 4 KV heads (head_dim 128), layer 0 dense (5120), 256 experts "
       "of width 512, top-8 sigmoid with groups 4 of 8, renormalised, x2.5, one shared expert "
       "(512), vocab 157184, untied, block 32",
       MakeMoe("llada2-moe", kBlock, 157184, 2048, 20, 16, 4, 5120, 32768,
               {128, 256, 8, 512, 512, 1, kSigmoid, true, 2.5f, 8, 4})},
      {"llada2.0-flash",
       "inclusionAI/LLaDA2.0-flash (shapes UNVERIFIED, the dense width a guess; "
       "they give ~103 B parameters, ~6 B active, as the model card's 100B-A6B): 32 layers, "
       "hidden 4096, 32 heads / 4 KV heads (head_dim 128), layer 0 dense (9216), 256 experts of "
       "width 1024, top-8 sigmoid with groups 4 of 8, renormalised, x2.5, one shared expert "
       "(1024), vocab 157184, untied, block 32",
       MakeMoe("llada2-moe", kBlock, 157184, 4096, 32, 32, 4, 9216, 32768,
               {128, 256, 8, 1024, 1024, 1, kSigmoid, true, 2.5f, 8, 4})},
      {"qwen3-30b-a3b",
       "Qwen/Qwen3-30B-A3B (the AR comparison for the MoE dLLMs): 48 layers, "
       "hidden 2048, 32 heads / 4 KV heads (head_dim 128), 128 experts of width 768, top-8 "
       "softmax renormalised, vocab 151936, untied",
       MakeMoe("qwen3moe", kCausal, 151936, 2048, 48, 32, 4, 0, 40960,
               {128, 128, 8, 768, 0, 0, kSoftmax, true, 1.0f, 1, 1})},
  };
  return presets;
}

StatusOr<ModelPreset> FindModelPreset(std::string_view id) {
  std::string known;
  for (const ModelPreset& p : ModelPresets()) {
    if (p.id == id) return p;
    known += (known.empty() ? "" : ", ") + p.id;
  }
  return NotFoundError("unknown model '" + std::string(id) + "' (known: " + known +
                       "; or a .gguf file)");
}

}  // namespace unmask::plan
