#include "model/hf_import.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/half.h"
#include "format/hf_checkpoint.h"
#include "model/hf_vocab_keys.h"

namespace unmask {
namespace {

using nlohmann::json;

struct HfArch {
  std::string_view hf;    // config.json architectures[0]
  std::string_view gguf;  // general.architecture
  bool permute_qk;        // HF rotate-half rows -> llama.cpp's interleaved RoPE rows
  bool head_dim_key;      // writes attention.key_length / value_length (Qwen3 layout)
};
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
};

bool IsMoe(const HfArch& a) {
  return a.gguf == "qwen3moe" || a.gguf == "sdar-moe" || a.gguf == "llada-moe";
}

// What the view owns besides the shards' mappings: rewritten tensors.
struct Owned {
  std::unique_ptr<format::HfCheckpoint> checkpoint;
  std::vector<std::vector<uint8_t>> buffers;
};

class ConfigReader {
 public:
  ConfigReader(const json& config, std::string path) : c_(config), path_(std::move(path)) {}

  bool Has(const char* key) const { return c_.contains(key) && !c_[key].is_null(); }
  Status Missing(const char* key) const {
    return NotFoundError(path_ + ": " + key + " is missing");
  }
  Status Bad(const char* key, const std::string& want) const {
    return InvalidArgumentError(path_ + ": " + key + " must be " + want + ", got " +
                                c_[key].dump());
  }
  StatusOr<int64_t> Int(const char* key, std::optional<int64_t> fallback = std::nullopt) const {
    if (!Has(key)) {
      if (fallback) return *fallback;
      return Missing(key);
    }
    const json& v = c_[key];
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > (int64_t{1} << 24)) {
      return Bad(key, "a positive integer");
    }
    return v.get<int64_t>();
  }
  StatusOr<double> Float(const char* key, std::optional<double> fallback = std::nullopt) const {
    if (!Has(key)) {
      if (fallback) return *fallback;
      return Missing(key);
    }
    const json& v = c_[key];
    if (!v.is_number() || !(v.get<double>() > 0)) return Bad(key, "a positive number");
    return v.get<double>();
  }
  StatusOr<bool> Bool(const char* key, bool fallback) const {
    if (!Has(key)) return fallback;
    if (!c_[key].is_boolean()) return Bad(key, "true or false");
    return c_[key].get<bool>();
  }
  StatusOr<std::string> String(const char* key) const {
    if (!Has(key)) return Missing(key);
    if (!c_[key].is_string()) return Bad(key, "a string");
    return c_[key].get<std::string>();
  }
  const std::string& path() const { return path_; }

 private:
  const json& c_;
  std::string path_;
};

StatusOr<const HfArch*> FindArch(const json& config, const std::string& path) {
  if (!config.contains("architectures")) return NotFoundError(path + ": architectures is missing");
  const json& a = config["architectures"];
  if (!a.is_array() || a.empty() || !a[0].is_string()) {
    return InvalidArgumentError(path + ": architectures must be a list of names, got " + a.dump());
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
    return UnimplementedError(path + ": rope_scaling " + config["rope_scaling"].dump() +
                              " is not supported (only plain RoPE)");
  }
  if (config.contains("hidden_act") &&
      !(config["hidden_act"].is_string() && config["hidden_act"] == "silu")) {
    return UnimplementedError(path + ": hidden_act " + config["hidden_act"].dump() +
                              " is not supported (only silu: SwiGLU)");
  }
  if (config.value("mlp_bias", false) == true) {
    return UnimplementedError(path + ": mlp_bias true is not supported");
  }
  if (config.value("use_sliding_window", false) == true) {
    return UnimplementedError(path + ": use_sliding_window true is not supported");
  }
  return Status::Ok();
}

