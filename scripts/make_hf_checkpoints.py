#!/usr/bin/env python3
"""(Re)create the tiny random Hugging Face checkpoints of the tests: tests/data/hf/<name>/.

Each folder holds `config.json` (the family's real key names; docs MODELS.md sections 1.4, 4, 5),
`generation_config.json`, and the weights as `model.safetensors` or as shards
`model-0000i-of-0000n.safetensors` + `model.safetensors.index.json` ({"metadata": {"total_size":
bytes of tensor data}, "weight_map": {name: shard}}). Tensor names are the families' own
(`model.embed_tokens.weight`, `model.layers.{i}.self_attn.{q,k,v,o}_proj.weight`, q/k/v `.bias`
in the Qwen2 layout, `self_attn.{q,k}_norm.weight` in the Qwen3/SDAR layout, `input_layernorm`,
`post_attention_layernorm`, `mlp.{gate,up,down}_proj.weight`, `model.norm.weight`, `lm_head.weight`
unless tied). Files are written by the `safetensors` package (`safetensors.numpy.save_file` for
F32; BF16, which numpy lacks, through the same `safetensors.serialize_file` with dtype "bfloat16"
and the bits rounded from float32 to nearest-even).

Vocabulary (1024 rows; tokenizer.json and tokenizer_config.json copied from
tests/data/hf/tokenizers/qwen-style, made by scripts/make_hf_tokenizers.py): ids 0..999 text,
`<|endoftext|>` 1000, `<|im_start|>` 1001, `<|im_end|>` 1002, `<|MASK|>` 1003, 1004..1023
padding rows. Weights (numpy default_rng(seed), drawn in tensor order): linear layers
N(0, (gain / sqrt(fan_in))^2) with gain LINEAR_GAIN, OUT_GAIN for v/o/down (the layers outweigh
the input embedding) and LINEAR_GAIN * QK_SCALE for Qwen2's q/k (sharp, position-dependent
attention, so greedy outputs do not settle on one token); biases N(0, 0.3^2); norm weights
1 + 0.1 N(0, 1) (so a missing or misplaced norm changes the numbers), Qwen3's q_norm/k_norm
QK_SCALE (1 + 0.1 N(0, 1)); embeddings N(0, 1) (times 4 / sqrt(hidden) when tied);
the output rows are N(0, (4 / sqrt(hidden))^2) so that logits have std ~4 (top probabilities from
~0.1 to ~1). Output rows (lm_head, or embed_tokens when tied) of the mask id are scaled by 0.05 and
of the padding ids by 0.3, so neither is ever a sensible prediction; the stop ids' rows by
`stop_row_scale` (per checkpoint) so that stops occur in some generations.

Deterministic: running it twice gives byte-identical files. --check compares with the files on
disk instead of writing.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field

import numpy as np
import safetensors
import safetensors.numpy

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
HF_DIR = "tests/data/hf"

VOCAB = 1024
ENDOFTEXT, IM_START, IM_END, MASK = 1000, 1001, 1002, 1003
NUM_TEXT_IDS = 1000
PAD_ROWS = range(1004, VOCAB)
MASK_ROW_SCALE, PAD_ROW_SCALE = 0.05, 0.3
LOGIT_STD = 4.0
LINEAR_GAIN = 1.2      # q/k/gate/up: std LINEAR_GAIN / sqrt(fan_in)
OUT_GAIN = 1.8         # v/o/down: larger, so the layers outweigh the (tied) input embedding
QK_SCALE = 3.0         # sharper attention: q/k weights (Qwen2) or q_norm/k_norm weights (Qwen3)


@dataclass(frozen=True)
class Spec:
    name: str
    arch: str                  # architectures[0]
    model_type: str
    layout: str                # "qwen3" (q/k norm, no bias) or "qwen2" (q/k/v biases)
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    dtype: str                 # "F32" or "BF16"
    tied: bool
    shards: int                # 1: model.safetensors
    seed: int
    rope_theta: float
    rms_eps: float
    bos: int
    eos: int
    gen_eos: list = field(default_factory=list)   # generation_config eos_token_id list
    pad: int | None = None
    extras: dict = field(default_factory=dict)     # family keys (mask_token_id, block_size, ...)
    write_head_dim: bool = True                    # Qwen2 configs have no head_dim key
    stop_row_scale: float = 1.3                    # output rows of the stop ids (gen_eos)
    # Mixture of experts in every layer: {"experts": E, "top_k": k, "ffn": expert width,
    # "norm": norm_topk_prob}; the router mlp.gate.weight [E, hidden] and the experts
    # mlp.experts.{j}.{gate,up,down}_proj replace mlp.{gate,up,down}_proj.
    moe: dict | None = None


SPECS: dict[str, Spec] = {s.name: s for s in [
    # SDAR: Qwen3 layout; head_dim 16 != hidden / heads = 8; GQA 4/2; untied; F32; block 4.
    Spec("sdar-tiny-f32", "SDARForCausalLM", "sdar", "qwen3", hidden=32, layers=2, heads=4,
         kv_heads=2, head_dim=16, ffn=64, dtype="F32", tied=False, shards=1, seed=1801,
         rope_theta=1000000, rms_eps=1e-6, bos=ENDOFTEXT, eos=ENDOFTEXT,
         gen_eos=[IM_END, ENDOFTEXT], pad=ENDOFTEXT,
         extras={"block_size": 4, "mask_token_id": MASK}, stop_row_scale=1.5),
    # SDAR: BF16, 3 shards, tied, no GQA (4/4), block 8.
    Spec("sdar-tiny-bf16-sharded", "SDARForCausalLM", "sdar", "qwen3", hidden=64, layers=2,
         heads=4, kv_heads=4, head_dim=16, ffn=128, dtype="BF16", tied=True, shards=3, seed=1802,
         rope_theta=1000000, rms_eps=1e-6, bos=ENDOFTEXT, eos=ENDOFTEXT,
         gen_eos=[IM_END, ENDOFTEXT], pad=ENDOFTEXT,
         extras={"block_size": 8, "mask_token_id": MASK}),
    # Qwen3 AR body: BF16, tied, MQA (4/1), head_dim 32 != 64 / 4.
    Spec("qwen3-tiny", "Qwen3ForCausalLM", "qwen3", "qwen3", hidden=64, layers=2, heads=4,
         kv_heads=1, head_dim=32, ffn=96, dtype="BF16", tied=True, shards=1, seed=1803,
         rope_theta=1e6, rms_eps=1e-6, bos=ENDOFTEXT, eos=IM_END, gen_eos=[IM_END, ENDOFTEXT],
         pad=ENDOFTEXT, stop_row_scale=1.0),
    # Qwen2 AR body: q/k/v biases, tied, F32, GQA 4/2, RoPE base 10000, no head_dim key.
    Spec("qwen2-tiny", "Qwen2ForCausalLM", "qwen2", "qwen2", hidden=32, layers=2, heads=4,
         kv_heads=2, head_dim=8, ffn=64, dtype="F32", tied=True, shards=1, seed=1804,
         rope_theta=1e4, rms_eps=1e-6, bos=ENDOFTEXT, eos=IM_END, gen_eos=[IM_END, ENDOFTEXT],
         pad=ENDOFTEXT, write_head_dim=False, stop_row_scale=1.2),
    # Fast-dLLM v2: Qwen2 layout with biases, untied, F32, bd_size 8 (32 in the real models).
    Spec("fastdllm-v2-tiny", "Fast_dLLM_QwenForCausalLM", "Fast_dLLM_Qwen", "qwen2", hidden=32,
         layers=2, heads=4, kv_heads=2, head_dim=8, ffn=64, dtype="F32", tied=False, shards=1,
         seed=1805, rope_theta=1e6, rms_eps=1e-6, bos=ENDOFTEXT, eos=IM_END,
         gen_eos=[IM_END, ENDOFTEXT], pad=IM_END, write_head_dim=False,
         extras={"bd_size": 8, "conplemenrary_mask": True}),
    # LLaDA-MoE (LLaDAMoEModelLM): Qwen3-style attention (q/k norm, MHA like the 7B-A1B),
    # bidirectional; 8 experts, top-2, no renormalisation (the family's rule); F32, untied.
    Spec("llada-moe-tiny-f32", "LLaDAMoEModelLM", "llada", "qwen3", hidden=32, layers=2, heads=4,
         kv_heads=4, head_dim=8, ffn=64, dtype="F32", tied=False, shards=1, seed=1806,
         rope_theta=50000, rms_eps=1e-5, bos=ENDOFTEXT, eos=IM_END, gen_eos=[IM_END, ENDOFTEXT],
         pad=ENDOFTEXT, extras={"mask_token_id": MASK}, stop_row_scale=1.6,
         moe={"experts": 8, "top_k": 2, "ffn": 16, "norm": False}),
    # LLaDA-MoE: BF16, 2 shards, tied, top-1 routing over 4 experts.
    Spec("llada-moe-tiny-bf16-top1", "LLaDAMoEModelLM", "llada", "qwen3", hidden=32, layers=2,
         heads=4, kv_heads=4, head_dim=8, ffn=64, dtype="BF16", tied=True, shards=2, seed=1807,
         rope_theta=50000, rms_eps=1e-5, bos=ENDOFTEXT, eos=IM_END, gen_eos=[IM_END, ENDOFTEXT],
         pad=ENDOFTEXT, extras={"mask_token_id": MASK}, stop_row_scale=1.6,
         moe={"experts": 4, "top_k": 1, "ffn": 32, "norm": False}),
    # SDAR-MoE (SDARMoeForCausalLM): the Qwen3-MoE body, block-causal (block 4); 8 experts, top-3,
    # renormalised; GQA 4/2, head_dim 16 != 32 / 4; BF16, untied.
    Spec("sdar-moe-tiny-bf16", "SDARMoeForCausalLM", "sdar_moe", "qwen3", hidden=32, layers=2,
         heads=4, kv_heads=2, head_dim=16, ffn=64, dtype="BF16", tied=False, shards=1, seed=1808,
         rope_theta=1000000, rms_eps=1e-6, bos=ENDOFTEXT, eos=ENDOFTEXT,
         gen_eos=[IM_END, ENDOFTEXT], pad=ENDOFTEXT,
         extras={"block_size": 4, "mask_token_id": MASK}, stop_row_scale=1.5,
         moe={"experts": 8, "top_k": 3, "ffn": 16, "norm": True}),
    # Qwen3-MoE AR body (Qwen3MoeForCausalLM): 4 experts, top-2, renormalised; F32, tied.
    Spec("qwen3-moe-tiny", "Qwen3MoeForCausalLM", "qwen3_moe", "qwen3", hidden=32, layers=2,
         heads=4, kv_heads=2, head_dim=8, ffn=64, dtype="F32", tied=True, shards=1, seed=1809,
         rope_theta=1e6, rms_eps=1e-6, bos=ENDOFTEXT, eos=IM_END, gen_eos=[IM_END, ENDOFTEXT],
         pad=ENDOFTEXT, stop_row_scale=1.0,
         moe={"experts": 4, "top_k": 2, "ffn": 24, "norm": True}),
    # LLaDA 2.x (LLaDA2MoeModelLM; MODELS.md section 3): fused Q|K|V, q/k norm, partial rotary
    # (8 of 16 dims), layer 0 dense; 16 experts in 4 groups (2 kept), top-4, sigmoid + expert
    # bias, renormalised, x 2.5, one shared expert; GQA 4/2; BF16, untied, 2 shards.
    Spec("llada2-tiny-bf16", "LLaDA2MoeModelLM", "llada2_moe", "llada2", hidden=32, layers=3,
         heads=4, kv_heads=2, head_dim=16, ffn=64, dtype="BF16", tied=False, shards=2,
         seed=1810, rope_theta=600000, rms_eps=1e-6, bos=ENDOFTEXT, eos=IM_END,
         gen_eos=[IM_END, ENDOFTEXT], pad=ENDOFTEXT, extras={"mask_token_id": MASK},
         stop_row_scale=1.6,
         moe={"experts": 16, "top_k": 4, "ffn": 8, "norm": True, "shared": 1, "groups": 4,
              "groups_used": 2, "scale": 2.5, "bias": True, "dense": 1, "rotary_dim": 8}),
    # LLaDA 2.x variant: top-1 (no renormalisation), ungrouped, no bias, no shared expert, no
    # dense layer, full rotary; F32, tied.
    Spec("llada2-tiny-f32-top1", "LLaDA2MoeModelLM", "llada2_moe", "llada2", hidden=32,
         layers=2, heads=4, kv_heads=4, head_dim=8, ffn=64, dtype="F32", tied=True, shards=1,
         seed=1811, rope_theta=600000, rms_eps=1e-6, bos=ENDOFTEXT, eos=IM_END,
         gen_eos=[IM_END, ENDOFTEXT], pad=ENDOFTEXT, extras={"mask_token_id": MASK},
         stop_row_scale=1.6,
         moe={"experts": 8, "top_k": 1, "ffn": 16, "norm": True, "shared": 0, "groups": 1,
              "groups_used": 1, "scale": 1.0, "bias": False, "dense": 0, "rotary_dim": 8}),
]}
ROUTER_GAIN = 3.0      # router std ROUTER_GAIN / sqrt(hidden): confident, well-separated routing


def llada2_tensor_shapes(s: Spec) -> list[tuple[str, tuple[int, ...], str]]:
    """LLaDA 2.x names (dInfer modeling_llada2_moe.py; MODELS.md section 3.2)."""
    m, d = s.moe, s.hidden
    out = [("model.word_embeddings.weight", (VOCAB, d), "embed")]
    for i in range(s.layers):
        p = f"model.layers.{i}."
        out.append((p + "input_layernorm.weight", (d,), "norm"))
        out.append((p + "attention.query_key_value.weight",
                    ((s.heads + 2 * s.kv_heads) * s.head_dim, d), "linear"))
        out.append((p + "attention.query_layernorm.weight", (s.head_dim,), "qk_norm"))
        out.append((p + "attention.key_layernorm.weight", (s.head_dim,), "qk_norm"))
        out.append((p + "attention.dense.weight", (d, s.heads * s.head_dim), "out"))
        out.append((p + "post_attention_layernorm.weight", (d,), "norm"))
        if i < m["dense"]:
            out.append((p + "mlp.gate_proj.weight", (s.ffn, d), "linear"))
            out.append((p + "mlp.up_proj.weight", (s.ffn, d), "linear"))
            out.append((p + "mlp.down_proj.weight", (d, s.ffn), "out"))
            continue
        out.append((p + "mlp.gate.weight", (m["experts"], d), "router"))
        if m["bias"]:
            out.append((p + "mlp.gate.expert_bias", (m["experts"],), "bias"))
        for e in range(m["experts"]):
            out.append((p + f"mlp.experts.{e}.gate_proj.weight", (m["ffn"], d), "linear"))
            out.append((p + f"mlp.experts.{e}.up_proj.weight", (m["ffn"], d), "linear"))
            out.append((p + f"mlp.experts.{e}.down_proj.weight", (d, m["ffn"]), "out"))
        if m["shared"]:
            fs = m["ffn"] * m["shared"]
            out.append((p + "mlp.shared_experts.gate_proj.weight", (fs, d), "linear"))
            out.append((p + "mlp.shared_experts.up_proj.weight", (fs, d), "linear"))
            out.append((p + "mlp.shared_experts.down_proj.weight", (d, fs), "out"))
    out.append(("model.norm.weight", (d,), "norm"))
    if not s.tied:
        out.append(("lm_head.weight", (VOCAB, d), "head"))
    return out


def tensor_shapes(s: Spec) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, shape, kind) in the order the random values are drawn."""
    if s.layout == "llada2":
        return llada2_tensor_shapes(s)
    q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    out = [("model.embed_tokens.weight", (VOCAB, s.hidden), "embed")]
    for i in range(s.layers):
        p = f"model.layers.{i}."
        out.append((p + "input_layernorm.weight", (s.hidden,), "norm"))
        for n, rows in (("q", q), ("k", kv), ("v", kv)):
            out.append((p + f"self_attn.{n}_proj.weight", (rows, s.hidden),
                        "out" if n == "v" else ("qk" if s.layout == "qwen2" else "linear")))
            if s.layout == "qwen2":
                out.append((p + f"self_attn.{n}_proj.bias", (rows,), "bias"))
        if s.layout == "qwen3":
            out.append((p + "self_attn.q_norm.weight", (s.head_dim,), "qk_norm"))
            out.append((p + "self_attn.k_norm.weight", (s.head_dim,), "qk_norm"))
        out.append((p + "self_attn.o_proj.weight", (s.hidden, q), "out"))
        out.append((p + "post_attention_layernorm.weight", (s.hidden,), "norm"))
        if s.moe:
            fe = s.moe["ffn"]
            out.append((p + "mlp.gate.weight", (s.moe["experts"], s.hidden), "router"))
            for e in range(s.moe["experts"]):
                out.append((p + f"mlp.experts.{e}.gate_proj.weight", (fe, s.hidden), "linear"))
                out.append((p + f"mlp.experts.{e}.up_proj.weight", (fe, s.hidden), "linear"))
                out.append((p + f"mlp.experts.{e}.down_proj.weight", (s.hidden, fe), "out"))
            continue
        out.append((p + "mlp.gate_proj.weight", (s.ffn, s.hidden), "linear"))
        out.append((p + "mlp.up_proj.weight", (s.ffn, s.hidden), "linear"))
        out.append((p + "mlp.down_proj.weight", (s.hidden, s.ffn), "out"))
    out.append(("model.norm.weight", (s.hidden,), "norm"))
    if not s.tied:
        out.append(("lm_head.weight", (VOCAB, s.hidden), "head"))
    return out


