#!/usr/bin/env python3
"""Short training runs that compare ways of drawing the diffusion time t for the LLaDA loss.

At batch 16 the 1/t-weighted LLaDA loss is noisy: a window with a small t has a few masked tokens
with large weights. This trains a small bidirectional model (hidden 192, 4 layers, context 128) for
--steps steps on the TinyStories train split with each sampler and prints the held-out-free
validation cross-entropy at mask ratios 0.15, 0.5 and 0.9 (the unigram entropy of the data is
5.99 nats; a model below it at low mask ratios has learned to use context):

  uniform    : t ~ U(0, 1) per window (LLaDA's forward_process), p = (1 - 1e-3) t + 1e-3
  stratified : t_i = (u + i / B) mod 1 with one u ~ U(0, 1) per batch (MDLM's low-discrepancy
               sampler; each t_i is still U(0, 1), so the loss estimates the same bound)
  count      : l ~ U{1..T} tokens masked exactly, weight T / l (LLaDA paper Eq. 6's estimator)
  fixed      : every token masked with p = 0.15, unweighted (BERT-style control, not the LLaDA loss)
  ar         : the same model with causal attention and next-token loss (control; its column is the
               next-token cross-entropy, the same number in all three)

  .venv/bin/python scripts/train/sampler_experiment.py --steps 150 uniform stratified count fixed
"""
import argparse
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import data  # noqa: E402
from model import ModelConfig, TwinModel  # noqa: E402
from train import MASK_EPS, sample_t  # noqa: E402


def masks(kind, b, n, gen):
    """(masked [B, T] bool, p [B] float: the per-window masking probability used as 1/p weight)."""
    if kind == "count":
        count = torch.randint(1, n + 1, (b,), generator=gen)
        rank = torch.rand(b, n, generator=gen).argsort(1).argsort(1)
        return rank < count[:, None], count.float() / n
    if kind == "fixed":
        p = torch.full((b,), 0.15)
    else:
        p = (1 - MASK_EPS) * sample_t(b, gen, kind == "stratified") + MASK_EPS
    return torch.rand(b, n, generator=gen) < p[:, None], p


def next_token_ce(model, x):
    logits = model(x[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))


def run(kind, train, val, mask_id, steps, lr):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = TwinModel(ModelConfig(vocab_size=3072, dim=192, layers=4, heads=6, ffn=512,
                                  context=train.shape[1], causal=kind == "ar"))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1)
    start = time.time()
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr * min(1.0, (step + 1) / 30)
        x = train[torch.randint(len(train), (16,), generator=gen)]
        b, n = x.shape
        if kind == "ar":
            loss = next_token_ce(model, x)
        else:
            masked, p = masks(kind, b, n, gen)
            logits = model(torch.where(masked, torch.full_like(x, mask_id), x))
            ce = F.cross_entropy(logits[masked], x[masked], reduction="none")
            weight = torch.ones_like(ce) if kind == "fixed" else 1 / p[:, None].expand(b, n)[masked]
            loss = (ce * weight).sum() / (b * n)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    model.eval()
    gen = torch.Generator().manual_seed(1)
    result = []
    with torch.no_grad():
        for ratio in (0.15, 0.5, 0.9):
            if kind == "ar":
                result.append(next_token_ce(model, val).item())
                continue
            masked = torch.rand(val.shape, generator=gen) < ratio
            logits = model(torch.where(masked, torch.full_like(val, mask_id), val))
            result.append(F.cross_entropy(logits[masked], val[masked]).item())
    return result, time.time() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("samplers", nargs="+", choices=["uniform", "stratified", "count", "fixed", "ar"])
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--tokenizer", default="build/train/tokenizer.json")
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(args.tokenizer)
    ids = {k: tok.token_to_id(v) for k, v in (("bos", data.BOS), ("eos", data.EOS),
                                               ("mask", data.MASK))}
    splits = data.load_splits()

    def windows(stories):
        stream = data.token_stream([tok.encode(s).ids for s in stories], ids["bos"], ids["eos"])
        return torch.tensor(data.stream_windows(stream, 128), dtype=torch.long)

    train, val = windows(splits["train"]), windows(splits["validation"])[:32]
    print("| sampler | CE at mask 0.15 | at 0.5 | at 0.9 | seconds |\n|---|---:|---:|---:|---:|")
    for kind in args.samplers:
        (a, b, c), sec = run(kind, train, val, ids["mask"], args.steps, args.lr)
        print(f"| {kind} | {a:.2f} | {b:.2f} | {c:.2f} | {sec:.0f} |", flush=True)


if __name__ == "__main__":
    main()