StatusOr<gguf::GgmlType> GgmlTypeOf(const safetensors::TensorInfo& t, const std::string& where) {
  if (t.dtype == DType::kF32) return gguf::GgmlType::kF32;
  if (t.dtype == DType::kF16) return gguf::GgmlType::kF16;
  if (t.dtype == DType::kBF16) return gguf::GgmlType::kBF16;
  return UnimplementedError(where + ": tensor '" + t.name + "' has dtype " + t.dtype_name +
                            " (supported: F32, F16, BF16)");
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// llama.cpp convert_hf_to_gguf.py LlamaModel.permute: within each of `heads` groups of rows, row
// (j * half + i) moves to (2 * i + j), j in {0, 1}: rotate-half pairs become adjacent.
std::vector<uint8_t> PermuteRows(const uint8_t* src, int64_t rows, int64_t row_bytes,
                                 int64_t heads) {
  std::vector<uint8_t> out(static_cast<size_t>(rows * row_bytes));
  const int64_t per_head = rows / heads, half = per_head / 2;
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t j = 0; j < 2; ++j) {
      for (int64_t i = 0; i < half; ++i) {
        const int64_t from = h * per_head + j * half + i, to = h * per_head + 2 * i + j;
        std::memcpy(out.data() + to * row_bytes, src + from * row_bytes,
                    static_cast<size_t>(row_bytes));
      }
    }
  }
  return out;
}

struct Dims {
  int64_t vocab, hidden, layers, heads, kv_heads, head_dim, ffn;
  int64_t experts = 0, expert_ffn = 0;  // mixture of experts (0: dense)
};

class TensorMapper {
 public:
  TensorMapper(const format::HfCheckpoint& ck, Owned* owned, const HfArch& arch, const Dims& d)
      : ck_(ck), owned_(owned), arch_(arch), d_(d) {}

