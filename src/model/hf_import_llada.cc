#include "model/hf_import_internal.h"

namespace unmask::hf_import {

StatusOr<std::unique_ptr<gguf::GgufFile>> ImportLlada(std::shared_ptr<Owned> owned,
                                                      const HfArch& arch, bool with_tokenizer) {
  const format::HfCheckpoint& ck = *owned->checkpoint;
  const std::string cpath = ck.config_path();
  const json& c = ck.config();
  const ConfigReader cfg(c, cpath);
  auto refuse_unless = [&](const char* key, const char* want) -> Status {
    if (!cfg.Has(key) || (c[key].is_string() && c[key] == want)) return Status::Ok();
    return UnimplementedError(cpath + ": " + key + " " + ShortDump(c[key]) +
                              " is not supported (only " + want + ")");
  };
  UNMASK_RETURN_IF_ERROR(refuse_unless("activation_type", "silu"));
  UNMASK_RETURN_IF_ERROR(refuse_unless("layer_norm_type", "rms"));
  UNMASK_RETURN_IF_ERROR(refuse_unless("block_type", "llama"));
  for (const char* key : {"include_bias", "include_qkv_bias", "alibi"}) {
    UNMASK_ASSIGN_OR_RETURN(const bool on, cfg.Bool(key, false));
    if (on) return UnimplementedError(cpath + ": " + key + " true is not supported");
  }
  if (c.contains("rope_scaling") && !c["rope_scaling"].is_null()) {
    return UnimplementedError(cpath + ": rope_scaling " + ShortDump(c["rope_scaling"]) +
                              " is not supported (only plain RoPE)");
  }
  Dims d{};
  UNMASK_ASSIGN_OR_RETURN(const int64_t vocab_size, cfg.Int("vocab_size"));
  // The embedding and output rows: embedding_size (padded) when given.
  UNMASK_ASSIGN_OR_RETURN(d.vocab, cfg.Int("embedding_size", vocab_size));
  if (d.vocab < vocab_size) return cfg.Bad("embedding_size", "at least vocab_size");
  UNMASK_ASSIGN_OR_RETURN(d.hidden, cfg.Int("d_model"));
  UNMASK_ASSIGN_OR_RETURN(d.layers, cfg.Int("n_layers"));
  UNMASK_ASSIGN_OR_RETURN(d.heads, cfg.Int("n_heads"));
  UNMASK_ASSIGN_OR_RETURN(d.kv_heads, cfg.Int("n_kv_heads", d.heads));
  UNMASK_ASSIGN_OR_RETURN(d.ffn, cfg.Int("mlp_hidden_size"));
  if (d.layers > 4096) return cfg.Bad("n_layers", "at most 4096");
  if (d.heads % d.kv_heads != 0 || d.hidden % d.heads != 0 || (d.hidden / d.heads) % 2 != 0) {
    return InvalidArgumentError(cpath + ": n_heads (" + std::to_string(d.heads) +
                                ") must divide d_model (" + std::to_string(d.hidden) +
                                ") into an even head size and be a multiple of n_kv_heads (" +
                                std::to_string(d.kv_heads) + ")");
  }
  d.head_dim = d.hidden / d.heads;
  UNMASK_ASSIGN_OR_RETURN(const int64_t context, cfg.Int("max_sequence_length"));
  UNMASK_ASSIGN_OR_RETURN(const double eps, cfg.FloatBelow("rms_norm_eps", 1.0));
  UNMASK_ASSIGN_OR_RETURN(const double theta, cfg.FloatBelow("rope_theta", 3.4e38, 10000.0));
  UNMASK_ASSIGN_OR_RETURN(const bool tied, cfg.Bool("weight_tying", false));

  std::vector<gguf::MetadataEntry> md;
  auto set = [&md](std::string key, gguf::Value v) {
    md.push_back({std::move(key), std::move(v)});
  };
  auto u32 = [](int64_t v) { return gguf::Value::U32(static_cast<uint32_t>(v)); };
  set("general.architecture", gguf::Value::String("llada"));
  set("general.name", gguf::Value::String(FolderName(ck.dir())));
  set("llada.context_length", u32(context));
  set("llada.embedding_length", u32(d.hidden));
  set("llada.block_count", u32(d.layers));
  set("llada.feed_forward_length", u32(d.ffn));
  set("llada.attention.head_count", u32(d.heads));
  set("llada.attention.head_count_kv", u32(d.kv_heads));
  set("llada.rope.freq_base", gguf::Value::F32(static_cast<float>(theta)));
  set("llada.attention.layer_norm_rms_epsilon", gguf::Value::F32(static_cast<float>(eps)));
  set("llada.attention.causal", gguf::Value::Bool(false));
  set("diffusion.shift_logits", gguf::Value::Bool(false));

  TensorMapper m(ck, owned.get(), arch, d);
  const int64_t q = d.heads * d.head_dim, kv = d.kv_heads * d.head_dim;
  UNMASK_RETURN_IF_ERROR(
      m.Map("model.transformer.wte.weight", "token_embd.weight", {d.vocab, d.hidden}));
  for (int64_t l = 0; l < d.layers; ++l) {
    const std::string h = "model.transformer.blocks." + std::to_string(l) + ".";
    const std::string g = "blk." + std::to_string(l) + ".";
    UNMASK_RETURN_IF_ERROR(m.Map(h + "attn_norm.weight", g + "attn_norm.weight", {d.hidden}));
    UNMASK_RETURN_IF_ERROR(
        m.Map(h + "q_proj.weight", g + "attn_q.weight", {q, d.hidden}, false, d.heads));
    UNMASK_RETURN_IF_ERROR(
        m.Map(h + "k_proj.weight", g + "attn_k.weight", {kv, d.hidden}, false, d.kv_heads));
    UNMASK_RETURN_IF_ERROR(m.Map(h + "v_proj.weight", g + "attn_v.weight", {kv, d.hidden}));
    UNMASK_RETURN_IF_ERROR(m.Map(h + "attn_out.weight", g + "attn_output.weight", {d.hidden, q}));
    UNMASK_RETURN_IF_ERROR(m.Map(h + "ff_norm.weight", g + "ffn_norm.weight", {d.hidden}));
    UNMASK_RETURN_IF_ERROR(m.Map(h + "ff_proj.weight", g + "ffn_gate.weight", {d.ffn, d.hidden}));
    UNMASK_RETURN_IF_ERROR(m.Map(h + "up_proj.weight", g + "ffn_up.weight", {d.ffn, d.hidden}));
    UNMASK_RETURN_IF_ERROR(m.Map(h + "ff_out.weight", g + "ffn_down.weight", {d.hidden, d.ffn}));
  }
  UNMASK_RETURN_IF_ERROR(m.Map("model.transformer.ln_f.weight", "output_norm.weight", {d.hidden}));
  if (!tied) {
    UNMASK_RETURN_IF_ERROR(
        m.Map("model.transformer.ff_out.weight", "output.weight", {d.vocab, d.hidden}));
  }
  UNMASK_RETURN_IF_ERROR(m.CheckNoExtras());
  return FinishView(cfg, std::move(owned), std::move(md), m, d.vocab, with_tokenizer);
}

}  // namespace unmask::hf_import
