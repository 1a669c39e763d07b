#!/usr/bin/env python3
"""Evaluate the twins on the held-out stories and write docs/models.md.

Metrics on the held-out split (the last 5% of stories, never trained on), laid out as in training:
the stories packed into one stream (BOS story EOS BOS story EOS ...) cut into 256-token windows (the
last one padded with EOS; padding is never scored):
  * AR twin: exact negative log-likelihood of every token of a window given the tokens before it in
    the window (the first token of a window is not scored); perplexity = exp(NLL per token).
  * Diffusion twin: the LLaDA ELBO bound on the NLL of each window (Nie et al. 2025, Eq. 3; the
    training loss with fresh masks): K Monte-Carlo draws of t ~ U(0,1] and masks per window (fixed
    seed), the bound is the mean over draws of sum_masked CE / p_mask, per token. It upper-bounds
    the NLL, so exp(bound) bounds the perplexity from above.
Samples: 10 stories per model from the openings of 10 held-out stories, temperature 0.8, seeds 1-10;
the diffusion twin runs in unmask's own engine (`unmask generate`, LLaDA reference decoding, 128 tokens,
block 32, one token per step), the AR twin in PyTorch from the same GGUF weights (unmask's AR path
comes later).

  .venv/bin/python scripts/train/evaluate.py --out docs/models.md
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import data  # noqa: E402
import gguf_model  # noqa: E402
import plot  # noqa: E402
from train import MASK_EPS  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def windows(tok, stories, context, bos, eos):
    """Packed windows [N, context] (last one EOS-padded) and the real length of each."""
    stream = data.token_stream([tok.encode(s).ids for s in stories], bos, eos)
    seqs, lengths = [], []
    for i in range(0, len(stream), context):
        w = stream[i:i + context]
        lengths.append(len(w))
        seqs.append(w + [eos] * (context - len(w)))
    return torch.tensor(seqs), lengths


def real_positions(x, lengths):
    return torch.arange(x.shape[1])[None, :] < torch.tensor(lengths)[:, None]


def ar_nll(model, x, lengths):
    """Total next-token NLL over the windows (padding excluded) and the number of scored tokens."""
    real = real_positions(x, lengths)
    total = 0.0
    with torch.no_grad():
        for i in range(0, len(x), 8):
            xb, rb = x[i:i + 8], real[i:i + 8, 1:]
            logits = model(xb[:, :-1])
            ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), xb[:, 1:].reshape(-1),
                                 reduction="none").view(rb.shape)
            total += ce[rb].sum().item()
    return total, int(real[:, 1:].sum())


def llada_bound(model, x, lengths, mask_id, samples, seed):
    """Monte-Carlo LLaDA ELBO bound on the total NLL of the windows' real tokens, and their count."""
    real = real_positions(x, lengths)
    gen = torch.Generator().manual_seed(seed)
    total = 0.0
    with torch.no_grad():
        for i in range(0, len(x), 8):
            xb, rb = x[i:i + 8], real[i:i + 8]
            b, n = xb.shape
            for _ in range(samples):
                t = torch.rand(b, generator=gen)
                p = (1 - MASK_EPS) * t + MASK_EPS
                masked = (torch.rand(b, n, generator=gen) < p[:, None]) & rb
                logits = model(torch.where(masked, torch.full_like(xb, mask_id), xb))
                ce = F.cross_entropy(logits[masked], xb[masked], reduction="none")
                total += (ce / p[:, None].expand(b, n)[masked]).sum().item() / samples
    return total, int(real.sum())


def run_summary(run_dir):
    """summary.json of a training run, or the same facts from its checkpoint and log; None."""
    if (run_dir / "summary.json").exists():
        return json.loads((run_dir / "summary.json").read_text())
    if not (run_dir / "checkpoint.pt").exists() or not (run_dir / "log.jsonl").exists():
        return None
    ck = torch.load(run_dir / "checkpoint.pt", map_location="cpu")
    rows = [json.loads(l) for l in (run_dir / "log.jsonl").read_text().splitlines() if l]
    val = [r["val_loss"] for r in rows if "val_loss" in r]
    a = ck["args"]
    return {"parameters": sum(t.numel() for t in ck["model"].values()), "steps": ck["steps"],
            "tokens": rows[-1]["tokens"], "epochs": a["epochs"], "minutes": ck["minutes"],
            "threads": a["threads"], "final_val_loss": val[-1] if val else float("nan")}


def opening(story, words=4):
    return " ".join(story.split()[:words])


def sample_ar(model, tok, prompt, bos, eos, seed, max_new=128, temperature=0.8):
    gen = torch.Generator().manual_seed(seed)
    ids = [bos] + tok.encode(prompt).ids
    with torch.no_grad():
        for _ in range(max_new):
            logits = model(torch.tensor([ids[-model.cfg.context:]]))[0, -1] / temperature
            nxt = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen).item()
            if nxt == eos:
                break
            ids.append(nxt)
    return tok.decode(ids[1:])