def _scale_output_rows(w: np.ndarray, s: Spec) -> np.ndarray:
    w = w.copy()
    w[MASK] *= MASK_ROW_SCALE
    w[list(PAD_ROWS)] *= PAD_ROW_SCALE
    for stop in sorted(set(s.gen_eos)):
        w[stop] *= s.stop_row_scale
    return w


def make_weights(s: Spec) -> dict[str, np.ndarray]:
    """float32 tensors, before any BF16 rounding."""
    rng = np.random.default_rng(s.seed)
    out = {}
    head_std = LOGIT_STD / np.sqrt(s.hidden)
    for name, shape, kind in tensor_shapes(s):
        z = rng.standard_normal(shape)
        if kind == "norm":
            w = 1.0 + 0.1 * z
        elif kind == "qk_norm":
            w = QK_SCALE * (1.0 + 0.1 * z)
        elif kind == "bias":
            w = 0.3 * z
        elif kind in ("linear", "qk", "out", "router"):
            gain = {"linear": LINEAR_GAIN, "qk": LINEAR_GAIN * QK_SCALE, "out": OUT_GAIN,
                    "router": ROUTER_GAIN}[kind]
            w = z * (gain / np.sqrt(shape[1]))
        elif kind == "embed":
            w = z * head_std if s.tied else z
            if s.tied:
                w = _scale_output_rows(w, s)
        else:  # head
            w = _scale_output_rows(z * head_std, s)
        out[name] = w.astype(np.float32)
    return out


