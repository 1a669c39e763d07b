#!/usr/bin/env python3
"""(Re)create the MoE decoding goldens: tests/data/golden/moe/<case>.json (LLaDA-MoE, and
LLaDA 2.0 in the l2_* files).

The tiny random LLaDA-MoE checkpoints of tests/data/hf/ (scripts/make_hf_checkpoints.py:
`llada-moe-tiny-f32`, 8 experts top-2; `llada-moe-tiny-bf16-top1`, 4 experts top-1) decoded by
the LLaDA reference `generate` (scripts/reference/generate.py: ML-GSAI/LLaDA generate.py, the
loop llama.cpp's diffusion CLI and dInfer run LLaDA-MoE with; MODELS.md section 2.2) over the
numpy MoE forward (scripts/reference/hf_model.py + moe.py, bidirectional attention); and the
tiny LLaDA 2.x checkpoints (`llada2-tiny-bf16`: 16 experts in 4 groups, top-4, sigmoid + expert
bias, shared expert, dense layer 0, partial rotary; `llada2-tiny-f32-top1`) decoded by the
LLaDA 2.0 reference generate (scripts/reference/llada2_generate.py: threshold with the top-quota
fallback, block-causal, the whole prefix re-run each step). The SDAR-MoE and Qwen3-MoE goldens
live with their dense siblings (scripts/make_block_goldens.py).

Robustness (the rule of make_goldens.py, plus routing): a case is kept only if every decision
margin is >= MIN_MARGIN, every forward's routing margin (k-th minus (k+1)-th router probability
of every position and layer) is >= MIN_ROUTE_MARGIN, it never commits the mask id, it generates
at least MIN_DISTINCT different ids and the float32 forward gives the same tokens and commit
order; otherwise the next prompt (and seed, for sampled cases) is tried.

Deterministic: running it twice gives byte-identical files. --check compares instead of writing.
"""
from __future__ import annotations

import argparse
import os
import sys
import zlib
from dataclasses import dataclass, replace

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
sys.path.insert(0, HERE)

import make_goldens as mg  # noqa: E402
import make_hf_checkpoints as mh  # noqa: E402
import llada2_generate as l2  # noqa: E402
from generate import GenerateParams, generate  # noqa: E402
from hf_model import HFModel  # noqa: E402

OUT_DIR = f"{mg.GOLDEN_DIR}/moe"
MIN_MARGIN = mg.MIN_MARGIN
MIN_ROUTE_MARGIN = 1e-4
MIN_DISTINCT = 4
MAX_ATTEMPTS = 40
# The ids unmask's tokenizer reports for these folders (tokenizer_config.json of the qwen-style
# tokenizer: eos <|im_end|>; eot <|endoftext|>).
SPECIAL = {"tokenizer.ggml.mask_token_id": mh.MASK, "tokenizer.ggml.eos_token_id": mh.IM_END,
           "tokenizer.ggml.eot_token_id": mh.ENDOFTEXT, "tokenizer.ggml.bos_token_id": mh.ENDOFTEXT}


class _Keys:
    def __init__(self, special: dict):
        self.special = special

    def require(self, key):
        return self.special[key]

    def get(self, key, default=None):
        return self.special.get(key, default)


@dataclass
class _Cfg:
    n_ctx: int
    n_vocab: int


class DiffusionView:
    """An HF MoE folder as generate.py's model: a full bidirectional forward of the canvas.
    special: the tokenizer.ggml.*_token_id keys generate reads (default: the qwen-style
    tokenizer's of the tiny checkpoints)."""

    def __init__(self, folder: str, dtype, special: dict | None = None):
        self.m = HFModel(folder, dtype)
        self.gguf = _Keys(SPECIAL if special is None else special)
        self.cfg = _Cfg(int(self.m.cfg.raw["max_position_embeddings"]), self.m.cfg.vocab_size)
        self.stats: dict = {}

    def forward(self, x):
        return self.m.forward(list(x), mask="full", moe_stats=self.stats)


@dataclass
class Case:
    name: str
    ckpt: str
    prompt_len: int
    params: GenerateParams
    note: str = ""


def _p(**kw) -> GenerateParams:
    base = dict(gen_length=16, steps=8, block_length=16)
    base.update(kw)
    return GenerateParams(**base)


