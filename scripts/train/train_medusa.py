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

The base forward runs once over the data (its hidden states are cached), then the heads train on
the cache: a CPU budget of minutes for the twins.

  .venv/bin/python scripts/train/train_medusa.py --base models/unmask-tinystories-ar.gguf \\
      --stream build/train/distill-ar.npy --out models/unmask-tinystories-ar.medusa.gguf
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
from gguf_model import load_model  # noqa: E402
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


def hidden_states(model, windows, batch, threads):
    """The base model's final normed hidden states [N, T, dim] (f32) of windows [N, T]."""
    torch.set_num_threads(threads)
    out = []
    with torch.no_grad():
        for i in tqdm(range(0, len(windows), batch), desc="base forward (features)", unit="batch",
                      dynamic_ncols=True):
            ids = torch.from_numpy(windows[i:i + batch]).long()
            x = model.tok_embd(ids)
            for b in model.blocks:
                x = b(x, model.cos, model.sin, model.causal_mask)
            out.append(model.norm(x))
    return torch.cat(out)


def losses(heads, h, ids, k_heads, weights):
    """Per-head CE (nats/token) of the heads on features h [B, T, dim] for ids [B, T]."""
    logits = heads(h)  # [K, B, T, V]
    per_head = []
    T = ids.shape[1]
    for k in range(k_heads):
        shift = 2 + k  # head k at position t predicts x_{t+2+k}
        lk = logits[k, :, :T - shift].reshape(-1, logits.shape[-1])
        per_head.append(F.cross_entropy(lk, ids[:, shift:].reshape(-1)))
    total = sum(w * l for w, l in zip(weights, per_head))
    return total, per_head


@torch.no_grad()
def evaluate(heads, model, h, ids, k_heads, batch):
    """Held-out: per-head top-1 agreement with the data and the mean accepted chain length."""
    agree = np.zeros(k_heads)
    accepted_sum, positions = 0.0, 0
    T = ids.shape[1]
    span = T - 1 - k_heads  # positions t with every head's target inside the window
    for i in range(0, len(ids), batch):
        hb, xb = h[i:i + batch], ids[i:i + batch]
        guess = heads(hb[:, :span]).argmax(-1)  # [K, B, span]
        ok = torch.stack([guess[k] == xb[:, 2 + k:2 + k + span] for k in range(k_heads)])
        agree += ok.float().sum(dim=(1, 2)).numpy()
        # Accepted length of a chain: leading heads all right (the base's own next token x_{t+1}
        # is what the verification commits anyway).
        run = torch.cumprod(ok.int(), dim=0).sum(0)
        accepted_sum += float(run.sum())
        positions += run.numel()
    return {"agree": (agree / positions).tolist(), "accepted_len": accepted_sum / positions}


def export(heads, kv, path, layers, dim, vocab):
    w = gguf.GGUFWriter(str(path), "medusa")
    w.add_name("Medusa heads for " + kv.get("general.name", "the base model"))
    w.add_uint32("medusa.head_count", len(heads.blocks))
    w.add_uint32("medusa.layer_count", layers)
    w.add_uint32("medusa.embedding_length", dim)
    w.add_uint32("medusa.vocab_size", vocab)
    for k, head in enumerate(heads.blocks):
        for j, lin in enumerate(head):
            w.add_tensor(f"medusa.blk.{k}.res.{j}.weight", lin.weight.detach().numpy().astype(np.float32))
            w.add_tensor(f"medusa.blk.{k}.res.{j}.bias", lin.bias.detach().numpy().astype(np.float32))
    # Frozen: the base head's values exactly (the base file stores it as f16).
    w.add_tensor("medusa.output.weight", heads.output.detach().numpy().astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default=str(REPO / "models/unmask-tinystories-ar.gguf"))
    ap.add_argument("--stream", required=True,
                    help="int32 .npy token stream (make_distill_data.py)")
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
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--log-dir", default=str(REPO / "build/train/medusa"),
                    help="log.jsonl, summary.json and loss.svg")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    t0 = time.time()

    model, kv = load_model(args.base)
    for p in model.parameters():
        p.requires_grad_(False)
    cfg = model.cfg
    stream = np.load(args.stream).astype(np.int64)
    T = cfg.context
    n = len(stream) // T
    windows = stream[:n * T].reshape(n, T)
    n_val = max(1, int(n * args.val_fraction))
    h_all = hidden_states(model, windows, 32, args.threads)
    ids_all = torch.from_numpy(windows)
    h_tr, x_tr, h_va, x_va = h_all[:-n_val], ids_all[:-n_val], h_all[-n_val:], ids_all[-n_val:]

    heads = MedusaHeads(args.heads, args.layers, cfg.dim, model.output.weight.detach(),
                        args.train_output)
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
    before = evaluate(heads, model, h_va, x_va, args.heads, 64)
    step = 0
    bar = tqdm(total=total, desc="Medusa heads", unit="step", dynamic_ncols=True)
    for epoch in range(args.epochs):
        order = torch.randperm(len(h_tr))
        for i in range(0, len(order), args.batch):
            idx = order[i:i + args.batch]
            loss, per_head = losses(heads, h_tr[idx], x_tr[idx], args.heads, weights)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            row = {"step": step, "epoch": epoch, "loss": float(loss),
                   "head_loss": [float(l) for l in per_head]}
            if step % 50 == 0 or step == total - 1:
                with torch.no_grad():
                    vl, _ = losses(heads, h_va, x_va, args.heads, weights)
                row["val_loss"] = float(vl)
                bar.set_postfix(loss=f"{float(loss):.3f}", val=f"{float(vl):.3f}")
            log.write(json.dumps(row) + "\n")
            step += 1
            bar.update(1)
    bar.close()
    log.close()
    after = evaluate(heads, model, h_va, x_va, args.heads, 64)
    export(heads, kv, args.out, args.layers, cfg.dim, cfg.vocab_size)
    plot.loss_svg(log_dir / "log.jsonl", log_dir / "loss.svg",
                  title=f"Medusa heads ({args.heads} x {args.layers} block): weighted loss")
    summary = {"base": args.base, "out": args.out, "heads": args.heads, "layers": args.layers,
               "train_output": args.train_output, "lr": args.lr, "windows_train": len(h_tr), "windows_val": n_val, "tokens": int(n * T),
               "epochs": args.epochs, "steps": total, "seconds": round(time.time() - t0, 1),
               "threads": args.threads, "val_before": before, "val_after": after}
    (log_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary), file=sys.stderr)


if __name__ == "__main__":
    main()
