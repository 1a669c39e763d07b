#!/usr/bin/env python3
"""(Re)create the tiny Dream test models and the Dream golden files of the C++ tests.

Writes, under the repository root (or --root):
  tests/data/models/<model>.gguf               tiny random Dream models (make_dream_gguf.py)
  tests/data/golden/dream/<case>.json          reference generations (reference/dream_generate.py)
  tests/data/golden/dream_forward/<model>.json reference logits of one forward pass per model
  tests/data/golden/dream/README.md            how the files were made, format, case table

Deterministic (fixed seeds; running twice gives byte-identical files). Prompts are texts encoded
with the HuggingFace `tokenizers` build of the model's vocabulary (make_dream_gguf.hf_tokenizer);
the C++ golden test encodes `prompt_text` with unmask's tokenizer and requires the same ids.

Robustness rule (as make_goldens.py): a case is kept only if every decision is at least
MIN_MARGIN from flipping (dream_generate.py defines the margins) and the same generation with the
forward pass in float32 gives the same tokens and commit order; otherwise the next attempt (the
next prompt text, and seed + attempt) is tried.

--check regenerates everything in memory and compares with the files on disk (exit status 1 on
any difference).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass, replace

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
sys.path.insert(0, HERE)

import make_dream_gguf as md  # noqa: E402
import make_goldens as mg  # noqa: E402
from dream_generate import DreamParams, generate  # noqa: E402
from llada import LladaModel  # noqa: E402

GOLDEN_SUBDIRS = ("dream", "dream_forward")
MAX_ATTEMPTS = 40

MODELS: dict[str, md.DreamSpec] = {
    "dream-tiny-gqa2-f32": md.DreamSpec(kv_heads=2, dtype="f32", bias_dtype="f32",
                                        output_bias=True, seed=201, name="dream-tiny-gqa2-f32"),
    "dream-tiny-gqa1-f16": md.DreamSpec(kv_heads=1, dtype="f16", bias_dtype="f16",
                                        output_bias=False, seed=202, name="dream-tiny-gqa1-f16"),
}
M_A, M_B = MODELS

PROMPTS = [
    "Once upon a time, the engine",
    "The same numbers, the same seed",
    "<|im_start|>user\nWhat is 12 + 7?<|im_end|>\n<|im_start|>assistant\n",
    "In each step it keeps the answers",
    "Tests compare the tokens with the reference, one by one.",
    "def f(x):\n    return",
    "Why? Because",
    "There is a quiet pleasure in watching",
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
    "<|im_start|>assistant\n",
    "When the first block is complete,",
    "3.5 tokens/s, then 12.75!",
    "the story grows",
]


@dataclass
class Case:
    name: str
    model: str
    prompt: int          # index into PROMPTS of the first attempt
    params: DreamParams
    note: str = ""
    suffix: str = ""     # infilling: text after the masks (suffix_text / suffix_ids)


def _p(**kw) -> DreamParams:
    base = dict(gen_length=16, steps=16, seed=1)
    base.update(kw)
    return DreamParams(**base)


CASES: list[Case] = [
    Case("a_origin_s16_g16", M_A, 0, _p(alg="origin"), "origin, steps == gen_length"),
    Case("a_origin_s6_g16", M_A, 3, _p(alg="origin", steps=6, seed=5), "origin, steps < gen"),
    Case("a_maskgit_s8_g16", M_A, 1, _p(alg="maskgit_plus", steps=8), "steps < gen_length"),
    Case("a_margin_s16_g16", M_A, 2, _p(alg="topk_margin"), "chat prompt, steps == gen"),
    Case("a_entropy_s5_g24", M_A, 4, _p(alg="entropy", steps=5, gen_length=24), "5 steps"),
    Case("a_entropy_topk5_s8", M_A, 5, _p(alg="entropy", steps=8, top_k=5), "top_k at T=0"),
    Case("a_t07_entropy_filters_algtemp", M_A, 6,
         _p(alg="entropy", steps=8, temperature=0.7, top_p=0.9, top_k=40, alg_temp=0.5, seed=7),
         "T=0.7, top_p 0.9, top_k 40, alg_temp 0.5"),
    Case("b_entropy_s16_g16", M_B, 7, _p(alg="entropy"), "GQA 4/1, f16, steps == gen"),
    Case("b_origin_s10_g20", M_B, 8, _p(alg="origin", steps=10, gen_length=20, seed=3),
         "origin, system+user chat prompt"),
    Case("b_maskgit_s20_g16_eps05", M_B, 9, _p(alg="maskgit_plus", steps=20, eps=0.05),
         "steps > gen_length, eps 0.05"),
    Case("b_margin_topp08_s8", M_B, 10, _p(alg="topk_margin", steps=8, top_p=0.8),
         "top_p at T=0"),
    Case("b_origin_t1_topp095", M_B, 11, _p(alg="origin", steps=8, temperature=1.0, top_p=0.95,
                                            seed=11), "origin, T=1, top_p 0.95"),
    Case("b_maskgit_t05_algtemp1", M_B, 0, _p(alg="maskgit_plus", steps=8, temperature=0.5,
                                              alg_temp=1.0, seed=13), "T=0.5, alg_temp 1"),
    # Infilling: canvas = prompt + masks + suffix.
    Case("a_infill_entropy_s8", M_A, 3, _p(alg="entropy", steps=8), "infilling",
         suffix=" and then it stops."),
    Case("b_infill_origin_s8", M_B, 5, _p(alg="origin", steps=8, seed=17), "infilling, origin",
         suffix="\n    return x + 1"),
]


def _uses_rng(p: DreamParams) -> bool:
    return p.alg == "origin" or p.temperature > 0 or p.alg_temp > 0


def run_case(case: Case, models, models32, tokenizers) -> tuple[dict, dict]:
    m, m32, tok = models[case.model], models32[case.model], tokenizers[case.model]
    rejected = []
    for attempt in range(MAX_ATTEMPTS):
        params = case.params
        if attempt > 0 and _uses_rng(params):
            params = replace(params, seed=params.seed + attempt)
        text = PROMPTS[(case.prompt + attempt) % len(PROMPTS)]
        prompt = tok.encode(text).ids
        suffix = tok.encode(case.suffix, add_special_tokens=False).ids if case.suffix else []
        r = generate(m, prompt, params, suffix)
        why = None
        if r.min_decision_margin < mg.MIN_MARGIN:
            why = f"margin {r.min_decision_margin:.2e}"
        elif suffix and generate(m, prompt, params).output_ids == r.output_ids:
            why = "the suffix has no effect"
        else:
            r32 = generate(m32, prompt, params, suffix)
            if r32.output_ids != r.output_ids or r32.trace != r.trace:
                why = "float32 forward gives other tokens"
        if why is not None:
            rejected.append(f"attempt {attempt}: {why}")
            continue
        golden = {
            "case": case.name, "model": case.model + ".gguf", "prompt_text": text,
            "prompt_ids": prompt, "gen_length": params.gen_length, "steps": params.steps,
            "eps": params.eps, "alg": params.alg, "alg_temp": params.alg_temp,
            "temperature": params.temperature, "top_p": params.top_p, "top_k": params.top_k,
            "seed": params.seed, "output_ids": r.output_ids, "num_transfer": r.num_transfer,
            "trace": r.trace, "nfe": r.nfe,
            "min_decision_margin": float(f"{r.min_decision_margin:.6g}"),
        }
        if suffix:
            golden["suffix_text"] = case.suffix
            golden["suffix_ids"] = suffix
        return golden, {"attempt": attempt, "rejected": rejected}
    raise RuntimeError(f"case {case.name}: no robust attempt in {MAX_ATTEMPTS}: {rejected[-5:]}")


def forward_golden(name: str, m: LladaModel, m32: LladaModel, tok) -> dict:
    g = m.gguf
    mask = g.require("tokenizer.ggml.mask_token_id")
    ids = tok.encode(PROMPTS[2]).ids + [mask] * 6 + tok.encode(" the").ids + [mask] * 3
    logits = m.forward(ids)
    l32 = m32.forward(ids).astype(np.float64)
    err = float(np.max(np.abs(logits - l32)))
    absmax = float(np.max(np.abs(logits)))
    assert err <= mg.F32_SHARE * (mg.FWD_ATOL + mg.FWD_RTOL * absmax), err
    note = mg.TOLERANCE_NOTE.format(absmax=absmax).replace(
        "length <= 64 and two layers", "length <= 128 and two layers")
    return {"model": name + ".gguf", "input_ids": ids, "shift_logits": m.cfg.shift_logits,
            "logits": [[float(f"{v:.9g}") for v in row] for row in logits],
            "atol": mg.FWD_ATOL, "rtol": mg.FWD_RTOL, "tolerance_note": note}


def readme(done) -> str:
    rows = []
    for case, gold, info in done:
        p = case.params
        rows.append(f"| `{case.name}` | {case.model} | {len(gold['prompt_ids'])} | "
                    f"{p.gen_length}/{p.steps} | {p.alg} | {gold['eps']:g} | {p.temperature:g} | "
                    f"{p.top_p:g} | {p.top_k} | {p.alg_temp:g} | {gold['seed']} | "
                    f"{gold['min_decision_margin']:.3g} | {info['attempt']} | {case.note} |")
    models = "\n".join(
        f"| `{n}.gguf` | {s.hidden} | {s.layers} | {s.heads}/{s.kv_heads} | {s.ffn} | {s.vocab} | "
        f"{s.dtype.upper()} | {s.bias_dtype.upper()} | {'yes' if s.output_bias else 'no'} | "
        f"{s.seed} |" for n, s in MODELS.items())
    return f"""# Golden files for the Dream reference decoding

