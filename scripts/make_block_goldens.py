#!/usr/bin/env python3
"""(Re)create the golden files of the block-diffusion and HF-checkpoint tests from the tiny
checkpoints in tests/data/hf/ (scripts/make_hf_checkpoints.py):

  tests/data/golden/block/<case>.json         SDAR generations (reference/sdar_generate.py) and
                                              Fast-dLLM v2 ones (reference/fastdllm_v2_generate.py)
  tests/data/golden/hf_ar/<case>.json         greedy AR generations (reference/hf_ar_generate.py)
  tests/data/golden/hf_forward/<ckpt>.json    logits of selected positions, block-causal full
                                              recompute == cached procedure (causal for AR)
  tests/data/golden/block/README.md           how they were made, formats, the case table

Deterministic (prompts from numpy default_rng([crc32(case), attempt]); running twice gives
byte-identical files). Robustness rule (as make_goldens.py): a case is kept only if every decision
is at least MIN_MARGIN from flipping (the reference modules define the margins), it never commits
the mask id, it generates at least MIN_DISTINCT different ids, the same run with the forward pass
in float32 gives the same tokens, commit trace and over-commit events, and the case's own
requirement holds (e.g. "the over-commit quirk changes the output", "a stop id ends the generation
early"); otherwise the next attempt (a new prompt) is tried.

--check regenerates everything in memory and compares with the files on disk (exit status 1 on
any difference).
"""
from __future__ import annotations

import argparse
import os
import sys
import zlib
from dataclasses import dataclass, field, replace

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
sys.path.insert(0, HERE)

import fastdllm_v2_generate as fd  # noqa: E402
import hf_ar_generate as ar  # noqa: E402
import make_goldens as mg  # noqa: E402
import make_hf_checkpoints as mh  # noqa: E402
import sdar_generate as sg  # noqa: E402
from hf_model import HFModel  # noqa: E402

GOLDEN_SUBDIRS = ("block", "hf_ar", "hf_forward")
MIN_MARGIN = mg.MIN_MARGIN
MAX_ATTEMPTS = 60
MIN_DISTINCT = 4           # distinct generated ids (masks aside): no trivially constant output
STOPS = [mh.IM_END, mh.ENDOFTEXT]          # generation_config.json eos_token_id of every checkpoint
A, B = "sdar-tiny-f32", "sdar-tiny-bf16-sharded"
SM = "sdar-moe-tiny-bf16"
F = "fastdllm-v2-tiny"
# batch_sample pads with tokenizer.pad_token_id: <|endoftext|> in Qwen2.5 tokenizers (UNVERIFIED for
# the Fast-dLLM v2 files; their config.json says pad_token_id = eos = <|im_end|>). Distinct from the
# stop token, so the padding shows in the goldens.
FAST_PAD = mh.ENDOFTEXT

# Forward tolerance for the C++ side: |got - ref| <= atol + rtol * |ref| (see TOLERANCE_NOTE).
FWD_ATOL = 1e-3
FWD_RTOL = 1e-4
MIN_ROUTE_MARGIN = 1e-4    # router probabilities; float32 rounding of them is ~1e-7
FWD_HEADROOM = 20          # numpy's float32 error must stay below bound / FWD_HEADROOM everywhere
TOLERANCE_NOTE = (
    "Reference logits are float64 from the checkpoint's stored values (BF16 expanded exactly). "
    "An engine computing in float32 (unit roundoff 6e-8) differs by accumulated rounding in dot "
    "products of length <= 128 over two layers; the same forward in float32 with numpy stays "
    "within a 20th of atol + rtol * |ref| of this reference at every element (checked when the "
    "file is written; the exact figure depends on the CPU's BLAS kernels, so it is not "
    "recorded; logits up to {absmax:.0f} in magnitude), "
    "and the cached and full-recompute procedures agree to {cache_err:.1e} in float64. "
    "atol/rtol leave >= 20x headroom at every element for other summation orders and vectorized "
    "exp (atol 1e-4 would leave < 3x: the sharp attention of these models amplifies rounding); "
    "real bugs (RoPE pairing, q/k norm placement, GQA mapping, a missing bias or norm weight, "
    "bf16-rounded activations) are >= 1e-2. An engine that rounds activations to bf16 needs its "
    "own, looser bound and is not what this file checks.")


@dataclass
class Case:
    name: str
    ckpt: str
    prompt_length: int
    params: sg.SdarParams
    note: str = ""
    chat: bool = False             # prompt shaped <|im_start|> text <|im_end|> <|im_start|> text
    require: tuple = ()            # "overcommit_prompt", "overcommit_decoded", "stop", "multi"


