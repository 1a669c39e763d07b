#!/usr/bin/env python3
"""Reference LLaDA `generate` (ML-GSAI/LLaDA generate.py semantics; ALGORITHMS.md sections 1.2-1.7).

Algorithm (batch size 1, no attention mask):
  canvas x = prompt (Lp ids) + gen_length mask ids (mask id = tokenizer.ggml.mask_token_id).
  gen_length % block_length == 0, num_blocks = gen_length / block_length;
  steps % num_blocks == 0, S = steps / num_blocks steps per block.
  For block b (positions [s, e) = [Lp + b*block_length, Lp + (b+1)*block_length)):
    n = schedule(#masks in [s, e) at block start, S): base = M // S, the remainder M % S is
        added to the FIRST steps (block 32, 10 steps -> [4,4,3,3,3,3,3,3,3,3]).
    for i in 0..S-1 (global step index t = b*S + i):
      logits = forward(x)  [L, V], float64.
      cfg_scale > 0: un = forward(x with positions [0, Lp) set to the mask id);
                     logits = un + (cfg_scale + 1) * (logits - un).
      logits_eos_inf: logits[:, EOS] = -inf.
      x0 = argmax_v score[p, v] (first maximal index), where
           T == 0: score = logits;
           T > 0:  score = logits - T * log(-log(u)), u = uniform(seed, GUMBEL, t, p, v).
        The reference computes argmax of exp(l) / (-log u)^T in float64; taking the log of
        that positive quantity gives the same argmax without overflowing exp for large logits.
        u == 0 gives -log u = inf, hence score = -inf (the same as exp(l)/inf = 0).
      confidence_eos_eot_inf (aliasing quirk of the reference): at T == 0 both the EOS and the
        EOT logits are set to -inf before the confidence softmax (the noisy tensor IS the logits
        tensor); at T > 0 only EOT is. x0 is not affected.
      confidence: low_confidence -> softmax(logits)[p, x0[p]] in float64;
                  random -> uniform(seed, REMASK_RANDOM, t, p, 0).
      competitors: positions p < e that hold the mask id (only the current block's masks in
        practice); all others have confidence -inf.
      commit the n[i] competitors of highest confidence: x[p] = x0[p].
        TIE RULE: equal confidences -> lower position first (torch.topk leaves this unspecified).
  Infilling (suffix_ids, Ls ids; unmask's extension, no reference repository has it): the canvas
    is prompt + gen_length masks + suffix, the blocks cover the masks only, the suffix is fixed
    context like the prompt (never a competitor) and, with cfg_scale > 0, is masked in the
    unconditional canvas together with the prompt (both are the condition).
  Result: the generated ids x[Lp:Lp+gen_length] and NFE = steps (a CFG step's two forwards are batched into
  one forward call in the reference, so they count as ONE function evaluation).

Decision margins (how far each decision is from flipping; reported to reject fragile goldens):
  * sampling: best - second-best score, recorded for every committed position and, with
    low_confidence remasking, for every competing position (its x0 sets its confidence);
  * selection: conf[k-th] - conf[(k+1)-th] among competitors when some competitor is left out;
    not recorded for `random` remasking (those values are exact RNG outputs, not model numbers).
  Exactly equal values are decided by the documented rules (first index / lower position) and
  are therefore deterministic: a zero gap is not recorded as a margin (e.g. the zero
  confidences produced by confidence_eos_eot_inf).

Usage as a script: run one generation and print a JSON result.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field

import numpy as np

import rng
from llada import LladaModel

REMASKING_MODES = ("low_confidence", "random")


@dataclass
class GenerateParams:
    gen_length: int = 128
    steps: int = 128
    block_length: int = 128
    temperature: float = 0.0
    cfg_scale: float = 0.0
    remasking: str = "low_confidence"
    logits_eos_inf: bool = False
    confidence_eos_eot_inf: bool = False
    seed: int = 0


@dataclass
class GenerateResult:
    output_ids: list[int]
    nfe: int
    min_decision_margin: float           # +inf when no decision could flip
    min_sampling_margin: float
    min_selection_margin: float
    committed_mask_id: bool = False      # some step committed the mask id itself (reference quirk)
    x0_special_counts: dict = field(default_factory=dict)   # how often x0 was EOS / EOT among competitors
    trace: list = field(default_factory=list)               # per step: (t, committed positions)


def num_transfer_tokens(num_masked: int, steps: int) -> list[int]:
    """LLaDA `get_num_transfer_tokens` for one sequence: remainder on the first steps."""
    base, rem = divmod(num_masked, steps)
    return [base + 1 if i < rem else base for i in range(steps)]


def special_ids(model: LladaModel) -> dict[str, int]:
    g = model.gguf
    out = {"mask": int(g.require("tokenizer.ggml.mask_token_id")),
           "eos": int(g.require("tokenizer.ggml.eos_token_id"))}
    eot = g.get("tokenizer.ggml.eot_token_id")
    out["eot"] = int(eot) if eot is not None else None
    return out


def _softmax(logits: np.ndarray) -> np.ndarray:
    m = logits.max(-1, keepdims=True)
    e = np.exp(logits - m)
    return e / e.sum(-1, keepdims=True)


def _top2_gap(scores: np.ndarray) -> np.ndarray:
    """best - second best per row (rows of length >= 2)."""
    part = -np.partition(-scores, 1, axis=-1)[:, :2]
    with np.errstate(invalid="ignore"):
        return part[:, 0] - part[:, 1]


def generate(model: LladaModel, prompt_ids, params: GenerateParams, progress: bool = False,
             ids_override: dict | None = None, suffix_ids=()) -> GenerateResult:
    """Run the reference generation. ids_override may replace 'mask'/'eos'/'eot' ids;
    suffix_ids: the text after the generated span (infilling)."""
    p = params
    ids = special_ids(model)
    if ids_override:
        ids.update(ids_override)
    mask_id, eos_id, eot_id = ids["mask"], ids["eos"], ids["eot"]
    if p.remasking not in REMASKING_MODES:
        raise ValueError(f"remasking must be one of {REMASKING_MODES}, got {p.remasking!r}")
    if p.gen_length <= 0 or p.block_length <= 0 or p.steps <= 0:
        raise ValueError("gen_length, block_length and steps must be positive")
    if p.gen_length % p.block_length != 0:
        raise ValueError(f"gen_length {p.gen_length} is not a multiple of block_length {p.block_length}")
    num_blocks = p.gen_length // p.block_length
    if p.steps % num_blocks != 0:
        raise ValueError(f"steps {p.steps} is not a multiple of the number of blocks {num_blocks}")
    if p.temperature < 0 or p.cfg_scale < 0:
        raise ValueError("temperature and cfg_scale must be >= 0")
    if p.confidence_eos_eot_inf and eot_id is None:
        raise ValueError("confidence_eos_eot_inf needs tokenizer.ggml.eot_token_id")
    steps_per_block = p.steps // num_blocks
    prompt = [int(t) for t in prompt_ids]
    lp = len(prompt)
    suffix = [int(t) for t in suffix_ids]
    if mask_id in suffix:
        raise ValueError("the suffix contains the mask token")
    x = np.array(prompt + [mask_id] * p.gen_length + suffix, dtype=np.int64)
    gen_end = lp + p.gen_length
    if x.size > model.cfg.n_ctx:
        raise ValueError(f"canvas of {x.size} tokens exceeds the context length {model.cfg.n_ctx}")
    vocab = np.arange(model.cfg.n_vocab, dtype=np.int64)
    inf = math.inf
    min_samp, min_sel = inf, inf
    committed_mask = False
    counts = {"eos": 0, "eot": 0}
    trace = []
    nfe = 0
    for b in range(num_blocks):
        s = lp + b * p.block_length
        e = s + p.block_length
        n_sched = num_transfer_tokens(int(np.sum(x[s:e] == mask_id)), steps_per_block)
        for i in range(steps_per_block):
            t = b * steps_per_block + i
            if progress:
                print(f"\r  step {t + 1}/{p.steps}", end="", file=sys.stderr, flush=True)
            mask_index = x == mask_id
            logits = model.forward(x).astype(np.float64)
            if p.cfg_scale > 0:
                un_x = x.copy()
                un_x[:lp] = mask_id
                un_x[gen_end:] = mask_id
                un = model.forward(un_x).astype(np.float64)
                logits = un + (p.cfg_scale + 1) * (logits - un)
            nfe += 1
            if p.logits_eos_inf:
                logits[:, eos_id] = -inf
            competitors = np.flatnonzero(mask_index & (np.arange(x.size) < e))
            k = n_sched[i]
            if k > competitors.size:
                raise AssertionError("schedule asks for more tokens than masked positions")
            lc = logits[competitors]                                   # [C, V]
            if p.temperature > 0:
                u = rng.uniform(p.seed, rng.STREAM_GUMBEL, t, competitors[:, None], vocab[None, :])
                with np.errstate(divide="ignore"):
                    scores = lc - p.temperature * np.log(-np.log(u))
            else:
                scores = lc
            x0 = scores.argmax(-1)                                     # first maximal index
            counts["eos"] += int(np.sum(x0 == eos_id))
            if eot_id is not None:
                counts["eot"] += int(np.sum(x0 == eot_id))
            if p.remasking == "low_confidence":
                cl = lc.copy()
                if p.confidence_eos_eot_inf:
                    cl[:, eot_id] = -inf
                    if p.temperature == 0:
                        cl[:, eos_id] = -inf
                conf = _softmax(cl)[np.arange(competitors.size), x0]
            else:
                conf = rng.uniform(p.seed, rng.STREAM_REMASK_RANDOM, t, competitors, 0)
            # Highest confidence first; equal confidence -> lower position first.
            order = np.lexsort((competitors, -conf))
            chosen = order[:k]
            if k > 0:
                rel = np.arange(competitors.size) if p.remasking == "low_confidence" else chosen
                gaps = _top2_gap(scores[rel])
                gaps = gaps[gaps != 0]
                if gaps.size:
                    min_samp = min(min_samp, float(gaps.min()))
                if k < competitors.size and p.remasking == "low_confidence":
                    gap = float(conf[order[k - 1]] - conf[order[k]])
                    if gap != 0:
                        min_sel = min(min_sel, gap)
            pos = competitors[chosen]
            x[pos] = x0[chosen]
            if np.any(x0[chosen] == mask_id):
                committed_mask = True
            trace.append((t, sorted(int(q) for q in pos)))
    if progress:
        print(file=sys.stderr)
    return GenerateResult(output_ids=[int(v) for v in x[lp:gen_end]], nfe=nfe,
                          min_decision_margin=min(min_samp, min_sel),
                          min_sampling_margin=min_samp, min_selection_margin=min_sel,
                          committed_mask_id=committed_mask, x0_special_counts=counts, trace=trace)


def main() -> int:
    ap = argparse.ArgumentParser(description="Reference LLaDA generation (prints JSON).")
    ap.add_argument("model", help="LLaDA GGUF file")
    ap.add_argument("--prompt-ids", required=True, help="comma-separated prompt token ids")
    ap.add_argument("--suffix-ids", default="", help="comma-separated suffix token ids (infilling)")
    ap.add_argument("--gen-length", type=int, default=128)
    ap.add_argument("--steps", type=int, default=128)
    ap.add_argument("--block-length", type=int, default=128)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--cfg-scale", type=float, default=0.0)
    ap.add_argument("--remasking", choices=REMASKING_MODES, default="low_confidence")
    ap.add_argument("--logits-eos-inf", action="store_true")
    ap.add_argument("--confidence-eos-eot-inf", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--f32", action="store_true", help="run the forward pass in float32")
    ap.add_argument("--trace", action="store_true", help="include the per-step commit trace")
    args = ap.parse_args()
    model = LladaModel(args.model, np.float32 if args.f32 else np.float64)
    params = GenerateParams(args.gen_length, args.steps, args.block_length, args.temperature,
                            args.cfg_scale, args.remasking, args.logits_eos_inf,
                            args.confidence_eos_eot_inf, args.seed)
    suffix = [int(v) for v in args.suffix_ids.split(",")] if args.suffix_ids else []
    r = generate(model, [int(v) for v in args.prompt_ids.split(",")], params, progress=True,
                 suffix_ids=suffix)
    out = {"output_ids": r.output_ids, "nfe": r.nfe, "min_decision_margin": r.min_decision_margin,
           "min_sampling_margin": r.min_sampling_margin,
           "min_selection_margin": r.min_selection_margin,
           "committed_mask_id": r.committed_mask_id, "x0_special_counts": r.x0_special_counts}
    if args.trace:
        out["trace"] = r.trace
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
