#!/usr/bin/env python3
"""Reference LLaDA forward pass (numpy, float64 by default) from a GGUF file.

Architecture (LLaDA-8B / llama.cpp arch `llada`): token embedding; per layer
  h = x + Wo . Attn(RoPE(Wq . n1(x)), RoPE(Wk . n1(x)), Wv . n1(x))
  x = h + Wdown . (silu(Wgate . n2(h)) * (Wup . n2(h)))
with n(x) = x / sqrt(mean(x^2) + eps) * w (RMSNorm, pre-norm), then a final RMSNorm and the
output projection (tied to token_embd when `output.weight` is absent). Attention is
bidirectional with no mask, scale 1/sqrt(head_dim), grouped-query when head_count_kv <
head_count (query head h reads kv head h // (head_count / head_count_kv)). No biases.
Logits are returned for every position; position i predicts token i (no shift).

RoPE. llama.cpp's converter stores Q/K rows permuted for the interleaved ("normal") RoPE:
  stored = w.reshape(n_head, 2, head_dim // 2, n_in).swapaxes(1, 2).reshape(-1, n_in)
i.e. stored row 2j + t of a head is HF row t * head_dim/2 + j (t in {0, 1}). The default
mode ("rotate_half") undoes that permutation,
  hf = stored.reshape(n_head, head_dim // 2, 2, n_in).swapaxes(1, 2).reshape(-1, n_in),
and applies HF's rotate_half RoPE (pairs (j, j + head_dim/2)); mode "interleaved" applies the
normal RoPE (pairs (2j, 2j+1)) to the stored rows. Both use theta_j = base^(-2j/head_dim) at
positions 0..L-1 and give the same numbers (tested in test_reference.py).

Dream (llama.cpp arch `dream`, Qwen2 layout; docs LLAMACPP.md "Dream GGUF"): the same block plus
q/k/v projection biases (`blk.N.attn_{q,k,v}.bias`, added right after the projections, before
RoPE) and an optional `output.bias`; Q/K rows are stored in HF order (NEOX RoPE), so rope_mode
must be "rotate_half" and nothing is unpermuted. Its logits are *shifted*
(`diffusion.shift_logits`, default true for dream): position p is predicted by output row p-1,
position 0 by row 0; `forward` returns the unshifted rows and `shift_logits` applies the shift.

Usage as a script: print logits (or their argmax) for a list of token ids.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import numpy as np

from gguf_read import GGUFError, GGUFFile

ARCH = "llada"
# Architectures with this block layout: bidirectional LLaDA, and causal Llama (same tensors/keys).
CAUSAL_ARCHS = {"llada": False, "llama": True, "dream": False}
NEOX_ARCHS = {"dream"}  # Q/K rows in HF order: rotate_half RoPE on the stored rows


@dataclass
class LladaConfig:
    n_vocab: int
    n_ctx: int
    n_embd: int
    n_layer: int
    n_ff: int
    n_head: int
    n_head_kv: int
    rms_eps: float
    rope_base: float
    n_rot: int
    causal: bool = False  # True for "llama": query i attends to keys 0..i only
    arch: str = "llada"
    shift_logits: bool = False  # Dream: position p is predicted by output row p-1

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


def _unpermute_rows(w: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of convert_hf_to_gguf's Q/K row permutation (see module docstring)."""
    n_out, n_in = w.shape
    hd = n_out // n_head
    return w.reshape(n_head, hd // 2, 2, n_in).swapaxes(1, 2).reshape(n_out, n_in)


def permute_rows(w: np.ndarray, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf's forward permutation (HF rotate_half rows -> GGUF rows)."""
    n_out, n_in = w.shape
    hd = n_out // n_head
    return w.reshape(n_head, 2, hd // 2, n_in).swapaxes(1, 2).reshape(n_out, n_in)


def rope_rotate_half(x: np.ndarray, base: float) -> np.ndarray:
    """HF RoPE on x [L, n_heads, head_dim]: pairs (j, j + d/2), positions 0..L-1."""
    L, _, d = x.shape
    inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)            # [d/2]
    ang = np.arange(L, dtype=np.float64)[:, None] * inv[None, :]        # [L, d/2]
    cos = np.concatenate([np.cos(ang), np.cos(ang)], -1)[:, None, :].astype(x.dtype)
    sin = np.concatenate([np.sin(ang), np.sin(ang)], -1)[:, None, :].astype(x.dtype)
    rot = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)
    return x * cos + rot * sin


def rope_interleaved(x: np.ndarray, base: float) -> np.ndarray:
    """Normal (GPT-J style) RoPE on x [L, n_heads, head_dim]: pairs (2j, 2j + 1)."""
    L, _, d = x.shape
    inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    ang = np.arange(L, dtype=np.float64)[:, None] * inv[None, :]
    cos = np.cos(ang)[:, None, :].astype(x.dtype)
    sin = np.sin(ang)[:, None, :].astype(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * cos - x1 * sin
    out[..., 1::2] = x0 * sin + x1 * cos
    return out


def read_config(g: GGUFFile) -> LladaConfig:
    arch = g.require("general.architecture")
    if arch not in CAUSAL_ARCHS:
        raise GGUFError(f"{g.path}: general.architecture is {arch!r}, expected one of "
                        f"{sorted(CAUSAL_ARCHS)}")

    def key(k: str):
        return g.require(f"{arch}.{k}")

    n_embd = int(key("embedding_length"))
    n_head = int(key("attention.head_count"))
    n_head_kv = int(g.get(f"{arch}.attention.head_count_kv", n_head))
    tok = g.tensors.get("token_embd.weight")
    if tok is None:
        raise GGUFError(f"{g.path}: missing tensor 'token_embd.weight'")
    n_vocab = int(g.get(f"{arch}.vocab_size", tok.shape[0]))
    cfg = LladaConfig(
        n_vocab=n_vocab, n_ctx=int(key("context_length")), n_embd=n_embd,
        n_layer=int(key("block_count")), n_ff=int(key("feed_forward_length")), n_head=n_head,
        n_head_kv=n_head_kv, rms_eps=float(key("attention.layer_norm_rms_epsilon")),
        rope_base=float(g.get(f"{arch}.rope.freq_base", 10000.0)),
        n_rot=int(g.get(f"{arch}.rope.dimension_count", n_embd // n_head)),
        causal=CAUSAL_ARCHS[arch], arch=arch,
        shift_logits=bool(g.get("diffusion.shift_logits", arch == "dream")))
    if n_embd % n_head or n_head % n_head_kv:
        raise GGUFError(f"{g.path}: bad head counts {n_head}/{n_head_kv} for width {n_embd}")
    if cfg.n_rot != cfg.head_dim:
        raise GGUFError(f"{g.path}: partial RoPE (dimension_count {cfg.n_rot} != head_dim "
                        f"{cfg.head_dim}) is not supported")
    if tok.shape != (n_vocab, n_embd):
        raise GGUFError(f"{g.path}: token_embd.weight shape {tok.shape}, expected "
                        f"{(n_vocab, n_embd)}")
    return cfg


class LladaModel:
    """Weights of a LLaDA GGUF, dequantized, and the forward pass.

    dtype: np.float64 (the reference) or np.float32 (to estimate what an f32 engine computes).
    rope_mode: "rotate_half" (unpermute Q/K, HF RoPE) or "interleaved" (stored rows, normal RoPE).
    """

    def __init__(self, path_or_file, dtype=np.float64, rope_mode: str = "rotate_half"):
        g = path_or_file if isinstance(path_or_file, GGUFFile) else GGUFFile(path_or_file)
        self.gguf = g
        self.cfg = cfg = read_config(g)
        self.dtype = np.dtype(dtype)
        if rope_mode not in ("rotate_half", "interleaved"):
            raise ValueError(f"unknown rope_mode {rope_mode!r}")
        neox = cfg.arch in NEOX_ARCHS
        if neox and rope_mode != "rotate_half":
            raise ValueError(f"{cfg.arch} stores Q/K for NEOX RoPE: rope_mode must be rotate_half")
        self.rope_mode = rope_mode

        def t(name: str, shape: tuple[int, ...]) -> np.ndarray:
            w = g.tensor(name) if name in g.tensors else None
            if w is None:
                raise GGUFError(f"{g.path}: missing tensor {name!r}")
            if w.shape != shape:
                raise GGUFError(f"{g.path}: tensor {name!r} has shape {w.shape}, expected {shape}")
            return w

        d, hd, ff = cfg.n_embd, cfg.head_dim, cfg.n_ff
        self.tok_embd = t("token_embd.weight", (cfg.n_vocab, d)).astype(self.dtype)
        self.out_norm = t("output_norm.weight", (d,)).astype(self.dtype)
        self.tied = "output.weight" not in g.tensors
        self.output = self.tok_embd if self.tied else \
            t("output.weight", (cfg.n_vocab, d)).astype(self.dtype)
        self.layers = []
        for i in range(cfg.n_layer):
            p = f"blk.{i}."
            wq = t(p + "attn_q.weight", (cfg.n_head * hd, d))
            wk = t(p + "attn_k.weight", (cfg.n_head_kv * hd, d))
            if rope_mode == "rotate_half" and not neox:
                wq = _unpermute_rows(wq, cfg.n_head)
                wk = _unpermute_rows(wk, cfg.n_head_kv)
            self.layers.append({
                "attn_norm": t(p + "attn_norm.weight", (d,)),
                "wq": wq, "wk": wk,
                "wv": t(p + "attn_v.weight", (cfg.n_head_kv * hd, d)),
                "wo": t(p + "attn_output.weight", (d, cfg.n_head * hd)),
                "ffn_norm": t(p + "ffn_norm.weight", (d,)),
                "gate": t(p + "ffn_gate.weight", (ff, d)),
                "up": t(p + "ffn_up.weight", (ff, d)),
                "down": t(p + "ffn_down.weight", (d, ff)),
            })
            for b, n in (("bq", cfg.n_head * hd), ("bk", cfg.n_head_kv * hd),
                         ("bv", cfg.n_head_kv * hd)):
                name = p + f"attn_{b[1]}.bias"
                if name in g.tensors:
                    self.layers[-1][b] = t(name, (n,))
            for k, v in self.layers[-1].items():
                self.layers[-1][k] = v.astype(self.dtype)
        self.out_bias = t("output.bias", (cfg.n_vocab,)).astype(self.dtype) \
            if "output.bias" in g.tensors else None

    def _rms_norm(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        ms = np.mean(x * x, axis=-1, keepdims=True)
        return x / np.sqrt(ms + self.dtype.type(self.cfg.rms_eps)) * w

    def forward(self, ids) -> np.ndarray:
        """Logits [L, n_vocab] (in self.dtype) for token ids [L]."""
        cfg = self.cfg
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or ids.size == 0:
            raise ValueError("ids must be a non-empty 1-D sequence")
        if ids.min() < 0 or ids.max() >= cfg.n_vocab:
            raise ValueError(f"token id out of range [0, {cfg.n_vocab})")
        L, H, Hkv, hd = ids.size, cfg.n_head, cfg.n_head_kv, cfg.head_dim
        rope = rope_rotate_half if self.rope_mode == "rotate_half" else rope_interleaved
        scale = self.dtype.type(1.0 / np.sqrt(hd))
        x = self.tok_embd[ids]                                       # [L, d]
        for lw in self.layers:
            h = self._rms_norm(x, lw["attn_norm"])
            q, k, v = h @ lw["wq"].T, h @ lw["wk"].T, h @ lw["wv"].T
            if "bq" in lw:                                           # Dream (Qwen2) biases
                q, k, v = q + lw["bq"], k + lw["bk"], v + lw["bv"]
            q = rope(q.reshape(L, H, hd), cfg.rope_base)
            k = rope(k.reshape(L, Hkv, hd), cfg.rope_base)
            v = v.reshape(L, Hkv, hd)
            kv_of = np.arange(H) // (H // Hkv)                       # query head -> kv head
            k, v = k[:, kv_of], v[:, kv_of]                          # [L, H, hd]
            s = np.einsum("qhd,khd->hqk", q, k) * scale              # [H, L, L]
            if cfg.causal:                                           # Llama: no future keys
                s = np.where(np.triu(np.ones((L, L), dtype=bool), 1), -np.inf, s)
            s = s - s.max(-1, keepdims=True)
            p = np.exp(s)
            p /= p.sum(-1, keepdims=True)
            a = np.einsum("hqk,khd->qhd", p, v).reshape(L, H * hd)
            x = x + a @ lw["wo"].T
            h = self._rms_norm(x, lw["ffn_norm"])
            g = h @ lw["gate"].T
            u = h @ lw["up"].T
            x = x + ((g / (1 + np.exp(-g))) * u) @ lw["down"].T      # SwiGLU: silu(gate) * up
        x = self._rms_norm(x, self.out_norm)
        out = x @ self.output.T                                      # [L, n_vocab]
        return out if self.out_bias is None else out + self.out_bias


def shift_logits(logits: np.ndarray) -> np.ndarray:
    """Dream's shift: row p of the result is row p-1 of `logits`, row 0 stays row 0."""
    return np.concatenate([logits[:1], logits[:-1]], 0)


def main() -> int:
    ap = argparse.ArgumentParser(description="LLaDA reference forward pass from a GGUF file.")
    ap.add_argument("model", help="LLaDA GGUF file")
    ap.add_argument("ids", help="comma-separated token ids")
    ap.add_argument("--f32", action="store_true", help="compute in float32 instead of float64")
    ap.add_argument("--rope", choices=["rotate_half", "interleaved"], default="rotate_half")
    ap.add_argument("--argmax", action="store_true", help="print argmax ids instead of logits")
    args = ap.parse_args()
    m = LladaModel(args.model, np.float32 if args.f32 else np.float64, args.rope)
    logits = m.forward([int(x) for x in args.ids.split(",")])
    if args.argmax:
        print(",".join(str(int(i)) for i in logits.argmax(-1)))
    else:
        np.set_printoptions(precision=6, linewidth=160, threshold=50)
        print(logits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