def _p(**kw) -> sg.SdarParams:
    base = dict(gen_length=16, block_length=4, denoising_steps=4,
                remasking_strategy="low_confidence_dynamic", stopping_criteria_idx=STOPS)
    base.update(kw)
    return sg.SdarParams(**base)


CASES: list[Case] = [
    Case("a_dyn_b4_s4_lp3", A, 3, _p(), "default strategy; prompt shorter than a block"),
    Case("a_dyn_b4_s4_lp4", A, 4, _p(), "prompt exactly one block (prefill 4)"),
    Case("a_dyn_b4_s4_lp10_chat", A, 10, _p(gen_length=12), "prompt 2.5 blocks (prefill 8)",
         chat=True),
    Case("a_dyn_b4_s2_th05_lp6", A, 6, _p(denoising_steps=2, confidence_threshold=0.5),
         "threshold 0.5: a step commits more than its quota", require=("multi",)),
    Case("a_dyn_b8_s4_th04_overcommit", A, 8,
         _p(block_length=8, denoising_steps=4, confidence_threshold=0.4, gen_length=24),
         "OVER-COMMIT: after an over-quota dynamic step a later quota exceeds the masks left; "
         "top-n overwrites decoded tokens", require=("overcommit_decoded",)),
    Case("a_static_b4_s2_lp5_overcommit", A, 5,
         _p(remasking_strategy="low_confidence_static", denoising_steps=2),
         "OVER-COMMIT: first block shares 1 prompt token, quota [2,2] on 3 masks; the prompt "
         "token is overwritten", require=("overcommit_prompt",)),
    Case("a_static_b8_s3_lp9", A, 9, _p(remasking_strategy="low_confidence_static",
                                         block_length=8, denoising_steps=3, gen_length=20),
         "schedule [3,3,2]; over-commit on the prompt tail", require=("overcommit_prompt",)),
    Case("a_seq_b4_s4_lp6", A, 6, _p(remasking_strategy="sequential"), "sequential"),
    Case("a_seq_b8_s3_lp11", A, 11, _p(remasking_strategy="sequential", block_length=8,
                                        denoising_steps=3), "sequential, schedule [3,3,2]"),
    Case("a_entropy_b4_lp7", A, 7, _p(remasking_strategy="entropy_bounded"),
         "entropy_bounded, eb 0.35 (k = 1 per step)"),
    Case("a_entropy_b8_eb3_lp5", A, 5, _p(remasking_strategy="entropy_bounded", block_length=8,
                                           denoising_steps=8, eb_threshold=3.0),
         "entropy_bounded, eb 3: several tokens per step", require=("multi",)),
    Case("a_dyn_topk20_b4_lp6", A, 6, _p(top_k=20), "top_k 20 renormalises the confidences"),
    Case("a_static_b4_s4_stop", A, 6, _p(remasking_strategy="low_confidence_static",
                                          gen_length=32), "a stop id ends the generation early",
         require=("stop",)),
    Case("b_dyn_b8_s8_lp5", B, 5, _p(block_length=8, denoising_steps=8), "block 8 (the config's)"),
    Case("b_dyn_b8_s4_lp16", B, 16, _p(block_length=8, denoising_steps=4, gen_length=24),
         "prompt exactly two blocks"),
    Case("b_dyn_b4_s4_lp9_chat", B, 9, _p(), "block 4 on a block-8 model", chat=True),
    Case("b_static_b8_s2_lp11_overcommit", B, 11,
         _p(remasking_strategy="low_confidence_static", block_length=8, denoising_steps=2),
         "OVER-COMMIT: 3 prompt tokens + 5 masks, quota [4,4]", require=("overcommit_prompt",)),
    Case("b_seq_b8_s4_lp3", B, 3, _p(remasking_strategy="sequential", block_length=8),
         "sequential"),
    Case("b_entropy_b8_eb2_lp12", B, 12, _p(remasking_strategy="entropy_bounded",
                                             block_length=8, denoising_steps=8, eb_threshold=2.0),
         "entropy_bounded, eb 2", require=("multi",)),
    Case("b_dyn_b8_s8_stop", B, 7, _p(block_length=8, denoising_steps=8, gen_length=40),
         "a stop id ends the generation early", require=("stop",)),
    # SDAR-MoE (Qwen3-MoE body: 8 experts, top-3, renormalised; BF16; block 4).
    Case("m_dyn_b4_s4_lp6", SM, 6, _p(), "MoE: default strategy"),
    Case("m_dyn_b4_s4_lp8_chat", SM, 8, _p(gen_length=12), "MoE: prompt exactly two blocks",
         chat=True),
    Case("m_dyn_b8_s4_th05_lp5", SM, 5, _p(block_length=8, confidence_threshold=0.5),
         "MoE: block 8 on a block-4 model, threshold 0.5", require=("multi",)),
    Case("m_static_b4_s2_lp7", SM, 7, _p(remasking_strategy="low_confidence_static",
                                          denoising_steps=2), "MoE: static, two per step"),
    Case("m_dyn_b4_s4_stop", SM, 5, _p(gen_length=32), "MoE: a stop id ends the generation",
         require=("stop",)),
]


