"""A llama-architecture GGUF (llama.cpp naming: the AR twin, SmolLM2, ...) as a frozen PyTorch
forward that returns the final hidden states after the output RMSNorm: the features Medusa heads
read (src/model/medusa_heads.h). Any tensor type gguf-py dequantizes (F32, F16, Q8_0, Q4_0, Q4_1,
...) is loaded as float32.

The forward is llama.cpp's for LLM_ARCH_LLAMA: RMSNorm, grouped-query causal attention with
"normal" RoPE over adjacent pairs of the rows as stored (llama.cpp's converter permutes HF's Q/K
rows for it), SwiGLU FFN; the output projection is output.weight or, when absent, the tied
token_embd.weight. No biases.
"""
import math

import gguf
import numpy as np
import torch
import torch.nn.functional as F
from gguf.quants import dequantize


def _value(field):
    if field.types[0] == gguf.GGUFValueType.STRING:
        return bytes(field.parts[field.data[0]]).decode("utf-8")
    if field.types[0] == gguf.GGUFValueType.ARRAY:
        return None  # arrays (vocabulary, merges) are not needed here
    return field.parts[field.data[0]][0].item()


class LlamaGguf:
    """Weights of `path` and the forward. Attributes: dim, vocab, context, output [vocab, dim]."""

    def __init__(self, path):
        reader = gguf.GGUFReader(str(path))
        kv = {k: _value(f) for k, f in reader.fields.items() if not k.startswith("GGUF.")}
        arch = kv["general.architecture"]
        if arch != "llama":
            raise SystemExit(f"{path}: architecture {arch!r}, expected 'llama' (a causal model)")
        self.kv = kv
        self.dim = kv["llama.embedding_length"]
        self.layers = kv["llama.block_count"]
        self.heads = kv["llama.attention.head_count"]
        self.kv_heads = kv.get("llama.attention.head_count_kv") or self.heads
        self.context = kv["llama.context_length"]
        self.rope_base = kv.get("llama.rope.freq_base") or 10000.0
        self.eps = kv["llama.attention.layer_norm_rms_epsilon"]
        self.w = {}
        for t in reader.tensors:
            a = dequantize(t.data, t.tensor_type).astype(np.float32)
            self.w[t.name] = torch.from_numpy(a.reshape([int(d) for d in reversed(t.shape)]).copy())
        self.output = self.w.get("output.weight", self.w["token_embd.weight"])
        self.vocab = self.output.shape[0]

    def _rope(self, x, pos):
        """x [B, T, H, hd]: adjacent pairs (2i, 2i+1) rotated by pos * base^(-2i/hd)."""
        hd = x.shape[-1]
        inv = self.rope_base ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
        ang = (pos[:, None].double() * inv[None, :]).float()  # [T, hd/2]
        cos, sin = ang.cos()[None, :, None, :], ang.sin()[None, :, None, :]
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)

    def _norm(self, x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * w

    @torch.no_grad()
    def features(self, ids):
        """ids [B, T] (int64) -> final normed hidden states [B, T, dim] (float32); causal, so
        right padding does not change the rows before it."""
        B, T = ids.shape
        x = F.embedding(ids, self.w["token_embd.weight"])
        pos = torch.arange(T)
        hd = self.dim // self.heads
        mask = torch.full((T, T), float("-inf")).triu(1)
        for i in range(self.layers):
            p = f"blk.{i}."
            h = self._norm(x, self.w[p + "attn_norm.weight"])
            q = (h @ self.w[p + "attn_q.weight"].T).view(B, T, self.heads, hd)
            k = (h @ self.w[p + "attn_k.weight"].T).view(B, T, self.kv_heads, hd)
            v = (h @ self.w[p + "attn_v.weight"].T).view(B, T, self.kv_heads, hd)
            q, k = self._rope(q, pos), self._rope(k, pos)
            rep = self.heads // self.kv_heads
            k = k.repeat_interleave(rep, dim=2)
            v = v.repeat_interleave(rep, dim=2)
            att = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(hd) + mask
            o = torch.einsum("bhqk,bkhd->bqhd", att.softmax(-1), v).reshape(B, T, self.dim)
            x = x + o @ self.w[p + "attn_output.weight"].T
            h = self._norm(x, self.w[p + "ffn_norm.weight"])
            g = F.silu(h @ self.w[p + "ffn_gate.weight"].T) * (h @ self.w[p + "ffn_up.weight"].T)
            x = x + g @ self.w[p + "ffn_down.weight"].T
        return self._norm(x, self.w["output_norm.weight"])
