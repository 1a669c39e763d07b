#!/usr/bin/env python3
"""Export the block-diffusion twin (train_block.py checkpoint) to GGUF (`sdar`) and to an HF folder.

GGUF (unmask's `sdar` architecture; llama.cpp/Qwen3 tensor names): token_embd, blk.N.{attn_norm,
attn_q, attn_k, attn_v, attn_q_norm, attn_k_norm, attn_output, ffn_norm, ffn_gate, ffn_up,
ffn_down}, output_norm, output; keys sdar.{context_length, embedding_length, block_count,
feed_forward_length, attention.head_count, attention.head_count_kv, attention.key_length,
attention.value_length, rope.freq_base, attention.layer_norm_rms_epsilon}, diffusion.block_length
and the twins' tokenizer keys (export_gguf.py). Q/K rows stay in rotate-half order: unmask's sdar
uses NEOX RoPE, so no llama.cpp permutation. Matrices F16, norms F32 (as the twins).

HF folder (SDARForCausalLM, model_type sdar; JetAstra/SDAR's Qwen3 names): config.json,
generation_config.json, model.safetensors (the same F16 matrices and F32 norms as the GGUF),
tokenizer.json (the twins' tokenizer, train_tokenizer.py), tokenizer_config.json.

  .venv/bin/python scripts/train/export_block.py build/train/block/checkpoint.pt \\
      --gguf models/unmask-tinystories-block.gguf --hf models/unmask-tinystories-block-hf
"""
import argparse
import json
import shutil
import sys
from pathlib import Path

import gguf
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import data  # noqa: E402
from export_gguf import tokenizer_fields  # noqa: E402
from model_block import BlockConfig  # noqa: E402

ARCH = "sdar"
PER_LAYER = [  # (checkpoint name, GGUF name, HF name, matrix?)
    ("attn_norm", "attn_norm", "input_layernorm", False),
    ("wq", "attn_q", "self_attn.q_proj", True),
    ("wk", "attn_k", "self_attn.k_proj", True),
    ("wv", "attn_v", "self_attn.v_proj", True),
    ("q_norm", "attn_q_norm", "self_attn.q_norm", False),
    ("k_norm", "attn_k_norm", "self_attn.k_norm", False),
    ("wo", "attn_output", "self_attn.o_proj", True),
    ("ffn_norm", "ffn_norm", "post_attention_layernorm", False),
    ("w_gate", "ffn_gate", "mlp.gate_proj", True),
    ("w_up", "ffn_up", "mlp.up_proj", True),
    ("w_down", "ffn_down", "mlp.down_proj", True),
]
GLOBAL = [("tok_embd", "token_embd", "model.embed_tokens", True),
          ("norm", "output_norm", "model.norm", False),
          ("output", "output", "lm_head", True)]


def tensors(sd, cfg):
    """[(checkpoint key, gguf name, hf name, is_matrix)] in file order."""
    out = [("tok_embd.weight", "token_embd.weight", "model.embed_tokens.weight", True)]
    for i in range(cfg.layers):
        for ck, gg, hf, mat in PER_LAYER:
            out.append((f"blocks.{i}.{ck}.weight", f"blk.{i}.{gg}.weight",
                        f"model.layers.{i}.{hf}.weight", mat))
    out += [("norm.weight", "output_norm.weight", "model.norm.weight", False),
            ("output.weight", "output.weight", "lm_head.weight", True)]
    assert set(k for k, *_ in out) == set(sd), set(sd) ^ set(k for k, *_ in out)
    return out


def gguf_writer(cfg, tokenizer_json, out, name, arch=ARCH):
    """A GGUFWriter for `arch` with the shape keys of cfg (a BlockConfig) and the twins' tokenizer
    keys written; (writer, special token ids). feed_forward_length only when cfg.ffn > 0 (the MoE
    twins have no dense FFN), diffusion.block_length only for `sdar` and `sdar-moe`."""
    w = gguf.GGUFWriter(str(out), arch)
    w.add_name(name)
    w.add_context_length(cfg.context)
    w.add_embedding_length(cfg.dim)
    w.add_block_count(cfg.layers)
    if cfg.ffn > 0:
        w.add_feed_forward_length(cfg.ffn)
    w.add_head_count(cfg.heads)
    w.add_head_count_kv(cfg.heads)
    w.add_key_length(cfg.head_dim)
    w.add_value_length(cfg.head_dim)
    w.add_layer_norm_rms_eps(cfg.norm_eps)
    w.add_rope_freq_base(cfg.rope_base)
    w.add_rope_dimension_count(cfg.head_dim)
    w.add_vocab_size(cfg.vocab_size)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    if arch in ("sdar", "sdar-moe"):
        w.add_uint32("diffusion.block_length", cfg.block_length)
    tokens, types, merges, ids = tokenizer_fields(tokenizer_json)
    if len(tokens) != cfg.vocab_size:
        raise SystemExit(f"tokenizer has {len(tokens)} tokens, the model {cfg.vocab_size}")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(ids["bos"])
    w.add_eos_token_id(ids["eos"])
    w.add_eot_token_id(ids["eos"])
    w.add_pad_token_id(ids["pad"])
    w.add_mask_token_id(ids["mask"])
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    return w, ids