@dataclass
class ArCase:
    name: str
    ckpt: str
    prompt_length: int
    max_new_tokens: int = 16
    chat: bool = False
    note: str = ""
    require_stop: bool = False     # a stop id among the 16 tokens


AR_CASES: list[ArCase] = [
    ArCase("qwen3_lp5", "qwen3-tiny", 5, note="BF16, tied, MQA, head_dim 32"),
    ArCase("qwen3_lp12_chat", "qwen3-tiny", 12, chat=True),
    ArCase("qwen2_lp5", "qwen2-tiny", 5, note="q/k/v biases, tied, F32, RoPE 1e4"),
    ArCase("qwen2_lp12_chat", "qwen2-tiny", 12, chat=True),
    ArCase("qwen2_lp7_stop", "qwen2-tiny", 7, note="a stop id is generated", require_stop=True),
    ArCase("qwen3moe_lp5", "qwen3-moe-tiny", 5, note="Qwen3-MoE: 4 experts, top-2, F32, tied"),
    ArCase("qwen3moe_lp12_chat", "qwen3-moe-tiny", 12, chat=True),
]


@dataclass
class FastCase:
    name: str
    prompt_length: int
    params: fd.FastDllmV2Params
    note: str = ""
    chat: bool = False
    require: tuple = ()            # "stop", "multi"


def _f(**kw) -> fd.FastDllmV2Params:
    base = dict(max_new_tokens=16, block_size=8, small_block_size=4, threshold=0.9,
                stop_token=mh.IM_END, pad_token_id=FAST_PAD)
    base.update(kw)
    return fd.FastDllmV2Params(**base)


FAST_CASES: list[FastCase] = [
    FastCase("f_lp5_sb4_th09", 5, _f(), "prompt inside the first block (no prefill); defaults"),
    FastCase("f_lp11_sb4_th05", 11, _f(threshold=0.5, max_new_tokens=24),
             "prefill 8, 3 prompt ids in the first block", require=("multi",)),
    FastCase("f_lp16_ar_step", 16, _f(threshold=0.5),
             "prompt a multiple of the block: prefill 16 + AR step"),
    FastCase("f_lp13_sb8_th03_chat", 13, _f(small_block_size=8, threshold=0.3),
             "one sub-block per block", chat=True, require=("multi",)),
    FastCase("f_lp6_sb2_th1", 6, _f(small_block_size=2, threshold=1.0),
             "threshold 1: exactly one token per step"),
    FastCase("f_lp9_stop", 9, _f(threshold=0.5, max_new_tokens=40),
             "a committed stop ends generation; later positions padded", require=("stop",)),
]


def make_prompt(name: str, attempt: int, length: int, chat: bool) -> list[int]:
    rng = np.random.default_rng([zlib.crc32(name.encode()), attempt])
    t = [int(v) for v in rng.integers(0, mh.NUM_TEXT_IDS, length)]
    if not chat or length < 5:
        return t
    a = (length - 3) // 2
    return ([mh.IM_START] + t[:a] + [mh.IM_END, mh.IM_START] + t[a:])[:length]


def _requirement_fails(case: Case, r: sg.SdarResult, lp: int, models, prompt) -> str | None:
    mask = mh.MASK
    for req in case.require:
        if req in ("overcommit_prompt", "overcommit_decoded"):
            want_prompt = req == "overcommit_prompt"
            ev = [e for e in r.overcommit if (e[2] < lp) == want_prompt and e[3] != e[4]]
            if not ev:
                return f"no {req} event that changes a token"
            plain = sg.generate(models[case.ckpt], prompt, case.params, overcommit=False)
            if plain.output_ids == r.output_ids:
                return "the over-commit quirk does not change the output"
        elif req == "stop":
            if r.first_stop_index is None or mask not in r.output_ids:
                return "no early stop"
        elif req == "multi":
            sched = sg.get_num_transfer_tokens(case.params.block_length,
                                               case.params.denoising_steps)
            if not any(len(t[2]) > (sched[t[1]] if t[1] < len(sched) else 1) for t in r.trace):
                return "no step committed more than its quota"
    return None