  // Maps HF `name` (shape `shape`, row-major) to GGUF `gguf_name`. Optional tensors that are
  // absent are skipped; `permute_heads` > 0 permutes rows for llama's RoPE.
  Status Map(const std::string& name, const std::string& gguf_name, std::vector<int64_t> shape,
             bool optional = false, int64_t permute_heads = 0) {
    const safetensors::TensorInfo* t = ck_.Find(name);
    if (t == nullptr) {
      if (optional) return Status::Ok();
      return NotFoundError(ck_.dir() + ": tensor '" + name +
                           "' is missing (config.json: " + std::to_string(d_.layers) +
                           " layers, architecture " + std::string(arch_.hf) + ")");
    }
    used_.insert(name);
    const std::string shard = ck_.ShardOf(name);
    if (t->shape != shape) {
      return InvalidArgumentError(shard + ": tensor '" + name + "' has shape " +
                                  ShapeText(t->shape) + ", config.json implies " +
                                  ShapeText(shape));
    }
    UNMASK_ASSIGN_OR_RETURN(gguf::GgmlType type, GgmlTypeOf(*t, shard));
    const uint8_t* data = t->data;
    size_t num_bytes = t->num_bytes();
    if (shape.size() == 1 && type != gguf::GgmlType::kF32) {
      // Norms and biases in F32, as llama.cpp's converter writes them (its CPU ops refuse an
      // f32 x bf16 elementwise product).
      const auto n = static_cast<size_t>(shape[0]);
      std::vector<uint8_t> f32(n * 4);
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, data + 2 * i, 2);
        const float v = type == gguf::GgmlType::kBF16 ? BF16ToF32(h) : F16ToF32(h);
        std::memcpy(f32.data() + 4 * i, &v, 4);
      }
      owned_->buffers.push_back(std::move(f32));
      data = owned_->buffers.back().data();
      type = gguf::GgmlType::kF32;
      num_bytes = n * 4;
    }
    const int64_t elem = type == gguf::GgmlType::kF32 ? 4 : 2;
    if (permute_heads > 0) {
      const int64_t row_bytes = (shape.size() == 2 ? shape[1] : 1) * elem;
      owned_->buffers.push_back(PermuteRows(data, shape[0], row_bytes, permute_heads));
      data = owned_->buffers.back().data();
    } else if (reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(elem) != 0) {
      // The format does not promise alignment (MODELS.md §1.1): copy what is misaligned.
      owned_->buffers.emplace_back(data, data + num_bytes);
      data = owned_->buffers.back().data();
    }
    gguf::TensorInfo info;
    info.name = gguf_name;
    info.dims.assign(shape.rbegin(), shape.rend());
    info.type = type;
    info.num_bytes = num_bytes;
    info.data = data;
    tensors_.push_back(std::move(info));
    return Status::Ok();
  }
  void Ignore(const std::string& name) { used_.insert(name); }

  // Stacks the per-expert tensors `names` (each [rows, cols], one dtype) into the GGUF tensor
  // `gguf_name` of row-major shape [E, rows, cols] (a copy, as llama.cpp's converters do).
  // `what` names the config keys the shape comes from, for the errors.
  Status Stack(const std::vector<std::string>& names, const std::string& gguf_name,
               std::vector<int64_t> shape, const std::string& what) {
    std::vector<const safetensors::TensorInfo*> parts;
    for (const std::string& name : names) {
      const safetensors::TensorInfo* t = ck_.Find(name);
      if (t == nullptr) {
        return NotFoundError(ck_.dir() + ": tensor '" + name + "' is missing (" + what + ")");
      }
      if (t->shape != shape) {
        return InvalidArgumentError(ck_.ShardOf(name) + ": tensor '" + name + "' has shape " +
                                    ShapeText(t->shape) + ", " + what + " imply " +
                                    ShapeText(shape));
      }
      if (!parts.empty() && t->dtype != parts[0]->dtype) {
        return InvalidArgumentError(ck_.ShardOf(name) + ": tensor '" + name + "' has dtype " +
                                    t->dtype_name + " but '" + names[0] + "' " +
                                    parts[0]->dtype_name + " (experts are stacked into one)");
      }
      UNMASK_RETURN_IF_ERROR(GgmlTypeOf(*t, ck_.ShardOf(name)).status());
      parts.push_back(t);
      used_.insert(name);
    }
    UNMASK_ASSIGN_OR_RETURN(gguf::GgmlType type, GgmlTypeOf(*parts[0], ck_.ShardOf(names[0])));
    std::vector<uint8_t> stacked;
    stacked.reserve(parts.size() * parts[0]->num_bytes());
    for (const safetensors::TensorInfo* t : parts) {
      stacked.insert(stacked.end(), t->data, t->data + t->num_bytes());
    }
    owned_->buffers.push_back(std::move(stacked));
    gguf::TensorInfo info;
    info.name = gguf_name;
    info.dims = {shape[1], shape[0], static_cast<int64_t>(parts.size())};
    info.type = type;
    info.num_bytes = owned_->buffers.back().size();
    info.data = owned_->buffers.back().data();
    tensors_.push_back(std::move(info));
    return Status::Ok();
  }

  // Every tensor of the folder must have been mapped or ignored.
  Status CheckNoExtras() const {
    for (const safetensors::TensorInfo* t : ck_.tensors()) {
      if (used_.count(t->name) != 0) continue;
      if (t->name.find("rotary_emb.inv_freq") != std::string::npos) continue;  // old transformers
      const bool expert = t->name.find(".mlp.experts.") != std::string::npos;
      return InvalidArgumentError(ck_.ShardOf(t->name) + ": unexpected tensor '" + t->name +
                                  "' (not part of the " + std::string(arch_.hf) + " layout" +
                                  (expert ? " with config.json num_experts = " +
                                                std::to_string(d_.experts)
                                          : std::string()) +
                                  ")");
    }
    return Status::Ok();
  }
  std::vector<gguf::TensorInfo> Take() { return std::move(tensors_); }

 private:
  const format::HfCheckpoint& ck_;
  Owned* owned_;
  const HfArch& arch_;
  Dims d_;
  std::set<std::string> used_;
  std::vector<gguf::TensorInfo> tensors_;
};

