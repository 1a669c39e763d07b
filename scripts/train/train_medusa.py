#!/usr/bin/env python3
"""Trains Medusa draft heads for an AR model of the project and exports them as BASE.medusa.gguf.

Medusa-1 (Cai et al. 2024, arXiv:2401.10774, sections 2.1 and 2.3): the base model is frozen; K
heads read its final hidden state h_t (after the output RMSNorm, the input of its output
projection) and head k (0-based) predicts token t+2+k. Each head is one residual block and a
projection to the vocabulary:

    r = h_t + SiLU(W_k h_t + b_k);  logits_k = W_out r

W_k starts at zero, so every head starts as the base head itself; W_out is the base model's output
projection, copied and frozen (the heads are tied to the base head by value). The loss is
sum_k 0.8^k CE(logits_k, x_{t+2+k}) (Medusa's decaying weights).

Data (self-distillation, Medusa section 2.3.2): the base model's own greedy continuations of
training-split prefixes (scripts/train/make_distill_data.py), so the heads learn what the verifier
will accept, not what a human wrote. The stream is cut into windows of the base context; the last
--val-fraction of the windows is held out and reports each head's top-1 agreement and the mean
accepted length a greedy chain of the K heads would reach on it (the number of leading heads whose
guess is the base's next tokens: tokens per target forward = 1 + that).

Chat models (SmolLM2): --samples takes the .npz of scripts/train/make_chat_distill_data.py (the
model's greedy answers to prompt sets); the loss and the held-out figures count only the positions
that draft at inference, from the last prompt token (whose row gives the first answer token) to the
end of the answer. --draft-vocab N restricts the heads' output to the N most frequent answer tokens
of the training rows (EAGLE-3 / FR-Spec's reduced draft vocabulary: the output projection is the
heads' main cost for a 49k vocabulary); targets outside it count as misses.

The base forward (scripts/train/llama_gguf.py, any llama-architecture GGUF, dequantized to f32)
runs once over the data (its hidden states are cached), then the heads train on the cache: a CPU
budget of minutes.

  .venv/bin/python scripts/train/train_medusa.py --base models/unmask-tinystories-ar.gguf \\
      --stream build/train/distill-ar.npy --out models/unmask-tinystories-ar.medusa.gguf
  .venv/bin/python scripts/train/train_medusa.py --base $(scripts/fetch-smollm2.sh) \\
      --samples build/train/distill-smollm2.npz --draft-vocab 4096 --out build/train/smollm2.medusa.gguf
"""
import argparse
import json
import math
import sys
import time
from pathlib import Path

import gguf
import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts" / "train"))
from llama_gguf import LlamaGguf  # noqa: E402
import plot  # noqa: E402


class MedusaHeads(torch.nn.Module):
    """K heads of `layers` residual blocks over hidden states [.., dim]; frozen output [vocab, dim]."""

    def __init__(self, k, layers, dim, output_weight, train_output=False):
        super().__init__()
        self.blocks = torch.nn.ModuleList(
            torch.nn.ModuleList(torch.nn.Linear(dim, dim) for _ in range(layers)) for _ in range(k))
        for head in self.blocks:
            for lin in head:
                torch.nn.init.zeros_(lin.weight)
                torch.nn.init.zeros_(lin.bias)
        if train_output:  # one projection shared by the heads, starting from the base head
            self.output = torch.nn.Parameter(output_weight.clone())
        else:
            self.register_buffer("output", output_weight.clone(), persistent=False)

    def forward(self, h):
        """h [..., dim] -> logits [K, ..., vocab]."""
        outs = []
        for head in self.blocks:
            r = h
            for lin in head:
                r = r + F.silu(lin(r))
            outs.append(r @ self.output.T)
        return torch.stack(outs)