def f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round float32 to the nearest bfloat16 (ties to even); finite inputs only."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def _shard_split(names: list[str], shards: int) -> list[list[str]]:
    """Consecutive groups of tensors (in tensor order), as even in count as possible."""
    per = -(-len(names) // shards)
    return [names[i * per:(i + 1) * per] for i in range(shards)]


def write_weights(folder: str, s: Spec, weights: dict[str, np.ndarray]) -> None:
    order = [n for n, _, _ in tensor_shapes(s)]
    if s.shards == 1:
        groups, files = [order], ["model.safetensors"]
    else:
        groups = _shard_split(order, s.shards)
        files = [f"model-{i + 1:05d}-of-{s.shards:05d}.safetensors" for i in range(s.shards)]
    total = 0
    weight_map = {}
    for group, fn in zip(groups, files):
        path = os.path.join(folder, fn)
        if s.dtype == "F32":
            safetensors.numpy.save_file({n: weights[n] for n in group}, path,
                                        metadata={"format": "pt"})
            total += sum(weights[n].nbytes for n in group)
        else:
            flat = {}
            for n in group:
                bits = f32_to_bf16_bits(weights[n])
                flat[n] = {"dtype": "bfloat16", "shape": list(bits.shape), "data": bits.tobytes()}
                total += bits.nbytes
            safetensors.serialize_file(flat, path, metadata={"format": "pt"})
        weight_map.update({n: fn for n in group})
    if s.shards > 1:
        index = {"metadata": {"total_size": total},
                 "weight_map": {n: weight_map[n] for n in sorted(weight_map)}}
        _write_json(os.path.join(folder, "model.safetensors.index.json"), index)


def llada2_config_json(s: Spec) -> dict:
    """LLaDA 2.x's keys (LLaDA2.1-mini config.json; MODELS.md section 3.1)."""
    m = s.moe
    c = {
        "architectures": [s.arch], "model_type": s.model_type,
        "auto_map": {"AutoConfig": "configuration_llada2_moe.LLaDA2MoeConfig",
                     "AutoModelForCausalLM": "modeling_llada2_moe.LLaDA2MoeModelLM"},
        "hidden_size": s.hidden, "intermediate_size": s.ffn, "num_hidden_layers": s.layers,
        "num_attention_heads": s.heads, "num_key_value_heads": s.kv_heads,
        "head_dim": s.head_dim, "rotary_dim": m["rotary_dim"],
        "partial_rotary_factor": m["rotary_dim"] / s.head_dim, "rope_theta": s.rope_theta,
        "rope_scaling": None, "max_position_embeddings": 512, "rms_norm_eps": s.rms_eps,
        "vocab_size": VOCAB, "tie_word_embeddings": s.tied, "hidden_act": "silu",
        "use_qk_norm": True, "use_qkv_bias": False, "use_bias": False,
        "first_k_dense_replace": m["dense"], "num_experts": m["experts"],
        "num_shared_experts": m["shared"], "num_experts_per_tok": m["top_k"],
        "moe_intermediate_size": m["ffn"], "score_function": "sigmoid",
        "moe_router_enable_expert_bias": m["bias"], "n_group": m["groups"],
        "topk_group": m["groups_used"], "norm_topk_prob": m["norm"],
        "routed_scaling_factor": m["scale"], "router_dtype": "fp32",
        "pad_token_id": s.pad, "bos_token_id": s.bos, "eos_token_id": s.eos,
        "dtype": {"F32": "float32", "BF16": "bfloat16"}[s.dtype],
    }
    c.update(s.extras)
    return {k: c[k] for k in sorted(c)}


def config_json(s: Spec) -> dict:
    if s.layout == "llada2":
        return llada2_config_json(s)
    c = {
        "architectures": [s.arch],
        "attention_dropout": 0.0,
        "bos_token_id": s.bos,
        "eos_token_id": s.eos,
        "hidden_act": "silu",
        "hidden_size": s.hidden,
        "initializer_range": 0.02,
        "intermediate_size": s.ffn,
        "max_position_embeddings": 512,
        "max_window_layers": s.layers,
        "model_type": s.model_type,
        "num_attention_heads": s.heads,
        "num_hidden_layers": s.layers,
        "num_key_value_heads": s.kv_heads,
        "rms_norm_eps": s.rms_eps,
        "rope_scaling": None,
        "rope_theta": s.rope_theta,
        "sliding_window": None,
        "tie_word_embeddings": s.tied,
        "torch_dtype": {"F32": "float32", "BF16": "bfloat16"}[s.dtype],
        "transformers_version": "4.52.4",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": VOCAB,
    }
    if s.layout == "qwen3":
        c["attention_bias"] = False
    if s.write_head_dim:
        c["head_dim"] = s.head_dim
    if s.arch == "SDARForCausalLM":
        c["auto_map"] = {"AutoConfig": "configuration_sdar.SDARConfig",
                         "AutoModel": "modeling_sdar.SDARModel",
                         "AutoModelForCausalLM": "modeling_sdar.SDARForCausalLM"}
    if s.arch == "Fast_dLLM_QwenForCausalLM":
        c["auto_map"] = {"AutoConfig": "configuration.Fast_dLLM_QwenConfig",
                         "AutoModel": "modeling.Fast_dLLM_QwenModel",
                         "AutoModelForCausalLM": "modeling.Fast_dLLM_QwenForCausalLM"}
        c["pad_token_id"] = s.pad
    if s.moe and s.arch == "LLaDAMoEModelLM":
        # LLaDA-MoE's own keys (dInfer tools/configuration_lladamoe.py; MODELS.md section 1.4).
        c.update({"num_experts": s.moe["experts"], "num_experts_per_tok": s.moe["top_k"],
                  "expert_intermediate_size": s.moe["ffn"], "dense_intermediate_size": s.ffn,
                  "moe_layer_freq": [1] * s.layers, "norm_topk_prob": s.moe["norm"],
                  "moe_router_enable_expert_bias": False, "qk_layernorm": True,
                  "partial_rotary_factor": 1.0})
        del c["max_window_layers"], c["sliding_window"], c["use_sliding_window"]
    elif s.moe:
        # Qwen3-MoE's keys (transformers configuration_qwen3_moe.py).
        c.update({"num_experts": s.moe["experts"], "num_experts_per_tok": s.moe["top_k"],
                  "moe_intermediate_size": s.moe["ffn"], "norm_topk_prob": s.moe["norm"],
                  "decoder_sparse_step": 1, "mlp_only_layers": [],
                  "output_router_logits": False, "router_aux_loss_coef": 0.001})
    if s.arch == "SDARMoeForCausalLM":
        c["auto_map"] = {"AutoConfig": "configuration_sdar_moe.SDARMoeConfig",
                         "AutoModelForCausalLM": "modeling_sdar_moe.SDARMoeForCausalLM"}
    if s.arch == "LLaDAMoEModelLM":
        c["auto_map"] = {"AutoConfig": "configuration_lladamoe.LLaDAMoEConfig",
                         "AutoModelForCausalLM": "modeling_lladamoe.LLaDAMoEModelLM"}
    c.update(s.extras)
    return {k: c[k] for k in sorted(c)}


def generation_config_json(s: Spec) -> dict:
    g = {"bos_token_id": s.bos, "eos_token_id": list(s.gen_eos)}
    if s.pad is not None:
        g["pad_token_id"] = s.pad
    g["transformers_version"] = "4.52.4"
    return g


def _write_json(path: str, obj: dict) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(obj, indent=2) + "\n")


