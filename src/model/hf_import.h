// A Hugging Face checkpoint folder seen as the GGUF file llama.cpp's converter would write for it
// (MODELS.md §1.8 loader checklist): config.json mapped to `<arch>.*` keys, tensors renamed to
// llama.cpp's GGUF names (pointing into the mapped safetensors shards, so nothing is copied but
// the tensors a conversion must rewrite), and the tokenizer folder files mapped to the
// `tokenizer.ggml.*` keys. The loader runs every model from such a view, so a folder loads
// wherever a .gguf does, and `unmask convert --hf` writes the same view to a file.
//
// Architectures (config.json `architectures[0]` -> GGUF general.architecture):
//   LlamaForCausalLM, MistralForCausalLM -> llama (Q/K rows permuted for the interleaved RoPE
//     llama.cpp stores, as its converter does); Qwen2ForCausalLM -> qwen2; Qwen3ForCausalLM ->
//     qwen3; DreamModel -> dream; SDARForCausalLM -> sdar (the qwen3 names plus
//     diffusion.block_length from config.json block_size, default 4); Fast_dLLM_QwenForCausalLM
//     -> fast_dllm_v2 (the qwen2 names plus diffusion.block_length from bd_size, default 32);
//     LLaDAModelLM -> llada (LLaDA's own config and tensor names, model.transformer.*, mapped as
//     llama.cpp's conversion/llada.py does, Q/K permuted like Llama; hf_import_llada.cc).
//   Mixture of experts (hf_import_moe.cc): Qwen3MoeForCausalLM -> qwen3moe, SDARMoeForCausalLM ->
//     sdar-moe, LLaDAMoEModelLM -> llada-moe (the Qwen3 attention names; mlp.gate -> ffn_gate_inp,
//     mlp.experts.N.{gate,up,down}_proj stacked into ffn_{gate,up,down}_exps, a copy, as
//     llama.cpp's converters do; the routing keys as llama.cpp's <arch>.expert_*);
//     LLaDA2MoeModelLM -> llada2-moe (LLaDA 2.x's own names: fused query_key_value split into
//     attn_q/k/v views, expert_bias -> exp_probs_b.bias, shared_experts -> ffn_*_shexp, dense first
//     layers, partial rotary). Routing settings a family's code does not have are refused by key
//     (e.g. an LLaDA-MoE expert bias, Qwen3-MoE mlp_only_layers); an expert count, width or
//     hidden size that disagrees with a tensor names the key and the tensor.
// HF names (transformers modeling_{llama,qwen2,qwen3}.py; SDAR training/model/*/modeling_sdar.py):
//   model.embed_tokens -> token_embd, model.norm -> output_norm, lm_head -> output,
//   model.layers.N.{input_layernorm -> attn_norm, post_attention_layernorm -> ffn_norm,
//   self_attn.{q,k,v}_proj -> attn_{q,k,v} (.weight/.bias), self_attn.o_proj -> attn_output,
//   self_attn.{q,k}_norm -> attn_{q,k}_norm, mlp.{gate,up,down}_proj -> ffn_{gate,up,down}}.
//
// What a config.json must not ask for (Unimplemented, naming the field): rope_scaling other than
// null, hidden_act other than silu, mlp_bias, use_sliding_window true. Stored dtypes: F32, F16,
// BF16 (others Unimplemented, naming the tensor).
#ifndef UNMASK_MODEL_HF_IMPORT_H_
#define UNMASK_MODEL_HF_IMPORT_H_

#include <memory>
#include <string>

#include "core/status.h"
#include "format/gguf.h"

namespace unmask {

// The GGUF view of the folder `dir`. Its path() is `dir`.
// Errors (one line, naming the file and the field or tensor): those of format::HfCheckpoint::Open
// and of the tokenizer files; Unimplemented for an unknown `architectures` value (listing the
// supported ones) or a setting above; NotFound for a missing config key or tensor; InvalidArgument
// for a value of the wrong type or range, a tensor whose shape config.json contradicts, an
// unexpected tensor, or a config that says untied but has no lm_head.
// with_tokenizer false: the model only (no tokenizer.ggml.* keys; tests of the forward).
StatusOr<std::unique_ptr<gguf::GgufFile>> ImportHfCheckpoint(const std::string& dir,
                                                             bool with_tokenizer = true);

// A GGUF file (GgufFile::Open) or, for a directory, the view of a Hugging Face checkpoint folder
// (ImportHfCheckpoint): what every command's -m takes.
StatusOr<std::unique_ptr<gguf::GgufFile>> OpenModelFile(const std::string& path);

}  // namespace unmask

#endif  // UNMASK_MODEL_HF_IMPORT_H_
