#!/usr/bin/env python3
"""Reference greedy autoregressive generation (numpy) for Qwen2/Qwen3-layout HF checkpoints, on
`hf_model.HFModel` with the causal mask.

Algorithm: one forward of the prompt (positions 0 .. Lp-1) storing its K/V; then repeatedly
x = argmax of the last logits row (float64; equal logits -> lowest id), append x, forward x alone
at the next position against the cache, storing its K/V; exactly max_new_tokens tokens, no early
stop (an engine that stops at a stop id must match the output up to and including
`first_stop_index`). use_cache=False recomputes the whole prefix every step (the self-check).
Margin: the smallest best - second-best logit gap of any step (how far an argmax is from flipping).

Usage as a script: print the generated ids of a folder for a list of prompt ids.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

import numpy as np

from hf_model import HFModel


@dataclass
class ArResult:
    output_ids: list[int]
    first_stop_index: int | None
    min_decision_margin: float
    nfe: int


def greedy(model: HFModel, prompt_ids, max_new_tokens: int, stop_ids=(),
           use_cache: bool = True) -> ArResult:
    ids = [int(t) for t in prompt_ids]
    if not ids or max_new_tokens <= 0:
        raise ValueError("need a prompt and max_new_tokens > 0")
    cache = model.new_cache() if use_cache else None
    logits = model.forward(ids, cache=cache, store_kv=use_cache)[-1]
    out, margin = [], math.inf
    for i in range(max_new_tokens):
        top2 = -np.partition(-logits, 1)[:2]
        if top2[0] != top2[1]:
            margin = min(margin, float(top2[0] - top2[1]))
        tok = int(np.argmax(logits))
        out.append(tok)
        ids.append(tok)
        if i + 1 == max_new_tokens:
            break
        if use_cache:
            logits = model.forward([tok], cache=cache, store_kv=True)[-1]
        else:
            logits = model.forward(ids)[-1]
    stops = set(int(s) for s in stop_ids)
    first = next((i for i, t in enumerate(out) if t in stops), None)
    return ArResult(out, first, margin, nfe=max_new_tokens)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--prompt-ids", required=True, help="comma-separated prompt ids")
    ap.add_argument("-n", "--max-new-tokens", type=int, default=16)
    ap.add_argument("--f32", action="store_true", help="run the forward pass in float32")
    args = ap.parse_args()
    m = HFModel(args.folder, np.float32 if args.f32 else np.float64)
    eos = (m.generation_config or {}).get("eos_token_id", [])
    r = greedy(m, [int(v) for v in args.prompt_ids.split(",")], args.max_new_tokens,
               eos if isinstance(eos, list) else [eos])
    print(",".join(map(str, r.output_ids)), f"first_stop_index={r.first_stop_index}",
          f"margin={r.min_decision_margin:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