# The tokenizer every checkpoint uses: scripts/make_hf_tokenizers.py's Qwen-style byte-level BPE
# (ids 0..999, <|endoftext|> 1000, <|im_start|> 1001, <|im_end|> 1002, <|MASK|> 1003).
TOKENIZER_DIR = os.path.join(REPO, "tests", "data", "hf", "tokenizers", "qwen-style")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def write_checkpoint(folder: str, s: Spec) -> None:
    os.makedirs(folder, exist_ok=True)
    for fn in TOKENIZER_FILES:
        shutil.copyfile(os.path.join(TOKENIZER_DIR, fn), os.path.join(folder, fn))
    _write_json(os.path.join(folder, "config.json"), config_json(s))
    _write_json(os.path.join(folder, "generation_config.json"), generation_config_json(s))
    write_weights(folder, s, make_weights(s))


WRITTEN = ("config.json", "generation_config.json", "model.safetensors.index.json") + \
    TOKENIZER_FILES


def _is_ours(fn: str) -> bool:
    return fn in WRITTEN or fn.endswith(".safetensors")


def build(tmp: str) -> dict[str, bytes]:
    files = {}
    for name, s in SPECS.items():
        folder = os.path.join(tmp, name)
        write_checkpoint(folder, s)
        for fn in sorted(os.listdir(folder)):
            with open(os.path.join(folder, fn), "rb") as f:
                files[f"{HF_DIR}/{name}/{fn}"] = f.read()
    return files


