#!/usr/bin/env python3
"""(Re)create the tiny LLaDA test models and the golden files of the C++ tests.

Writes, under the repository root (or --root):
  tests/data/models/<model>.gguf               tiny random LLaDA models (make_llada_gguf.py)
  tests/data/golden/llada/<case>.json          reference generations (scripts/reference/generate.py)
  tests/data/golden/llada_forward/<model>.json reference logits of one forward pass per model
  tests/data/golden/README.md                  how the files were made, format, case table

Everything is deterministic (fixed seeds; running twice gives byte-identical files).

Robustness rule: the C++ engine computes in float32, the reference in float64. A case is kept
only if every decision it makes is at least MIN_MARGIN away from flipping (see generate.py for
the definition of the margins; exact ties are decided by the documented tie rules and count as
deterministic), if it never commits the mask id itself, and if the same generation with the
forward pass in float32 gives the same tokens. Otherwise the next attempt of the case is tried:
a new random prompt (and, for cases that use the RNG, a new seed). Cases that must exercise an
EOS/EOT switch are also required to change the outcome (output or commit order) compared with
the same run without the switch.

--check regenerates everything in memory and compares it with the files on disk instead of
writing (exit status 1 on any difference); test_reference.py --check-goldens uses it.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, replace

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
sys.path.insert(0, HERE)

import make_llada_gguf as mk  # noqa: E402
from generate import GenerateParams, generate  # noqa: E402
from llada import LladaModel  # noqa: E402

REPO = os.path.dirname(HERE)
MODELS_DIR = "tests/data/models"
GOLDEN_DIR = "tests/data/golden"
MIN_MARGIN = 1e-4
MAX_ATTEMPTS = 40

# Tiny models: hidden 32, 2 layers, 4 heads (head_dim 8), FFN 64, context 128.
# Weights are large enough (std 0.25, embeddings 0.6) that the logits are well spread
# (std ~3, top probabilities 0.15-0.9), so confidence gaps are far above f32 noise.
_TINY = dict(hidden=32, layers=2, heads=4, ffn=64, context=128, init_std=0.25, embed_std=0.6,
             norm_noise=0.1)
MODELS: dict[str, mk.ModelSpec] = {
    "llada-tiny-mha-tied-f32": mk.ModelSpec(**_TINY, kv_heads=4, vocab=300, dtype="f32",
                                            tied=True, seed=101, special_out_scale=2.0,
                                            name="llada-tiny-mha-tied-f32"),
    "llada-tiny-gqa2-untied-f16": mk.ModelSpec(**_TINY, kv_heads=2, vocab=320, dtype="f16",
                                               tied=False, seed=102, special_out_scale=1.5,
                                               name="llada-tiny-gqa2-untied-f16"),
    "llada-tiny-gqa1-untied-f32": mk.ModelSpec(**_TINY, kv_heads=1, vocab=300, dtype="f32",
                                               tied=False, seed=103, special_out_scale=1.5,
                                               name="llada-tiny-gqa1-untied-f32"),
    "llada-tiny-mha-tied-f16": mk.ModelSpec(**_TINY, kv_heads=4, vocab=288, dtype="f16",
                                            tied=True, seed=104, special_out_scale=2.0,
                                            name="llada-tiny-mha-tied-f16"),
}
M_A, M_B, M_C, M_D = MODELS


@dataclass
class Case:
    name: str
    model: str
    prompt_len: int
    params: GenerateParams
    note: str = ""
    require_flag_effect: bool = False     # eos switch must change output or commit order
    require_special_output: bool = False  # output must contain EOS or EOT
    suffix_len: int = 0                   # infilling: random ids after the masks (suffix_ids)


def _p(**kw) -> GenerateParams:
    base = dict(gen_length=16, steps=8, block_length=16)
    base.update(kw)
    return GenerateParams(**base)


BIG_SEED = 0x1E3779B97F4A7C15  # < 2^63 (fits int64 readers); high key word (seed >> 32) non-zero

CASES: list[Case] = [
    # --- model A: MHA, tied, F32 ---
    Case("a_single_block_lp5", M_A, 5, _p(), "block_length == gen_length"),
    Case("a_two_blocks_lp12", M_A, 12, _p(block_length=8), "2 blocks x 4 steps"),
    Case("a_uneven_b8_s3_lp5", M_A, 5, _p(gen_length=24, block_length=8, steps=9),
         "3 blocks, 3 steps per block: [3,3,2]"),
    Case("a_one_per_step_lp1", M_A, 1, _p(steps=16, block_length=8), "steps == gen_length"),
    Case("a_steps_over_gen_lp5", M_A, 5, _p(gen_length=8, block_length=8, steps=16),
         "steps 16 > gen_length 8: steps 9-16 commit nothing (NFE 16)"),
    Case("a_steps_over_gen_2blocks_lp5", M_A, 5, _p(gen_length=8, block_length=4, steps=12),
         "6 steps per block of 4: [1,1,1,1,0,0]"),
    Case("a_cfg1_lp12", M_A, 12, _p(cfg_scale=1.0), "CFG 1.0"),
    Case("a_t07_low_conf_lp5", M_A, 5, _p(block_length=8, temperature=0.7, seed=7),
         "Gumbel T=0.7"),
    Case("a_random_t0_lp5", M_A, 5, _p(remasking="random", seed=11), "random remasking, T=0"),
    # --- model B: GQA 4/2, untied, F16 (EOS/EOT output rows x1.5) ---
    Case("b_block32_s10_lp5", M_B, 5, _p(gen_length=32, block_length=32, steps=10),
         "schedule [4,4,3,3,3,3,3,3,3,3]"),
    Case("b_cfg2_5_lp5", M_B, 5, _p(block_length=8, cfg_scale=2.5), "CFG 2.5, 2 blocks"),
    Case("b_logits_eos_inf_lp5", M_B, 5, _p(logits_eos_inf=True), "logits_eos_inf",
         require_flag_effect=True),
    Case("b_conf_eos_eot_t0_lp12", M_B, 12, _p(steps=16, confidence_eos_eot_inf=True),
         "confidence_eos_eot_inf at T=0 (EOS and EOT)", require_flag_effect=True,
         require_special_output=True),
    Case("b_conf_eos_eot_t1_lp5", M_B, 5,
         _p(temperature=1.0, confidence_eos_eot_inf=True, seed=21),
         "confidence_eos_eot_inf at T=1 (EOT only)", require_flag_effect=True,
         require_special_output=True),
    Case("b_t1_random_lp1", M_B, 1, _p(block_length=8, temperature=1.0, remasking="random",
                                       seed=BIG_SEED), "T=1, random remasking, 64-bit seed"),
    Case("b_plain_special_out_lp12", M_B, 12, _p(gen_length=24, block_length=8, steps=12),
         "EOS/EOT produced without any switch", require_special_output=True),
    # --- model C: GQA 4/1, untied, F32 (EOS/EOT output rows x1.5) ---
    Case("c_t07_low_conf_seed1_lp5", M_C, 5, _p(block_length=8, temperature=0.7, seed=1),
         "T=0.7, 2 blocks"),
    Case("c_t07_low_conf_seed2_lp5", M_C, 5, _p(block_length=8, temperature=0.7, seed=2),
         "T=0.7, 2 blocks, another seed"),
    Case("c_t1_low_conf_lp12", M_C, 12, _p(temperature=1.0, seed=3), "T=1.0"),
    Case("c_t07_random_lp5", M_C, 5, _p(temperature=0.7, remasking="random", seed=4),
         "T=0.7, random remasking"),
    Case("c_random_t0_lp12", M_C, 12, _p(block_length=8, remasking="random", seed=5),
         "random remasking, T=0, 2 blocks"),
    Case("c_conf_eos_eot_t07_cfg1_lp5", M_C, 5,
         _p(temperature=0.7, cfg_scale=1.0, confidence_eos_eot_inf=True, seed=6),
         "confidence_eos_eot_inf + CFG 1.0 at T=0.7", require_flag_effect=True),
    Case("c_logits_eos_inf_t1_lp1", M_C, 1, _p(temperature=1.0, logits_eos_inf=True, seed=8),
         "logits_eos_inf at T=1", require_flag_effect=True),
    Case("c_both_eos_flags_t0_lp12", M_C, 12,
         _p(steps=16, block_length=8, logits_eos_inf=True, confidence_eos_eot_inf=True),
         "logits_eos_inf + confidence_eos_eot_inf at T=0", require_flag_effect=True),
    # --- model D: MHA, tied, F16 ---
    Case("d_uneven_b16_s6_lp5", M_D, 5, _p(gen_length=32, block_length=16, steps=12),
         "2 blocks, 6 steps per block: [3,3,3,3,2,2]"),
    Case("d_t1_low_conf_seed3_lp12", M_D, 12, _p(block_length=8, temperature=1.0, seed=3),
         "T=1.0"),
    Case("d_t1_low_conf_seed4_lp12", M_D, 12, _p(block_length=8, temperature=1.0,
                                                  seed=BIG_SEED + 1), "T=1.0, 64-bit seed"),
    Case("d_cfg1_t07_lp5", M_D, 5, _p(temperature=0.7, cfg_scale=1.0, seed=9), "CFG 1.0, T=0.7"),
    # --- infilling: canvas = prompt + masks + suffix ---
    Case("a_infill_lp5_s4", M_A, 5, _p(block_length=8), "infilling, suffix of 4, 2 blocks",
         suffix_len=4),
    Case("b_infill_cfg1_lp5_s6", M_B, 5, _p(cfg_scale=1.0),
         "infilling + CFG 1.0 (the suffix masked with the prompt)", suffix_len=6),
    Case("c_infill_t07_lp12_s3", M_C, 12, _p(block_length=8, temperature=0.7, seed=12),
         "infilling at T=0.7", suffix_len=3),
    Case("d_infill_random_lp5_s5", M_D, 5, _p(remasking="random", seed=13),
         "infilling, random remasking", suffix_len=5),
]

TOLERANCE_NOTE = (
    "Reference logits are float64 (dequantized weights, float64 arithmetic). An engine that "
    "computes in float32 differs by accumulated rounding: float32 has unit roundoff 6e-8, dot "
    "products of length <= 64 and two layers grow that to ~1e-6 relative per activation; the "
    "same forward computed in float32 with numpy stays within a tenth of atol + rtol * |ref| of "
    "this reference (checked when the file is written; the exact figure depends on the CPU's "
    "BLAS kernels, so it is not recorded; logits of magnitude up to {absmax:.0f}). atol/rtol "
    "leave >= 10x headroom for other summation orders and vectorized exp, while any real bug (RoPE layout, GQA head "
    "mapping, missing norm weight) changes logits by O(1). Compare |got - ref| <= atol + rtol * |ref|.")
FWD_ATOL = 1e-3
# numpy's float32 forward must stay within this share of the tolerance (TOLERANCE_NOTE).
F32_SHARE = 0.1
FWD_RTOL = 1e-4


def _case_rng(name: str, attempt: int) -> np.random.Generator:
    return np.random.default_rng([zlib.crc32(name.encode()), attempt])


def _prompt(case: Case, model: LladaModel, attempt: int) -> list[int]:
    g = model.gguf
    bos = g.require("tokenizer.ggml.bos_token_id")
    n_normal = model.cfg.n_vocab - len(mk.SPECIAL_TOKENS)  # specials are the last ids
    rng = _case_rng(case.name, attempt)
    rand = [int(v) for v in rng.integers(0, n_normal, size=case.prompt_len)]
    if case.prompt_len == 1:
        return [bos] if attempt == 0 else rand[:1]
    return [bos] + rand[1:]


def _suffix(case: Case, model: LladaModel, attempt: int) -> list[int]:
    n_normal = model.cfg.n_vocab - len(mk.SPECIAL_TOKENS)
    rng = _case_rng(case.name + "/suffix", attempt)
    return [int(v) for v in rng.integers(0, n_normal, size=case.suffix_len)]


def _uses_rng(p: GenerateParams) -> bool:
    return p.temperature > 0 or p.remasking == "random"


def run_case(case: Case, models: dict[str, LladaModel], models32: dict[str, LladaModel],
             log=None) -> tuple[dict, dict]:
    """Search attempts until the case is robust. Returns (golden dict, info)."""
    m, m32 = models[case.model], models32[case.model]
    g = m.gguf
    eos, eot = g.require("tokenizer.ggml.eos_token_id"), g.require("tokenizer.ggml.eot_token_id")
    rejected: list[str] = []
    for attempt in range(MAX_ATTEMPTS):
        params = case.params
        if attempt > 0 and _uses_rng(params):
            params = replace(params, seed=params.seed + attempt)
        prompt = _prompt(case, m, attempt)
        suffix = _suffix(case, m, attempt)
        r = generate(m, prompt, params, suffix_ids=suffix)
        why = None
        if r.min_decision_margin < MIN_MARGIN:
            why = f"margin {r.min_decision_margin:.2e}"
        elif r.committed_mask_id:
            why = "committed the mask id"
        elif case.require_special_output and not (eos in r.output_ids or eot in r.output_ids):
            why = "no EOS/EOT in the output"
        if why is None and params.confidence_eos_eot_inf:
            # Some competitor must predict a token whose confidence the switch removes.
            hit = r.x0_special_counts["eot"] + (r.x0_special_counts["eos"]
                                                if params.temperature == 0 else 0)
            if hit == 0:
                why = "x0 never EOT (or EOS at T=0)"
        if why is None and case.require_flag_effect:
            for flag in ("logits_eos_inf", "confidence_eos_eot_inf"):
                if getattr(params, flag):       # each switch on its own must matter
                    r_off = generate(m, prompt, replace(params, **{flag: False}),
                                     suffix_ids=suffix)
                    if r_off.output_ids == r.output_ids and r_off.trace == r.trace:
                        why = f"{flag} has no effect"
        if why is None and suffix:
            r_plain = generate(m, prompt, params)
            if r_plain.output_ids == r.output_ids and r_plain.trace == r.trace:
                why = "the suffix has no effect"
        if why is None:
            r32 = generate(m32, prompt, params, suffix_ids=suffix)
            if r32.output_ids != r.output_ids or r32.trace != r.trace:
                why = "float32 forward gives other tokens"
        if why is not None:
            rejected.append(f"attempt {attempt}: {why}")
            continue
        golden = {
            "case": case.name, "model": case.model + ".gguf", "prompt_ids": prompt,
            "gen_length": params.gen_length, "steps": params.steps,
            "block_length": params.block_length, "temperature": float(params.temperature),
            "cfg_scale": float(params.cfg_scale), "remasking": params.remasking,
            "logits_eos_inf": params.logits_eos_inf,
            "confidence_eos_eot_inf": params.confidence_eos_eot_inf, "seed": params.seed,
            "output_ids": r.output_ids, "nfe": r.nfe,
            "min_decision_margin": float(f"{r.min_decision_margin:.6g}"),
        }
        if suffix:
            golden["suffix_ids"] = suffix
        info = {"attempt": attempt, "rejected": rejected, "eos_in_output": eos in r.output_ids,
                "eot_in_output": eot in r.output_ids, "x0_special": r.x0_special_counts,
                "sampling_margin": r.min_sampling_margin, "selection_margin": r.min_selection_margin}
        return golden, info
    raise RuntimeError(f"case {case.name}: no robust attempt in {MAX_ATTEMPTS}: {rejected[-5:]}")


def forward_golden(name: str, m: LladaModel, m32: LladaModel) -> dict:
    g = m.gguf
    rng = _case_rng("forward/" + name, 0)
    n_normal = m.cfg.n_vocab - len(mk.SPECIAL_TOKENS)
    mask = g.require("tokenizer.ggml.mask_token_id")
    ids = [g.require("tokenizer.ggml.bos_token_id")]
    ids += [int(v) for v in rng.integers(0, n_normal, size=9)]
    ids += [mask] * 4 + [int(v) for v in rng.integers(0, n_normal, size=3)]
    ids += [g.require("tokenizer.ggml.eot_token_id"), mask, g.require("tokenizer.ggml.eos_token_id"), mask]
    logits = m.forward(ids)
    l32 = m32.forward(ids).astype(np.float64)
    err = float(np.max(np.abs(logits - l32)))
    assert err <= F32_SHARE * (FWD_ATOL + FWD_RTOL * float(np.max(np.abs(logits)))), err
    note = TOLERANCE_NOTE.format(absmax=float(np.max(np.abs(logits))))
    return {"model": name + ".gguf", "input_ids": ids,
            "logits": [[float(f"{v:.9g}") for v in row] for row in logits],
            "atol": FWD_ATOL, "rtol": FWD_RTOL, "tolerance_note": note}


def render_json(d: dict) -> str:
    """One key per line; lists compact; the logits matrix one row per line."""
    lines = []
    for k, v in d.items():
        if k == "logits":
            rows = ",\n  ".join(json.dumps(r, separators=(",", ":")) for r in v)
            val = "[\n  " + rows + "\n ]"
        else:
            val = json.dumps(v, separators=(", ", ": "))
        lines.append(f" {json.dumps(k)}: {val}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def readme(cases: list[tuple[Case, dict, dict]]) -> str:
    rows = []
    for case, gold, info in cases:
        p = case.params
        flags = "/".join(f for f, on in (("x", p.logits_eos_inf), ("c", p.confidence_eos_eot_inf))
                         if on)
        rows.append(f"| `{case.name}` | {case.model} | {len(gold['prompt_ids'])}"
                    f"{' + ' + str(len(gold['suffix_ids'])) if 'suffix_ids' in gold else ''} | "
                    f"{p.gen_length}/{p.block_length}/{p.steps} | {p.temperature:g} | "
                    f"{p.cfg_scale:g} | {p.remasking} | "
                    f"{flags} | {gold['seed']} | "
                    f"{gold['min_decision_margin']:.3g} | {info['attempt']} | "
                    f"{'EOS ' if info['eos_in_output'] else ''}{'EOT' if info['eot_in_output'] else ''} | "
                    f"{case.note} |")
    models = "\n".join(
        f"| `{n}.gguf` | {s.hidden} | {s.layers} | {s.heads}/{s.kv_heads} | {s.ffn} | {s.vocab} | "
        f"{s.dtype.upper()} | {'tied' if s.tied else 'untied'} | {s.seed} | {s.special_out_scale:g} |"
        for n, s in MODELS.items())
    return f"""# Golden files for the LLaDA reference decoding