A, B = "llada-moe-tiny-f32", "llada-moe-tiny-bf16-top1"
CASES = [
    Case("a_low_conf_lp6", A, 6, _p(), "top-2, one block, 2 per step"),
    Case("a_two_blocks_lp9", A, 9, _p(block_length=8), "2 blocks x 4 steps"),
    Case("a_one_per_step_lp4", A, 4, _p(steps=16, block_length=8), "steps == gen_length"),
    Case("a_t07_lp5", A, 5, _p(temperature=0.7, seed=3), "Gumbel sampling T = 0.7"),
    Case("a_cfg1_lp8", A, 8, _p(cfg_scale=1.0), "CFG 1.0 (the unconditional copy batched)"),
    Case("a_random_lp5", A, 5, _p(remasking="random", seed=5), "random remasking"),
    Case("b_top1_lp6", B, 6, _p(), "top-1 routing, BF16, tied"),
    Case("b_top1_b4_lp10", B, 10, _p(gen_length=12, steps=12, block_length=4), "block 4"),
    Case("b_top1_t1_lp5", B, 5, _p(temperature=1.0, seed=9, block_length=8), "T = 1"),
]


@dataclass
class L2Case:
    name: str
    ckpt: str
    prompt_len: int
    params: l2.Llada2Params
    note: str = ""
    require: tuple = ()      # "multi": a step commits more than its quota; "stop": early stop


def _l2(**kw) -> l2.Llada2Params:
    base = dict(gen_length=32, block_length=32, steps=32, threshold=0.95,
                stop_ids=[mh.IM_END, mh.ENDOFTEXT])
    base.update(kw)
    return l2.Llada2Params(**base)


C, D = "llada2-tiny-bf16", "llada2-tiny-f32-top1"
L2_CASES = [
    L2Case("l2_default_lp5", C, 5, _l2(), "the family's defaults: block 32, 32 steps, 0.95"),
    L2Case("l2_th05_lp10", C, 10, _l2(threshold=0.5, gen_length=24),
           "threshold 0.5: steps commit more than the quota", require=("multi",)),
    L2Case("l2_b8_s4_lp9", C, 9, _l2(block_length=8, steps=4, threshold=0.6, gen_length=24),
           "block 8 on a block-32 model; quota capped at the masks left"),
    L2Case("l2_lp40_prefix", C, 40, _l2(gen_length=16, steps=16, threshold=0.7),
           "prompt past one block: the prefix is re-run every step"),
    L2Case("l2_stop_b16", C, 6, _l2(block_length=16, steps=8, threshold=0.5, gen_length=64),
           "a stop id ends the generation", require=("stop",)),
    L2Case("l2_top1_b16_s8", D, 7, _l2(block_length=16, steps=8, threshold=0.8),
           "top-1, ungrouped, no bias, no shared expert"),
]


@dataclass
class JointCase:
    name: str
    ckpt: str
    prompt_len: int
    params: l2.JointParams
    note: str = ""
    require: tuple = ()      # "edits": some T2T edit happens; "stop": early stop


def _j(**kw) -> l2.JointParams:
    base = dict(gen_length=32, block_length=32, threshold=0.5, edit_threshold=0.0,
                max_post_edit_steps=16, stop_ids=[mh.IM_END, mh.ENDOFTEXT])
    base.update(kw)
    return l2.JointParams(**base)


JOINT_CASES = [
    JointCase("j21_default_lp5", C, 5, _j(), "SGLang's defaults: threshold 0.5, edits at any p",
              require=("edits",)),
    JointCase("j21_edit06_b16_lp9", C, 9, _j(block_length=16, edit_threshold=0.6,
                                              gen_length=32), "edits need p > 0.6"),
    JointCase("j21_b8_post2_lp7", C, 7, _j(block_length=8, threshold=0.3,
                                            max_post_edit_steps=2, gen_length=24),
              "block 8, edit budget 2", require=("edits",)),
    JointCase("j21_lp40_prefix", C, 40, _j(gen_length=16), "prompt past one block"),
    JointCase("j21_top1_b8_lp6", D, 6, _j(block_length=8, threshold=0.7, gen_length=16,
                                          max_post_edit_steps=4), "top-1 checkpoint",
              require=("edits",)),
]


def _prompt(case, attempt: int) -> list[int]:
    rng = np.random.default_rng([zlib.crc32(case.name.encode()), attempt])
    return [mh.ENDOFTEXT] + [int(v) for v in rng.integers(0, mh.NUM_TEXT_IDS, case.prompt_len - 1)]


