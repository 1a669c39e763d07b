// Internals of the Hugging Face folder import (model/hf_import.h), shared by its files:
// hf_import.cc (the dispatch and the Llama/Qwen/SDAR layouts), hf_import_llada.cc (LLaDA's own
// names), hf_import_moe.cc (the mixture-of-experts keys and LLaDA 2.x) and hf_import_view.cc
// (the tensor mapper and the view's assembly). Not a public interface.
#ifndef UNMASK_MODEL_HF_IMPORT_INTERNAL_H_
#define UNMASK_MODEL_HF_IMPORT_INTERNAL_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/half.h"
#include "core/status.h"
#include "format/gguf.h"
#include "format/hf_checkpoint.h"
#include "format/safetensors.h"

namespace unmask::hf_import {

using nlohmann::json;

// A config value as an error message shows it: compact JSON cut to 80 characters, and never a
// recursive dump of a deeply nested value (a hostile config.json must not exhaust the stack).
std::string ShortDump(const json& v);

struct HfArch {
  std::string_view hf;    // config.json architectures[0]
  std::string_view gguf;  // general.architecture
  bool permute_qk;        // HF rotate-half rows -> llama.cpp's interleaved RoPE rows
  bool head_dim_key;      // writes attention.key_length / value_length (Qwen3 layout)
};

bool IsMoe(const HfArch& a);

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
                                ShortDump(c_[key]));
  }
  StatusOr<int64_t> Int(const char* key, std::optional<int64_t> fallback = std::nullopt) const {
    if (!Has(key)) {
      if (fallback) return *fallback;
      return Missing(key);
    }
    const json& v = c_[key];
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > (int64_t{1} << 24)) {
      return Bad(key, "a positive integer (at most 16777216)");
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
  // Float, also below `max` (exclusive): rms_norm_eps below 1, rope_theta within float32.
  StatusOr<double> FloatBelow(const char* key, double max,
                              std::optional<double> fallback = std::nullopt) const {
    UNMASK_ASSIGN_OR_RETURN(const double v, Float(key, fallback));
    if (!(v < max)) {
      char buf[40];
      std::snprintf(buf, sizeof(buf), "%g", max);
      return Bad(key, std::string("a positive number below ") + buf);
    }
    return v;
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

// dtype of a safetensors tensor as a GGML type (F32, F16, BF16; others Unimplemented naming it).
StatusOr<gguf::GgmlType> GgmlTypeOf(const safetensors::TensorInfo& t, const std::string& where);
std::string ShapeText(const std::vector<int64_t>& shape);
// llama.cpp convert_hf_to_gguf.py LlamaModel.permute: within each of `heads` groups of rows, row
// (j * half + i) moves to (2 * i + j), j in {0, 1}: rotate-half pairs become adjacent.
std::vector<uint8_t> PermuteRows(const uint8_t* src, int64_t rows, int64_t row_bytes,
                                 int64_t heads);

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

  // Maps rows [row0, row0 + rows) of the 2-D tensor `name` (of shape `shape`) to `gguf_name`:
  // a view into the shard, no copy (splits a fused Q|K|V projection). `what` names the config
  // keys the shape comes from.
  Status MapRows(const std::string& name, const std::string& gguf_name,
                 const std::vector<int64_t>& shape, int64_t row0, int64_t rows,
                 const std::string& what) {
    const safetensors::TensorInfo* t = ck_.Find(name);
    if (t == nullptr) {
      return NotFoundError(ck_.dir() + ": tensor '" + name + "' is missing (" + what + ")");
    }
    if (t->shape != shape) {
      return InvalidArgumentError(ck_.ShardOf(name) + ": tensor '" + name + "' has shape " +
                                  ShapeText(t->shape) + ", " + what + " imply " + ShapeText(shape));
    }
    UNMASK_ASSIGN_OR_RETURN(gguf::GgmlType type, GgmlTypeOf(*t, ck_.ShardOf(name)));
    used_.insert(name);
    const size_t row_bytes = t->num_bytes() / static_cast<size_t>(shape[0]);
    const uint8_t* data = t->data + static_cast<size_t>(row0) * row_bytes;
    const size_t num_bytes = static_cast<size_t>(rows) * row_bytes;
    const size_t elem = type == gguf::GgmlType::kF32 ? 4 : 2;
    if (reinterpret_cast<uintptr_t>(data) % elem != 0) {
      owned_->buffers.emplace_back(data, data + num_bytes);
      data = owned_->buffers.back().data();
    }
    gguf::TensorInfo info;
    info.name = gguf_name;
    info.dims = {shape[1], rows};
    info.type = type;
    info.num_bytes = num_bytes;
    info.data = data;
    tensors_.push_back(std::move(info));
    return Status::Ok();
  }

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

  // Every tensor of the folder must have been mapped or ignored. hint(name), when given, names
  // the config.json key that left the tensor out (appended inside the message's parentheses).
  Status CheckNoExtras(const std::function<std::string(const std::string&)>& hint = {}) const {
    for (const safetensors::TensorInfo* t : ck_.tensors()) {
      if (used_.count(t->name) != 0) continue;
      if (t->name.find("rotary_emb.inv_freq") != std::string::npos) continue;  // old transformers
      const bool expert = t->name.find(".mlp.experts.") != std::string::npos;
      return InvalidArgumentError(
          ck_.ShardOf(t->name) + ": unexpected tensor '" + t->name + "' (not part of the " +
          std::string(arch_.hf) + " layout" +
          (expert ? " with config.json num_experts = " + std::to_string(d_.experts)
                  : std::string()) +
          (hint ? hint(t->name) : std::string()) + ")");
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
std::string FolderName(const std::string& dir);

// config.json's mask_token_id (SDAR fine-tunes, Dream, LLaDA) names the mask when the tokenizer
// files do not; then the tokenizer keys and the view.
StatusOr<std::unique_ptr<gguf::GgufFile>> FinishView(const ConfigReader& cfg,
                                                     std::shared_ptr<Owned> owned,
                                                     std::vector<gguf::MetadataEntry> md,
                                                     TensorMapper& m, int64_t vocab,
                                                     bool with_tokenizer);

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
                   std::vector<gguf::MetadataEntry>* md);

// LLaDA (GSAI-ML/LLaDA-8B-*, architectures LLaDAModelLM, model_type llada): its own config names
// (d_model, n_layers, n_heads, n_kv_heads, mlp_hidden_size, max_sequence_length, embedding_size,
// weight_tying) and tensor names (model.transformer.{wte, ln_f, ff_out}, blocks.N.{attn_norm,
// q_proj, k_proj, v_proj, attn_out, ff_norm, ff_proj (the SwiGLU gate), up_proj, ff_out}), mapped
// as llama.cpp's conversion/llada.py does (LLAMACPP.md "LLaDA GGUF"): Q/K rows permuted for the
// interleaved RoPE, like Llama. Refused by name: activation_type other than silu,
// layer_norm_type other than rms, include_bias / include_qkv_bias true, alibi true,
// block_type other than llama.
StatusOr<std::unique_ptr<gguf::GgufFile>> ImportLlada(std::shared_ptr<Owned> owned,
                                                      const HfArch& arch, bool with_tokenizer);

// The router mlp.gate.weight -> ffn_gate_inp.weight [experts, hidden] and the experts
// mlp.experts.N.{gate,up,down}_proj stacked into ffn_{gate,up,down}_exps.weight, for the layer
// with HF prefix `h` and GGUF prefix `g`; `what` names the config keys the shapes come from.
Status MapRoutedExperts(TensorMapper& m, const std::string& h, const std::string& g, const Dims& d,
                        const std::string& what);

// LLaDA 2.x (LLaDA2MoeModelLM; hf_import_moe.cc).
StatusOr<std::unique_ptr<gguf::GgufFile>> ImportLlada2(std::shared_ptr<Owned> owned,
                                                       const HfArch& arch, bool with_tokenizer);

}  // namespace unmask::hf_import

#endif  // UNMASK_MODEL_HF_IMPORT_INTERNAL_H_