Made by `scripts/make_goldens.py` (do not edit by hand):

```
python3 -m venv .venv && .venv/bin/pip install -r scripts/requirements.txt
.venv/bin/python scripts/make_goldens.py            # rewrites tests/data/models and tests/data/golden
.venv/bin/python scripts/reference/test_reference.py --check-goldens   # regenerates in memory, compares
```

The generator is an independent numpy reference (`scripts/reference/`): GGUF reader, Philox4x32-10
RNG, float64 LLaDA forward pass, and `generate` following ML-GSAI/LLaDA `generate.py` (see
`scripts/reference/generate.py` and docs ALGORITHMS.md section 1). Running the script twice gives
byte-identical files.

Other goldens have their own generators and READMEs: `dream/README.md` (`scripts/make_dream_goldens.py`)
and `block/README.md` (SDAR and Fast-dLLM v2 block diffusion, greedy AR and forward goldens of the
tiny Hugging Face checkpoints in `tests/data/hf/`), made by

```
.venv/bin/python scripts/make_hf_checkpoints.py    # tests/data/hf/<checkpoint>/ (weights, configs)
.venv/bin/python scripts/make_block_goldens.py     # golden/block, golden/hf_ar, golden/hf_forward
.venv/bin/python scripts/reference/test_block_reference.py --check-goldens   # self-tests, compare
```

