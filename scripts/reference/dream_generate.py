#!/usr/bin/env python3
"""Reference Dream generation (numpy), written from docs ALGORITHMS.md section 2 (the HF Dream
`generation_utils.py`: `_sample` and `sample_tokens`), independent of the C++ engine.

One request (batch = 1). Canvas x = prompt + gen_length mask ids; for step i in 0..steps-1:
  one full forward over x; logits shifted (row p-1 predicts position p, row 0 position 0) when the
  model's shift_logits is set (Dream's default);
  t = ts[i], s = ts[i+1] with ts = linspace(1, eps, steps + 1) in float32 (see `timesteps`);
  alg 'origin': p = 1 - s/t (float32; 1 at the last step); a masked position p is selected when
      u(seed, STREAM_DREAM_ORIGIN, i, p, 0) < p; every selected position gets sample_tokens' x0
      (which may be the mask id itself: the position then stays masked, as in the reference);
  other algs ('maskgit_plus', 'topk_margin', 'entropy'): conf, x0 = sample_tokens(every masked
      row); m = number of masked positions; k = int(float32(m) * float32(1 - s/t)) (truncation;
      k = m at the last step); the k best positions are committed: topk(conf) with TIE RULE
      equal confidences -> lower position first; or with alg_temp > 0 multinomial(softmax(conf /
      alg_temp), k) without replacement, realized as Gumbel-top-k: the k largest
      conf/alg_temp - log(-log u(seed, STREAM_DREAM_ALG_TEMP, i, p, 0)) (same tie rule).
sample_tokens(row): l = logits (float64); T > 0: l = l / T; top_p < 1: top-p filter; top_k > 0:
  top-k filter (removed entries := float32 min, as torch.finfo(float32).min); probs = softmax(l);
  T > 0: x0 ~ Categorical(probs), realized as Gumbel-max argmax(l - log(-log u(seed, GUMBEL, i, p,
  v))) (ties: lowest id), conf = probs[x0]; T == 0: x0 = argmax probs (lowest id on ties), conf =
  max; topk_margin: conf = top1 - top2 of probs; entropy: conf = sum(p * log(p + 1e-10)).
  top-p: sort l descending (ties: lower id first), cum = cumsum(softmax(sorted)), remove cum >
  top_p shifted right by one (the first token is always kept). top-k: remove l < k-th largest.

Deliberate differences from the PyTorch reference (all documented in the C++ header too):
* Arithmetic is float64 (the reference runs in bf16: confidences stored in bf16 tie often).
* Random numbers come from unmask's counter RNG (rng.py), keyed by (seed, stream, step,
  position, index), instead of torch's global generator.
* The reference batches rows and commits the batch-average k in every row; unmask is batch = 1.
* `timesteps`: torch.linspace's scalar formula in float32 without FMA (torch's CPU kernel computes
  vector chunks as base + i * step and the CUDA kernel contracts to FMA, so bits of ts can differ
  by machine; the formula below is the exact specification unmask follows).
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field

import numpy as np

import rng
from llada import LladaModel, shift_logits

STREAM_DREAM_ORIGIN = 6    # origin's transfer draw rand < p_transfer: index = 0
STREAM_DREAM_ALG_TEMP = 7  # alg_temp Gumbel-top-k over positions: index = 0
ALGS = ("origin", "maskgit_plus", "topk_margin", "entropy")
F32_MIN = float(np.finfo(np.float32).min)


@dataclass
class DreamParams:
    gen_length: int = 16         # max_new_tokens
    steps: int = 16
    eps: float = 1e-3
    alg: str = "origin"
    alg_temp: float = 0.0        # 0: topk (the reference's None / 0)
    temperature: float = 0.0
    top_p: float = 1.0           # 1: off (the reference's None)
    top_k: int = 0               # 0: off (the reference's None)
    seed: int = 0

    def validate(self) -> None:
        if self.alg not in ALGS:
            raise ValueError(f"unknown alg {self.alg!r}")
        if self.gen_length <= 0 or self.steps <= 0:
            raise ValueError("gen_length and steps must be positive")
        if not 0 < self.eps < 1:
            raise ValueError("eps must be in (0, 1)")
        if not 0 < self.top_p <= 1 or self.top_k < 0 or self.temperature < 0 or self.alg_temp < 0:
            raise ValueError("bad top_p / top_k / temperature / alg_temp")


def timesteps(steps: int, eps: float) -> np.ndarray:
    """linspace(1, eps, steps + 1) in float32: step = (end - start) / (n - 1); index i < n // 2:
    start + step * i, else end - step * (n - 1 - i); every operation rounded to float32."""
    n = steps + 1
    f = np.float32
    start, end = f(1.0), f(eps)
    step = f(f(end - start) / f(n - 1))
    out = np.empty(n, dtype=np.float32)
    for i in range(n):
        out[i] = f(start + f(step * f(i))) if i < n // 2 else f(end - f(step * f(n - 1 - i)))
    return out


def transfer_fraction(ts: np.ndarray, i: int) -> np.float32:
    """1 - s/t in float32 for step i (t = ts[i], s = ts[i + 1])."""
    return np.float32(np.float32(1.0) - np.float32(ts[i + 1] / ts[i]))


def num_transfer(m: int, ts: np.ndarray, i: int, steps: int) -> int:
    """Tokens committed at step i out of m masked ones (non-origin algs)."""
    if i == steps - 1:
        return m
    return int(np.float32(np.float32(m) * transfer_fraction(ts, i)))


def _softmax(l: np.ndarray) -> np.ndarray:
    e = np.exp(l - l.max())
    return e / np.cumsum(e)[-1]      # sequential sum (the C++ order)


@dataclass
class Sampled:
    x0: int
    conf: float
    margin: float                # how far the choice of x0 is from flipping (logit/score units)
    top_p_margin: float = math.inf


def filter_logits(row: np.ndarray, p: DreamParams) -> tuple[np.ndarray, float]:
    """Temperature, then top-p, then top-k. Returns (filtered float64 row, top-p margin)."""
    l = row.astype(np.float64)
    if p.temperature > 0:
        l = l / p.temperature
    top_p_margin = math.inf
    if p.top_p < 1:
        order = np.argsort(-l, kind="stable")
        cum = np.cumsum(_softmax(l[order]))
        remove = cum > p.top_p
        remove[1:] = remove[:-1].copy()
        remove[0] = False
        top_p_margin = float(np.min(np.abs(cum[:-1] - p.top_p))) if l.size > 1 else math.inf
        l = l.copy()
        l[order[remove]] = F32_MIN
    if p.top_k > 0:
        kth = np.sort(l)[::-1][min(p.top_k, l.size) - 1]
        l = np.where(l < kth, F32_MIN, l)
    return l, top_p_margin


def sample_tokens(row: np.ndarray, p: DreamParams, step: int, position: int) -> Sampled:
    """Dream's sample_tokens for one masked position (see the module docstring)."""
    l, top_p_margin = filter_logits(row, p)
    probs = _softmax(l)
    if p.temperature > 0:
        u = rng.uniform(p.seed, rng.STREAM_GUMBEL, step, position, np.arange(l.size))
        with np.errstate(divide="ignore"):
            score = l - np.log(-np.log(u))
        x0 = int(np.argmax(score))
    else:
        score = probs
        x0 = int(np.argmax(probs))
    srt = np.sort(score)[::-1]
    margin = float(srt[0] - srt[1]) if srt.size > 1 else math.inf
    if p.temperature == 0:                    # in logit units: log p1 - log p2
        margin = float(np.log(srt[0]) - np.log(srt[1])) if srt[1] > 0 else math.inf
    conf = float(probs[x0])
    if p.alg == "topk_margin":
        sp = np.sort(probs)[::-1]
        conf = float(sp[0] - sp[1]) if sp.size > 1 else float(sp[0])
    elif p.alg == "entropy":
        conf = float(np.cumsum(probs * np.log(probs + 1e-10))[-1])
    return Sampled(x0, conf, margin, top_p_margin)