// The folder's name, for general.name.
std::string FolderName(const std::string& dir) {
  const size_t slash = dir.find_last_of('/');
  return slash == std::string::npos ? dir : dir.substr(slash + 1);
}

// config.json's mask_token_id (SDAR fine-tunes, Dream, LLaDA) names the mask when the tokenizer
// files do not; then the tokenizer keys and the view.
StatusOr<std::unique_ptr<gguf::GgufFile>> FinishView(const ConfigReader& cfg,
                                                     std::shared_ptr<Owned> owned,
                                                     std::vector<gguf::MetadataEntry> md,
                                                     TensorMapper& m, int64_t vocab,
                                                     bool with_tokenizer) {
  const format::HfCheckpoint& ck = *owned->checkpoint;
  std::optional<int64_t> mask_id;
  if (cfg.Has("mask_token_id")) {
    UNMASK_ASSIGN_OR_RETURN(mask_id, cfg.Int("mask_token_id"));
    if (*mask_id >= vocab) return cfg.Bad("mask_token_id", "below vocab_size");
  }
  if (with_tokenizer) UNMASK_RETURN_IF_ERROR(AppendHfVocabKeys(ck.dir(), mask_id, vocab, &md));
  const std::string dir = ck.dir();
  return gguf::GgufFile::FromParts(dir, std::move(md), m.Take(), std::move(owned));
}