def run_case(case: Case, models, models32) -> tuple[dict, dict]:
    m, m32 = models[case.ckpt], models32[case.ckpt]
    rejected = []
    for attempt in range(MAX_ATTEMPTS):
        prompt = make_prompt(case.name, attempt, case.prompt_length, case.chat)
        r = sg.generate(m, prompt, case.params)
        why = None
        if r.min_decision_margin < MIN_MARGIN:
            why = f"margin {r.min_decision_margin:.2e}"
        elif r.committed_mask_id:
            why = "committed the mask id"
        elif len(set(r.output_ids) - {mh.MASK}) < MIN_DISTINCT:
            why = "output nearly constant"
        else:
            why = _requirement_fails(case, r, len(prompt), models, prompt)
        if why is None:
            r32 = sg.generate(m32, prompt, case.params)
            if (r32.output_ids, r32.trace, r32.overcommit) != (r.output_ids, r.trace, r.overcommit):
                why = "float32 forward gives other tokens"
        if why is not None:
            rejected.append(f"attempt {attempt}: {why}")
            continue
        p = case.params
        golden = {
            "case": case.name, "algorithm": "sdar_block_diffusion", "checkpoint": case.ckpt,
            "prompt_ids": prompt, "mask_id": mh.MASK, "gen_length": p.gen_length,
            "block_length": p.block_length, "denoising_steps": p.denoising_steps,
            "remasking_strategy": p.remasking_strategy,
            "confidence_threshold": p.confidence_threshold, "eb_threshold": p.eb_threshold,
            "temperature": p.temperature, "top_k": p.top_k, "top_p": p.top_p,
            "stopping_criteria_idx": list(p.stopping_criteria_idx),
            "num_blocks": r.num_blocks, "prefill_length": len(prompt) // p.block_length *
            p.block_length, "output_ids": r.output_ids, "nfe": r.nfe,
            "first_stop_index": r.first_stop_index, "trace": r.trace,
            "overcommit": r.overcommit,
            "min_decision_margin": float(f"{r.min_decision_margin:.6g}"),
        }
        return golden, {"attempt": attempt, "rejected": rejected}
    raise RuntimeError(f"case {case.name}: no robust attempt in {MAX_ATTEMPTS}: {rejected[-5:]}")


def run_ar_case(case: ArCase, models, models32) -> tuple[dict, dict]:
    m, m32 = models[case.ckpt], models32[case.ckpt]
    rejected = []
    for attempt in range(MAX_ATTEMPTS):
        prompt = make_prompt(case.name, attempt, case.prompt_length, case.chat)
        r = ar.greedy(m, prompt, case.max_new_tokens, STOPS)
        why = None
        if r.min_decision_margin < MIN_MARGIN:
            why = f"margin {r.min_decision_margin:.2e}"
        elif len(set(r.output_ids)) < MIN_DISTINCT:
            why = "output nearly constant"
        elif case.require_stop and r.first_stop_index is None:
            why = "no stop id"
        elif ar.greedy(m32, prompt, case.max_new_tokens, STOPS).output_ids != r.output_ids:
            why = "float32 forward gives other tokens"
        if why is not None:
            rejected.append(f"attempt {attempt}: {why}")
            continue
        golden = {"case": case.name, "algorithm": "ar_greedy", "checkpoint": case.ckpt,
                  "prompt_ids": prompt, "max_new_tokens": case.max_new_tokens,
                  "stop_ids": STOPS, "output_ids": r.output_ids, "nfe": r.nfe,
                  "first_stop_index": r.first_stop_index,
                  "min_decision_margin": float(f"{r.min_decision_margin:.6g}")}
        return golden, {"attempt": attempt, "rejected": rejected}
    raise RuntimeError(f"case {case.name}: no robust attempt in {MAX_ATTEMPTS}: {rejected[-5:]}")


