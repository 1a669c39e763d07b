"""Reference mixture-of-experts FFN (numpy, float64), written from the published forward passes
(docs MODELS.md sections 2.1, 3.2, 4 and 6.1), independent of the C++ engine:

  Qwen3-MoE / SDAR-MoE (transformers modeling_qwen3_moe.py `Qwen3MoeSparseMoeBlock`):
      p = softmax(h W_gate^T) over all experts; top-k of p; if norm_topk_prob: w = p_top / sum;
  LLaDA-MoE (dInfer tools/modeling_fused_lladamoe.py `LLaDAMoESparseMoeBlock`):
      the same with norm_topk_prob hard-wired False (weights sum to < 1), no bias, no scale;
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
    normalize: bool            # divide the top-k weights by their sum
    scale: float = 1.0         # routed_scaling_factor


def route(logits: np.ndarray, cfg: MoeConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """logits [T, E] -> ids [T, k] (descending score, ties: lower id), weights [T, k], and the
    selection margin [T] (k-th minus (k+1)-th score; inf when k == E)."""
    x = logits.astype(np.float64)
    p = np.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    order = np.argsort(-p, axis=-1, kind="stable")          # stable: equal scores keep id order
    ids = order[:, :cfg.top_k]
    w = np.take_along_axis(p, ids, -1)
    if cfg.normalize:
        w = w / w.sum(-1, keepdims=True)
    w = w * cfg.scale
    if cfg.top_k < cfg.num_experts:
        ranked = np.take_along_axis(p, order, -1)
        margin = ranked[:, cfg.top_k - 1] - ranked[:, cfg.top_k]
    else:
        margin = np.full(x.shape[0], np.inf)
    return ids, w, margin


def moe_ffn(h: np.ndarray, router: np.ndarray, experts: list[dict], cfg: MoeConfig,
            stats: dict | None = None) -> np.ndarray:
    """h [T, d] -> [T, d]. router [E, d]; experts[e] = {"gate", "up": [f, d], "down": [d, f]}.
    stats (optional) collects "min_route_margin" and "experts_hit" (list, one per call)."""
    ids, w, margin = route(h @ router.T, cfg)
    out = np.zeros_like(h)
    for e in range(cfg.num_experts):
        tok, slot = np.nonzero(ids == e)
        if tok.size == 0:
            continue
        xe = h[tok]
        g, u = xe @ experts[e]["gate"].T, xe @ experts[e]["up"].T
        y = ((g / (1 + np.exp(-g))) * u) @ experts[e]["down"].T
        np.add.at(out, tok, w[tok, slot][:, None] * y)
    if stats is not None:
        stats["min_route_margin"] = min(stats.get("min_route_margin", np.inf),
                                        float(margin.min()))
        stats.setdefault("experts_hit", []).append(int(np.unique(ids).size))
    return out