def run_case(case: Case, models, models32) -> tuple[dict, dict]:
    m, m32 = models[case.ckpt], models32[case.ckpt]
    rejected = []
    for attempt in range(MAX_ATTEMPTS):
        params = case.params
        if attempt > 0 and (params.temperature > 0 or params.remasking == "random"):
            params = replace(params, seed=params.seed + attempt)
        prompt = _prompt(case, attempt)
        m.stats = {}
        r = generate(m, prompt, params)
        why = None
        if r.min_decision_margin < MIN_MARGIN:
            why = f"margin {r.min_decision_margin:.2e}"
        elif m.stats["min_route_margin"] < MIN_ROUTE_MARGIN:
            why = f"routing margin {m.stats['min_route_margin']:.2e}"
        elif r.committed_mask_id:
            why = "committed the mask id"
        elif len(set(r.output_ids) - {mh.MASK}) < MIN_DISTINCT:
            why = "output nearly constant"
        if why is None:
            r32 = generate(m32, prompt, params)
            if (r32.output_ids, r32.trace) != (r.output_ids, r.trace):
                why = "float32 forward gives other tokens"
        if why is not None:
            rejected.append(f"attempt {attempt}: {why}")
            continue
        golden = {
            "case": case.name, "checkpoint": case.ckpt, "prompt_ids": prompt,
            "gen_length": params.gen_length, "steps": params.steps,
            "block_length": params.block_length, "temperature": float(params.temperature),
            "cfg_scale": float(params.cfg_scale), "remasking": params.remasking,
            "logits_eos_inf": params.logits_eos_inf,
            "confidence_eos_eot_inf": params.confidence_eos_eot_inf, "seed": params.seed,
            "output_ids": r.output_ids, "nfe": r.nfe,
            "min_decision_margin": float(f"{r.min_decision_margin:.6g}"),
            "min_route_margin": float(f"{m.stats['min_route_margin']:.6g}"),
        }
        return golden, {"attempt": attempt, "rejected": rejected}
    raise RuntimeError(f"case {case.name}: no robust attempt in {MAX_ATTEMPTS}: {rejected[-5:]}")


def _search_block_case(case, models, models32, run, requirement, golden_of):
    """The first robust attempt of a LLaDA 2.x case: run(model, prompt) -> result (with trace,
    margins, first_stop_index); requirement(result) -> reason to reject or None; golden_of(prompt,
    result, route_margin) -> the golden dict."""
    m, m32 = models[case.ckpt].m, models32[case.ckpt].m
    rejected = []
    for attempt in range(MAX_ATTEMPTS):
        prompt = _prompt(case, attempt)
        stats: dict = {}
        fwd = m.forward
        m.forward = lambda *a, **k: fwd(*a, moe_stats=stats, **k)
        try:
            r = run(m, prompt)
        finally:
            m.forward = fwd
        why = None
        if r.min_decision_margin < MIN_MARGIN:
            why = f"margin {r.min_decision_margin:.2e}"
        elif stats["min_route_margin"] < MIN_ROUTE_MARGIN:
            why = f"routing margin {stats['min_route_margin']:.2e}"
        elif r.committed_mask_id:
            why = "committed the mask id"
        elif len(set(r.output_ids) - {mh.MASK}) < MIN_DISTINCT:
            why = "output nearly constant"
        elif "stop" in case.require and r.first_stop_index is None:
            why = "no early stop"
        else:
            why = requirement(r)
        if why is None:
            r32 = run(m32, prompt)
            if (r32.output_ids, r32.trace) != (r.output_ids, r.trace):
                why = "float32 forward gives other tokens"
        if why is not None:
            rejected.append(f"attempt {attempt}: {why}")
            continue
        golden = golden_of(prompt, r, float(f"{stats['min_route_margin']:.6g}"))
        return golden, {"attempt": attempt, "rejected": rejected}
    raise RuntimeError(f"case {case.name}: no robust attempt in {MAX_ATTEMPTS}: {rejected[-5:]}")


def run_l2_case(case: L2Case, models, models32) -> tuple[dict, dict]:
    p = case.params

    def golden(prompt, r, route_margin):
        return {
            "case": case.name, "algorithm": "llada2_block_diffusion", "checkpoint": case.ckpt,
            "prompt_ids": prompt, "mask_id": mh.MASK, "gen_length": p.gen_length,
            "block_length": p.block_length, "steps": p.steps, "threshold": p.threshold,
            "minimal_topk": p.minimal_topk, "temperature": 0.0, "stop_ids": list(p.stop_ids),
            "output_ids": r.output_ids, "nfe": r.nfe, "first_stop_index": r.first_stop_index,
            "trace": r.trace, "min_decision_margin": float(f"{r.min_decision_margin:.6g}"),
            "min_route_margin": route_margin,
        }

    return _search_block_case(
        case, models, models32, lambda m, prompt: l2.generate(m, prompt, p, mh.MASK),
        lambda r: ("no step committed more than its quota"
                   if "multi" in case.require and r.multi_commit_steps == 0 else None), golden)


