#!/usr/bin/env python3
"""Reference Fast-dLLM v2 generation (numpy): `batch_sample` of NVlabs/Fast-dLLM
v2/generation_functions.py (upstream commit 6cf2722, read in the fork mgustineli/Fast-dLLM; docs
MODELS.md section 5) for ONE sequence (min_len = seq_len = Lp), use_block_cache=False (the eval
harness default), on an `hf_model.HFModel` of a `Fast_dLLM_QwenForCausalLM` checkpoint (Qwen2
layout). The model's forward (attention masks, `block_size` defaults) is from the HF remote code
`modeling.py`, read in third-party copies (the HF file itself is UNVERIFIED).

Algorithm (B = block_size = config `bd_size`, b = small_block_size, B % b == 0, Lp = prompt length):
  num_blocks = max_new_tokens // B + Lp // B; blocks Lp // B .. num_blocks - 1 are decoded.
  Prefill (Lp >= B, see DEVIATIONS): one forward of x[:floor(Lp/B)*B], block-causal with block B,
    storing K/V; if Lp % B == 0 the argmax of its last logits row is appended (the AR step, so the
    first decoded block starts with that token).
  Each block: append mask ids up to the block end (B - len(x) % B of them). Then for each of its
    B / b sub-blocks in order, while the sub-block holds a mask:
      logits = forward of the whole block x[lo:hi] at positions lo..hi-1 against the cache,
        WITHOUT storing (mask: see below);
      TOKEN SHIFT: row j of the block uses logits row j - 1, row 0 its own row 0;
      restricted to the sub-block: p = softmax(row) (float64; temperature 0: x1 = argmax p,
        lowest id on ties, and top_p is not applied); c = p[x1] at masked slots, -inf elsewhere;
      commit every masked slot with c > threshold, and always the slot of the largest c (first
        such slot on ties); a committed x1 equal to stop_token marks the sequence finished.
    Block without masks: if finished, every position after the first stop_token in x[Lp:] is set
      to pad_token_id and generation ends (no cache update); else one forward of the block at
      lo..hi-1 STORING its K/V, and the argmax of its last row is appended (always greedy).
  Result: x[Lp:] (unfinished: through the token appended after the last block), NFE = number of
  forward calls (prefill, every sub-block step, every storing forward).
Attention masks (modeling.py `eval_mask`: query q sees key k iff q // size >= k // size, on
  absolute positions): the prefill and the storing forwards pass block_size = B; the denoising
  forwards pass none, so the forward's default 32 applies. For B dividing 32 (the real B = 32, the
  tests' 8) both mean "the whole block and everything before it"; the default is reproduced anyway.
Temperature > 0 (top-p sampling with torch.multinomial) is not supported: goldens are T = 0 only.

DEVIATIONS from the reference (deliberate, documented):
  * Prefill when Lp >= B. The reference tests `min_len > block_size`: for Lp == B exactly it skips
    the prefill and the AR step, pads bd masks after the prompt and forwards only that block with
    an empty cache at positions 0..B-1, i.e. without the prompt -- a bug. Golden cases avoid
    Lp == B, so they hold under both readings.
  * Batch 1 only (the reference's batch bookkeeping, padding rows and per-row removal are not
    modelled); use_block_cache=True (the approximate sub-block cache) is not implemented.
UNVERIFIED: pad_token_id is the tokenizer's in the reference (`tokenizer.pad_token_id`; Qwen2.5
  tokenizers use <|endoftext|>, the 7B config.json says pad_token_id = eos = <|im_end|>); callers
  pass it explicitly (the goldens: <|endoftext|>).

Decision margins (as sdar_generate.py): every committed slot's and every appended argmax's best -
second-best logit; |c - threshold| of every masked slot of a step; the gap between the largest and
second-largest c when the second is not above the threshold (the forced commit could swap).

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

DENOISE_MASK_BLOCK = 32   # modeling.py forward(block_size=32) default, used by the denoising steps


@dataclass
class FastDllmV2Params:
    max_new_tokens: int = 32
    block_size: int = 8          # bd_size
    small_block_size: int = 4
    threshold: float = 0.9
    temperature: float = 0.0
    top_p: float = 0.95          # unused at temperature 0 (as in the reference)
    stop_token: int = 1002
    pad_token_id: int = 1002

    def validate(self) -> None:
        if self.block_size <= 0 or self.small_block_size <= 0 or \
                self.block_size % self.small_block_size:
            raise ValueError("block_size must be a positive multiple of small_block_size")
        if self.max_new_tokens <= 0:
            raise ValueError("max_new_tokens must be positive")
        if self.temperature != 0:
            raise ValueError("only temperature 0 (greedy) is specified")


@dataclass
class FastDllmV2Result:
    output_ids: list[int]                  # x[Lp:]
    nfe: int
    first_stop_index: int | None
    finished: bool
    trace: list = field(default_factory=list)   # [block, sub-block, [positions committed]]
    ar_tokens: list = field(default_factory=list)  # [position, id] of every appended argmax
    min_decision_margin: float = math.inf


def _softmax(l: np.ndarray) -> np.ndarray:
    e = np.exp(l - l.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _gap(row: np.ndarray) -> float:
    top2 = -np.partition(-row, 1)[:2]
    g = float(top2[0] - top2[1])
    return g if g != 0 else math.inf


def generate(model: HFModel, prompt_ids, params: FastDllmV2Params, mask_id: int,
             on_forward=None) -> FastDllmV2Result:
    p = params
    p.validate()
    B, b = p.block_size, p.small_block_size
    x = [int(t) for t in prompt_ids]
    lp = len(x)
    if lp == 0:
        raise ValueError("empty prompt")
    res = FastDllmV2Result(output_ids=[], nfe=0, first_stop_index=None, finished=False)
    margin = math.inf
    cache = model.new_cache()

    def fwd(lo: int, hi: int, store: bool, mask_block: int) -> np.ndarray:
        res.nfe += 1
        return model.forward(x[lo:hi], np.arange(lo, hi), mask="block", block_length=mask_block,
                             cache=cache, store_kv=store)

    def append_argmax(row: np.ndarray) -> None:
        nonlocal margin
        margin = min(margin, _gap(row))
        tok = int(np.argmax(row))
        res.ar_tokens.append([len(x), tok])
        x.append(tok)

    if lp >= B:
        logits = fwd(0, lp // B * B, True, B)
        if lp % B == 0:
            append_argmax(logits[-1])
    num_blocks = p.max_new_tokens // B + lp // B
    for block_idx in range(lp // B, num_blocks):
        x.extend([mask_id] * (B - len(x) % B))
        lo, hi = block_idx * B, (block_idx + 1) * B
        assert len(x) == hi
        for sb in range(B // b):
            s, e = lo + sb * b, lo + (sb + 1) * b
            while any(t == mask_id for t in x[s:e]):
                logits = fwd(lo, hi, False, DENOISE_MASK_BLOCK)
                if on_forward is not None:
                    on_forward(block_idx, sb, logits)
                shifted = np.concatenate([logits[:1], logits[:-1]])[s - lo:e - lo]
                probs = _softmax(shifted)
                x1 = probs.argmax(-1)
                conf = probs[np.arange(b), x1]
                masked = np.array([t == mask_id for t in x[s:e]])
                c = np.where(masked, conf, -np.inf)
                unmask = c > p.threshold
                best = int(np.argmax(c))
                unmask[best] = True
                unmask &= masked
                for v in conf[masked]:
                    if v != p.threshold:
                        margin = min(margin, abs(float(v) - p.threshold))
                order = np.sort(c[masked])[::-1]
                if order.size > 1 and order[1] <= p.threshold and order[0] != order[1]:
                    margin = min(margin, float(order[0] - order[1]))
                for j in np.flatnonzero(unmask):
                    margin = min(margin, _gap(shifted[j]))
                    x[s + j] = int(x1[j])
                    if x1[j] == p.stop_token:
                        res.finished = True
                res.trace.append([block_idx, sb, [s + int(j) for j in np.flatnonzero(unmask)]])
        if res.finished:
            first = x.index(p.stop_token, lp)
            x[first + 1:] = [p.pad_token_id] * (len(x) - first - 1)
            break
        logits = fwd(lo, hi, True, B)
        append_argmax(logits[-1])
    out = x[lp:]
    res.output_ids = out
    res.first_stop_index = out.index(p.stop_token) if p.stop_token in out else None
    res.min_decision_margin = margin
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description="Reference Fast-dLLM v2 generation (JSON).")
    ap.add_argument("folder", help="Fast_dLLM_QwenForCausalLM checkpoint folder")
    ap.add_argument("--prompt-ids", required=True, help="comma-separated prompt token ids")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--block-size", type=int, default=None, help="default: config bd_size")
    ap.add_argument("--small-block-size", type=int, default=4)
    ap.add_argument("--threshold", type=float, default=0.9)
    ap.add_argument("--mask-id", type=int, required=True)
    ap.add_argument("--stop-token", type=int, default=None, help="default: config eos_token_id")
    ap.add_argument("--pad-token-id", type=int, default=None,
                    help="default: config pad_token_id (the reference: the tokenizer's)")
    args = ap.parse_args()
    m = HFModel(args.folder)
    c = m.cfg.raw
    params = FastDllmV2Params(
        max_new_tokens=args.max_new_tokens, block_size=args.block_size or int(c["bd_size"]),
        small_block_size=args.small_block_size, threshold=args.threshold,
        stop_token=args.stop_token if args.stop_token is not None else int(c["eos_token_id"]),
        pad_token_id=args.pad_token_id if args.pad_token_id is not None else
        int(c["pad_token_id"]))
    r = generate(m, [int(v) for v in args.prompt_ids.split(",")], params, args.mask_id)
    print(json.dumps({"output_ids": r.output_ids, "nfe": r.nfe,
                      "first_stop_index": r.first_stop_index, "trace": r.trace,
                      "ar_tokens": r.ar_tokens, "min_decision_margin": r.min_decision_margin}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