def run_fast_case(case: FastCase, models, models32) -> tuple[dict, dict]:
    m, m32 = models[F], models32[F]
    rejected = []
    p = case.params
    for attempt in range(MAX_ATTEMPTS):
        prompt = make_prompt(case.name, attempt, case.prompt_length, case.chat)
        r = fd.generate(m, prompt, p, mh.MASK)
        why = None
        generated = set(r.output_ids) - {mh.MASK, p.pad_token_id}
        if r.min_decision_margin < MIN_MARGIN:
            why = f"margin {r.min_decision_margin:.2e}"
        elif mh.MASK in r.output_ids:
            why = "committed the mask id"
        elif len(generated) < MIN_DISTINCT:
            why = "output nearly constant"
        elif "stop" in case.require and not (r.finished and
                                             r.first_stop_index < len(r.output_ids) - 1):
            why = "no early stop"
        elif "stop" not in case.require and r.finished:
            why = "stopped"
        elif "multi" in case.require and not any(len(t[2]) > 1 for t in r.trace):
            why = "no step committed more than one token"
        if why is None:
            r32 = fd.generate(m32, prompt, p, mh.MASK)
            if (r32.output_ids, r32.trace) != (r.output_ids, r.trace):
                why = "float32 forward gives other tokens"
        if why is not None:
            rejected.append(f"attempt {attempt}: {why}")
            continue
        golden = {
            "case": case.name, "algorithm": "fastdllm_v2_batch_sample", "checkpoint": F,
            "prompt_ids": prompt, "mask_id": mh.MASK, "max_new_tokens": p.max_new_tokens,
            "block_size": p.block_size, "small_block_size": p.small_block_size,
            "threshold": p.threshold, "temperature": p.temperature, "top_p": p.top_p,
            "stop_token": p.stop_token, "pad_token_id": p.pad_token_id,
            "prefill_length": len(prompt) // p.block_size * p.block_size,
            "output_ids": r.output_ids, "nfe": r.nfe, "first_stop_index": r.first_stop_index,
            "finished": r.finished, "trace": r.trace, "ar_tokens": r.ar_tokens,
            "min_decision_margin": float(f"{r.min_decision_margin:.6g}"),
        }
        return golden, {"attempt": attempt, "rejected": rejected}
    raise RuntimeError(f"case {case.name}: no robust attempt in {MAX_ATTEMPTS}: {rejected[-5:]}")


def _rows(a: np.ndarray) -> list:
    return [[float(f"{v:.9g}") for v in row] for row in a]


def forward_golden(name: str, m: HFModel, m32: HFModel) -> dict:
    """forward_golden_attempt with the first input whose routing (MoE checkpoints) is at least
    MIN_ROUTE_MARGIN from changing."""
    for attempt in range(20):
        out = forward_golden_attempt(name, m, m32, attempt)
        if out is not None:
            return out
    raise RuntimeError(f"{name}: no input with a routing margin >= {MIN_ROUTE_MARGIN}")


def forward_golden_attempt(name: str, m: HFModel, m32: HFModel, attempt: int) -> dict | None:
    """Block checkpoints (block_size / bd_size B from config.json): 10 prompt ids + masks to the
    end of the block holding the prompt's tail, block-causal; prefill floor(10 / B) * B. AR
    checkpoints: 12 ids, causal, prefill 8. Rows of the full forward, checked against the cached procedure (the
    prefill's own rows, then the rest against the cache without storing)."""
    c = m.cfg.raw
    rng = np.random.default_rng([zlib.crc32(name.encode()), 7 + attempt])
    if m.cfg.arch == "LLaDAMoEModelLM":    # bidirectional: no cached procedure (prefill = all)
        bl, mask = None, "full"
        ids = [int(v) for v in rng.integers(0, mh.NUM_TEXT_IDS, 8)] + [mh.MASK] * 4
        lo, positions = len(ids), [0, 3, 7, 8, 11]
    elif m.cfg.arch == "LLaDA2MoeModelLM":  # block 32 (no config key): 34 ids, prefill 32
        bl, mask, lp = 32, "block", 34
        lo = 32
        ids = [int(v) for v in rng.integers(0, mh.NUM_TEXT_IDS, lp)] + [mh.MASK] * (64 - lp)
        positions = [0, 20, 31, 32, 33, 40, 63]
    elif "block_size" in c or "bd_size" in c:
        bl, mask, lp = int(c.get("block_size", c.get("bd_size"))), "block", 10
        lo = lp // bl * bl
        ids = [int(v) for v in rng.integers(0, mh.NUM_TEXT_IDS, lp)] + [mh.MASK] * (lo + bl - lp)
        positions = list(range(lo, lo + bl)) if bl <= 4 else [lo, lp - 1, lp, lo + bl - 1]
    else:
        bl, mask, lo = None, "causal", 8
        ids = [int(v) for v in rng.integers(0, mh.NUM_TEXT_IDS, 12)]
        positions = [0, 3, 6, 9, 11]
    kw = dict(mask=mask, block_length=bl)
    moe_stats: dict = {}
    full = m.forward(ids, moe_stats=moe_stats, **kw)
    if m.cfg.moe is not None and moe_stats["min_route_margin"] < MIN_ROUTE_MARGIN:
        return None
    if lo < len(ids):
        cache = m.new_cache()
        cached = np.concatenate([m.forward(ids[:lo], cache=cache, store_kv=True, **kw),
                                 m.forward(ids[lo:], cache=cache, store_kv=False, **kw)])
        cache_err = float(np.max(np.abs(full - cached)))
        assert cache_err < 1e-9, cache_err
    else:
        cache_err = 0.0
    rows = full[positions]
    f32_err = np.abs(m32.forward(ids, **kw)[positions] - rows)
    # atol: FWD_ATOL, or (deeper / sharper checkpoints: LLaDA2's 3 layers and x2.5 routed
    # scale) the smallest 1-significant-digit value leaving FWD_HEADROOM over numpy's float32.
    need = float(np.max(f32_err * FWD_HEADROOM - FWD_RTOL * np.abs(rows)))
    atol = FWD_ATOL
    if need > atol:
        digits = 10.0 ** np.floor(np.log10(need))
        atol = float(f"{np.ceil(need / digits) * digits:.1g}")
    assert np.all(f32_err * FWD_HEADROOM <= atol + FWD_RTOL * np.abs(rows)), f32_err.max()
    out = {"checkpoint": name, "mask": mask}
    if bl:
        out["block_length"] = bl
    out.update({"input_ids": ids, "prefill_length": lo, "positions": positions,
                "logits": _rows(rows), "atol": atol, "rtol": FWD_RTOL,
                "tolerance_note": TOLERANCE_NOTE.format(
                    absmax=float(np.max(np.abs(rows))),
                    cache_err=max(cache_err, 1e-16))})
    if m.cfg.moe is not None:
        # Routing of the uncached forward with every position's logits: distinct experts per
        # layer; the selection margin (k-th minus (k+1)-th router probability) must stay far
        # above float32 rounding so that the engine routes identically.
        assert moe_stats["min_route_margin"] >= MIN_ROUTE_MARGIN, moe_stats
        out["experts_hit_per_layer"] = moe_stats["experts_hit"]
        out["min_route_margin"] = float(f"{moe_stats['min_route_margin']:.6g}")
    return out