## Models (`tests/data/models/`)

Random LLaDA GGUFs written with gguf-py (llama.cpp naming and metadata), context 128, head_dim 8,
RoPE base 500000, RMS eps 1e-5; 2-D weights std 0.25 (embeddings/output 0.6), norm weights
1 + 0.1 N(0,1). The EOS and EOT output rows are scaled so that these tokens are sometimes
generated. Vocabulary: 256 byte tokens, BPE merges, then the 6 specials (bos, eos = pad,
start_header, end_header, eot, mask: the last six ids).

| file | hidden | layers | heads/kv | FFN | vocab | weights | output | seed | EOS/EOT row scale |
|---|---|---|---|---|---|---|---|---|---|
{models}

## `llada/<case>.json`

```
{{"case": name, "model": file in tests/data/models/, "prompt_ids": [...],
 "gen_length": G, "steps": S, "block_length": B, "temperature": T, "cfg_scale": w,
 "remasking": "low_confidence" | "random", "logits_eos_inf": bool, "confidence_eos_eot_inf": bool,
 "seed": uint64, "output_ids": [G ids], "nfe": forward passes (a CFG step counts once),
 "min_decision_margin": smallest margin of any decision,
 "suffix_ids": [...] (infilling cases only)}}
```
Semantics (must match exactly): canvas = prompt + G mask ids (`tokenizer.ggml.mask_token_id`);
per block the transfer counts put the remainder on the first steps; every step is a full forward;
infilling cases: canvas = prompt + G masks + suffix_ids (the suffix is fixed context, never
decoded; output_ids are the G positions between prompt and suffix);
CFG: `un + (w + 1) * (cond - un)` with the prompt (and suffix) positions of the unconditional copy
masked;
`logits_eos_inf` sets the EOS logit to -inf; T > 0: x0 = argmax(l - T log(-log u)),
u = Philox uniform(seed, stream 1, global step, position, vocab id); `confidence_eos_eot_inf`:
EOS and EOT logits -inf for the confidence softmax at T = 0, only EOT at T > 0; confidence =
float64 softmax probability of x0 (`low_confidence`) or uniform(seed, stream 2, step, position, 0)
(`random`); only masked positions of the current block compete; ties: lower position first;
argmax ties: lowest id.

