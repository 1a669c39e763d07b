#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "model/hf_import_internal.h"

namespace unmask::hf_import {
namespace {

// Far above any released MoE (256 experts); a corrupt config must not size anything absurd.
constexpr int64_t kMaxExperts = int64_t{1} << 16;

// routed_scaling_factor as the f32 the GGUF key holds: positive and finite there too.
Status CheckScale(const ConfigReader& cfg, double scale) {
  const float f = static_cast<float>(scale);
  if (!(f > 0) || !std::isfinite(f)) {
    return cfg.Bad("routed_scaling_factor", "a positive number that f32 holds (1e-38 .. 3e38)");
  }
  return Status::Ok();
}

}  // namespace

// (moe_router_enable_expert_bias: the HF code adds it to the weights too, which llama.cpp does
// not reproduce either), moe_router_score_function other than softmax, router_num_group > 1,
// shared_expert_intermediate_size > 0, qk_layernorm false, partial_rotary_factor other than 1.
Status ReadMoeKeys(const ConfigReader& cfg, const json& c, const HfArch& arch, Dims* d,
                   std::vector<gguf::MetadataEntry>* md) {
  const std::string& cpath = cfg.path();
  const std::string p = std::string(arch.gguf) + ".";
  auto refuse = [&](const char* key, const std::string& why) {
    return UnimplementedError(cpath + ": " + key + " " + ShortDump(c[key]) + " is not supported (" +
                              why + ")");
  };
  UNMASK_ASSIGN_OR_RETURN(d->experts, cfg.Int("num_experts"));
  if (d->experts > kMaxExperts) return cfg.Bad("num_experts", "at most 65536");
  UNMASK_ASSIGN_OR_RETURN(const int64_t top_k, cfg.Int("num_experts_per_tok"));
  if (top_k > d->experts) return cfg.Bad("num_experts_per_tok", "at most num_experts");
  bool normalize = false;
  double scale = 1.0;
  if (arch.gguf == "llada-moe") {
    UNMASK_ASSIGN_OR_RETURN(d->expert_ffn, cfg.Int("expert_intermediate_size"));
    if (cfg.Has("moe_layer_freq")) {
      const json& f = c["moe_layer_freq"];
      if (!f.is_array() || static_cast<int64_t>(f.size()) != d->layers) {
        return cfg.Bad("moe_layer_freq",
                       "a list of num_hidden_layers (" + std::to_string(d->layers) + ") entries");
      }
      bool all_moe = true;
      for (const json& v : f) all_moe = all_moe && v.is_number_integer() && v.get<int64_t>() == 1;
      if (!all_moe) return refuse("moe_layer_freq", "only every layer MoE: [1, 1, ...]");
    }
    UNMASK_ASSIGN_OR_RETURN(const bool bias, cfg.Bool("moe_router_enable_expert_bias", false));
    if (bias) return refuse("moe_router_enable_expert_bias", "only false");
    if (cfg.Has("moe_router_score_function") && c["moe_router_score_function"] != "softmax") {
      return refuse("moe_router_score_function", "only softmax");
    }
    if (cfg.Has("router_num_group") && c["router_num_group"] != 1 && c["router_num_group"] != 0) {
      return refuse("router_num_group", "only ungrouped routing");
    }
    if (cfg.Has("shared_expert_intermediate_size") && c["shared_expert_intermediate_size"] != 0) {
      return refuse("shared_expert_intermediate_size", "LLaDA-MoE has no shared expert");
    }
    UNMASK_ASSIGN_OR_RETURN(const bool qk_norm, cfg.Bool("qk_layernorm", true));
    if (!qk_norm) return refuse("qk_layernorm", "only true");
    if (cfg.Has("partial_rotary_factor") && c["partial_rotary_factor"] != 1.0 &&
        c["partial_rotary_factor"] != 1) {
      return refuse("partial_rotary_factor", "only 1");
    }
    if (cfg.Has("routed_scaling_factor")) {
      UNMASK_ASSIGN_OR_RETURN(scale, cfg.Float("routed_scaling_factor"));
      UNMASK_RETURN_IF_ERROR(CheckScale(cfg, scale));
    }
  } else {
    UNMASK_ASSIGN_OR_RETURN(d->expert_ffn, cfg.Int("moe_intermediate_size"));
    UNMASK_ASSIGN_OR_RETURN(normalize, cfg.Bool("norm_topk_prob", false));
    UNMASK_ASSIGN_OR_RETURN(const int64_t step, cfg.Int("decoder_sparse_step", 1));
    if (step != 1) return refuse("decoder_sparse_step", "only 1: every layer MoE");
    if (cfg.Has("mlp_only_layers") &&
        !(c["mlp_only_layers"].is_array() && c["mlp_only_layers"].empty())) {
      return refuse("mlp_only_layers", "only [] : every layer MoE");
    }
    if (cfg.Has("shared_expert_intermediate_size") && c["shared_expert_intermediate_size"] != 0) {
      return refuse("shared_expert_intermediate_size", "Qwen3-MoE has no shared expert");
    }
  }
  auto u32 = [](int64_t v) { return gguf::Value::U32(static_cast<uint32_t>(v)); };
  md->push_back({p + "expert_count", u32(d->experts)});
  md->push_back({p + "expert_used_count", u32(top_k)});
  md->push_back({p + "expert_feed_forward_length", u32(d->expert_ffn)});
  md->push_back({p + "expert_weights_norm", gguf::Value::Bool(normalize)});
  md->push_back({p + "expert_weights_scale", gguf::Value::F32(static_cast<float>(scale))});
  md->push_back({p + "expert_gating_func", u32(1)});  // softmax
  return Status::Ok();
}

}  // namespace unmask::hf_import