def write_gguf(w, out):
    """Writes a filled GGUFWriter to out (making its folder)."""
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def export_gguf(sd, cfg, tokenizer_json, out, name):
    w, ids = gguf_writer(cfg, tokenizer_json, out, name)
    for ck, gg, _, mat in tensors(sd, cfg):
        a = sd[ck].detach().float().numpy()
        w.add_tensor(gg, a.astype(np.float16 if mat else np.float32))
    write_gguf(w, out)
    return ids


def export_hf(sd, cfg, tokenizer_json, folder, ids):
    weights = {}
    for ck, _, hf, mat in tensors(sd, cfg):
        a = sd[ck].detach().float().numpy()
        weights[hf] = np.ascontiguousarray(a.astype(np.float16 if mat else np.float32))
    config = {
        "architectures": ["SDARForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "auto_map": {"AutoConfig": "configuration_sdar.SDARConfig",
                     "AutoModel": "modeling_sdar.SDARModel",
                     "AutoModelForCausalLM": "modeling_sdar.SDARForCausalLM"},
        "block_size": cfg.block_length,
        "bos_token_id": ids["bos"],
        "eos_token_id": ids["eos"],
        "head_dim": cfg.head_dim,
        "hidden_act": "silu",
        "hidden_size": cfg.dim,
        "initializer_range": 0.02,
        "intermediate_size": cfg.ffn,
        "mask_token_id": ids["mask"],
        "max_position_embeddings": cfg.context,
        "max_window_layers": cfg.layers,
        "model_type": "sdar",
        "num_attention_heads": cfg.heads,
        "num_hidden_layers": cfg.layers,
        "num_key_value_heads": cfg.heads,
        "pad_token_id": ids["pad"],
        "rms_norm_eps": cfg.norm_eps,
        "rope_scaling": None,
        "rope_theta": cfg.rope_base,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
        "transformers_version": "4.52.4",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": cfg.vocab_size,
    }
    write_hf(folder, weights, config, tokenizer_json, ids, cfg.context)


def write_hf(folder, weights, config, tokenizer_json, ids, context):
    """Writes an HF folder: model.safetensors (weights: name -> array), config.json,
    generation_config.json, the twins' tokenizer.json (not when tokenizer_json is None) and a
    tokenizer_config.json naming the special tokens (ids: bos/eos/pad/mask)."""
    from safetensors.numpy import save_file
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (folder / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": ids["bos"], "eos_token_id": ids["eos"], "pad_token_id": ids["pad"],
         "transformers_version": "4.52.4"}, indent=2) + "\n")
    if tokenizer_json is not None:
        shutil.copyfile(tokenizer_json, folder / "tokenizer.json")
    added = {str(ids[k]): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                           "single_word": False, "special": True}
             for k, t in (("bos", data.BOS), ("eos", data.EOS), ("pad", data.PAD),
                          ("mask", data.MASK))}
    tc = {"add_bos_token": True, "add_eos_token": False, "added_tokens_decoder": added,
          "bos_token": data.BOS, "eos_token": data.EOS, "pad_token": data.PAD,
          "mask_token": data.MASK, "clean_up_tokenization_spaces": False,
          "model_max_length": context, "tokenizer_class": "PreTrainedTokenizerFast"}
    (folder / "tokenizer_config.json").write_text(json.dumps(tc, indent=2) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("--gguf", help="GGUF file to write")
    ap.add_argument("--hf", help="HF checkpoint folder to write")
    ap.add_argument("--tokenizer", help="tokenizer.json (default: the checkpoint's)")
    ap.add_argument("--name", default="unmask-tinystories-block")
    args = ap.parse_args()
    ck = torch.load(args.checkpoint, map_location="cpu")
    cfg = BlockConfig(**ck["config"])
    tok = args.tokenizer or ck["tokenizer"]
    sd = ck["model"]
    _, _, _, ids = tokenizer_fields(tok)
    if args.gguf:
        export_gguf(sd, cfg, tok, args.gguf, args.name)
        print(f"wrote {args.gguf} ({Path(args.gguf).stat().st_size / 1e6:.2f} MB)", file=sys.stderr)
    if args.hf:
        export_hf(sd, cfg, tok, args.hf, ids)
        print(f"wrote {args.hf}/", file=sys.stderr)


if __name__ == "__main__":
    main()