def hidden_states(base, ids, lengths, batch, threads, bf16=False):
    """The base model's final normed hidden states [N, T, dim] (f32) of rows ids [N, T], each
    valid up to its length (rows are batched by length; padding is causal-invisible). bf16: the
    matrix products in bfloat16 (torch's CPU autocast: AMX / AVX512-BF16, ~10x faster here)."""
    torch.set_num_threads(threads)
    out = torch.zeros(ids.shape[0], ids.shape[1], base.dim)
    order = np.argsort(lengths)
    for i in tqdm(range(0, len(order), batch), desc="base forward (features)", unit="batch",
                  dynamic_ncols=True):
        rows = order[i:i + batch]
        T = int(lengths[rows].max())
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            out[rows, :T] = base.features(ids[rows, :T]).float()
    return out


def targets(ids, first, length, k_heads, remap):
    """Per head k: the target of every position t (x_{t+2+k} as a draft-vocabulary index) or -100
    where it does not count: t outside [first, length - 2 - k) or a target outside the draft
    vocabulary. ids [B, T]; first, length [B]. Returns [K, B, T] int64."""
    B, T = ids.shape
    t = torch.arange(T)[None, :]
    out = torch.full((k_heads, B, T), -100, dtype=torch.long)
    for k in range(k_heads):
        s = 2 + k
        y = torch.full((B, T), -100, dtype=torch.long)
        y[:, :T - s] = remap[ids[:, s:]]
        ok = (t >= first[:, None]) & (t < (length[:, None] - s))
        out[k] = torch.where(ok, y, torch.full_like(y, -100))
    return out


def losses(heads, h, y, weights):
    """Per-head CE (nats/token) on features h [B, T, dim] for targets y [K, B, T] (-100: none);
    only the positions where some head has a target run through the heads."""
    keep = (y >= 0).any(0)
    logits = heads(h[keep])  # [K, N, V]
    yk = y[:, keep]
    per_head = [F.cross_entropy(logits[k], yk[k], ignore_index=-100)
                for k in range(len(weights))]
    return sum(w * l for w, l in zip(weights, per_head)), per_head


@torch.no_grad()
def evaluate(heads, h, ids, first, length, k_heads, remap, batch):
    """Held-out: per-head top-1 agreement with the data (over the positions where head 0 counts)
    and the mean accepted chain length (leading heads all right; a head whose target lies past
    the end of the row counts as wrong)."""
    agree = np.zeros(k_heads)
    accepted_sum, positions = 0.0, 0
    for i in range(0, len(ids), batch):
        sl = slice(i, i + batch)
        y = targets(ids[sl], first[sl], length[sl], k_heads, remap)
        real = targets(ids[sl], first[sl], length[sl], k_heads, torch.arange(len(remap)))
        guess = heads(h[sl]).argmax(-1)  # [K, B, T]
        ok = (guess == y) & (y >= 0)
        counted = real[0] >= 0  # positions with at least one target
        agree += (ok & counted[None]).float().sum(dim=(1, 2)).numpy()
        run = torch.cumprod(ok.int(), dim=0).sum(0)
        accepted_sum += float(run[counted].sum())
        positions += int(counted.sum())
    return {"agree": (agree / positions).tolist(), "accepted_len": accepted_sum / positions,
            "positions": positions}