Made by `scripts/make_dream_goldens.py` (do not edit by hand):

```
.venv/bin/python scripts/make_dream_goldens.py           # rewrites the Dream models and goldens
.venv/bin/python scripts/make_dream_goldens.py --check   # regenerates in memory, compares
```

Generator: `scripts/reference/dream_generate.py` (numpy, float64), written from docs ALGORITHMS.md
section 2; its module docstring is the exact specification (RNG streams, tie rules, schedule).

## Models (`tests/data/models/`)

Random Dream GGUFs (`scripts/make_dream_gguf.py`, llama.cpp naming): context 256, head_dim 16, RoPE
base 1e6 (NEOX), RMS eps 1e-6, untied output, q/k/v biases, no `diffusion.shift_logits` key
(shifted). Tokenizer: byte-level BPE trained by the script (`tokenizer.ggml.pre = qwen2`), Qwen's
special tokens last: `<|endoftext|>` (eos, pad), `<|im_start|>`, `<|im_end|>` (eot), `<|mask|>`.

| file | hidden | layers | heads/kv | FFN | vocab | weights | biases | output.bias | seed |
|---|---|---|---|---|---|---|---|---|---|
{models}

## `dream/<case>.json`

```
{{"case", "model", "prompt_text", "prompt_ids" (HF tokenizers encoding of prompt_text, specials
 parsed), "gen_length", "steps", "eps", "alg", "alg_temp", "temperature", "top_p" (1 = off),
 "top_k" (0 = off), "seed", "output_ids" [gen_length], "num_transfer" [steps] (k per step; origin:
 positions selected), "trace" [steps][committed positions in commit order], "nfe",
 "min_decision_margin", infilling cases only: "suffix_text", "suffix_ids" (its encoding without
 specials; the canvas is prompt + gen_length masks + suffix)}}
```
Commit order within a step: origin ascending position; other algs by rank (best first).

