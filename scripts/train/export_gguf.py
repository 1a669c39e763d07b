#!/usr/bin/env python3
"""Export a trained twin checkpoint to GGUF with llama.cpp's naming (LLAMACPP.md).

  diffusion twin -> general.architecture = "llada" (llada.attention.causal = false,
                    diffusion.shift_logits = false, tokenizer.ggml.mask_token_id)
  AR twin        -> general.architecture = "llama"
Weights F16 (norms F32), tensors token_embd / blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output,
ffn_norm, ffn_gate, ffn_up, ffn_down} / output_norm / output. RoPE is already in llama.cpp's
interleaved layout in these models, so Q/K rows need no permutation. The tokenizer is stored as
llama.cpp's `gpt2` model with pre-tokenizer `gpt-2`.

  .venv/bin/python scripts/train/export_gguf.py build/train/llada/checkpoint.pt models/x.gguf
"""
import argparse
import json
import sys
from pathlib import Path

import gguf
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import data  # noqa: E402
from model import ModelConfig  # noqa: E402

LLADA_CHAT_TEMPLATE = None  # the twins are base models: no chat template


def tokenizer_fields(tokenizer_json):
    """(tokens, token_types, merges, special ids) from a HuggingFace byte-level BPE tokenizer.json."""
    j = json.loads(Path(tokenizer_json).read_text(encoding="utf-8"))
    vocab = j["model"]["vocab"]
    tokens = [None] * len(vocab)
    for text, i in vocab.items():
        tokens[i] = text
    merges = [m if isinstance(m, str) else f"{m[0]} {m[1]}" for m in j["model"]["merges"]]
    special = {t["content"]: t["id"] for t in j.get("added_tokens", [])}
    types = [gguf.TokenType.CONTROL if t in special else gguf.TokenType.NORMAL for t in tokens]
    ids = {name: special[text] for name, text in
           (("bos", data.BOS), ("eos", data.EOS), ("pad", data.PAD), ("mask", data.MASK))}
    return tokens, types, merges, ids


def export(checkpoint, out, tokenizer_json=None, name=None):
    ck = torch.load(checkpoint, map_location="cpu")
    cfg = ModelConfig(**ck["config"])
    sd = ck["model"]
    tokenizer_json = tokenizer_json or ck["tokenizer"]
    arch = "llama" if cfg.causal else "llada"
    w = gguf.GGUFWriter(str(out), arch)
    w.add_name(name or ck.get("name", f"unmask-{arch}"))
    w.add_context_length(cfg.context)
    w.add_embedding_length(cfg.dim)
    w.add_block_count(cfg.layers)
    w.add_feed_forward_length(cfg.ffn)
    w.add_head_count(cfg.heads)
    w.add_head_count_kv(cfg.heads)
    w.add_layer_norm_rms_eps(cfg.norm_eps)
    w.add_rope_freq_base(cfg.rope_base)
    w.add_rope_dimension_count(cfg.dim // cfg.heads)
    w.add_vocab_size(cfg.vocab_size)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    if not cfg.causal:
        w.add_causal_attention(False)
        w.add_diffusion_shift_logits(False)
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
    w.add_eot_token_id(ids["eos"])  # no chat turns: end of text is also end of turn
    w.add_pad_token_id(ids["pad"])
    w.add_mask_token_id(ids["mask"])
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    def f16(t):
        return t.detach().float().numpy().astype(np.float16)

    def f32(t):
        return t.detach().float().numpy().astype(np.float32)

    w.add_tensor("token_embd.weight", f16(sd["tok_embd.weight"]))
    for i in range(cfg.layers):
        p, q = f"blocks.{i}.", f"blk.{i}."
        w.add_tensor(q + "attn_norm.weight", f32(sd[p + "attn_norm.weight"]))
        w.add_tensor(q + "attn_q.weight", f16(sd[p + "wq.weight"]))
        w.add_tensor(q + "attn_k.weight", f16(sd[p + "wk.weight"]))
        w.add_tensor(q + "attn_v.weight", f16(sd[p + "wv.weight"]))
        w.add_tensor(q + "attn_output.weight", f16(sd[p + "wo.weight"]))
        w.add_tensor(q + "ffn_norm.weight", f32(sd[p + "ffn_norm.weight"]))
        w.add_tensor(q + "ffn_gate.weight", f16(sd[p + "w_gate.weight"]))
        w.add_tensor(q + "ffn_up.weight", f16(sd[p + "w_up.weight"]))
        w.add_tensor(q + "ffn_down.weight", f16(sd[p + "w_down.weight"]))
    w.add_tensor("output_norm.weight", f32(sd["norm.weight"]))
    w.add_tensor("output.weight", f16(sd["output.weight"]))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("out")
    ap.add_argument("--tokenizer", help="tokenizer.json (default: the one named in the checkpoint)")
    ap.add_argument("--name", help="general.name")
    args = ap.parse_args()
    export(args.checkpoint, args.out, args.tokenizer, args.name)
    print(f"wrote {args.out} ({Path(args.out).stat().st_size / 1e6:.2f} MB)", file=sys.stderr)


if __name__ == "__main__":
    main()