def sample_diffusion(unmask, gguf, prompt, seed):
    cmd = [str(unmask), "generate", "-m", str(gguf), "-p", prompt, "--gen-length", "128",
           "--steps", "128", "--block-length", "32", "--temperature", "0.8", "--seed", str(seed),
           "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    j = json.loads(out)
    return prompt + j["text"], j


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llada", default=str(REPO / "models/unmask-tinystories-llada.gguf"))
    ap.add_argument("--ar", default=str(REPO / "models/unmask-tinystories-ar.gguf"))
    ap.add_argument("--unmask", default=str(REPO / "build/release/bin/unmask"))
    ap.add_argument("--samples", type=int, default=16, help="Monte-Carlo draws for the ELBO bound")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(REPO / "docs/models.md"))
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads or os.cpu_count() or 1)

    held_out = data.load_splits()["held_out"]
    llada, kv_l = gguf_model.load_model(args.llada)
    ar, kv_a = gguf_model.load_model(args.ar)
    tok = gguf_model.load_tokenizer(kv_l)
    bos, eos = kv_l["tokenizer.ggml.bos_token_id"], kv_l["tokenizer.ggml.eos_token_id"]
    mask = kv_l["tokenizer.ggml.mask_token_id"]
    x, lengths = windows(tok, held_out, llada.cfg.context, bos, eos)

    t0 = time.time()
    ar_total, n_tok = ar_nll(ar, x, lengths)
    print(f"AR NLL done ({time.time() - t0:.0f} s)", file=sys.stderr)
    t0 = time.time()
    ll_total, n_tok_ll = llada_bound(llada, x, lengths, mask, args.samples, args.seed)
    print(f"diffusion bound done ({time.time() - t0:.0f} s)", file=sys.stderr)
    ar_nll_tok, ll_nll_tok = ar_total / n_tok, ll_total / n_tok_ll

    prompts = [opening(s) for s in held_out[:10]]
    diff_samples, ar_samples = [], []
    for i, p in enumerate(prompts):
        diff_samples.append(sample_diffusion(args.unmask, args.llada, p, seed=i + 1)[0])
        ar_samples.append(sample_ar(ar, tok, p, bos, eos, seed=i + 1))
        print(f"samples {i + 1}/10", file=sys.stderr)

    runs = {o: REPO / "build" / "train" / o for o in ("llada", "ar")}
    summaries = {o: sm for o, d in runs.items() if (sm := run_summary(d))}
    img = Path(args.out).parent / "img"
    if all((d / "log.jsonl").exists() for d in runs.values()):
        img.mkdir(parents=True, exist_ok=True)
        plot.twins_svg([("diffusion (LLaDA bound)", runs["llada"] / "log.jsonl"),
                        ("AR (NLL)", runs["ar"] / "log.jsonl")], img / "twins-loss.svg")
    lines = ["# The project's TinyStories twins: evaluation", "",
             "Made by `.venv/bin/python scripts/train/evaluate.py` (see its docstring for the exact "
             "method); models and training: [models/README.md](../models/README.md).", "",
             f"Held-out split: the last {len(held_out)} stories of "
             "`tinystories_train_head_944k.txt` (5%), "
             f"packed into {len(x)} windows of {llada.cfg.context} tokens ({n_tok_ll} tokens; the AR "
             f"twin scores {n_tok}: all but the first token of each window).", "",
             "| model | metric | NLL / token (nats) | perplexity |", "|---|---|---:|---:|",
             f"| AR twin (`{Path(args.ar).name}`) | exact NLL | {ar_nll_tok:.4f} | "
             f"{math.exp(ar_nll_tok):.2f} |",
             f"| diffusion twin (`{Path(args.llada).name}`) | LLaDA ELBO bound, {args.samples} "
             f"MC draws, seed {args.seed} | ≤ {ll_nll_tok:.4f} | ≤ {math.exp(ll_nll_tok):.2f} |", "",
             "The diffusion number is an upper bound (the ELBO), the AR number exact: the gap "
             "overstates the difference between the models by the looseness of the bound.", ""]
    if summaries:
        lines += ["## Training", "",
                  "From `build/train/{llada,ar}/summary.json` (written by `train.py`). Losses in "
                  "nats per token: the diffusion twin's is the LLaDA bound, the AR twin's the "
                  "next-token NLL, both on the validation split.", "",
                  "| twin | parameters | steps | tokens | epochs | wall time | threads | "
                  "final validation loss |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for o, sm in summaries.items():
            lines.append(f"| {o} | {sm['parameters'] / 1e6:.2f}M | {sm['steps']} | "
                         f"{sm['tokens'] / 1e6:.2f}M | {sm['epochs']:.1f} | "
                         f"{sm['minutes']:.1f} min | {sm['threads']} | "
                         f"{sm['final_val_loss']:.3f} |")
        lines.append("")
        if (img / "twins-loss.svg").exists():
            lines += ["![loss curves of both twins](img/twins-loss.svg)", ""]
    lines += ["## Samples", "",
              "Openings (first 4 words) of the first 10 held-out stories; temperature 0.8, seeds "
              "1-10; 128 new tokens at most. Diffusion: `unmask generate -m "
              f"{Path(args.llada).name} -p OPENING --gen-length 128 --steps 128 --block-length 32 "
              "--temperature 0.8 --seed N` (EOS and padding not shown). AR: PyTorch sampling from "
              "the GGUF weights, stopping at EOS.", ""]
    for i, p in enumerate(prompts):
        lines += [f"### {i + 1}. “{p}…” (seed {i + 1})", "", "**Diffusion twin:**", "",
                  "> " + diff_samples[i].strip().replace("\n", "\n> "), "", "**AR twin:**", "",
                  "> " + ar_samples[i].strip().replace("\n", "\n> "), ""]
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(json.dumps({"ar_nll_per_token": ar_nll_tok, "ar_perplexity": math.exp(ar_nll_tok),
                      "llada_bound_per_token": ll_nll_tok,
                      "llada_perplexity_bound": math.exp(ll_nll_tok), "tokens": n_tok}))


if __name__ == "__main__":
    main()