def _table_row(case: Case, gold: dict, info: dict) -> str:
    p = case.params
    th = f"{p.confidence_threshold:g}" if p.remasking_strategy == "low_confidence_dynamic" else \
        (f"eb {p.eb_threshold:g}" if p.remasking_strategy == "entropy_bounded" else "")
    stop = gold["first_stop_index"] if gold["first_stop_index"] is not None else ""
    return (f"| `{case.name}` | {case.ckpt} | {len(gold['prompt_ids'])} | {p.gen_length}/"
            f"{p.block_length}/{p.denoising_steps} | {p.remasking_strategy} | {th} | "
            f"{p.top_k or ''} | {gold['nfe']} | {stop} | {len(gold['overcommit'])} | "
            f"{gold['min_decision_margin']:.3g} | {info['attempt']} | {case.note} |")


def readme(done, fast_done, ar_done, fwd) -> str:
    rows = "\n".join(_table_row(c, g, i) for c, g, i in done)
    fast_rows = "\n".join(
        f"| `{c.name}` | {len(g['prompt_ids'])} | {c.params.max_new_tokens}/{c.params.block_size}/"
        f"{c.params.small_block_size} | {c.params.threshold:g} | {g['nfe']} | "
        f"{g['first_stop_index'] if g['first_stop_index'] is not None else ''} | "
        f"{g['min_decision_margin']:.3g} | {i['attempt']} | {c.note} |" for c, g, i in fast_done)
    ar_rows = "\n".join(
        f"| `{c.name}` | {c.ckpt} | {len(g['prompt_ids'])} | {c.max_new_tokens} | "
        f"{g['first_stop_index'] if g['first_stop_index'] is not None else ''} | "
        f"{g['min_decision_margin']:.3g} | {i['attempt']} | {c.note} |" for c, g, i in ar_done)
    ck = "\n".join(
        f"| `{s.name}` | {s.arch} | {s.hidden} | {s.layers} | {s.heads}/{s.kv_heads} | "
        f"{s.head_dim} | {s.ffn} | {s.dtype} | {'tied' if s.tied else 'untied'} | {s.shards} | "
        f"{s.rope_theta:g} | {s.extras.get('block_size', s.extras.get('bd_size', ''))} | "
        f"{s.seed} |" for s in mh.SPECS.values())
    fw = "\n".join(f"| `{n}` | {g['mask']} | {g.get('block_length', '')} | "
                   f"{len(g['input_ids'])} | {g['prefill_length']} | {g['positions']} |"
                   for n, g in fwd.items())
    return f"""# Golden files for the block-diffusion (SDAR, Fast-dLLM v2) and HF-checkpoint references

Made by `scripts/make_block_goldens.py` from the checkpoints of `scripts/make_hf_checkpoints.py`
(do not edit by hand):

```
.venv/bin/python scripts/make_hf_checkpoints.py         # rewrites tests/data/hf/<checkpoint>/
.venv/bin/python scripts/make_block_goldens.py          # rewrites golden/block, hf_ar, hf_forward
.venv/bin/python scripts/make_block_goldens.py --check  # regenerates in memory, compares
.venv/bin/python scripts/reference/test_block_reference.py --check-goldens  # self-tests + checks
```

Generators (numpy, float64): `scripts/reference/hf_read.py` (safetensors folder, shards, BF16),
`hf_model.py` (Qwen2/Qwen3-layout forward, causal / block-causal masks on absolute positions, KV
cache), `sdar_generate.py` (JetAstra/SDAR generate.py `block_diffusion_generate`, batch 1),
`fastdllm_v2_generate.py` (NVlabs/Fast-dLLM v2 `batch_sample`, batch 1) and `hf_ar_generate.py`
(greedy AR). Their module docstrings are the exact specification (schedules, temperature 0, tie
rules, the over-commit quirk, the entropy_bounded and Fast-dLLM prefill deviations, margins).

## Checkpoints (`tests/data/hf/`)

Vocabulary 1024: text ids 0..999, `<|endoftext|>` 1000, `<|im_start|>` 1001, `<|im_end|>` 1002,
`<|MASK|>` 1003 (`mask_token_id`), 1004..1023 padding rows. generation_config.json
`eos_token_id` = [1002, 1000] everywhere (the stop ids of every case below).

| folder | architecture | hidden | layers | heads/kv | head_dim | FFN | dtype | output | shards | RoPE θ | block | seed |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
{ck}

## `block/{{a,b}}_*.json` (SDAR)

```
{{"case", "algorithm": "sdar_block_diffusion", "checkpoint": folder in tests/data/hf/, "prompt_ids",
 "mask_id", "gen_length", "block_length", "denoising_steps", "remasking_strategy",
 "confidence_threshold", "eb_threshold", "temperature" (0: greedy, see sdar_generate.py),
 "top_k" (0 = off), "top_p" (1 = off), "stopping_criteria_idx", "num_blocks", "prefill_length",
 "output_ids": x[Lp:] (num_blocks * block_length - Lp ids; blocks never reached stay mask ids),
 "nfe": forward calls incl. the prefill and every store-kv forward, "first_stop_index": index in
 output_ids of the first stop id or null, "trace": [[block, step, [positions committed]]],
 "overcommit": [[block, step, position, old id, new id]] (non-mask slots overwritten by top-n),
 "min_decision_margin"}}
```
Positions are absolute canvas positions (the prompt starts at 0). Every case has
min_decision_margin >= {MIN_MARGIN:g}, commits no mask id, generates at least {MIN_DISTINCT}
different ids and gives the same output, trace and over-commit events with the forward pass in
float32;
"attempt" = how many prompts were rejected first. Over-commit cases were also required to change
their output when the quirk is disabled (top-n restricted to masked slots).

| case | checkpoint | Lp | G/B/S | strategy | threshold | top_k | NFE | first stop | over-commits | min margin | attempt | note |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
{rows}

## `block/f_*.json` (Fast-dLLM v2, checkpoint `fastdllm-v2-tiny`)

```
{{"case", "algorithm": "fastdllm_v2_batch_sample", "checkpoint", "prompt_ids", "mask_id",
 "max_new_tokens", "block_size" (bd_size), "small_block_size", "threshold", "temperature",
 "top_p" (unused at T = 0), "stop_token", "pad_token_id", "prefill_length", "output_ids": x[Lp:]
 (unfinished: through the argmax appended after the last block; finished: positions after the
 first stop_token are pad_token_id), "nfe", "first_stop_index", "finished", "trace": [[block,
 sub-block, [positions committed]]] (one entry per forward), "ar_tokens": [[position, id]] (the
 argmax appended after the prefill of a block-multiple prompt and after every block),
 "min_decision_margin"}}
```
Semantics: `scripts/reference/fastdllm_v2_generate.py` (token shift, threshold + forced argmax,
prefill when Lp >= block_size, no cache update after the finishing block). Same robustness rule
as the SDAR cases; cases without the "stop" requirement do not stop; no case has Lp ==
block_size (where the reference skips the prefill, see the module docstring).

| case | Lp | max new/B/b | threshold | NFE | first stop | min margin | attempt | note |
|---|---|---|---|---|---|---|---|---|
{fast_rows}

## `hf_ar/<case>.json` (greedy AR)

```
{{"case", "algorithm": "ar_greedy", "checkpoint", "prompt_ids", "max_new_tokens", "stop_ids",
 "output_ids" (exactly max_new_tokens, generation does not stop), "nfe", "first_stop_index",
 "min_decision_margin"}}
```
Causal forward of the prompt, then one token at a time against the KV cache; argmax of the last
row, lowest id on ties. An engine that stops at a stop id must match output_ids up to and
including first_stop_index. Same robustness rule as above.

| case | checkpoint | Lp | tokens | first stop | min margin | attempt | note |
|---|---|---|---|---|---|---|---|
{ar_rows}

## `hf_forward/<ckpt>.json`

```
{{"checkpoint", "mask": "block" | "causal", "block_length", "input_ids", "prefill_length",
 "positions", "logits": [[1024 floats] per position], "atol", "rtol", "tolerance_note"}}
```
Logits rows (9 significant digits) at `positions` of a forward of `input_ids` at positions
0..len-1 with the mask named. Both procedures give these rows (they agree to 1e-9 in the
reference): the full forward of all input_ids, and the cached one (a forward of the first
prefill_length ids storing their K/V, which gives the rows before prefill_length, then a forward
of the rest at their positions against the cache without storing).
Rows are the model's own outputs, unshifted (Fast-dLLM v2's decoder applies the token shift).
Pass if |got - ref| <= atol + rtol * |ref| everywhere.

| checkpoint | mask | block | ids | prefill | positions |
|---|---|---|---|---|---|
{fw}
"""


