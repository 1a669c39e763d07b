"""Reference mixture-of-experts FFN (numpy, float64), written from the published forward passes
(docs MODELS.md sections 2.1, 3.2, 4 and 6.1), independent of the C++ engine:

  Qwen3-MoE / SDAR-MoE (transformers modeling_qwen3_moe.py `Qwen3MoeSparseMoeBlock`):
      p = softmax(h W_gate^T) over all experts; top-k of p; if norm_topk_prob: w = p_top / sum;
  LLaDA-MoE (dInfer tools/modeling_fused_lladamoe.py `LLaDAMoESparseMoeBlock`):
      the same with norm_topk_prob hard-wired False (weights sum to < 1), no bias, no scale;
  LLaDA 2.x (dInfer python/dinfer/model/modeling_llada2_moe.py `LLaDA2MoeGate.forward`):
      s = sigmoid(h W_gate^T); choice = s + expert_bias; group score = sum of the 2 best choice
      scores of each of n_group equal groups; keep the topk_group best groups (others -inf);
      top-k of choice; w = s at those experts (unbiased), divided by (sum + 1e-20) when k > 1 and
      norm_topk_prob, times routed_scaling_factor; plus the shared experts (a dense SwiGLU of
      width moe_intermediate_size * num_shared_experts on every position);
  every routed expert: down(silu(gate(h)) * up(h)); out = sum_j w_j expert_{id_j}(h).

Selection ties: torch.topk leaves their order unspecified; this reference (and unmask) takes the
lower expert id first. `route_margin` reports how far each token's selection is from changing
(the k-th minus the (k+1)-th score), so goldens can refuse fragile cases.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MoeConfig:
    num_experts: int
    top_k: int
    expert_ffn: int
    normalize: bool            # divide the top-k weights by their sum (+ norm_eps)
    scale: float = 1.0         # routed_scaling_factor
    gating: str = "softmax"    # or "sigmoid"
    groups: int = 1            # n_group
    groups_used: int = 1       # topk_group
    norm_eps: float = 0.0      # LLaDA 2.x: 1e-20
    shared_ffn: int = 0        # width of the shared expert(s); 0: none


def route(logits: np.ndarray, cfg: MoeConfig, bias: np.ndarray | None = None
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """logits [T, E] -> ids [T, k] (descending choice score, ties: lower id), weights [T, k], and
    the selection margin [T] (k-th minus (k+1)-th choice score among the kept groups, and the
    kept groups' margin over the best dropped group; inf when nothing competes)."""
    x = logits.astype(np.float64)
    if cfg.gating == "softmax":
        p = np.exp(x - x.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
    else:
        p = 1.0 / (1.0 + np.exp(-x))
    choice = p + (0.0 if bias is None else bias.astype(np.float64))
    margin = np.full(x.shape[0], np.inf)
    if cfg.groups > 1:
        t, e = choice.shape
        g = np.sort(choice.reshape(t, cfg.groups, e // cfg.groups), -1)[..., ::-1]
        gscore = g[..., 0] + (g[..., 1] if e // cfg.groups > 1 else 0.0)       # [T, groups]
        gorder = np.argsort(-gscore, axis=-1, kind="stable")
        keep = np.zeros_like(gscore, dtype=bool)
        np.put_along_axis(keep, gorder[:, :cfg.groups_used], True, -1)
        if cfg.groups_used < cfg.groups:
            granked = np.take_along_axis(gscore, gorder, -1)
            margin = granked[:, cfg.groups_used - 1] - granked[:, cfg.groups_used]
        choice = np.where(np.repeat(keep, e // cfg.groups, -1), choice, -np.inf)
    order = np.argsort(-choice, axis=-1, kind="stable")     # stable: equal scores keep id order
    ids = order[:, :cfg.top_k]
    w = np.take_along_axis(p, ids, -1)
    if cfg.normalize:
        w = w / (w.sum(-1, keepdims=True) + cfg.norm_eps)
    w = w * cfg.scale
    ranked = np.take_along_axis(choice, order, -1)
    if cfg.top_k < ranked.shape[1]:
        gap = ranked[:, cfg.top_k - 1] - ranked[:, cfg.top_k]
        margin = np.minimum(margin, np.where(np.isfinite(gap), gap, np.inf))
    return ids, w, margin


def swiglu(h: np.ndarray, e: dict) -> np.ndarray:
    g, u = h @ e["gate"].T, h @ e["up"].T
    return ((g / (1 + np.exp(-g))) * u) @ e["down"].T


def moe_ffn(h: np.ndarray, router: np.ndarray, experts: list[dict], cfg: MoeConfig,
            stats: dict | None = None, bias: np.ndarray | None = None,
            shared: dict | None = None) -> np.ndarray:
    """h [T, d] -> [T, d]. router [E, d]; experts[e] = {"gate", "up": [f, d], "down": [d, f]};
    bias [E] (selection only) and shared (the shared expert's weights) when the family has them.
    stats (optional) collects "min_route_margin" and "experts_hit" (list, one per call)."""
    ids, w, margin = route(h @ router.T, cfg, bias)
    out = np.zeros_like(h) if shared is None else swiglu(h, shared)
    for e in range(cfg.num_experts):
        tok, slot = np.nonzero(ids == e)
        if tok.size == 0:
            continue
        np.add.at(out, tok, w[tok, slot][:, None] * swiglu(h[tok], experts[e]))
    if stats is not None:
        stats["min_route_margin"] = min(stats.get("min_route_margin", np.inf),
                                        float(margin.min()))
        stats.setdefault("experts_hit", []).append(int(np.unique(ids).size))
    return out