def run_joint_case(case: JointCase, models, models32) -> tuple[dict, dict]:
    p = case.params

    def golden(prompt, r, route_margin):
        return {
            "case": case.name, "algorithm": "llada21_joint_threshold", "checkpoint": case.ckpt,
            "prompt_ids": prompt, "mask_id": mh.MASK, "gen_length": p.gen_length,
            "block_length": p.block_length, "threshold": p.threshold,
            "edit_threshold": p.edit_threshold, "max_post_edit_steps": p.max_post_edit_steps,
            "temperature": 0.0, "stop_ids": list(p.stop_ids), "output_ids": r.output_ids,
            "nfe": r.nfe, "edits": r.edits, "first_stop_index": r.first_stop_index,
            "trace": r.trace, "min_decision_margin": float(f"{r.min_decision_margin:.6g}"),
            "min_route_margin": route_margin,
        }

    return _search_block_case(
        case, models, models32, lambda m, prompt: l2.generate_joint(m, prompt, p, mh.MASK),
        lambda r: "no token was edited" if "edits" in case.require and r.edits == 0 else None,
        golden)


def readme(done, l2_done, joint_done=()) -> str:
    rows = "\n".join(
        f"| `{c.name}` | {c.ckpt} | {len(g['prompt_ids'])} | {g['gen_length']} | {g['steps']} | "
        f"{g['block_length']} | {g['temperature']} | {g['cfg_scale']} | {g['remasking']} | "
        f"{g['nfe']} | {g['min_decision_margin']:.3g} | {g['min_route_margin']:.3g} | {c.note} |"
        for c, g, _ in done)
    l2_rows = "\n".join(
        f"| `{c.name}` | {c.ckpt} | {len(g['prompt_ids'])} | {g['gen_length']} | "
        f"{g['block_length']} | {g['steps']} | {g['threshold']} | {g['nfe']} | "
        f"{g['first_stop_index']} | {g['min_decision_margin']:.3g} | "
        f"{g['min_route_margin']:.3g} | {c.note} |" for c, g, _ in l2_done)
    j_rows = "\n".join(
        f"| `{c.name}` | {c.ckpt} | {len(g['prompt_ids'])} | {g['gen_length']} | "
        f"{g['block_length']} | {g['threshold']} | {g['edit_threshold']} | "
        f"{g['max_post_edit_steps']} | {g['nfe']} | {g['edits']} | "
        f"{g['min_decision_margin']:.3g} | {c.note} |" for c, g, _ in joint_done)
    return f"""# MoE decoding goldens (LLaDA-MoE, LLaDA 2.0)

Made by `scripts/make_moe_goldens.py` (do not edit by hand):

```
.venv/bin/python scripts/make_hf_checkpoints.py   # the tiny checkpoints in tests/data/hf/
.venv/bin/python scripts/make_moe_goldens.py      # rewrites this folder
.venv/bin/python scripts/make_moe_goldens.py --check
```

Each file is one LLaDA `generate` run (scripts/reference/generate.py; the semantics and the JSON
fields of `golden/llada/`, see `golden/README.md`) on a tiny random LLaDA-MoE checkpoint folder
(`checkpoint`, under tests/data/hf/), whose forward is the float64 numpy reference with the
family's routing (softmax over all experts, top-k, no renormalisation; scripts/reference/moe.py).
`min_route_margin`: the smallest k-th minus (k+1)-th router probability over every position,
layer and forward of the run (f32 rounding of these is ~1e-7). Ids: mask {mh.MASK}, eos
{mh.IM_END}, eot {mh.ENDOFTEXT}.

| case | checkpoint | prompt | gen | steps | block | T | cfg | remasking | nfe | margin | route margin | note |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
{rows}

## LLaDA 2.0 (`l2_*.json`, `"algorithm": "llada2_block_diffusion"`)

scripts/reference/llada2_generate.py at temperature 0 (argmax; see its docstring for the
quirks decided): per block up to `steps` forwards of the whole prefix (block-causal), commit
every masked slot with confidence > `threshold` when at least the step's quota are, else the
min(quota, masks) most confident. `output_ids`: x[Lp:] of the canvas (whole blocks; masks left in
blocks never reached); `nfe`: forwards run (one per denoising step: unmask's fused schedule runs
the same count with a KV cache); `trace`: [block, step, committed positions]; `stop_ids`: the
ids that end generation after their block (the tokenizer's eos and eot).

| case | checkpoint | prompt | gen | block | steps | threshold | nfe | stop at | margin | route margin | note |
|---|---|---|---|---|---|---|---|---|---|---|---|
{l2_rows}

## LLaDA 2.1 token editing (`j21_*.json`, `"algorithm": "llada21_joint_threshold"`)

scripts/reference/llada2_generate.py `generate_joint` (SGLang's JointThreshold at temperature 0,
no 2-gram penalty): per block, every masked slot with p > `threshold` (else the most confident
one) plus every decoded non-prompt slot whose argmax differs with p > `edit_threshold`; once the
block has no masks, up to `max_post_edit_steps` editing steps; the block ends at the first step
that writes nothing. `edits`: T2T rewrites over the run; `trace` lists every written position
(M2T and T2T) per step; `nfe`: forwards run.

| case | checkpoint | prompt | gen | block | threshold | edit threshold | post-edit steps | nfe | edits | margin | note |
|---|---|---|---|---|---|---|---|---|---|---|---|
{j_rows}
"""


