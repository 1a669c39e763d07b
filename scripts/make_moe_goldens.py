#!/usr/bin/env python3
"""(Re)create the LLaDA-MoE decoding goldens: tests/data/golden/moe/<case>.json.

The tiny random LLaDA-MoE checkpoints of tests/data/hf/ (scripts/make_hf_checkpoints.py:
`llada-moe-tiny-f32`, 8 experts top-2; `llada-moe-tiny-bf16-top1`, 4 experts top-1) decoded by
the LLaDA reference `generate` (scripts/reference/generate.py: ML-GSAI/LLaDA generate.py, the
loop llama.cpp's diffusion CLI and dInfer run LLaDA-MoE with; MODELS.md section 2.2) over the
numpy MoE forward (scripts/reference/hf_model.py + moe.py, bidirectional attention). The
SDAR-MoE and Qwen3-MoE goldens live with their dense siblings (scripts/make_block_goldens.py).

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
    def require(self, key):
        return SPECIAL[key]

    def get(self, key, default=None):
        return SPECIAL.get(key, default)


@dataclass
class _Cfg:
    n_ctx: int
    n_vocab: int


class DiffusionView:
    """An HF MoE folder as generate.py's model: a full bidirectional forward of the canvas."""

    def __init__(self, folder: str, dtype):
        self.m = HFModel(folder, dtype)
        self.gguf = _Keys()
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


def _prompt(case: Case, attempt: int) -> list[int]:
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


def readme(done) -> str:
    rows = "\n".join(
        f"| `{c.name}` | {c.ckpt} | {len(g['prompt_ids'])} | {g['gen_length']} | {g['steps']} | "
        f"{g['block_length']} | {g['temperature']} | {g['cfg_scale']} | {g['remasking']} | "
        f"{g['nfe']} | {g['min_decision_margin']:.3g} | {g['min_route_margin']:.3g} | {c.note} |"
        for c, g, _ in done)
    return f"""# LLaDA-MoE decoding goldens

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
"""


def build_all(root: str, progress: bool = True) -> dict[str, bytes]:
    models, models32 = {}, {}
    for name in (A, B):
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
    files[f"{OUT_DIR}/README.md"] = readme(done).encode()
    return files


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
        problems = [f"{OUT_DIR}/{fn}: stale file" for fn in on_disk
                    if f"{OUT_DIR}/{fn}" not in files]
        for rel, data in files.items():
            path = os.path.join(args.root, rel)
            if not os.path.exists(path):
                problems.append(f"{rel}: missing")
            elif open(path, "rb").read() != data:
                problems.append(f"{rel}: content differs")
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
