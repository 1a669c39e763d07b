#!/usr/bin/env python3
"""Export an MoE twin (train.py --experts checkpoint) to GGUF and, optionally, an HF folder.

GGUF (llama.cpp's names, src/llama-arch.cpp): `llada-moe` for the diffusion twin, `qwen3moe` for
the AR twin, `sdar-moe` (unmask's provisional name, with diffusion.block_length) for the block
twin (train_block.py --init moe-ar). Tensors: token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_q_norm,
attn_k_norm, attn_output, ffn_norm, ffn_gate_inp (the router [E, dim], F32), ffn_gate_exps and
ffn_up_exps ([E, expert_ffn, dim] in numpy order), ffn_down_exps ([E, dim, expert_ffn])},
output_norm, output. Keys: the block twin's shape keys (export_block.gguf_writer) plus
<arch>.expert_count, expert_used_count, expert_feed_forward_length, expert_weights_norm (the
twins: false), expert_gating_func 1 (softmax); llada-moe also causal_attention false and
diffusion.shift_logits false (as the LLaDA twin). Q/K rows stay in rotate-half order (both
architectures use NEOX RoPE). Matrices F16, norms and the router F32.

HF folder: LLaDAMoEModelLM (inclusionAI's keys and names: mlp.gate, mlp.experts.N.*_proj),
Qwen3MoeForCausalLM or SDARMoeForCausalLM (JetAstra/SDAR's Qwen3-MoE keys plus block_size), with the same F16/F32 tensors; the numpy reference (scripts/reference/
hf_model.py) and `unmask convert --hf` read it.

  .venv/bin/python scripts/train/export_moe.py build/train/moe-llada/checkpoint.pt \\
      --gguf models/unmask-tinystories-moe-llada.gguf [--hf build/train/moe-llada-hf]
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import export_block  # noqa: E402
from export_gguf import tokenizer_fields  # noqa: E402
from model_moe import MoeConfig  # noqa: E402

# Objective (the checkpoint's) -> GGUF architecture, HF architecture.
ARCH = {"llada": "llada-moe", "ar": "qwen3moe", "block_diffusion": "sdar-moe"}
HF_ARCH = {"llada": "LLaDAMoEModelLM", "ar": "Qwen3MoeForCausalLM",
           "block_diffusion": "SDARMoeForCausalLM"}
# The block twin's per-layer tensors up to the FFN (checkpoint name, GGUF name, HF name,
# matrix?): the attention and both norms, the same in the MoE twins.
ATTENTION = export_block.PER_LAYER[:8]
assert ATTENTION[-1][0] == "ffn_norm", ATTENTION
EXPERTS = [("gate_exps", "ffn_gate_exps", "gate_proj"), ("up_exps", "ffn_up_exps", "up_proj"),
           ("down_exps", "ffn_down_exps", "down_proj")]


def tensors(sd, cfg):
    """[(checkpoint key, gguf name, kind)] in file order; kind: matrix, vector, router, experts."""
    out = [("tok_embd.weight", "token_embd.weight", "matrix")]
    for i in range(cfg.layers):
        p, g = f"blocks.{i}.", f"blk.{i}."
        for ck, gg, _, mat in ATTENTION:
            out.append((f"{p}{ck}.weight", f"{g}{gg}.weight", "matrix" if mat else "vector"))
        out.append((p + "router.weight", g + "ffn_gate_inp.weight", "router"))
        for ck, gg, _ in EXPERTS:
            out.append((p + ck, f"{g}{gg}.weight", "experts"))
    out += [("norm.weight", "output_norm.weight", "vector"),
            ("output.weight", "output.weight", "matrix")]
    assert set(k for k, *_ in out) == set(sd), set(sd) ^ set(k for k, *_ in out)
    return out


def stored(a, kind):
    """The array as the files store it: matrices and experts F16, norms and the router F32."""
    return np.ascontiguousarray(a.astype(np.float16 if kind in ("matrix", "experts") else
                                         np.float32))


def export_gguf(sd, cfg, objective, tokenizer_json, out, name):
    arch = ARCH[objective]
    w, ids = export_block.gguf_writer(cfg, tokenizer_json, out, name, arch)
    w.add_expert_count(cfg.experts)
    w.add_expert_used_count(cfg.top_k)
    w.add_expert_feed_forward_length(cfg.expert_ffn)
    w.add_bool(f"{arch}.expert_weights_norm", cfg.normalize)
    w.add_uint32(f"{arch}.expert_gating_func", 1)
    if objective == "llada":
        w.add_causal_attention(False)
        w.add_diffusion_shift_logits(False)
    for ck, gg, kind in tensors(sd, cfg):
        w.add_tensor(gg, stored(sd[ck].detach().float().numpy(), kind))
    export_block.write_gguf(w, out)
    return ids


def export_hf(sd, cfg, objective, tokenizer_json, folder, ids):
    weights = {"model.embed_tokens.weight": stored(sd["tok_embd.weight"].numpy(), "matrix")}
    for i in range(cfg.layers):
        p, h = f"blocks.{i}.", f"model.layers.{i}."
        for ck, _, hf, mat in ATTENTION:
            weights[f"{h}{hf}.weight"] = stored(sd[f"{p}{ck}.weight"].float().numpy(),
                                                "matrix" if mat else "vector")
        weights[h + "mlp.gate.weight"] = stored(sd[p + "router.weight"].float().numpy(), "router")
        for ck, _, hf in EXPERTS:
            stack = sd[p + ck].float().numpy()
            for e in range(cfg.experts):
                weights[f"{h}mlp.experts.{e}.{hf}.weight"] = stored(stack[e], "experts")
    weights["model.norm.weight"] = stored(sd["norm.weight"].float().numpy(), "vector")
    weights["lm_head.weight"] = stored(sd["output.weight"].float().numpy(), "matrix")
    config = {
        "architectures": [HF_ARCH[objective]], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": ids["bos"], "eos_token_id": ids["eos"], "pad_token_id": ids["pad"],
        "head_dim": cfg.head_dim, "hidden_act": "silu", "hidden_size": cfg.dim,
        "initializer_range": 0.02, "max_position_embeddings": cfg.context,
        "num_attention_heads": cfg.heads, "num_hidden_layers": cfg.layers,
        "num_key_value_heads": cfg.heads, "rms_norm_eps": cfg.norm_eps, "rope_scaling": None,
        "rope_theta": cfg.rope_base, "tie_word_embeddings": False, "torch_dtype": "float16",
        "transformers_version": "4.52.4", "use_cache": True, "vocab_size": cfg.vocab_size,
        "num_experts": cfg.experts, "num_experts_per_tok": cfg.top_k,
        "norm_topk_prob": cfg.normalize,
    }
    if objective == "llada":  # LLaDA-MoE's keys (dInfer tools/configuration_lladamoe.py)
        config.update({"model_type": "lladamoe", "expert_intermediate_size": cfg.expert_ffn,
                       "dense_intermediate_size": cfg.expert_ffn,
                       "intermediate_size": cfg.expert_ffn, "mask_token_id": ids["mask"],
                       "moe_layer_freq": [1] * cfg.layers, "moe_router_enable_expert_bias": False,
                       "qk_layernorm": True, "partial_rotary_factor": 1.0,
                       "auto_map": {"AutoConfig": "configuration_lladamoe.LLaDAMoEConfig",
                                    "AutoModelForCausalLM": "modeling_lladamoe.LLaDAMoEModelLM"}})
    else:  # transformers' configuration_qwen3_moe.py (SDAR-MoE: the same plus block_size)
        if objective == "block_diffusion":
            config.update({"model_type": "sdar_moe", "block_size": cfg.block_length,
                           "mask_token_id": ids["mask"],
                           "auto_map": {"AutoConfig": "configuration_sdar_moe.SDARMoeConfig",
                                        "AutoModelForCausalLM":
                                            "modeling_sdar_moe.SDARMoeForCausalLM"}})
        else:
            config["model_type"] = "qwen3_moe"
        config.update({ "moe_intermediate_size": cfg.expert_ffn,
                       "intermediate_size": cfg.expert_ffn, "decoder_sparse_step": 1,
                       "mlp_only_layers": [], "output_router_logits": False,
                       "router_aux_loss_coef": cfg.aux_weight, "max_window_layers": cfg.layers,
                       "sliding_window": None, "use_sliding_window": False})
    export_block.write_hf(folder, weights, {k: config[k] for k in sorted(config)},
                          tokenizer_json, ids, cfg.context)


def export(checkpoint, gguf_out=None, hf_out=None, tokenizer_json=None, name=None):
    ck = torch.load(checkpoint, map_location="cpu")
    if not ck.get("moe"):
        raise SystemExit(f"{checkpoint}: not an MoE twin checkpoint (train.py --experts)")
    cfg = MoeConfig(**ck["config"])
    tok = tokenizer_json or ck["tokenizer"]
    _, _, _, ids = tokenizer_fields(tok)
    if gguf_out:
        export_gguf(ck["model"], cfg, ck["objective"], tok, gguf_out, name or ck["name"])
        print(f"wrote {gguf_out} ({Path(gguf_out).stat().st_size / 1e6:.2f} MB)", file=sys.stderr)
    if hf_out:
        export_hf(ck["model"], cfg, ck["objective"], tok, hf_out, ids)
        print(f"wrote {hf_out}/", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("--gguf", help="GGUF file to write")
    ap.add_argument("--hf", help="HF checkpoint folder to write")
    ap.add_argument("--tokenizer", help="tokenizer.json (default: the checkpoint's)")
    ap.add_argument("--name", help="general.name (default: the checkpoint's)")
    args = ap.parse_args()
    export(args.checkpoint, args.gguf, args.hf, args.tokenizer, args.name)


if __name__ == "__main__":
    main()