def export(heads, kv, path, layers, dim, vocab, draft_ids):
    w = gguf.GGUFWriter(str(path), "medusa")
    w.add_name("Medusa heads for " + kv.get("general.name", "the base model"))
    w.add_uint32("medusa.head_count", len(heads.blocks))
    w.add_uint32("medusa.layer_count", layers)
    w.add_uint32("medusa.embedding_length", dim)
    w.add_uint32("medusa.vocab_size", vocab)
    if draft_ids is not None:
        w.add_array("medusa.draft_vocab", [int(i) for i in draft_ids])
    for k, head in enumerate(heads.blocks):
        for j, lin in enumerate(head):
            w.add_tensor(f"medusa.blk.{k}.res.{j}.weight", lin.weight.detach().numpy().astype(np.float32))
            w.add_tensor(f"medusa.blk.{k}.res.{j}.bias", lin.bias.detach().numpy().astype(np.float32))
    # The base head's rows (of the draft vocabulary), f16 (the twin stores its head as f16).
    w.add_tensor("medusa.output.weight", heads.output.detach().numpy().astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default=str(REPO / "models/unmask-tinystories-ar.gguf"))
    data_arg = ap.add_mutually_exclusive_group(required=True)
    data_arg.add_argument("--stream", help="int32 .npy token stream (make_distill_data.py), cut "
                          "into windows of the base context")
    data_arg.add_argument("--samples", help=".npz of prompt + answer rows "
                          "(make_chat_distill_data.py)")
    ap.add_argument("--draft-vocab", type=int, default=0,
                    help="output over the N most frequent answer tokens (0: the whole vocabulary)")
    ap.add_argument("--context", type=int, default=0, help="--stream window (0: the base's)")
    ap.add_argument("--out", required=True, help="GGUF of the heads to write")
    ap.add_argument("--heads", type=int, default=4, help="K, the number of heads")
    ap.add_argument("--layers", type=int, default=1, help="residual blocks per head")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--batch", type=int, default=16, help="windows per step")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--train-output", action="store_true",
                    help="train the heads' shared output projection (from the base head) instead "
                         "of keeping it frozen (Medusa-1 keeps it frozen)")
    ap.add_argument("--val-fraction", type=float, default=0.05)
    ap.add_argument("--max-rows", type=int, default=0, help="use only the first N rows (smoke tests)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--log-dir", default=str(REPO / "build/train/medusa"),
                    help="log.jsonl, summary.json and loss.svg")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    t0 = time.time()

    base = LlamaGguf(args.base)
    kv = base.kv
    if args.stream:
        stream = np.load(args.stream).astype(np.int64)
        T = args.context or base.context
        n = len(stream) // T
        ids_all = torch.from_numpy(stream[:n * T].reshape(n, T))
        length = torch.full((n,), T)
        first = torch.zeros(n, dtype=torch.long)
    else:
        d = np.load(args.samples)
        ids_all = torch.from_numpy(d["tokens"].astype(np.int64))
        length = torch.from_numpy(d["length"].astype(np.int64))
        first = torch.from_numpy(d["prompt_length"].astype(np.int64)) - 1
        n = len(ids_all)
        # a fixed shuffle, so the held-out rows come from every prompt set
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(1234))
        ids_all, length, first = ids_all[perm], length[perm], first[perm]
    if args.max_rows and args.max_rows < n:
        n = args.max_rows
        ids_all, length, first = ids_all[:n], length[:n], first[:n]
    n_val = max(1, int(n * args.val_fraction))
    h_all = hidden_states(base, ids_all, length.numpy(), 8, args.threads)
    tr, va = slice(0, n - n_val), slice(n - n_val, n)
    # The base's own greedy agreement with the data (the features' check: ~1 on its own greedy
    # text, less where the data was written by unmask's quantized kernels and tokenized back).
    hits = total = 0
    with torch.no_grad():
        for j in range(n - n_val, n, 4):
            r = slice(j, min(j + 4, n))
            y0 = targets(ids_all[r], first[r] - 1, length[r], 1, torch.arange(base.vocab))[0]
            # y0 at t is x_{t+2}; the base's row t+1 predicts it
            pred = (h_all[r][:, 1:] @ base.output.T).argmax(-1)
            m = y0[:, :-1] >= 0
            hits += int((pred[m] == y0[:, :-1][m]).sum())
            total += int(m.sum())
    base_agree = hits / max(total, 1)
    print(f"base model's agreement with the held-out data: {base_agree:.3f}", file=sys.stderr)
    # Draft vocabulary: the most frequent targets of the training rows.
    remap = torch.arange(base.vocab)
    draft_ids = None
    output = base.output
    if args.draft_vocab and args.draft_vocab < base.vocab:
        y = targets(ids_all[tr], first[tr], length[tr], 1, torch.arange(base.vocab))[0]
        counts = torch.bincount(y[y >= 0], minlength=base.vocab)
        draft_ids = torch.argsort(counts, descending=True, stable=True)[:args.draft_vocab]
        draft_ids = torch.sort(draft_ids).values
        remap = torch.full((base.vocab,), -100, dtype=torch.long)
        remap[draft_ids] = torch.arange(len(draft_ids))
        output = base.output[draft_ids]
        print(f"draft vocabulary: {len(draft_ids)} tokens, "
              f"{float(counts[draft_ids].sum() / counts.sum()):.1%} of the training targets",
              file=sys.stderr)
    h_tr, x_tr, f_tr, l_tr = h_all[tr], ids_all[tr], first[tr], length[tr]
    h_va, x_va, f_va, l_va = h_all[va], ids_all[va], first[va], length[va]

    heads = MedusaHeads(args.heads, args.layers, base.dim, output, args.train_output)
    opt = torch.optim.AdamW([p for p in heads.parameters() if p.requires_grad], lr=args.lr,
                            weight_decay=0.0)
    weights = [0.8 ** k for k in range(args.heads)]
    steps_per_epoch = math.ceil(len(h_tr) / args.batch)
    total = steps_per_epoch * args.epochs
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 50) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    log_dir = Path(args.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    log = (log_dir / "log.jsonl").open("w")
    before = evaluate(heads, h_va, x_va, f_va, l_va, args.heads, remap, 16)
    step = 0
    bar = tqdm(total=total, desc="Medusa heads", unit="step", dynamic_ncols=True)
    for epoch in range(args.epochs):
        order = torch.randperm(len(h_tr))
        for i in range(0, len(order), args.batch):
            idx = order[i:i + args.batch]
            y = targets(x_tr[idx], f_tr[idx], l_tr[idx], args.heads, remap)
            loss, per_head = losses(heads, h_tr[idx], y, weights)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            row = {"step": step, "epoch": epoch, "loss": float(loss),
                   "head_loss": [float(l) for l in per_head]}
            if step % 50 == 0 or step == total - 1:
                with torch.no_grad():
                    vl = sum(losses(heads, h_va[j:j + 16], targets(
                        x_va[j:j + 16], f_va[j:j + 16], l_va[j:j + 16], args.heads, remap),
                        weights)[0] * len(h_va[j:j + 16]) for j in range(0, len(h_va), 16))
                    vl = vl / len(h_va)
                row["val_loss"] = float(vl)
                bar.set_postfix(loss=f"{float(loss):.3f}", val=f"{float(vl):.3f}")
            log.write(json.dumps(row) + "\n")
            step += 1
            bar.update(1)
    bar.close()
    log.close()
    after = evaluate(heads, h_va, x_va, f_va, l_va, args.heads, remap, 16)
    export(heads, kv, args.out, args.layers, base.dim, base.vocab,
           None if draft_ids is None else draft_ids.numpy())
    plot.loss_svg(log_dir / "log.jsonl", log_dir / "loss.svg",
                  title=f"Medusa heads ({args.heads} x {args.layers} block): weighted loss")
    summary = {"base": args.base, "out": args.out, "heads": args.heads, "layers": args.layers,
               "train_output": args.train_output, "lr": args.lr, "rows_train": len(h_tr),
               "rows_val": n_val, "tokens": int(length.sum()),
               "draft_vocab": 0 if draft_ids is None else len(draft_ids),
               "base_agreement_val": base_agree,
               "epochs": args.epochs, "steps": total, "seconds": round(time.time() - t0, 1),
               "threads": args.threads, "val_before": before, "val_after": after}
    (log_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary), file=sys.stderr)


if __name__ == "__main__":
    main()
