#!/usr/bin/env python3
"""Reference SDAR block-diffusion generation (numpy), following `block_diffusion_generate` of
JetAstra/SDAR:generate.py (docs ALGORITHMS.md sections 5.1-5.2, MODELS.md section 4), batch 1,
on an `hf_model.HFModel` (the SDAR checkpoint's Qwen3-layout forward with an explicit KV cache).

Algorithm (B = block_length, S = denoising_steps, Lp = prompt length, G = gen_length):
  num_blocks = ceil((Lp + G) / B); canvas x = prompt + mask ids, num_blocks * B long; positions
  are absolute 0 .. num_blocks*B - 1 and the attention mask is block-causal on them (a query in
  block i sees every key in blocks <= i).
  Prefill: if floor(Lp / B) * B > 0, one forward of those prompt tokens storing their K/V.
  Schedule: get_num_transfer_tokens(B, S): base = B // S, the remainder B % S added to the FIRST
  steps (B 8, S 3 -> [3, 3, 2]; B 4, S 8 -> [1, 1, 1, 1, 0, 0, 0, 0]).
  For each block b from floor(Lp / B) on (it may start with the prompt's tail, Lp mod B tokens):
    cur = x[bB : (b+1)B]; for step in 0 .. S (S + 1 iterations at most):
      no mask in cur -> one forward of cur that STORES its K/V ("store-kv"), end of the block;
      else: logits = forward of cur against the cache WITHOUT storing; sample x0 and the
        confidence of every slot of cur; choose the transfer set; cur[transfer] = x0[transfer]
        (an x0 equal to the mask id leaves its slot masked, as in the reference).
    x[block] = cur; stop if a stop id occurs anywhere in x[Lp:] (after the whole block).
  Result: x[Lp:], all num_blocks * B - Lp ids (masks are left in blocks never reached), and NFE =
  number of forward calls (the prefill, every denoising forward and every store-kv forward).

Sampling (`sample_with_temperature_topk_topp`): l = logits (float64); top_k > 0: l < k-th largest
  -> -inf (ties at the k-th value kept); top_p < 1: sort l descending (ties: lower id first),
  remove the entries whose cumulative softmax exceeds top_p, shifted right by one (the first is
  always kept), -> -inf; probs = softmax(l).
  TEMPERATURE 0 (decided here; the reference divides by zero and always samples with
  `multinomial`, MODELS.md section 4 quirks): x0 = argmax l (lowest id on ties), confidence =
  probs[x0], i.e. the softmax probability of the argmax at temperature 1 after top_k / top_p.
  Temperature > 0 is not supported (the reference's torch RNG cannot be reproduced; goldens are
  T = 0 only).
Transfer set (quota n = schedule[step]; only the slots of cur take part):
  sequential: n slots starting at the first masked slot (cut at the block end).
  low_confidence_static: the n largest of c = (probs of x0 at masked slots, -inf elsewhere).
  low_confidence_dynamic: H = {masked slots with c > confidence_threshold}; if |H| >= n: H, else
    the n largest of c as in static.
  TIE RULE for "the n largest": larger c first, equal c -> lower position first (torch.topk leaves
    it unspecified), INCLUDING the -inf non-mask slots.
  OVER-COMMIT (reproduced exactly): when n exceeds the number of masked slots (in the first
    block, whose first Lp mod B slots hold the prompt's tail, or in a block where an earlier
    dynamic step committed more than its quota) "the n largest" also take -inf non-mask slots,
    lowest position first,
    and those are overwritten with their own x0 -- prompt tokens of the first block or tokens
    decoded earlier in the block. Prompt tokens changed this way are not part of the output but
    their K/V (stored with the block) are what later blocks see.
  entropy_bounded: DELIBERATE DEVIATION. The reference branch is broken (it never initialises its
    transfer set and computes an "entropy" from the sampled token's probability summed over the
    block; MODELS.md section 4). Implemented is the evident intent: per masked slot the entropy
    h = -sum_v max(p_v, 1e-12) log max(p_v, 1e-12) of its sampling distribution probs (non-mask
    slots: +inf); sort ascending (ties: lower position first); k = number of prefix sums strictly
    below eb_threshold (searchsorted, right=False), clamped to [1, #masked]; commit the first k.
  A block still holding masks after its S + 1 iterations, or filled at the last iteration without
  its store-kv forward while generation continues, leaves the reference with a canvas or a cache
  that later steps do not expect; both raise ValueError here (neither can happen for the first
  three strategies, whose quotas sum to B).

Decision margins (how far a decision is from flipping; make_block_goldens.py rejects cases below
MIN_MARGIN): every committed slot's best - second-best filtered logit; static / dynamic top-n:
c[n-th] - c[(n+1)-th] among masked slots when some are left out; dynamic: |c - threshold| of every
masked slot; entropy_bounded: the gap between the k-th and (k+1)-th sorted entropy, and the
distance to eb_threshold of the prefix sums whose side decides k. Exact ties are decided by the
rules above and not counted.

Usage as a script: run one generation on a checkpoint folder and print a JSON result.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field

import numpy as np

from hf_model import HFModel

STRATEGIES = ("sequential", "low_confidence_static", "low_confidence_dynamic", "entropy_bounded")
ENTROPY_EPS = 1e-12


@dataclass
class SdarParams:
    gen_length: int = 16
    block_length: int = 4
    denoising_steps: int = 4
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    remasking_strategy: str = "low_confidence_dynamic"
    confidence_threshold: float = 0.85
    eb_threshold: float = 0.35
    stopping_criteria_idx: list | None = None   # stop ids; None: no stop

    def validate(self) -> None:
        if self.remasking_strategy not in STRATEGIES:
            raise ValueError(f"remasking_strategy must be one of {STRATEGIES}")
        if self.gen_length <= 0 or self.block_length <= 0 or self.denoising_steps <= 0:
            raise ValueError("gen_length, block_length and denoising_steps must be positive")
        if self.temperature != 0:
            raise ValueError("only temperature 0 (greedy) is specified; see the module docstring")
        if self.top_k < 0 or not 0 < self.top_p <= 1:
            raise ValueError("bad top_k / top_p")


@dataclass
class SdarResult:
    output_ids: list[int]                 # x[Lp:], num_blocks * B - Lp ids
    nfe: int
    first_stop_index: int | None          # index into output_ids of the first stop id
    num_blocks: int
    trace: list = field(default_factory=list)      # [block, step, [positions committed]]
    overcommit: list = field(default_factory=list)  # [block, step, position, old id, new id]
    min_sampling_margin: float = math.inf
    min_selection_margin: float = math.inf
    committed_mask_id: bool = False       # some step committed the mask id itself (stays masked)

    @property
    def min_decision_margin(self) -> float:
        return min(self.min_sampling_margin, self.min_selection_margin)


def get_num_transfer_tokens(block_length: int, steps: int) -> list[int]:
    base, rem = divmod(block_length, steps)
    return [base + 1 if i < rem else base for i in range(steps)]


def filter_logits(logits: np.ndarray, top_k: int, top_p: float) -> np.ndarray:
    """Rows of logits [n, V] after top_k then top_p (removed entries -inf)."""
    l = logits.astype(np.float64, copy=True)
    if top_k > 0:
        kth = -np.sort(-l, axis=-1)[:, min(top_k, l.shape[-1]) - 1:min(top_k, l.shape[-1])]
        l = np.where(l < kth, -np.inf, l)
    if top_p < 1.0:
        for r in range(l.shape[0]):
            order = np.argsort(-l[r], kind="stable")
            cum = np.cumsum(_softmax(l[r][order]))
            remove = cum > top_p
            remove[1:] = remove[:-1].copy()
            remove[0] = False
            l[r, order[remove]] = -np.inf
    return l


def _softmax(l: np.ndarray) -> np.ndarray:
    e = np.exp(l - l.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def sample_greedy(logits: np.ndarray, top_k: int = 0, top_p: float = 1.0):
    """T = 0: (x0 [n], confidence [n], probs [n, V], argmax gap [n]) of logits rows [n, V]."""
    l = filter_logits(logits, top_k, top_p)
    probs = _softmax(l)
    x0 = l.argmax(-1)                                                  # lowest id on ties
    conf = probs[np.arange(l.shape[0]), x0]
    part = -np.partition(-l, 1, axis=-1)[:, :2]
    with np.errstate(invalid="ignore"):
        gap = part[:, 0] - part[:, 1]
    return x0, conf, probs, gap


def entropies(probs: np.ndarray) -> np.ndarray:
    p = np.maximum(probs, ENTROPY_EPS)
    return -(p * np.log(p)).sum(-1)


def top_n(conf: np.ndarray, n: int) -> np.ndarray:
    """Indices of the n largest conf; equal values -> lower index first."""
    order = np.lexsort((np.arange(conf.size), -conf))
    return order[:n]


def _gap_at(sorted_desc: np.ndarray, n: int) -> float:
    """sorted_desc[n-1] - sorted_desc[n], or inf when nothing is left out."""
    if n <= 0 or n >= sorted_desc.size:
        return math.inf
    g = float(sorted_desc[n - 1] - sorted_desc[n])
    return g if g != 0 else math.inf


class _Margins:
    def __init__(self):
        self.sampling = math.inf
        self.selection = math.inf

    def sample(self, gaps: np.ndarray) -> None:
        g = gaps[np.isfinite(gaps) & (gaps != 0)]
        if g.size:
            self.sampling = min(self.sampling, float(g.min()))

    def select(self, value: float) -> None:
        if value != 0 and math.isfinite(value):
            self.selection = min(self.selection, abs(value))


def choose_transfer(strategy: str, mask_index: np.ndarray, conf: np.ndarray, probs: np.ndarray,
                    quota: int | None, params: SdarParams, margins: _Margins | None = None,
                    overcommit: bool = True):
    """Transfer set [B] bool of one denoising step (see the module docstring). overcommit=False
    takes "the n largest" among masked slots only: NOT the reference, a knob to show that a
    golden depends on the over-commit quirk."""
    B = mask_index.size
    m = margins or _Margins()
    transfer = np.zeros(B, dtype=bool)
    masked = np.flatnonzero(mask_index)
    if strategy == "sequential":
        first = int(masked[0])
        transfer[first:first + quota] = True
        return transfer
    if strategy in ("low_confidence_static", "low_confidence_dynamic"):
        c = np.where(mask_index, conf, -np.inf)
        if strategy == "low_confidence_dynamic":
            high = c > params.confidence_threshold
            for v in conf[masked]:
                m.select(float(v) - params.confidence_threshold)
            if int(high.sum()) >= quota:
                return high
        transfer[top_n(c, quota if overcommit else min(quota, masked.size))] = True
        m.select(_gap_at(np.sort(conf[masked])[::-1], quota))
        return transfer
    if strategy == "entropy_bounded":
        h = np.where(mask_index, entropies(probs), np.inf)
        order = np.argsort(h, kind="stable")
        with np.errstate(invalid="ignore"):
            csum = np.cumsum(h[order])
        k_raw = int(np.searchsorted(csum, params.eb_threshold, side="left"))
        nm = masked.size

        def clamp(k: int) -> int:
            return max(1, min(k, nm))

        k = clamp(k_raw)
        if k_raw >= 1 and clamp(k_raw - 1) != k:
            m.select(params.eb_threshold - float(csum[k_raw - 1]))
        if k_raw < nm and clamp(k_raw + 1) != k:
            m.select(float(csum[k_raw]) - params.eb_threshold)
        if k < nm:
            m.select(float(h[order[k]] - h[order[k - 1]]))
        transfer[order[:k]] = True
        return transfer
    raise ValueError(f"unknown remasking strategy {strategy!r}")


def generate(model: HFModel, prompt_ids, params: SdarParams, mask_id: int | None = None,
             recompute: bool = False, on_forward=None, overcommit: bool = True) -> SdarResult:
    """Runs block_diffusion_generate. recompute=True replaces every cached forward by a full
    block-causal forward of the canvas up to the block end (the self-check); on_forward(kind,
    block, step, logits) sees the logits of every denoising forward; overcommit: see
    choose_transfer."""
    p = params
    p.validate()
    if mask_id is None:
        mask_id = int(model.cfg.raw["mask_token_id"])
    B = p.block_length
    prompt = [int(t) for t in prompt_ids]
    lp = len(prompt)
    if lp == 0:
        raise ValueError("empty prompt")
    num_blocks = (lp + p.gen_length + B - 1) // B
    x = np.full(num_blocks * B, mask_id, dtype=np.int64)
    x[:lp] = prompt
    stops = set(int(s) for s in (p.stopping_criteria_idx or []))
    schedule = get_num_transfer_tokens(B, p.denoising_steps)
    res = SdarResult(output_ids=[], nfe=0, first_stop_index=None, num_blocks=num_blocks)
    margins = _Margins()
    cache = None if recompute else model.new_cache()
    prefill_blocks = lp // B

    def fwd(lo: int, hi: int, store: bool) -> np.ndarray:
        res.nfe += 1
        if recompute:
            return model.forward(x[:hi], np.arange(hi), mask="block", block_length=B)[lo:hi]
        return model.forward(x[lo:hi], np.arange(lo, hi), mask="block", block_length=B,
                             cache=cache, store_kv=store)

    if prefill_blocks > 0:
        fwd(0, prefill_blocks * B, True)
    unstored = None
    for b in range(prefill_blocks, num_blocks):
        if unstored is not None:
            raise ValueError(f"block {unstored} was filled at its last iteration without the "
                             f"store-kv forward: the reference would continue without its K/V")
        lo, hi = b * B, (b + 1) * B
        stored = False
        for step in range(p.denoising_steps + 1):
            cur = x[lo:hi]                                  # a view: commits write into x
            mask_index = cur == mask_id
            if not mask_index.any():
                fwd(lo, hi, True)
                stored = True
                break
            logits = fwd(lo, hi, False)
            if on_forward is not None:
                on_forward("denoise", b, step, logits)
            x0, conf, probs, gaps = sample_greedy(logits, p.top_k, p.top_p)
            quota = None
            if p.remasking_strategy != "entropy_bounded":
                if step >= len(schedule):
                    raise ValueError("the schedule has no entry for this step (IndexError in the "
                                     "reference)")
                quota = schedule[step]
            transfer = choose_transfer(p.remasking_strategy, mask_index, conf, probs, quota, p,
                                       margins, overcommit)
            margins.sample(gaps[transfer])
            for j in np.flatnonzero(transfer & ~mask_index):
                res.overcommit.append([b, step, lo + int(j), int(cur[j]), int(x0[j])])
            res.trace.append([b, step, [lo + int(j) for j in np.flatnonzero(transfer)]])
            if np.any(x0[transfer] == mask_id):
                res.committed_mask_id = True
            cur[transfer] = x0[transfer]
        if (x[lo:hi] == mask_id).any():
            raise ValueError(f"block {b} still holds masks after {p.denoising_steps + 1} "
                             f"iterations")
        if not stored:
            unstored = b
        if stops and any(int(t) in stops for t in x[lp:]):
            break
    out = [int(t) for t in x[lp:]]
    res.output_ids = out
    res.first_stop_index = next((i for i, t in enumerate(out) if t in stops), None)
    res.min_sampling_margin = margins.sampling
    res.min_selection_margin = margins.selection
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description="Reference SDAR block-diffusion generation (JSON).")
    ap.add_argument("folder", help="SDAR checkpoint folder")
    ap.add_argument("--prompt-ids", required=True, help="comma-separated prompt token ids")
    ap.add_argument("--gen-length", type=int, default=16)
    ap.add_argument("--block-length", type=int, default=4)
    ap.add_argument("--denoising-steps", type=int, default=4)
    ap.add_argument("--top-k", type=int, default=0)
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--remasking-strategy", choices=STRATEGIES, default="low_confidence_dynamic")
    ap.add_argument("--confidence-threshold", type=float, default=0.85)
    ap.add_argument("--eb-threshold", type=float, default=0.35)
    ap.add_argument("--stop-ids", default=None,
                    help="comma-separated stop ids (default: generation_config eos_token_id)")
    ap.add_argument("--f32", action="store_true", help="run the forward pass in float32")
    args = ap.parse_args()
    model = HFModel(args.folder, np.float32 if args.f32 else np.float64)
    if args.stop_ids is not None:
        stops = [int(v) for v in args.stop_ids.split(",") if v]
    else:
        eos = (model.generation_config or {}).get("eos_token_id", model.cfg.raw.get("eos_token_id"))
        stops = eos if isinstance(eos, list) else [eos]
    params = SdarParams(args.gen_length, args.block_length, args.denoising_steps, 0.0, args.top_k,
                        args.top_p, args.remasking_strategy, args.confidence_threshold,
                        args.eb_threshold, stops)
    r = generate(model, [int(v) for v in args.prompt_ids.split(",")], params)
    print(json.dumps({"output_ids": r.output_ids, "nfe": r.nfe,
                      "first_stop_index": r.first_stop_index, "overcommit": r.overcommit,
                      "min_decision_margin": r.min_decision_margin, "trace": r.trace}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
