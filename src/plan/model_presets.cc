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

}  // namespace

const std::vector<ModelPreset>& ModelPresets() {
  static const std::vector<ModelPreset> presets = {
      {"llada-8b",
       "GSAI-ML/LLaDA-8B-Instruct config.json (ALGORITHMS.md §1.10): 32 layers, d_model 4096, 32 "
       "heads (MHA), mlp_hidden_size 12288, vocab 126464, no weight tying",
       Make("llada", kBi, 126464, 4096, 32, 32, 32, 12288, 4096, false)},
      {"dream-7b",
       "Dream-org/Dream-v0-Instruct-7B (Qwen2.5-7B layout, ALGORITHMS.md §2.4): 28 layers, hidden "
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