Margins: best minus second-best sampling score (logit units) of every committed position (and of
every competing position with `low_confidence`), and the gap between the k-th and (k+1)-th
confidence among competitors (`low_confidence` only; `random` confidences are exact RNG values).
Exactly equal values are decided by the tie rules and are not counted. Every case has
min_decision_margin >= {MIN_MARGIN:g} and gives the same tokens and commit order when the forward
pass runs in float32; otherwise the case's next attempt (new random prompt, and seed + attempt
for RNG cases) was used ("attempt" below).

Columns: Lp prompt length (+ suffix length); G/B/S gen_length/block_length/steps; flags x = logits_eos_inf,
c = confidence_eos_eot_inf.

| case | model | Lp | G/B/S | T | cfg | remasking | flags | seed | min margin | attempt | EOS/EOT out | note |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Cases with an EOS switch were also required to change the output or the commit order compared
with the same run without the switch.

## `llada_forward/<model>.json`

```
{{"model": file, "input_ids": [20 ids incl. mask, EOS, EOT], "logits": [[vocab floats] per position],
 "atol": a, "rtol": r, "tolerance_note": "..."}}
```
Logits of one bidirectional forward pass (position i predicts token i), float64 reference printed
with 9 significant digits. Pass if |got - ref| <= atol + rtol * |ref| everywhere.
"""


def build_all(root: str, progress: bool = True) -> dict[str, bytes]:
    """Builds every file in memory (models via a temporary directory). Returns path -> bytes."""
    files: dict[str, bytes] = {}
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        models, models32 = {}, {}
        for name, spec in MODELS.items():
            path = os.path.join(tmp, name + ".gguf")
            mk.write_llada_gguf(path, spec)
            mk.validate(path, spec)
            with open(path, "rb") as f:
                files[f"{MODELS_DIR}/{name}.gguf"] = f.read()
            models[name] = LladaModel(path)
            models32[name] = LladaModel(path, np.float32)
        for name in MODELS:
            fg = forward_golden(name, models[name], models32[name])
            files[f"{GOLDEN_DIR}/llada_forward/{name}.json"] = render_json(fg).encode()
        done = []
        for i, case in enumerate(CASES):
            gold, info = run_case(case, models, models32)
            files[f"{GOLDEN_DIR}/llada/{case.name}.json"] = render_json(gold).encode()
            done.append((case, gold, info))
            if progress:
                print(f"  [{i + 1}/{len(CASES)}] {case.name}: margin {gold['min_decision_margin']:.3g}"
                      f" (attempt {info['attempt']}; {len(info['rejected'])} rejected"
                      f"{': ' + '; '.join(info['rejected'][:3]) if info['rejected'] else ''})"
                      f" x0 EOS/EOT {info['x0_special']['eos']}/{info['x0_special']['eot']}"
                      f" out EOS/EOT {int(info['eos_in_output'])}/{int(info['eot_in_output'])}",
                      file=sys.stderr)
        files[f"{GOLDEN_DIR}/README.md"] = readme(done).encode()
    if progress:
        print(f"built {len(files)} files in {time.time() - t0:.1f} s", file=sys.stderr)
    return files


def _json_close(a, b, path="") -> list[str]:
    """Structural comparison: ints/strings/bools exact, floats to a small relative tolerance."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return [f"{path}: keys {list(a)} != {list(b)}"]
        out = []
        for k in a:
            out += _json_close(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += _json_close(x, y, f"{path}[{i}]")
            if len(out) > 5:
                break
        return out
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) \
                or not isinstance(b, (int, float)):
            return [f"{path}: {a!r} != {b!r}"]
        # Values are printed rounded (9 digits for logits, 6 for margins); allow a last-digit
        # change from libm differences between machines.
        tol = 1e-4 if path.endswith("min_decision_margin") else 1e-7
        return [] if math.isclose(a, b, rel_tol=tol, abs_tol=1e-8) else [f"{path}: {a!r} != {b!r}"]
    if path.endswith("tolerance_note") and isinstance(a, str) and isinstance(b, str):
        # The note quotes numpy's float32 error on the machine that wrote it, which depends on the
        # CPU and BLAS kernels numpy picks (7.5e-06 on one machine, 9.3e-06 on another, both 100x
        # under atol): the text must match, the measured figures may differ.
        number = r"[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?"
        if re.sub(number, "#", a) == re.sub(number, "#", b):
            return []
    return [] if (a == b and type(a) is type(b)) else [f"{path}: {a!r} != {b!r}"]