def load_models(root: str):
    models, models32 = {}, {}
    for name in mh.SPECS:
        folder = os.path.join(root, mh.HF_DIR, name)
        models[name] = HFModel(folder)
        models32[name] = HFModel(folder, np.float32)
    return models, models32


def build_all(root: str, progress: bool = True) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    models, models32 = load_models(root)
    fwd = {}
    for name in models:
        fwd[name] = forward_golden(name, models[name], models32[name])
        files[f"{mg.GOLDEN_DIR}/hf_forward/{name}.json"] = mg.render_json(fwd[name]).encode()
    done, ar_done = [], []
    for case in CASES:
        gold, info = run_case(case, models, models32)
        files[f"{mg.GOLDEN_DIR}/block/{case.name}.json"] = mg.render_json(gold).encode()
        done.append((case, gold, info))
        if progress:
            why = "; ".join(info["rejected"][:3])
            print(f"  {case.name}: nfe {gold['nfe']} stop {gold['first_stop_index']} overcommit "
                  f"{len(gold['overcommit'])} margin {gold['min_decision_margin']:.3g} (attempt "
                  f"{info['attempt']}{': ' + why if why else ''})", file=sys.stderr)
    fast_done = []
    for case in FAST_CASES:
        gold, info = run_fast_case(case, models, models32)
        files[f"{mg.GOLDEN_DIR}/block/{case.name}.json"] = mg.render_json(gold).encode()
        fast_done.append((case, gold, info))
        if progress:
            print(f"  {case.name}: nfe {gold['nfe']} stop {gold['first_stop_index']} margin "
                  f"{gold['min_decision_margin']:.3g} (attempt {info['attempt']})",
                  file=sys.stderr)
    for case in AR_CASES:
        gold, info = run_ar_case(case, models, models32)
        files[f"{mg.GOLDEN_DIR}/hf_ar/{case.name}.json"] = mg.render_json(gold).encode()
        ar_done.append((case, gold, info))
        if progress:
            print(f"  {case.name}: {gold['output_ids']} margin {gold['min_decision_margin']:.3g} "
                  f"(attempt {info['attempt']})", file=sys.stderr)
    files[f"{mg.GOLDEN_DIR}/block/README.md"] = readme(done, fast_done, ar_done, fwd).encode()
    return files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--root", default=mg.REPO, help="repository root (default: this checkout)")
    ap.add_argument("--check", action="store_true", help="compare with the files on disk")
    args = ap.parse_args()
    files = build_all(args.root)
    if args.check:
        problems = [p for p in mg.check(args.root, files)
                    if not p.startswith(f"{mg.GOLDEN_DIR}/llada")]
        for sub in GOLDEN_SUBDIRS:
            d = os.path.join(args.root, mg.GOLDEN_DIR, sub)
            for fn in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                if f"{mg.GOLDEN_DIR}/{sub}/{fn}" not in files:
                    problems.append(f"{mg.GOLDEN_DIR}/{sub}/{fn}: stale file (no such case)")
        for p in problems:
            print("MISMATCH " + p, file=sys.stderr)
        print("block goldens: " + ("OK" if not problems else f"{len(problems)} problems"),
              file=sys.stderr)
        return 1 if problems else 0
    for sub in GOLDEN_SUBDIRS:
        d = os.path.join(args.root, mg.GOLDEN_DIR, sub)
        for fn in os.listdir(d) if os.path.isdir(d) else []:
            if f"{mg.GOLDEN_DIR}/{sub}/{fn}" not in files and fn.endswith(".json"):
                os.remove(os.path.join(d, fn))
    for rel, data in files.items():
        path = os.path.join(args.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    print(f"wrote {len(files)} files under {args.root}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