namespace unmask::hf_import {

Status MapRoutedExperts(TensorMapper& m, const std::string& h, const std::string& g, const Dims& d,
                        const std::string& what) {
  UNMASK_RETURN_IF_ERROR(m.MapRows(h + "mlp.gate.weight", g + "ffn_gate_inp.weight",
                                   {d.experts, d.hidden}, 0, d.experts, what));
  for (const char* part : {"gate", "up", "down"}) {
    std::vector<std::string> names;
    for (int64_t e = 0; e < d.experts; ++e) {
      names.push_back(h + "mlp.experts." + std::to_string(e) + "." + part + "_proj.weight");
    }
    const bool down = std::string_view(part) == "down";
    UNMASK_RETURN_IF_ERROR(m.Stack(names, g + "ffn_" + part + "_exps.weight",
                                   down ? std::vector<int64_t>{d.hidden, d.expert_ffn}
                                        : std::vector<int64_t>{d.expert_ffn, d.hidden},
                                   what));
  }
  return Status::Ok();
}

// LLaDA 2.x (inclusionAI LLaDA2.0/2.1-mini/-flash: architectures LLaDA2MoeModelLM, model_type
// llada2_moe; MODELS.md §3; dInfer python/dinfer/model/modeling_llada2_moe.py): the BailingMoeV2
// body as llama.cpp's bailingmoe2 GGUF keys and names, under general.architecture llada2-moe
// (provisional: llama.cpp has no LLaDA2 architecture yet). Names: model.word_embeddings ->
// token_embd, attention.query_key_value (fused Q|K|V rows) -> attn_q / attn_k / attn_v (views,
// no copy), attention.{query,key}_layernorm -> attn_{q,k}_norm, attention.dense -> attn_output,
// layers < first_k_dense_replace: mlp.{gate,up,down}_proj -> ffn_{gate,up,down}; the others:
// mlp.gate -> ffn_gate_inp, mlp.gate.expert_bias -> exp_probs_b.bias, mlp.experts.N.* stacked ->
// ffn_*_exps, mlp.shared_experts.* -> ffn_*_shexp. Keys: num_experts, num_experts_per_tok,
// moe_intermediate_size, num_shared_experts, first_k_dense_replace, score_function (sigmoid |
// softmax), moe_router_enable_expert_bias, n_group, topk_group, norm_topk_prob (applied only
// when top-k > 1, as LLaDA2MoeGate), routed_scaling_factor, rotary_dim or partial_rotary_factor
// (rope.dimension_count), block_size (default 32). router_dtype is ignored: the router is always
// multiplied in f32. Refused by name: use_qkv_bias, use_bias, use_qk_norm false, rope_scaling,
// hidden_act other than silu.
StatusOr<std::unique_ptr<gguf::GgufFile>> ImportLlada2(std::shared_ptr<Owned> owned,
                                                       const HfArch& arch, bool with_tokenizer) {
  const format::HfCheckpoint& ck = *owned->checkpoint;
  const std::string cpath = ck.config_path();
  const json& c = ck.config();
  const ConfigReader cfg(c, cpath);
  auto refuse = [&](const char* key, const std::string& why) {
    return UnimplementedError(cpath + ": " + key + " " + ShortDump(c[key]) + " is not supported (" +
                              why + ")");
  };
  if (cfg.Has("rope_scaling")) return refuse("rope_scaling", "only plain RoPE");
  if (cfg.Has("hidden_act") && c["hidden_act"] != "silu") return refuse("hidden_act", "only silu");
  for (const char* key : {"use_qkv_bias", "use_bias"}) {
    UNMASK_ASSIGN_OR_RETURN(const bool on, cfg.Bool(key, false));
    if (on) return refuse(key, "only false");
  }
  UNMASK_ASSIGN_OR_RETURN(const bool qk_norm, cfg.Bool("use_qk_norm", true));
  if (!qk_norm) return refuse("use_qk_norm", "only true");
  std::string score = "sigmoid";
  if (cfg.Has("score_function")) {
    UNMASK_ASSIGN_OR_RETURN(score, cfg.String("score_function"));
  }
  if (score != "sigmoid" && score != "softmax") {
    return refuse("score_function", "sigmoid or softmax");
  }

  Dims d{};
  UNMASK_ASSIGN_OR_RETURN(d.vocab, cfg.Int("vocab_size"));
  UNMASK_ASSIGN_OR_RETURN(d.hidden, cfg.Int("hidden_size"));
  UNMASK_ASSIGN_OR_RETURN(d.layers, cfg.Int("num_hidden_layers"));
  UNMASK_ASSIGN_OR_RETURN(d.heads, cfg.Int("num_attention_heads"));
  UNMASK_ASSIGN_OR_RETURN(d.kv_heads, cfg.Int("num_key_value_heads", d.heads));
  if (d.layers > 4096) return cfg.Bad("num_hidden_layers", "at most 4096");
  if (d.heads % d.kv_heads != 0) {
    return cfg.Bad("num_key_value_heads", "a divisor of num_attention_heads");
  }
  if (!cfg.Has("head_dim") && d.hidden % d.heads != 0) {
    return cfg.Bad("num_attention_heads", "a divisor of hidden_size (there is no head_dim)");
  }
  UNMASK_ASSIGN_OR_RETURN(d.head_dim, cfg.Int("head_dim", d.hidden / d.heads));
  UNMASK_ASSIGN_OR_RETURN(d.experts, cfg.Int("num_experts"));
  if (d.experts > kMaxExperts) return cfg.Bad("num_experts", "at most 65536");
  UNMASK_ASSIGN_OR_RETURN(const int64_t top_k, cfg.Int("num_experts_per_tok"));
  UNMASK_ASSIGN_OR_RETURN(d.expert_ffn, cfg.Int("moe_intermediate_size"));
  int64_t shared = 0, dense = 0;
  if (cfg.Has("num_shared_experts") && c["num_shared_experts"] != 0) {
    UNMASK_ASSIGN_OR_RETURN(shared, cfg.Int("num_shared_experts"));
  }
  if (cfg.Has("first_k_dense_replace") && c["first_k_dense_replace"] != 0) {
    UNMASK_ASSIGN_OR_RETURN(dense, cfg.Int("first_k_dense_replace"));
  }
  if (dense > d.layers) return cfg.Bad("first_k_dense_replace", "at most num_hidden_layers");
  UNMASK_ASSIGN_OR_RETURN(
      d.ffn, cfg.Int("intermediate_size",
                     dense > 0 ? std::optional<int64_t>() : std::optional<int64_t>(0)));
  UNMASK_ASSIGN_OR_RETURN(const int64_t groups, cfg.Int("n_group", 1));
  UNMASK_ASSIGN_OR_RETURN(const int64_t groups_used, cfg.Int("topk_group", groups));
  if (top_k > d.experts) return cfg.Bad("num_experts_per_tok", "at most num_experts");
  if (d.experts % groups != 0) return cfg.Bad("n_group", "a divisor of num_experts");
  if (groups_used > groups) {
    return cfg.Bad("topk_group", "at most n_group (" + std::to_string(groups) + ")");
  }
  if (groups_used * (d.experts / groups) < top_k) {
    return cfg.Bad("topk_group",
                   "large enough that its groups of " + std::to_string(d.experts / groups) +
                       " experts hold num_experts_per_tok (" + std::to_string(top_k) + ") experts");
  }
  UNMASK_ASSIGN_OR_RETURN(const bool norm, cfg.Bool("norm_topk_prob", true));
  UNMASK_ASSIGN_OR_RETURN(const double scale, cfg.Float("routed_scaling_factor", 1.0));
  UNMASK_RETURN_IF_ERROR(CheckScale(cfg, scale));
  UNMASK_ASSIGN_OR_RETURN(const bool bias, cfg.Bool("moe_router_enable_expert_bias", false));
  // LLaDA2MoeRotaryEmbedding: int(head_dim * partial_rotary_factor) rotated dims (truncated).
  int64_t rope_dim = d.head_dim;
  if (cfg.Has("partial_rotary_factor")) {
    UNMASK_ASSIGN_OR_RETURN(const double f, cfg.Float("partial_rotary_factor"));
    if (f > 1) return cfg.Bad("partial_rotary_factor", "in (0, 1]");
    rope_dim = static_cast<int64_t>(static_cast<double>(d.head_dim) * f);
  }
  if (cfg.Has("rotary_dim")) {
    UNMASK_ASSIGN_OR_RETURN(const int64_t r, cfg.Int("rotary_dim"));
    if (cfg.Has("partial_rotary_factor") && r != rope_dim) {
      return InvalidArgumentError(cpath + ": rotary_dim (" + std::to_string(r) +
                                  ") disagrees with partial_rotary_factor x head_dim (" +
                                  std::to_string(rope_dim) + ")");
    }
    rope_dim = r;
  }
  if (rope_dim > d.head_dim || rope_dim % 2 != 0 || rope_dim < 2) {
    return InvalidArgumentError(cpath + ": rotary_dim / partial_rotary_factor give " +
                                std::to_string(rope_dim) + " rotated dims; need an even number " +
                                "in [2, head_dim = " + std::to_string(d.head_dim) + "]");
  }
  UNMASK_ASSIGN_OR_RETURN(const int64_t context, cfg.Int("max_position_embeddings"));
  UNMASK_ASSIGN_OR_RETURN(const double eps, cfg.FloatBelow("rms_norm_eps", 1.0));
  UNMASK_ASSIGN_OR_RETURN(const double theta, cfg.FloatBelow("rope_theta", 3.4e38, 10000.0));
  UNMASK_ASSIGN_OR_RETURN(const bool tied, cfg.Bool("tie_word_embeddings", false));
  UNMASK_ASSIGN_OR_RETURN(const int64_t block, cfg.Int("block_size", 32));

  const std::string p = std::string(arch.gguf) + ".";
  std::vector<gguf::MetadataEntry> md;
  auto set = [&md](std::string key, gguf::Value v) {
    md.push_back({std::move(key), std::move(v)});
  };
  auto u32 = [](int64_t v) { return gguf::Value::U32(static_cast<uint32_t>(v)); };
  set("general.architecture", gguf::Value::String(std::string(arch.gguf)));
  set("general.name", gguf::Value::String(FolderName(ck.dir())));
  set(p + "context_length", u32(context));
  set(p + "embedding_length", u32(d.hidden));
  set(p + "block_count", u32(d.layers));
  if (d.ffn > 0) set(p + "feed_forward_length", u32(d.ffn));
  set(p + "attention.head_count", u32(d.heads));
  set(p + "attention.head_count_kv", u32(d.kv_heads));
  set(p + "attention.key_length", u32(d.head_dim));
  set(p + "attention.value_length", u32(d.head_dim));
  set(p + "rope.freq_base", gguf::Value::F32(static_cast<float>(theta)));
  set(p + "rope.dimension_count", u32(rope_dim));
  set(p + "attention.layer_norm_rms_epsilon", gguf::Value::F32(static_cast<float>(eps)));
  set(p + "expert_count", u32(d.experts));
  set(p + "expert_used_count", u32(top_k));
  set(p + "expert_feed_forward_length", u32(d.expert_ffn));
  set(p + "expert_shared_count", u32(shared));
  set(p + "expert_shared_feed_forward_length", u32(d.expert_ffn));
  set(p + "leading_dense_block_count", u32(dense));
  set(p + "expert_weights_norm", gguf::Value::Bool(norm && top_k > 1));
  set(p + "expert_weights_scale", gguf::Value::F32(static_cast<float>(scale)));
  set(p + "expert_gating_func", u32(score == "sigmoid" ? 2 : 1));
  set(p + "expert_group_count", u32(groups));
  set(p + "expert_group_used_count", u32(groups_used));
  set("diffusion.block_length", u32(block));

  TensorMapper m(ck, owned.get(), arch, d);
  const int64_t q = d.heads * d.head_dim, kv = d.kv_heads * d.head_dim;
  const std::string heads = "config.json num_attention_heads = " + std::to_string(d.heads) +
                            ", num_key_value_heads = " + std::to_string(d.kv_heads) +
                            ", head_dim = " + std::to_string(d.head_dim) +
                            ", hidden_size = " + std::to_string(d.hidden);
  const std::string experts = "config.json num_experts = " + std::to_string(d.experts) +
                              ", moe_intermediate_size = " + std::to_string(d.expert_ffn) +
                              ", hidden_size = " + std::to_string(d.hidden);
  UNMASK_RETURN_IF_ERROR(
      m.Map("model.word_embeddings.weight", "token_embd.weight", {d.vocab, d.hidden}));
  for (int64_t l = 0; l < d.layers; ++l) {
    const std::string h = "model.layers." + std::to_string(l) + ".";
    const std::string g = "blk." + std::to_string(l) + ".";
    UNMASK_RETURN_IF_ERROR(m.Map(h + "input_layernorm.weight", g + "attn_norm.weight", {d.hidden}));
    const std::string qkv = h + "attention.query_key_value.weight";
    const std::vector<int64_t> qkv_shape = {q + 2 * kv, d.hidden};
    UNMASK_RETURN_IF_ERROR(m.MapRows(qkv, g + "attn_q.weight", qkv_shape, 0, q, heads));
    UNMASK_RETURN_IF_ERROR(m.MapRows(qkv, g + "attn_k.weight", qkv_shape, q, kv, heads));
    UNMASK_RETURN_IF_ERROR(m.MapRows(qkv, g + "attn_v.weight", qkv_shape, q + kv, kv, heads));
    UNMASK_RETURN_IF_ERROR(
        m.Map(h + "attention.query_layernorm.weight", g + "attn_q_norm.weight", {d.head_dim}));
    UNMASK_RETURN_IF_ERROR(
        m.Map(h + "attention.key_layernorm.weight", g + "attn_k_norm.weight", {d.head_dim}));
    UNMASK_RETURN_IF_ERROR(
        m.Map(h + "attention.dense.weight", g + "attn_output.weight", {d.hidden, q}));
    UNMASK_RETURN_IF_ERROR(
        m.Map(h + "post_attention_layernorm.weight", g + "ffn_norm.weight", {d.hidden}));
    // A layer's FFN kind follows first_k_dense_replace; an error says so.
    const std::string kind = " (config.json first_k_dense_replace = " + std::to_string(dense) +
                             " makes layer " + std::to_string(l) +
                             (l < dense ? " dense)" : " MoE)");
    auto named = [&](Status s, const std::string& why) {
      return s.ok() ? s : Status(s.code(), s.message() + why);
    };
    if (l < dense) {
      for (const auto& [hf, gg, shape] :
           {std::tuple{"gate_proj", "ffn_gate", std::vector<int64_t>{d.ffn, d.hidden}},
            std::tuple{"up_proj", "ffn_up", std::vector<int64_t>{d.ffn, d.hidden}},
            std::tuple{"down_proj", "ffn_down", std::vector<int64_t>{d.hidden, d.ffn}}}) {
        UNMASK_RETURN_IF_ERROR(
            named(m.Map(h + "mlp." + hf + ".weight", g + gg + ".weight", shape), kind));
      }
      continue;
    }
    UNMASK_RETURN_IF_ERROR(named(MapRoutedExperts(m, h, g, d, experts), kind));
    if (bias) {
      UNMASK_RETURN_IF_ERROR(
          named(m.Map(h + "mlp.gate.expert_bias", g + "exp_probs_b.bias", {d.experts}),
                " (config.json moe_router_enable_expert_bias = true)"));
    }
    if (shared > 0) {
      const int64_t fs = shared * d.expert_ffn;
      const std::string s = h + "mlp.shared_experts.";
      UNMASK_RETURN_IF_ERROR(
          m.Map(s + "gate_proj.weight", g + "ffn_gate_shexp.weight", {fs, d.hidden}));
      UNMASK_RETURN_IF_ERROR(
          m.Map(s + "up_proj.weight", g + "ffn_up_shexp.weight", {fs, d.hidden}));
      UNMASK_RETURN_IF_ERROR(
          m.Map(s + "down_proj.weight", g + "ffn_down_shexp.weight", {d.hidden, fs}));
    }
  }
  UNMASK_RETURN_IF_ERROR(m.Map("model.norm.weight", "output_norm.weight", {d.hidden}));
  if (tied) {
    m.Ignore("lm_head.weight");
  } else {
    UNMASK_RETURN_IF_ERROR(m.Map("lm_head.weight", "output.weight", {d.vocab, d.hidden}));
  }
  UNMASK_RETURN_IF_ERROR(m.CheckNoExtras([&](const std::string& name) -> std::string {
    if (name.find("expert_bias") != std::string::npos) {
      return " with config.json moe_router_enable_expert_bias = false";
    }
    if (name.find("shared_experts") != std::string::npos) {
      return " with config.json num_shared_experts = " + std::to_string(shared);
    }
    if (name.find(".mlp.gate_proj") != std::string::npos ||
        name.find(".mlp.up_proj") != std::string::npos ||
        name.find(".mlp.down_proj") != std::string::npos) {
      return " with config.json first_k_dense_replace = " + std::to_string(dense);
    }
    return "";
  }));
  return FinishView(cfg, std::move(owned), std::move(md), m, d.vocab, with_tokenizer);
}

}  // namespace unmask::hf_import