def check(root: str, files: dict[str, bytes]) -> list[str]:
    """Differences between the built files and those under root (stale ones included)."""
    problems = []
    for name in SPECS:
        d = os.path.join(root, HF_DIR, name)
        for fn in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if _is_ours(fn) and f"{HF_DIR}/{name}/{fn}" not in files:
                problems.append(f"{HF_DIR}/{name}/{fn}: stale file")
    for rel, data in files.items():
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            problems.append(f"{rel}: missing")
            continue
        with open(path, "rb") as f:
            if f.read() != data:
                problems.append(f"{rel}: content differs")
    return problems


def build_all() -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as tmp:
        return build(tmp)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--root", default=REPO, help="repository root (default: this checkout)")
    ap.add_argument("--check", action="store_true", help="compare with the files on disk")
    args = ap.parse_args()
    files = build_all()
    if args.check:
        problems = check(args.root, files)
        for p in problems:
            print("MISMATCH " + p, file=sys.stderr)
        print("hf checkpoints: " + ("OK" if not problems else f"{len(problems)} problems"),
              file=sys.stderr)
        return 1 if problems else 0
    for name in SPECS:        # weight/config files that this script no longer writes
        d = os.path.join(args.root, HF_DIR, name)
        for fn in os.listdir(d) if os.path.isdir(d) else []:
            if _is_ours(fn) and f"{HF_DIR}/{name}/{fn}" not in files:
                os.remove(os.path.join(d, fn))
    for rel, data in files.items():
        path = os.path.join(args.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    for name in SPECS:
        size = sum(len(v) for k, v in files.items() if k.startswith(f"{HF_DIR}/{name}/"))
        print(f"  {name}: {size / 1024:.0f} KiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
