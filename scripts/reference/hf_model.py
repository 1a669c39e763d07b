#!/usr/bin/env python3
"""Reference forward pass (numpy, float64 by default) of Qwen2/Qwen3-layout Hugging Face
checkpoints: SDAR (`SDARForCausalLM`), Qwen3 (`Qwen3ForCausalLM`), Qwen2 (`Qwen2ForCausalLM`) and
Fast-dLLM v2 (`Fast_dLLM_QwenForCausalLM`). Written from the published layout (docs MODELS.md
sections 4-5; JetAstra/SDAR:training/model/SDAR-*/modeling_sdar.py, which is transformers'
modeling_qwen3.py), independent of the C++ engine.

Per layer, with n(x; w) = w * x / sqrt(mean(x^2) + eps) (RMSNorm over the last axis, pre-norm):
  h = n(x; input_layernorm)
  q = h Wq^T (+ bq), k = h Wk^T (+ bk), v = h Wv^T (+ bv)      biases: Qwen2 layout only
  q, k reshaped to [L, heads, head_dim]; Qwen3 layout: q = n(q; q_norm), k = n(k; k_norm) per
      head over head_dim (weights [head_dim] shared by the heads), BEFORE RoPE
  RoPE (NEOX / rotate-half, HF default): inv_freq_j = rope_theta^(-2j/head_dim), j < head_dim/2,
      angle = position * inv_freq_j, pairs (j, j + head_dim/2):
      out = x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1]
  attention: query head h reads kv head h // (heads / kv_heads) (GQA), scores q.k / sqrt(head_dim),
      softmax over the allowed keys, times v; then o_proj (no bias)
  x = x + attn; x = x + down(silu(gate(n(x; post_attention_layernorm))) * up(...))
final: n(x; model.norm), logits = x lm_head^T (lm_head = embed_tokens when tied / absent).
head_dim is config `head_dim`, else hidden_size / num_attention_heads (Qwen2 configs omit it).

Attention masks are functions of ABSOLUTE positions (query at p, key at s):
  "causal": s <= p;  "block" (block length B): s < (p // B + 1) * B, i.e. every key in the
  query's block and in earlier blocks (JetAstra/SDAR:generate.py builds the same matrix as
  tril(ones(nb, nb)) repeated B x B; docs ALGORITHMS.md section 5.1);  "full": every key.

KV cache (the procedure of SDAR generate.py / modeling_sdar.py `store_kv`): `KVCache` holds, per
layer, the post-norm post-RoPE K and the V of the positions stored so far. `forward(ids, pos,
cache=c, store_kv=True)` attends to the cached keys plus its own and appends its K/V;
`store_kv=False` reads the cache without changing it (the denoising forwards of a block).
`forward(ids, pos)` without a cache is the full-recompute mode used by the self-checks.

Usage as a script: print logits (or argmax ids) of a folder for a list of token ids.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

import numpy as np

import hf_read
from moe import MoeConfig, moe_ffn

ARCHS = {  # architectures[0] -> layout
    "SDARForCausalLM": "qwen3",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen2ForCausalLM": "qwen2",
    "Fast_dLLM_QwenForCausalLM": "qwen2",
    # Mixture of experts (moe.py): the Qwen3 attention with a routed-expert FFN in every layer.
    "Qwen3MoeForCausalLM": "qwen3",
    "SDARMoeForCausalLM": "qwen3",
    "LLaDAMoEModelLM": "qwen3",
    # LLaDA 2.x (MODELS.md section 3): its own names (model.word_embeddings, attention.
    # query_key_value fused Q|K|V, attention.{query,key}_layernorm, attention.dense), partial
    # rotary, dense first layers, sigmoid group-limited routing with an expert bias, shared experts.
    "LLaDA2MoeModelLM": "llada2",
}


def moe_config(c: dict) -> MoeConfig | None:
    """The routed-expert settings of an MoE config.json (MODELS.md section 1.4): Qwen3-MoE and
    SDAR-MoE name the expert width moe_intermediate_size and honour norm_topk_prob; LLaDA-MoE
    names it expert_intermediate_size and never renormalises (its HF code hard-wires False)."""
    arch = c["architectures"][0]
    if arch in ("Qwen3MoeForCausalLM", "SDARMoeForCausalLM"):
        if int(c.get("decoder_sparse_step", 1)) != 1 or c.get("mlp_only_layers"):
            raise hf_read.CheckpointError("only every-layer MoE is supported")
        return MoeConfig(int(c["num_experts"]), int(c["num_experts_per_tok"]),
                         int(c["moe_intermediate_size"]), bool(c.get("norm_topk_prob", False)))
    if arch == "LLaDA2MoeModelLM":
        k = int(c["num_experts_per_tok"])
        if c.get("use_qkv_bias") or c.get("use_bias"):
            raise hf_read.CheckpointError("use_qkv_bias / use_bias are not in this reference")
        return MoeConfig(int(c["num_experts"]), k, int(c["moe_intermediate_size"]),
                         bool(c.get("norm_topk_prob", True)) and k > 1,
                         float(c.get("routed_scaling_factor") or 1.0),
                         gating=c.get("score_function", "sigmoid"),
                         groups=int(c.get("n_group") or 1), groups_used=int(c.get("topk_group") or 1),
                         norm_eps=1e-20,
                         shared_ffn=int(c["moe_intermediate_size"]) *
                         int(c.get("num_shared_experts") or 0))
    if arch == "LLaDAMoEModelLM":
        if c.get("moe_router_enable_expert_bias") or int(c.get("shared_expert_intermediate_size")
                                                        or 0) > 0:
            raise hf_read.CheckpointError("expert bias / shared experts are not in this reference")
        return MoeConfig(int(c["num_experts"]), int(c["num_experts_per_tok"]),
                         int(c["expert_intermediate_size"]), False,
                         float(c.get("routed_scaling_factor") or 1.0))
    return None
MASKS = ("causal", "block", "full")


@dataclass
class HFConfig:
    arch: str
    layout: str            # "qwen3": q/k RMSNorm, no biases; "qwen2": q/k/v biases
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    tie_word_embeddings: bool
    raw: dict = field(repr=False, default_factory=dict)   # the whole config.json
    moe: MoeConfig | None = None                           # routed experts
    dense_layers: int = 0                                  # leading dense layers (LLaDA2)
    rotary_dim: int = 0                                    # rotated dims per head (0: all)
    expert_bias: bool = False                              # LLaDA2 mlp.gate.expert_bias

    @staticmethod
    def from_json(c: dict) -> "HFConfig":
        arch = (c.get("architectures") or [None])[0]
        if arch not in ARCHS:
            raise hf_read.CheckpointError(f"architectures[0] {arch!r} is not one of "
                                          f"{sorted(ARCHS)}")
        if c.get("rope_scaling"):
            raise hf_read.CheckpointError("rope_scaling is not supported")
        heads = int(c["num_attention_heads"])
        cfg = HFConfig(
            arch=arch, layout=ARCHS[arch], vocab_size=int(c["vocab_size"]),
            hidden_size=int(c["hidden_size"]), intermediate_size=int(c.get("intermediate_size", 0)),
            num_layers=int(c["num_hidden_layers"]), num_heads=heads,
            num_kv_heads=int(c.get("num_key_value_heads", heads)),
            head_dim=int(c.get("head_dim") or int(c["hidden_size"]) // heads),
            rms_norm_eps=float(c["rms_norm_eps"]), rope_theta=float(c["rope_theta"]),
            tie_word_embeddings=bool(c.get("tie_word_embeddings", False)), raw=c,
            moe=moe_config(c))
        if arch == "LLaDA2MoeModelLM":
            cfg.dense_layers = int(c.get("first_k_dense_replace") or 0)
            cfg.rotary_dim = int(c.get("rotary_dim") or
                                 round(cfg.head_dim * float(c.get("partial_rotary_factor", 1.0))))
            cfg.expert_bias = bool(c.get("moe_router_enable_expert_bias", False))
        if heads % cfg.num_kv_heads or cfg.head_dim % 2:
            raise hf_read.CheckpointError(f"bad heads {heads}/{cfg.num_kv_heads} or head_dim "
                                          f"{cfg.head_dim}")
        return cfg


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def rope(x: np.ndarray, positions: np.ndarray, theta: float, rotary_dim: int = 0) -> np.ndarray:
    """Rotate-half RoPE of x [L, heads, head_dim] at absolute positions [L]; with rotary_dim
    (partial rotary, LLaDA2) only the first rotary_dim dims rotate (frequencies over rotary_dim,
    pairs (j, j + rotary_dim / 2)) and the rest pass through."""
    if rotary_dim and rotary_dim < x.shape[-1]:
        return np.concatenate([rope(x[..., :rotary_dim], positions, theta),
                               x[..., rotary_dim:]], -1)
    d = x.shape[-1]
    inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)                # [d/2]
    ang = positions.astype(np.float64)[:, None] * inv[None, :]                # [L, d/2]
    cos = np.concatenate([np.cos(ang), np.cos(ang)], -1)[:, None, :].astype(x.dtype)
    sin = np.concatenate([np.sin(ang), np.sin(ang)], -1)[:, None, :].astype(x.dtype)
    rot = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)
    return x * cos + rot * sin


def allowed(q_pos: np.ndarray, k_pos: np.ndarray, mask: str, block_length: int | None):
    """[Lq, Lk] bool: may the query at q_pos[i] attend to the key at k_pos[j]."""
    q, k = q_pos[:, None], k_pos[None, :]
    if mask == "causal":
        return k <= q
    if mask == "block":
        if not block_length or block_length <= 0:
            raise ValueError("mask 'block' needs a positive block_length")
        return k < (q // block_length + 1) * block_length
    if mask == "full":
        return np.ones((q_pos.size, k_pos.size), dtype=bool)
    raise ValueError(f"unknown mask {mask!r}; expected one of {MASKS}")


class KVCache:
    """Per layer K [T, kv_heads, head_dim] (post-RoPE) and V, and their positions [T]."""

    def __init__(self, num_layers: int):
        self.k: list = [None] * num_layers
        self.v: list = [None] * num_layers
        self.positions = np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return int(self.positions.size)


class HFModel:
    """Weights of a checkpoint folder converted to `dtype`, and the forward pass."""

    def __init__(self, folder: str, dtype=np.float64):
        self.folder = folder
        self.cfg = cfg = HFConfig.from_json(hf_read.read_config(folder))
        self.generation_config = hf_read.read_generation_config(folder)
        self.dtype = np.dtype(dtype)
        w = hf_read.load_tensors(folder, self.dtype)
        used = set()

        def t(name: str, shape: tuple[int, ...]) -> np.ndarray:
            if name not in w:
                raise hf_read.CheckpointError(f"{folder}: missing tensor {name!r}")
            if w[name].shape != shape:
                raise hf_read.CheckpointError(f"{folder}: {name!r} has shape {w[name].shape}, "
                                              f"expected {shape}")
            used.add(name)
            return w[name]

        d, hd, ff, V = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size, cfg.vocab_size
        qd, kvd = cfg.num_heads * hd, cfg.num_kv_heads * hd
        if cfg.layout == "llada2":
            self._load_llada2(t)
            extra = sorted(set(w) - used)
            if extra:
                raise hf_read.CheckpointError(f"{folder}: unexpected tensors {extra[:5]}")
            return
        self.embed = t("model.embed_tokens.weight", (V, d))
        self.norm = t("model.norm.weight", (d,))
        if cfg.tie_word_embeddings:
            self.lm_head = self.embed
        else:
            self.lm_head = t("lm_head.weight", (V, d))
        self.layers = []
        for i in range(cfg.num_layers):
            p = f"model.layers.{i}."
            lw = {
                "in_norm": t(p + "input_layernorm.weight", (d,)),
                "wq": t(p + "self_attn.q_proj.weight", (qd, d)),
                "wk": t(p + "self_attn.k_proj.weight", (kvd, d)),
                "wv": t(p + "self_attn.v_proj.weight", (kvd, d)),
                "wo": t(p + "self_attn.o_proj.weight", (d, qd)),
                "post_norm": t(p + "post_attention_layernorm.weight", (d,)),
            }
            if cfg.moe is None:
                lw["gate"] = t(p + "mlp.gate_proj.weight", (ff, d))
                lw["up"] = t(p + "mlp.up_proj.weight", (ff, d))
                lw["down"] = t(p + "mlp.down_proj.weight", (d, ff))
            else:
                lw.update(self._experts(t, p))
            if cfg.layout == "qwen3":
                lw["q_norm"] = t(p + "self_attn.q_norm.weight", (hd,))
                lw["k_norm"] = t(p + "self_attn.k_norm.weight", (hd,))
            else:
                lw["bq"] = t(p + "self_attn.q_proj.bias", (qd,))
                lw["bk"] = t(p + "self_attn.k_proj.bias", (kvd,))
                lw["bv"] = t(p + "self_attn.v_proj.bias", (kvd,))
            self.layers.append(lw)
        extra = sorted(set(w) - used)
        if extra:
            raise hf_read.CheckpointError(f"{folder}: unexpected tensors {extra[:5]}")

    def _experts(self, t, p: str) -> dict:
        """The router mlp.gate.weight [E, d] and the experts mlp.experts.{e}.*_proj."""
        cfg, d = self.cfg, self.cfg.hidden_size
        fe = cfg.moe.expert_ffn
        return {"router": t(p + "mlp.gate.weight", (cfg.moe.num_experts, d)),
                "experts": [{
                    "gate": t(p + f"mlp.experts.{e}.gate_proj.weight", (fe, d)),
                    "up": t(p + f"mlp.experts.{e}.up_proj.weight", (fe, d)),
                    "down": t(p + f"mlp.experts.{e}.down_proj.weight", (d, fe)),
                } for e in range(cfg.moe.num_experts)]}

    def _load_llada2(self, t) -> None:
        cfg = self.cfg
        d, hd, ff, V = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size, cfg.vocab_size
        H, Hkv = cfg.num_heads, cfg.num_kv_heads
        self.embed = t("model.word_embeddings.weight", (V, d))
        self.norm = t("model.norm.weight", (d,))
        self.lm_head = self.embed if cfg.tie_word_embeddings else t("lm_head.weight", (V, d))
        self.layers = []
        for i in range(cfg.num_layers):
            p = f"model.layers.{i}."
            qkv = t(p + "attention.query_key_value.weight", ((H + 2 * Hkv) * hd, d))
            lw = {"in_norm": t(p + "input_layernorm.weight", (d,)),
                  "wq": qkv[:H * hd], "wk": qkv[H * hd:(H + Hkv) * hd], "wv": qkv[(H + Hkv) * hd:],
                  "q_norm": t(p + "attention.query_layernorm.weight", (hd,)),
                  "k_norm": t(p + "attention.key_layernorm.weight", (hd,)),
                  "wo": t(p + "attention.dense.weight", (d, H * hd)),
                  "post_norm": t(p + "post_attention_layernorm.weight", (d,))}
            if i < cfg.dense_layers:
                lw["gate"] = t(p + "mlp.gate_proj.weight", (ff, d))
                lw["up"] = t(p + "mlp.up_proj.weight", (ff, d))
                lw["down"] = t(p + "mlp.down_proj.weight", (d, ff))
            else:
                lw.update(self._experts(t, p))
                if cfg.expert_bias:
                    lw["bias"] = t(p + "mlp.gate.expert_bias", (cfg.moe.num_experts,))
                fs = cfg.moe.shared_ffn
                if fs:
                    lw["shared"] = {"gate": t(p + "mlp.shared_experts.gate_proj.weight", (fs, d)),
                                    "up": t(p + "mlp.shared_experts.up_proj.weight", (fs, d)),
                                    "down": t(p + "mlp.shared_experts.down_proj.weight", (d, fs))}
            self.layers.append(lw)

    def new_cache(self) -> KVCache:
        return KVCache(self.cfg.num_layers)

    def forward(self, ids, positions=None, mask: str = "causal", block_length: int | None = None,
                cache: KVCache | None = None, store_kv: bool = False,
                moe_stats: dict | None = None) -> np.ndarray:
        """Logits [L, vocab] for token ids [L] at absolute `positions` (default: after the
        cache, i.e. len(cache) .. len(cache) + L - 1). Keys: the cache's, then the new tokens';
        `mask` decides which of them each query sees. store_kv appends the new K/V to `cache`.
        moe_stats: see moe.moe_ffn (routing margins and experts hit per layer)."""
        cfg = self.cfg
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or ids.size == 0:
            raise ValueError("ids must be a non-empty 1-D sequence")
        if ids.min() < 0 or ids.max() >= cfg.vocab_size:
            raise ValueError(f"token id out of range [0, {cfg.vocab_size})")
        start = len(cache) if cache is not None else 0
        pos = np.arange(start, start + ids.size) if positions is None else \
            np.asarray(positions, dtype=np.int64)
        if pos.shape != ids.shape:
            raise ValueError("positions must have the shape of ids")
        if store_kv and cache is None:
            raise ValueError("store_kv needs a cache")
        L, H, Hkv, hd = ids.size, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        key_pos = pos if cache is None else np.concatenate([cache.positions, pos])
        ok = allowed(pos, key_pos, mask, block_length)                       # [L, T]
        if not ok.any(axis=1).all():
            raise ValueError("a query has no key to attend to")
        scale = self.dtype.type(1.0 / np.sqrt(hd))
        eps = self.dtype.type(cfg.rms_norm_eps)
        kv_of = np.arange(H) // (H // Hkv)                                   # query head -> kv head
        x = self.embed[ids]                                                  # [L, d]
        for li, lw in enumerate(self.layers):
            h = rms_norm(x, lw["in_norm"], eps)
            q, k, v = h @ lw["wq"].T, h @ lw["wk"].T, h @ lw["wv"].T
            if cfg.layout == "qwen2":
                q, k, v = q + lw["bq"], k + lw["bk"], v + lw["bv"]
            q, k, v = q.reshape(L, H, hd), k.reshape(L, Hkv, hd), v.reshape(L, Hkv, hd)
            if cfg.layout in ("qwen3", "llada2"):
                q, k = rms_norm(q, lw["q_norm"], eps), rms_norm(k, lw["k_norm"], eps)
            q = rope(q, pos, cfg.rope_theta, cfg.rotary_dim)
            k = rope(k, pos, cfg.rope_theta, cfg.rotary_dim)
            if cache is not None and cache.k[li] is not None:
                keys = np.concatenate([cache.k[li], k])
                vals = np.concatenate([cache.v[li], v])
            else:
                keys, vals = k, v
            if store_kv:
                cache.k[li], cache.v[li] = keys, vals
            s = np.einsum("qhd,khd->hqk", q, keys[:, kv_of]) * scale          # [H, L, T]
            s = np.where(ok[None], s, -np.inf)
            s = s - s.max(-1, keepdims=True)
            p = np.exp(s)
            p /= p.sum(-1, keepdims=True)
            a = np.einsum("hqk,khd->qhd", p, vals[:, kv_of]).reshape(L, H * hd)
            x = x + a @ lw["wo"].T
            h = rms_norm(x, lw["post_norm"], eps)
            if "router" in lw:
                x = x + moe_ffn(h, lw["router"], lw["experts"], cfg.moe, moe_stats,
                                lw.get("bias"), lw.get("shared"))
                continue
            g, u = h @ lw["gate"].T, h @ lw["up"].T
            x = x + ((g / (1 + np.exp(-g))) * u) @ lw["down"].T             # silu(gate) * up
        if store_kv:
            cache.positions = key_pos
        return rms_norm(x, self.norm, eps) @ self.lm_head.T


def main() -> int:
    ap = argparse.ArgumentParser(description="Reference forward of a Qwen2/Qwen3-layout HF folder.")
    ap.add_argument("folder")
    ap.add_argument("ids", help="comma-separated token ids")
    ap.add_argument("--mask", choices=MASKS, default="causal")
    ap.add_argument("--block-length", type=int, default=None)
    ap.add_argument("--f32", action="store_true", help="compute in float32 instead of float64")
    ap.add_argument("--argmax", action="store_true", help="print argmax ids instead of logits")
    args = ap.parse_args()
    m = HFModel(args.folder, np.float32 if args.f32 else np.float64)
    logits = m.forward([int(v) for v in args.ids.split(",")], mask=args.mask,
                       block_length=args.block_length)
    if args.argmax:
        print(",".join(str(int(i)) for i in logits.argmax(-1)))
    else:
        np.set_printoptions(precision=6, linewidth=160, threshold=50)
        print(logits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
