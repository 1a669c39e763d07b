#!/usr/bin/env python3
"""Reference LLaDA 2.0 block-diffusion generation and LLaDA 2.1 token editing (numpy; the
latter at the end of the file), following the HF remote code's
`LLaDA2MoeModelLM.generate` (docs MODELS.md section 3.4; copy read: yks23/Information-Gain-Sampler
dllm/pipelines/llada2/models/modeling_llada2_moe.py; SGLang's `LowConfidence` algorithm is the
same rule), batch 1, at temperature 0, on an `hf_model.HFModel` (the LLaDA2 forward with
block-causal attention).

Algorithm (B = block_length, Lp = prompt length, G = gen_length):
  steps = min(steps, G // minimal_topk). Canvas x = prompt + mask ids, ceil((Lp + G) / B) * B
  long; attention is block-causal over blocks of B (query block i sees key blocks <= i).
  Schedule: B // steps per step, the remainder B % steps one each to the FIRST steps.
  For each block b from floor(Lp / B) (it may hold the prompt's tail):
    repeat at most `steps` times (step i):
      no mask in the block -> next block;
      logits = forward of the WHOLE prefix x[:end of block] (the reference keeps no KV cache;
        block-causal attention makes the block's logits those of a cached forward);
      x0 = argmax of the block's logits (lowest id on ties), p = softmax(logits)[x0];
      confidence = p on masked slots, -inf elsewhere; quota = schedule[i];
      if #(confidence > threshold) >= quota: commit all those;
      else commit the min(quota, #masks) most confident (equal: lower position first).
    After the block: stop if a stop id occurs in x[Lp:].
  Result: x[Lp:] (masks left in blocks never reached) and NFE = the forwards run.

Decided here, as for SDAR (MODELS.md section 3.4 quirk): temperature 0 is argmax; the copy read
skips the division and still samples with `multinomial` at T = 1, other copies take the argmax
(which the current HF file does is UNVERIFIED). Differences from SDAR's generate.py
(sdar_generate.py): the quota is capped at the masks left (SDAR over-commits), at most `steps`
iterations per block (SDAR: steps + 1 with a store forward), no KV cache, threshold 0.95,
block 32, steps 32. eos_early_stop (default False) is not modelled; the HF function also cuts
the output after the first EOS, a presentation step left to the caller.

Decision margins as sdar_generate.py: sampling (argmax gap of committed slots) and selection
(|confidence - threshold| of every competing slot, the quota boundary gap of a fallback step).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hf_model import HFModel
from sdar_generate import _gap_at, _Margins, get_num_transfer_tokens, sample_greedy, top_n


@dataclass
class Llada2Params:
    gen_length: int = 2048
    block_length: int = 32
    steps: int = 32
    threshold: float = 0.95
    minimal_topk: int = 1
    stop_ids: list = field(default_factory=list)


@dataclass
class Llada2Result:
    output_ids: list
    nfe: int
    min_sampling_margin: float = math.inf
    min_selection_margin: float = math.inf
    committed_mask_id: bool = False
    first_stop_index: int | None = None
    multi_commit_steps: int = 0          # steps that committed more than their quota
    trace: list = field(default_factory=list)   # [block, step, committed positions]

    @property
    def min_decision_margin(self) -> float:
        return min(self.min_sampling_margin, self.min_selection_margin)


def generate(model: HFModel, prompt_ids, p: Llada2Params, mask_id: int) -> Llada2Result:
    if p.gen_length < 1 or p.block_length < 1 or p.steps < 1 or p.minimal_topk < 1:
        raise ValueError("gen_length, block_length, steps and minimal_topk must be positive")
    steps = min(p.steps, p.gen_length // p.minimal_topk)
    B = p.block_length
    prompt = [int(t) for t in prompt_ids]
    lp = len(prompt)
    if lp == 0:
        raise ValueError("empty prompt")
    total = (lp + p.gen_length + B - 1) // B * B
    x = np.full(total, mask_id, dtype=np.int64)
    x[:lp] = prompt
    schedule = get_num_transfer_tokens(B, steps)
    stops = set(int(s) for s in p.stop_ids)
    res = Llada2Result(output_ids=[], nfe=0)
    m = _Margins()
    for b in range(lp // B, total // B):
        lo, hi = b * B, (b + 1) * B
        for i in range(steps):
            blk = x[lo:hi]                                   # a view: commits write into x
            masked = blk == mask_id
            if not masked.any():
                break
            res.nfe += 1
            logits = model.forward(x[:hi], np.arange(hi), mask="block", block_length=B)[lo:hi]
            x0, conf_all, _, gaps = sample_greedy(logits)
            conf = np.where(masked, conf_all, -np.inf)
            quota = schedule[i]
            high = conf > p.threshold
            for v in conf_all[masked]:
                m.select(float(v) - p.threshold)
            transfer = np.zeros(B, dtype=bool)
            if int(high.sum()) >= quota:
                transfer = high
                if int(high.sum()) > quota:
                    res.multi_commit_steps += 1
            else:
                n = min(quota, int(masked.sum()))
                transfer[top_n(conf, n)] = True
                m.select(_gap_at(np.sort(conf_all[masked])[::-1], n))
            m.sample(gaps[transfer])
            if np.any(x0[transfer] == mask_id):
                res.committed_mask_id = True
            res.trace.append([b, i, [lo + int(j) for j in np.flatnonzero(transfer)]])
            blk[transfer] = x0[transfer]
        if stops and any(int(t) in stops for t in x[lp:]):
            break
    res.output_ids = [int(t) for t in x[lp:]]
    res.first_stop_index = next((i for i, t in enumerate(res.output_ids) if t in stops), None)
    res.min_sampling_margin, res.min_selection_margin = m.sampling, m.selection
    return res


# ------------------------------------------------------------------------------------------------
# LLaDA 2.1: joint mask-to-token (M2T) and token-to-token (T2T) editing, following SGLang's
# `JointThreshold` (sgl-project/sglang python/sglang/srt/dllm/algorithm/joint_threshold.py;
# MODELS.md section 3.5; ALGORITHMS.md section 5.3), batch 1, temperature 0, no 2-gram penalty:
#   per block (from floor(Lp / B)), with P = the block's slots holding the prompt at its start:
#     for at most B + max_post_edit_steps iterations:
#       logits of the block (here: the whole prefix, block-causal); x = argmax; p = softmax[x];
#       masks left: M2T = masked slots with p > threshold, or (none) the single most confident
#         masked slot (equal: lower position);
#       no masks left: post_edit += 1; post_edit > max_post_edit_steps -> the block ends, nothing
#         written;
#       T2T = slots not masked, not in P, whose current token != x and p > edit_threshold;
#       nothing to write -> the block ends; else write x at M2T | T2T.
#     Stop after the block if a stop id occurs in x[Lp:].
#   NFE = the forwards run. (SGLang adds one store forward when the last iteration still changed
#   the block; with a KV cache written by every forward that is the next block's first forward's
#   job in unmask's fused schedule, so it is not counted here.)
# Margins: sampling (argmax gaps of written slots), selection (|p - threshold| of masked slots,
# |p - edit_threshold| of edit candidates, the top-1 fallback's gap).


@dataclass
class JointParams:
    gen_length: int = 512
    block_length: int = 32
    threshold: float = 0.5
    edit_threshold: float = 0.0
    max_post_edit_steps: int = 16
    stop_ids: list = field(default_factory=list)


def generate_joint(model: HFModel, prompt_ids, p: JointParams, mask_id: int) -> Llada2Result:
    B = p.block_length
    prompt = [int(t) for t in prompt_ids]
    lp = len(prompt)
    if lp == 0:
        raise ValueError("empty prompt")
    total = (lp + p.gen_length + B - 1) // B * B
    x = np.full(total, mask_id, dtype=np.int64)
    x[:lp] = prompt
    stops = set(int(s) for s in p.stop_ids)
    res = Llada2Result(output_ids=[], nfe=0)
    res.edits = 0
    m = _Margins()
    for b in range(lp // B, total // B):
        lo, hi = b * B, (b + 1) * B
        blk = x[lo:hi]
        in_prompt = np.arange(lo, hi) < lp
        post_edit = 0
        for it in range(B + p.max_post_edit_steps):
            res.nfe += 1
            logits = model.forward(x[:hi], np.arange(hi), mask="block", block_length=B)[lo:hi]
            x0, conf_all, _, gaps = sample_greedy(logits)
            masked = blk == mask_id
            transfer = np.zeros(B, dtype=bool)
            if masked.any():
                conf = np.where(masked, conf_all, -np.inf)
                transfer = conf > p.threshold
                for v in conf_all[masked]:
                    m.select(float(v) - p.threshold)
                if not transfer.any():
                    transfer[top_n(conf, 1)] = True
                    m.select(_gap_at(np.sort(conf_all[masked])[::-1], 1))
            else:
                post_edit += 1
                if post_edit > p.max_post_edit_steps:
                    break
            editable = ~masked & ~in_prompt & (blk != x0)
            for v in conf_all[editable]:
                m.select(float(v) - p.edit_threshold)
            edit = editable & (conf_all > p.edit_threshold)
            # An edit decision also hangs on the argmax itself (x0 != current token).
            m.sample(gaps[~masked & ~in_prompt])
            transfer |= edit
            if not transfer.any():
                break
            m.sample(gaps[transfer])
            res.edits += int(edit.sum())
            res.trace.append([b, it, [lo + int(j) for j in np.flatnonzero(transfer)]])
            blk[transfer] = x0[transfer]
        if stops and any(int(t) in stops for t in x[lp:]):
            break
    res.output_ids = [int(t) for t in x[lp:]]
    res.first_stop_index = next((i for i, t in enumerate(res.output_ids) if t in stops), None)
    res.min_sampling_margin, res.min_selection_margin = m.sampling, m.selection
    return res