@dataclass
class DreamResult:
    output_ids: list[int]
    canvas: list[int]
    nfe: int
    trace: list[list[int]] = field(default_factory=list)   # committed positions per step
    num_transfer: list[int] = field(default_factory=list)  # k per step (origin: #selected)
    min_sampling_margin: float = math.inf
    min_selection_margin: float = math.inf
    min_top_p_margin: float = math.inf

    @property
    def min_decision_margin(self) -> float:
        return min(self.min_sampling_margin, self.min_selection_margin, self.min_top_p_margin)


def _top_k_positions(scores: list[float], k: int) -> tuple[list[int], float]:
    """Indices of the k largest scores (ties: lower index first) and the k / k+1 gap."""
    order = sorted(range(len(scores)), key=lambda j: (-scores[j], j))
    gap = math.inf
    if 0 < k < len(scores) and scores[order[k - 1]] != scores[order[k]]:
        gap = scores[order[k - 1]] - scores[order[k]]
    return order[:k], gap


def generate(model: LladaModel, prompt: list[int], p: DreamParams, suffix=()) -> DreamResult:
    """suffix: infilling (unmask's extension): the canvas is prompt + gen_length masks + suffix,
    the suffix fixed context like the prompt; the result is the span between them."""
    p.validate()
    g = model.gguf
    mask = int(g.require("tokenizer.ggml.mask_token_id"))
    if mask in suffix:
        raise ValueError("the suffix contains the mask token")
    x = list(prompt) + [mask] * p.gen_length + [int(t) for t in suffix]
    if len(x) > model.cfg.n_ctx:
        raise ValueError("prompt + gen_length exceeds the context length")
    ts = timesteps(p.steps, p.eps)
    res = DreamResult([], [], 0)
    for i in range(p.steps):
        masked = [j for j, t in enumerate(x) if t == mask]
        logits = model.forward(x)
        if model.cfg.shift_logits:
            logits = shift_logits(logits)
        last = i == p.steps - 1
        committed: list[int] = []
        if p.alg == "origin":
            p_transfer = 1.0 if last else float(transfer_fraction(ts, i))
            for j in masked:
                if rng.uniform(p.seed, STREAM_DREAM_ORIGIN, i, j, 0) < p_transfer:
                    s = sample_tokens(logits[j], p, i, j)
                    res.min_sampling_margin = min(res.min_sampling_margin, s.margin)
                    res.min_top_p_margin = min(res.min_top_p_margin, s.top_p_margin)
                    x[j] = s.x0
                    committed.append(j)
            res.num_transfer.append(len(committed))
        else:
            samples = [sample_tokens(logits[j], p, i, j) for j in masked]
            k = num_transfer(len(masked), ts, i, p.steps)
            res.num_transfer.append(k)
            if k > 0:
                conf = [s.conf for s in samples]
                if p.alg_temp > 0:
                    u = rng.uniform(p.seed, STREAM_DREAM_ALG_TEMP, i, np.asarray(masked), 0)
                    with np.errstate(divide="ignore"):
                        keys = [c / p.alg_temp - math.log(-math.log(v)) if v > 0 else -math.inf
                                for c, v in zip(conf, u)]
                    chosen, gap = _top_k_positions(keys, k)
                else:
                    chosen, gap = _top_k_positions(conf, k)
                res.min_selection_margin = min(res.min_selection_margin, gap)
                # Every competitor's x0 matters only if committed; its confidence always does.
                for r in chosen:
                    res.min_sampling_margin = min(res.min_sampling_margin, samples[r].margin)
                for s in samples:
                    res.min_top_p_margin = min(res.min_top_p_margin, s.top_p_margin)
                for r in chosen:
                    x[masked[r]] = samples[r].x0
                    committed.append(masked[r])
        res.trace.append(committed)
        res.nfe += 1
    res.canvas = x
    res.output_ids = x[len(prompt):len(prompt) + p.gen_length]
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description="Dream reference generation from a GGUF file.")
    ap.add_argument("model")
    ap.add_argument("ids", help="comma-separated prompt token ids")
    d = DreamParams()
    for f in ("gen_length", "steps", "top_k", "seed"):
        ap.add_argument("--" + f.replace("_", "-"), type=int, default=getattr(d, f))
    for f in ("eps", "alg_temp", "temperature", "top_p"):
        ap.add_argument("--" + f.replace("_", "-"), type=float, default=getattr(d, f))
    ap.add_argument("--alg", choices=ALGS, default=d.alg)
    args = ap.parse_args()
    params = DreamParams(**{k: v for k, v in vars(args).items() if k not in ("model", "ids")})
    r = generate(LladaModel(args.model), [int(t) for t in args.ids.split(",")], params)
    print(",".join(str(t) for t in r.output_ids))
    print(f"nfe {r.nfe}, k per step {r.num_transfer}, min margin {r.min_decision_margin:.3g}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