// The routed-expert keys of a mixture-of-experts config.json as llama.cpp's GGUF keys
// (`<arch>.expert_*`). Qwen3MoeForCausalLM / SDARMoeForCausalLM (transformers
// configuration_qwen3_moe.py): num_experts, num_experts_per_tok, moe_intermediate_size,
// norm_topk_prob (default false, as the config class); decoder_sparse_step other than 1 and a
// non-empty mlp_only_layers are refused. LLaDAMoEModelLM (dInfer configuration_lladamoe.py;
// MODELS.md §2.1): num_experts, num_experts_per_tok, expert_intermediate_size,
// routed_scaling_factor; never renormalised (its HF code hard-wires norm_topk_prob False, so the
// key is ignored); refused by name: moe_layer_freq with a dense layer, an expert bias
// (moe_router_enable_expert_bias: the HF code adds it to the weights too, which llama.cpp does
// not reproduce either), moe_router_score_function other than softmax, router_num_group > 1,
// shared_expert_intermediate_size > 0, qk_layernorm false, partial_rotary_factor other than 1.
Status ReadMoeKeys(const ConfigReader& cfg, const json& c, const HfArch& arch, Dims* d,
                   std::vector<gguf::MetadataEntry>* md) {
  const std::string& cpath = cfg.path();
  const std::string p = std::string(arch.gguf) + ".";
  auto refuse = [&](const char* key, const std::string& why) {
    return UnimplementedError(cpath + ": " + key + " " + c[key].dump() + " is not supported (" +
                              why + ")");
  };
  UNMASK_ASSIGN_OR_RETURN(d->experts, cfg.Int("num_experts"));
  UNMASK_ASSIGN_OR_RETURN(const int64_t top_k, cfg.Int("num_experts_per_tok"));
  if (top_k > d->experts) return cfg.Bad("num_experts_per_tok", "at most num_experts");
  bool normalize = false;
  double scale = 1.0;
  if (arch.gguf == "llada-moe") {
    UNMASK_ASSIGN_OR_RETURN(d->expert_ffn, cfg.Int("expert_intermediate_size"));
    if (cfg.Has("moe_layer_freq")) {
      const json& f = c["moe_layer_freq"];
      bool all_moe = f.is_array() && static_cast<int64_t>(f.size()) == d->layers;
      for (const json& v : f) all_moe = all_moe && v.is_number_integer() && v.get<int64_t>() == 1;
      if (!all_moe) return refuse("moe_layer_freq", "only every layer MoE: [1, 1, ...]");
    }
    UNMASK_ASSIGN_OR_RETURN(const bool bias, cfg.Bool("moe_router_enable_expert_bias", false));
    if (bias) return refuse("moe_router_enable_expert_bias", "only false");
    if (cfg.Has("moe_router_score_function") && c["moe_router_score_function"] != "softmax") {
      return refuse("moe_router_score_function", "only softmax");
    }
    if (cfg.Has("router_num_group") && c["router_num_group"] != 1 &&
        c["router_num_group"] != 0) {
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

// LLaDA (GSAI-ML/LLaDA-8B-*, architectures LLaDAModelLM, model_type llada): its own config names
// (d_model, n_layers, n_heads, n_kv_heads, mlp_hidden_size, max_sequence_length, embedding_size,
// weight_tying) and tensor names (model.transformer.{wte, ln_f, ff_out}, blocks.N.{attn_norm,
// q_proj, k_proj, v_proj, attn_out, ff_norm, ff_proj (the SwiGLU gate), up_proj, ff_out}), mapped
// as llama.cpp's conversion/llada.py does (LLAMACPP.md "LLaDA GGUF"): Q/K rows permuted for the
// interleaved RoPE, like Llama. Refused by name: activation_type other than silu,
// layer_norm_type other than rms, include_bias / include_qkv_bias true, alibi true,
// block_type other than llama.
StatusOr<std::unique_ptr<gguf::GgufFile>> ImportLlada(std::shared_ptr<Owned> owned,
                                                      const HfArch& arch, bool with_tokenizer) {
  const format::HfCheckpoint& ck = *owned->checkpoint;
  const std::string cpath = ck.config_path();
  const json& c = ck.config();
  const ConfigReader cfg(c, cpath);
  auto refuse_unless = [&](const char* key, const char* want) -> Status {
    if (!cfg.Has(key) || (c[key].is_string() && c[key] == want)) return Status::Ok();
    return UnimplementedError(cpath + ": " + key + " " + c[key].dump() +
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
    return UnimplementedError(cpath + ": rope_scaling " + c["rope_scaling"].dump() +
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
  UNMASK_ASSIGN_OR_RETURN(const double eps, cfg.Float("rms_norm_eps"));
  UNMASK_ASSIGN_OR_RETURN(const double theta, cfg.Float("rope_theta", 10000.0));
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
  UNMASK_ASSIGN_OR_RETURN(const double eps, cfg.Float("rms_norm_eps"));
  UNMASK_ASSIGN_OR_RETURN(const double theta, cfg.Float("rope_theta", 10000.0));
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
      {
        const safetensors::TensorInfo* router = ck.Find(h + "mlp.gate.weight");
        if (router != nullptr && router->shape != std::vector<int64_t>{d.experts, d.hidden}) {
          return InvalidArgumentError(ck.ShardOf(h + "mlp.gate.weight") + ": tensor '" + h +
                                      "mlp.gate.weight' has shape " + ShapeText(router->shape) +
                                      ", " + keys + " imply " +
                                      ShapeText({d.experts, d.hidden}));
        }
      }
      UNMASK_RETURN_IF_ERROR(
          m.Map(h + "mlp.gate.weight", g + "ffn_gate_inp.weight", {d.experts, d.hidden}));
      for (const char* part : {"gate", "up", "down"}) {
        std::vector<std::string> names;
        for (int64_t e = 0; e < d.experts; ++e) {
          names.push_back(h + "mlp.experts." + std::to_string(e) + "." + part + "_proj.weight");
        }
        const bool down = std::string_view(part) == "down";
        UNMASK_RETURN_IF_ERROR(m.Stack(
            names, g + "ffn_" + part + "_exps.weight",
            down ? std::vector<int64_t>{d.hidden, d.expert_ffn}
                 : std::vector<int64_t>{d.expert_ffn, d.hidden},
            widths));
      }
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