| case | model | Lp | G/S | alg | eps | T | top_p | top_k | alg_temp | seed | min margin | attempt | note |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

## `dream_forward/<model>.json`

Logits of one forward pass, **unshifted** (row i is the model's output at position i; the decoder
shifts). Pass if |got - ref| <= atol + rtol * |ref| everywhere.
"""


def build_all(progress: bool = True) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory() as tmp:
        models, models32, toks = {}, {}, {}
        for name, spec in MODELS.items():
            path = os.path.join(tmp, name + ".gguf")
            md.write_dream_gguf(path, spec)
            md.validate(path, spec)
            with open(path, "rb") as f:
                files[f"{mg.MODELS_DIR}/{name}.gguf"] = f.read()
            models[name] = LladaModel(path)
            models32[name] = LladaModel(path, np.float32)
            toks[name] = md.hf_tokenizer(path)
        for name in MODELS:
            fg = forward_golden(name, models[name], models32[name], toks[name])
            files[f"{mg.GOLDEN_DIR}/dream_forward/{name}.json"] = mg.render_json(fg).encode()
        done = []
        for case in CASES:
            gold, info = run_case(case, models, models32, toks)
            files[f"{mg.GOLDEN_DIR}/dream/{case.name}.json"] = mg.render_json(gold).encode()
            done.append((case, gold, info))
            if progress:
                print(f"  {case.name}: margin {gold['min_decision_margin']:.3g} (attempt "
                      f"{info['attempt']}) k {gold['num_transfer']}", file=sys.stderr)
        files[f"{mg.GOLDEN_DIR}/dream/README.md"] = readme(done).encode()
    return files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--root", default=mg.REPO, help="repository root (default: this checkout)")
    ap.add_argument("--check", action="store_true", help="compare with the files on disk")
    args = ap.parse_args()
    files = build_all()
    if args.check:
        problems = mg.check(args.root, files)
        problems = [p for p in problems if not p.startswith(f"{mg.GOLDEN_DIR}/llada")]
        for sub in GOLDEN_SUBDIRS:
            d = os.path.join(args.root, mg.GOLDEN_DIR, sub)
            for fn in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                if f"{mg.GOLDEN_DIR}/{sub}/{fn}" not in files:
                    problems.append(f"{mg.GOLDEN_DIR}/{sub}/{fn}: stale file (no such case)")
        for p in problems:
            print("MISMATCH " + p, file=sys.stderr)
        print("dream goldens: " + ("OK" if not problems else f"{len(problems)} problems"),
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