def build_all(root: str, progress: bool = True) -> dict[str, bytes]:
    models, models32 = {}, {}
    for name in (A, B, C, D):
        folder = os.path.join(root, mh.HF_DIR, name)
        models[name] = DiffusionView(folder, np.float64)
        models32[name] = DiffusionView(folder, np.float32)
    files, done = {}, []
    for case in CASES:
        gold, info = run_case(case, models, models32)
        files[f"{OUT_DIR}/{case.name}.json"] = mg.render_json(gold).encode()
        done.append((case, gold, info))
        if progress:
            print(f"  {case.name}: nfe {gold['nfe']} margin {gold['min_decision_margin']:.3g} "
                  f"route {gold['min_route_margin']:.3g} (attempt {info['attempt']})",
                  file=sys.stderr)
    l2_done = []
    for case in L2_CASES:
        gold, info = run_l2_case(case, models, models32)
        files[f"{OUT_DIR}/{case.name}.json"] = mg.render_json(gold).encode()
        l2_done.append((case, gold, info))
        if progress:
            print(f"  {case.name}: nfe {gold['nfe']} stop {gold['first_stop_index']} margin "
                  f"{gold['min_decision_margin']:.3g} route {gold['min_route_margin']:.3g} "
                  f"(attempt {info['attempt']})", file=sys.stderr)
    joint_done = []
    for case in JOINT_CASES:
        gold, info = run_joint_case(case, models, models32)
        files[f"{OUT_DIR}/{case.name}.json"] = mg.render_json(gold).encode()
        joint_done.append((case, gold, info))
        if progress:
            print(f"  {case.name}: nfe {gold['nfe']} edits {gold['edits']} margin "
                  f"{gold['min_decision_margin']:.3g} (attempt {info['attempt']})",
                  file=sys.stderr)
    files[f"{OUT_DIR}/README.md"] = readme(done, l2_done, joint_done).encode()
    return files


def check(root: str, files: dict[str, bytes]) -> list[str]:
    """make_goldens.check (missing or differing files) for this folder, plus its stale files."""
    problems = [p for p in mg.check(root, files) if not p.startswith(f"{mg.GOLDEN_DIR}/llada")]
    d = os.path.join(root, OUT_DIR)
    for fn in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if f"{OUT_DIR}/{fn}" not in files:
            problems.append(f"{OUT_DIR}/{fn}: stale file")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--root", default=mg.REPO, help="repository root (default: this checkout)")
    ap.add_argument("--check", action="store_true", help="compare with the files on disk")
    args = ap.parse_args()
    files = build_all(args.root)
    d = os.path.join(args.root, OUT_DIR)
    on_disk = sorted(os.listdir(d)) if os.path.isdir(d) else []
    if args.check:
        problems = check(args.root, files)
        for p in problems:
            print("MISMATCH " + p, file=sys.stderr)
        print("moe goldens: " + ("OK" if not problems else f"{len(problems)} problems"),
              file=sys.stderr)
        return 1 if problems else 0
    for fn in on_disk:
        if f"{OUT_DIR}/{fn}" not in files and fn.endswith(".json"):
            os.remove(os.path.join(d, fn))
    for rel, data in files.items():
        path = os.path.join(args.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    print(f"wrote {len(files)} files under {OUT_DIR}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
