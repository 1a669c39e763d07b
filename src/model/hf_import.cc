#include "model/hf_import.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "format/hf_checkpoint.h"
#include "model/hf_import_internal.h"

namespace unmask {
namespace {

using namespace hf_import;  // NOLINT: this file assembles the import's parts

constexpr HfArch kHfArchs[] = {
    {"LlamaForCausalLM", "llama", true, false},
    {"MistralForCausalLM", "llama", true, false},
    {"Qwen2ForCausalLM", "qwen2", false, false},
    {"Qwen3ForCausalLM", "qwen3", false, true},
    {"DreamModel", "dream", false, false},
    {"SDARForCausalLM", "sdar", false, true},
    {"Fast_dLLM_QwenForCausalLM", "fast_dllm_v2", false, false},
    {"LLaDAModelLM", "llada", true, false},  // its own config and tensor names (ImportLlada)
    // Mixture of experts (ReadMoeKeys): the Qwen3 attention names with routed experts.
    {"Qwen3MoeForCausalLM", "qwen3moe", false, true},
    {"SDARMoeForCausalLM", "sdar-moe", false, true},
    {"LLaDAMoEModelLM", "llada-moe", false, true},
    {"LLaDA2MoeModelLM", "llada2-moe", false, true},  // its own names (ImportLlada2)
};

StatusOr<const HfArch*> FindArch(const json& config, const std::string& path) {
  if (!config.contains("architectures")) return NotFoundError(path + ": architectures is missing");
  const json& a = config["architectures"];
  if (!a.is_array() || a.empty() || !a[0].is_string()) {
    return InvalidArgumentError(path + ": architectures must be a list of names, got " +
                                ShortDump(a));
  }
  const std::string name = a[0].get<std::string>();
  for (const HfArch& h : kHfArchs) {
    if (h.hf == name) return &h;
  }
  std::string known;
  for (const HfArch& h : kHfArchs) known += (known.empty() ? "" : ", ") + std::string(h.hf);
  return UnimplementedError(path + ": architectures[0] '" + name +
                            "' is not supported (supported: " + known + ")");
}

// The settings unmask does not run, each refused by name.
Status RefuseUnsupported(const json& config, const std::string& path) {
  if (config.contains("rope_scaling") && !config["rope_scaling"].is_null()) {
    return UnimplementedError(path + ": rope_scaling " + ShortDump(config["rope_scaling"]) +
                              " is not supported (only plain RoPE)");
  }
  if (config.contains("hidden_act") &&
      !(config["hidden_act"].is_string() && config["hidden_act"] == "silu")) {
    return UnimplementedError(path + ": hidden_act " + ShortDump(config["hidden_act"]) +
                              " is not supported (only silu: SwiGLU)");
  }
  for (const char* key : {"mlp_bias", "use_sliding_window"}) {
    if (!config.contains(key) || config[key].is_null()) continue;
    // nlohmann's value(key, false) throws on a non-boolean (found by hf_config_fuzz).
    if (!config[key].is_boolean()) {
      return InvalidArgumentError(path + ": " + key + " " + ShortDump(config[key]) +
                                  " must be true or false");
    }
    if (config[key].get<bool>()) {
      return UnimplementedError(path + ": " + key + " true is not supported");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<gguf::GgufFile>> ImportHfCheckpoint(const std::string& dir,
                                                             bool with_tokenizer) {
  auto owned = std::make_shared<Owned>();
  UNMASK_ASSIGN_OR_RETURN(owned->checkpoint, format::HfCheckpoint::Open(dir));
  const format::HfCheckpoint& ck = *owned->checkpoint;
  const std::string cpath = ck.config_path();
  const ConfigReader cfg(ck.config(), cpath);
  UNMASK_ASSIGN_OR_RETURN(const HfArch* arch, FindArch(ck.config(), cpath));
  if (arch->gguf == "llada") return ImportLlada(std::move(owned), *arch, with_tokenizer);
  if (arch->gguf == "llada2-moe") return ImportLlada2(std::move(owned), *arch, with_tokenizer);
  UNMASK_RETURN_IF_ERROR(RefuseUnsupported(ck.config(), cpath));

  Dims d{};
  UNMASK_ASSIGN_OR_RETURN(d.vocab, cfg.Int("vocab_size"));
  UNMASK_ASSIGN_OR_RETURN(d.hidden, cfg.Int("hidden_size"));
  UNMASK_ASSIGN_OR_RETURN(d.layers, cfg.Int("num_hidden_layers"));
  UNMASK_ASSIGN_OR_RETURN(d.heads, cfg.Int("num_attention_heads"));
  UNMASK_ASSIGN_OR_RETURN(d.kv_heads, cfg.Int("num_key_value_heads", d.heads));
  if (IsMoe(*arch)) {
    UNMASK_ASSIGN_OR_RETURN(d.ffn, cfg.Int("intermediate_size", 0));
  } else {
    UNMASK_ASSIGN_OR_RETURN(d.ffn, cfg.Int("intermediate_size"));
  }
  if (d.layers > 4096) return cfg.Bad("num_hidden_layers", "at most 4096");
  if (d.heads % d.kv_heads != 0) {
    return InvalidArgumentError(cpath + ": num_key_value_heads (" + std::to_string(d.kv_heads) +
                                ") does not divide num_attention_heads (" +
                                std::to_string(d.heads) + ")");
  }
  if (!cfg.Has("head_dim") && d.hidden % d.heads != 0) {
    return InvalidArgumentError(cpath + ": num_attention_heads (" + std::to_string(d.heads) +
                                ") does not divide hidden_size (" + std::to_string(d.hidden) +
                                ") and there is no head_dim");
  }
  UNMASK_ASSIGN_OR_RETURN(d.head_dim, cfg.Int("head_dim", d.hidden / d.heads));
  UNMASK_ASSIGN_OR_RETURN(const int64_t context, cfg.Int("max_position_embeddings"));
  UNMASK_ASSIGN_OR_RETURN(const double eps, cfg.FloatBelow("rms_norm_eps", 1.0));
  UNMASK_ASSIGN_OR_RETURN(const double theta, cfg.FloatBelow("rope_theta", 3.4e38, 10000.0));
  UNMASK_ASSIGN_OR_RETURN(bool tied, cfg.Bool("tie_word_embeddings", false));
  if (!tied && ck.Find("lm_head.weight") == nullptr) {
    return InvalidArgumentError(cpath +
                                ": tie_word_embeddings is false but the checkpoint has no "
                                "lm_head.weight");
  }

  const std::string arch_name(arch->gguf);
  const std::string p = arch_name + ".";
  std::vector<gguf::MetadataEntry> md;
  auto set = [&md](std::string key, gguf::Value v) {
    md.push_back({std::move(key), std::move(v)});
  };
  set("general.architecture", gguf::Value::String(arch_name));
  set("general.name", gguf::Value::String(FolderName(ck.dir())));
  auto u32 = [](int64_t v) { return gguf::Value::U32(static_cast<uint32_t>(v)); };
  set(p + "context_length", u32(context));
  set(p + "embedding_length", u32(d.hidden));
  set(p + "block_count", u32(d.layers));
  if (d.ffn > 0) set(p + "feed_forward_length", u32(d.ffn));
  set(p + "attention.head_count", u32(d.heads));
  set(p + "attention.head_count_kv", u32(d.kv_heads));
  set(p + "rope.freq_base", gguf::Value::F32(static_cast<float>(theta)));
  set(p + "attention.layer_norm_rms_epsilon", gguf::Value::F32(static_cast<float>(eps)));
  if (IsMoe(*arch)) UNMASK_RETURN_IF_ERROR(ReadMoeKeys(cfg, ck.config(), *arch, &d, &md));
  if (arch_name == "llada-moe") {
    set(p + "attention.causal", gguf::Value::Bool(false));
    set("diffusion.shift_logits", gguf::Value::Bool(false));
  }
  if (arch->head_dim_key || d.head_dim * d.heads != d.hidden) {
    set(p + "attention.key_length", u32(d.head_dim));
    set(p + "attention.value_length", u32(d.head_dim));
  }
  if (arch_name == "sdar" || arch_name == "sdar-moe") {
    UNMASK_ASSIGN_OR_RETURN(const int64_t block, cfg.Int("block_size", 4));
    set("diffusion.block_length", u32(block));
  } else if (arch_name == "fast_dllm_v2") {
    UNMASK_ASSIGN_OR_RETURN(const int64_t block, cfg.Int("bd_size", 32));
    set("diffusion.block_length", u32(block));
  }

  TensorMapper m(ck, owned.get(), *arch, d);
  const int64_t q = d.heads * d.head_dim, kv = d.kv_heads * d.head_dim;
  UNMASK_RETURN_IF_ERROR(
      m.Map("model.embed_tokens.weight", "token_embd.weight", {d.vocab, d.hidden}));
  for (int64_t l = 0; l < d.layers; ++l) {
    const std::string h = "model.layers." + std::to_string(l) + ".";
    const std::string g = "blk." + std::to_string(l) + ".";
    const int64_t qh = arch->permute_qk ? d.heads : 0, kh = arch->permute_qk ? d.kv_heads : 0;
    UNMASK_RETURN_IF_ERROR(m.Map(h + "input_layernorm.weight", g + "attn_norm.weight", {d.hidden}));
    UNMASK_RETURN_IF_ERROR(
        m.Map(h + "self_attn.q_proj.weight", g + "attn_q.weight", {q, d.hidden}, false, qh));
    UNMASK_RETURN_IF_ERROR(
        m.Map(h + "self_attn.k_proj.weight", g + "attn_k.weight", {kv, d.hidden}, false, kh));
    UNMASK_RETURN_IF_ERROR(
        m.Map(h + "self_attn.v_proj.weight", g + "attn_v.weight", {kv, d.hidden}));
    UNMASK_RETURN_IF_ERROR(m.Map(h + "self_attn.q_proj.bias", g + "attn_q.bias", {q}, true, qh));
    UNMASK_RETURN_IF_ERROR(m.Map(h + "self_attn.k_proj.bias", g + "attn_k.bias", {kv}, true, kh));
    UNMASK_RETURN_IF_ERROR(m.Map(h + "self_attn.v_proj.bias", g + "attn_v.bias", {kv}, true));
    const bool qk_norm = arch->head_dim_key;  // Qwen3 layout
    UNMASK_RETURN_IF_ERROR(
        m.Map(h + "self_attn.q_norm.weight", g + "attn_q_norm.weight", {d.head_dim}, !qk_norm));
    UNMASK_RETURN_IF_ERROR(
        m.Map(h + "self_attn.k_norm.weight", g + "attn_k_norm.weight", {d.head_dim}, !qk_norm));
    UNMASK_RETURN_IF_ERROR(
        m.Map(h + "self_attn.o_proj.weight", g + "attn_output.weight", {d.hidden, q}));
    UNMASK_RETURN_IF_ERROR(
        m.Map(h + "post_attention_layernorm.weight", g + "ffn_norm.weight", {d.hidden}));
    if (d.experts > 0) {
      const std::string keys = "config.json num_experts = " + std::to_string(d.experts) +
                               ", hidden_size = " + std::to_string(d.hidden);
      const char* width_key =
          arch_name == "llada-moe" ? "expert_intermediate_size" : "moe_intermediate_size";
      const std::string widths = keys + ", " + width_key + " = " + std::to_string(d.expert_ffn);
      UNMASK_RETURN_IF_ERROR(MapRoutedExperts(m, h, g, d, widths));
      continue;
    }
    UNMASK_RETURN_IF_ERROR(
        m.Map(h + "mlp.gate_proj.weight", g + "ffn_gate.weight", {d.ffn, d.hidden}));
    UNMASK_RETURN_IF_ERROR(m.Map(h + "mlp.up_proj.weight", g + "ffn_up.weight", {d.ffn, d.hidden}));
    UNMASK_RETURN_IF_ERROR(
        m.Map(h + "mlp.down_proj.weight", g + "ffn_down.weight", {d.hidden, d.ffn}));
  }
  UNMASK_RETURN_IF_ERROR(m.Map("model.norm.weight", "output_norm.weight", {d.hidden}));
  if (tied) {
    m.Ignore("lm_head.weight");  // transformers ties it to the embedding
  } else {
    UNMASK_RETURN_IF_ERROR(m.Map("lm_head.weight", "output.weight", {d.vocab, d.hidden}));
  }
  UNMASK_RETURN_IF_ERROR(m.CheckNoExtras());
  return FinishView(cfg, std::move(owned), std::move(md), m, d.vocab, with_tokenizer);
}

StatusOr<std::unique_ptr<gguf::GgufFile>> OpenModelFile(const std::string& path) {
  if (format::IsDirectory(path)) return ImportHfCheckpoint(path);
  return gguf::GgufFile::Open(path);
}

}  // namespace unmask