def check(root: str, files: dict[str, bytes]) -> list[str]:
    """Compares built files with those under root. Returns a list of problems."""
    problems = []
    for rel, data in files.items():
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            problems.append(f"{rel}: missing")
            continue
        with open(path, "rb") as f:
            disk = f.read()
        if disk == data:
            continue
        if rel.endswith(".json"):
            diffs = _json_close(json.loads(data), json.loads(disk))
            if diffs:
                problems.append(f"{rel}: " + "; ".join(diffs[:5]))
        else:
            problems.append(f"{rel}: content differs")
    for sub in ("llada", "llada_forward"):
        d = os.path.join(root, GOLDEN_DIR, sub)
        if os.path.isdir(d):
            for fn in sorted(os.listdir(d)):
                if f"{GOLDEN_DIR}/{sub}/{fn}" not in files:
                    problems.append(f"{GOLDEN_DIR}/{sub}/{fn}: stale file (no such case)")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--root", default=REPO, help="repository root (default: this checkout)")
    ap.add_argument("--check", action="store_true",
                    help="compare with the files on disk instead of writing them")
    args = ap.parse_args()
    files = build_all(args.root)
    if args.check:
        problems = check(args.root, files)
        for p in problems:
            print("MISMATCH " + p, file=sys.stderr)
        print("goldens: " + ("OK" if not problems else f"{len(problems)} problems"), file=sys.stderr)
        return 1 if problems else 0
    for sub in ("llada", "llada_forward"):
        d = os.path.join(args.root, GOLDEN_DIR, sub)
        if os.path.isdir(d):
            for fn in os.listdir(d):
                if f"{GOLDEN_DIR}/{sub}/{fn}" not in files and fn.endswith(".json"):
                    os.remove(os.path.join(d, fn))
    total = 0
    for rel, data in files.items():
        path = os.path.join(args.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        total += len(data)
    print(f"wrote {len(files)} files ({total / 1e6:.2f} MB) under {args.root}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
