#!/usr/bin/env python3
"""Trains an EAGLE draft layer for an AR model of the project and exports it as BASE.eagle.gguf.

EAGLE (Li et al. 2024, arXiv:2401.15077, section 4): the base model is frozen; the draft layer
(scripts/train/eagle_model.py, src/model/eagle_head.h) reads the base's final normed hidden state
f_j and the embedding of the token t_{j+1} that followed, and guesses f_{j+1}; the base head's
rows of the draft vocabulary (frozen) turn the guess into draft logits for t_{j+2}. The loss is
EAGLE's: smooth-L1 between the guess and the real f_{j+1}, plus --w-cls times the cross-entropy of
the draft logits against t_{j+2}.

Deeper draft levels feed the layer its own guesses. Training-time test (EAGLE-3, Li et al. 2025,
arXiv:2503.01840, section 3.2) trains that too: pass 1 runs on the real features; pass k >= 2 runs
at every position j on (pass k-1's guess of f_j, t_{j+1}), and its query sees the real keys up to
position j-k+1 plus one key of each earlier pass on the diagonal (positions j-k+2 .. j): exactly
the keys the drafter's tree node at depth k sees at inference. --passes K (default 3) sets the
depth trained; pass k's loss is weighted 0.8^(k-1).

Data (self-distillation, as EAGLE trains on the target's own answers): the twin's greedy
continuations (scripts/train/make_distill_data.py, a token stream cut into windows) or a chat
model's greedy answers (scripts/train/make_chat_distill_data.py; the loss then counts only the
positions that draft at inference, from the last prompt token on). The base forward
(scripts/train/llama_gguf.py) runs once over the data and its features are cached; held-out rows
report each pass's top-1 agreement with the data and the mean accepted chain length a greedy
chain of --passes levels would reach.

  .venv/bin/python scripts/train/train_eagle.py --base models/unmask-tinystories-ar.gguf \\
      --stream build/train/distill-ar.npy --out models/unmask-tinystories-ar.eagle.gguf
  .venv/bin/python scripts/train/train_eagle.py --base $(scripts/fetch-smollm2.sh) \\
      --samples build/train/distill-smollm2.npz --draft-vocab 4096 --out build/train/smollm2.eagle.gguf
"""
import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts" / "train"))
from eagle_model import EagleLayer  # noqa: E402
from llama_gguf import LlamaGguf  # noqa: E402
import plot  # noqa: E402
from train_medusa import hidden_states  # noqa: E402  (the cached base forward)


def multipass(layer, ids, feats, passes):
    """Training-time test over rows ids [B, T], real features feats [B, T, dim]: per pass k the
    guesses g_k [B, T, dim] and draft logits [B, T, n_draft] at every position (see the module
    docstring for the keys each pass sees)."""
    B, T, _ = feats.shape
    pos = torch.arange(T)[None].expand(B, T)
    tok = torch.zeros_like(ids)
    tok[:, :-1] = ids[:, 1:]  # the token after each position
    i = torch.arange(T)
    out = []
    ks, vs = [], []
    f = feats
    for k in range(1, passes + 1):
        x, q, kk, vv = layer.project(tok, f, pos)
        ks.append(kk)
        vs.append(vv)
        # real keys: position i <= j - k + 1; pass m keys (m = 2..k): position j - k + m only
        blocks = [layer.scores(q, ks[0]).masked_fill(
            ~(i[None, :] <= i[:, None] - k + 1)[None, None], float("-inf"))]
        vals = [vs[0]]
        for m in range(2, k + 1):
            shift = k - m  # key position = j - shift
            km = ks[m - 1].repeat_interleave(layer.heads // layer.kv_heads, dim=2)
            km = torch.roll(km, shifts=shift, dims=1)  # km[j] = key at j - shift
            s = (q * km).sum(-1) / math.sqrt(layer.hd)  # [B, T, H]
            valid = (i >= shift)[None, :, None]
            s = s.masked_fill(~valid, float("-inf"))
            blocks.append(s.permute(0, 2, 1)[..., None])  # [B, H, T, 1]
            vm = vs[m - 1].repeat_interleave(layer.heads // layer.kv_heads, dim=2)
            vals.append(torch.roll(vm, shifts=shift, dims=1))
        p = torch.cat(blocks, dim=-1).softmax(-1)  # [B, H, T, T + k - 1]
        o = layer.mix(p[..., :T], vs[0])
        for m in range(2, k + 1):
            o = o + torch.einsum("bhq,bqhd->bqhd", p[..., T + m - 2], vals[m - 1]).reshape(B, T, -1)
        g, logits = layer.finish(x, o)
        out.append((g, logits))
        # the next pass feeds, at position j, this pass's guess of f_j (made at j - 1)
        f = torch.zeros_like(g)
        f[:, 1:] = g[:, :-1]
    return out


def masks(length, first, T, passes):
    """Per pass k (0-based): positions j whose guess counts, [B, T] bool: the chain's anchor
    j - k (its last real input) at or after `first` (the first anchor that drafts at inference:
    the prompt's last position for chat rows) and a target t_{j+2} inside the row."""
    j = torch.arange(T)[None, :]
    return [(j - k >= first[:, None]) & (j + 2 < length[:, None]) for k in range(passes)]


def loss_fn(out, feats, ids, ms, remap, w_cls):
    total, per = 0.0, []
    for k, (g, logits) in enumerate(out):
        m = ms[k]
        tgt_f = torch.zeros_like(feats)
        tgt_f[:, :-1] = feats[:, 1:]
        y = torch.full_like(ids, -100)
        y[:, :-2] = remap[ids[:, 2:]]
        y = torch.where(m, y, torch.full_like(y, -100))
        reg = F.smooth_l1_loss(g[m], tgt_f[m]) if m.any() else g.sum() * 0
        cls = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1),
                              ignore_index=-100) if (y >= 0).any() else g.sum() * 0
        total = total + (0.8 ** k) * (reg + w_cls * cls)
        per.append((float(reg), float(cls)))
    return total, per


@torch.no_grad()
def evaluate(layer, ids, feats, length, first, passes, remap, batch):
    """Held-out: per pass the top-1 agreement with t_{j+2} over the counted positions, and the
    mean greedy chain length (leading passes all right at the same j - k + 1 anchor)."""
    agree = np.zeros(passes)
    counted = np.zeros(passes)
    chain_sum, anchors = 0.0, 0
    for s in range(0, len(ids), batch):
        sl = slice(s, s + batch)
        x, f, ln, fi = ids[sl], feats[sl], length[sl], first[sl]
        out = multipass(layer, x, f, passes)
        ms = masks(ln, fi, x.shape[1], passes)
        T = x.shape[1]
        ok = torch.zeros(passes, x.shape[0], T, dtype=torch.bool)
        for k, (_, logits) in enumerate(out):
            logits = logits.float()
            y = torch.full_like(x, -100)
            y[:, :-2] = remap[x[:, 2:]]
            hit = (logits.argmax(-1) == y) & (y >= 0)
            agree[k] += float((hit & ms[k]).sum())
            counted[k] += float(ms[k].sum())
            ok[k] = hit & ms[k]
        # chain anchored at real position a: pass k+1 predicts at position a + k
        run = torch.ones(x.shape[0], T, dtype=torch.long)
        length_sum = torch.zeros(x.shape[0], T)
        for k in range(passes):
            shifted = torch.zeros_like(ok[k])
            shifted[:, :T - k] = ok[k][:, k:]
            run = run * shifted.long()
            length_sum += run
        a = ms[0]
        chain_sum += float(length_sum[a].sum())
        anchors += int(a.sum())
    return {"agree": (agree / np.maximum(counted, 1)).tolist(),
            "accepted_len": chain_sum / max(anchors, 1), "positions": anchors}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default=str(REPO / "models/unmask-tinystories-ar.gguf"))
    data_arg = ap.add_mutually_exclusive_group(required=True)
    data_arg.add_argument("--stream", help="int32 .npy token stream (make_distill_data.py)")
    data_arg.add_argument("--samples", help=".npz of prompt + answer rows "
                          "(make_chat_distill_data.py)")
    ap.add_argument("--draft-vocab", type=int, default=0,
                    help="draft logits over the N most frequent answer tokens (0: all)")
    ap.add_argument("--ffn", type=int, default=0, help="the layer's FFN size (0: the base's)")
    ap.add_argument("--dtype", choices=["f16", "q8_0"], default="f16",
                    help="the exported matrices' type (q8_0: half the bytes per drafter pass)")
    ap.add_argument("--context", type=int, default=0, help="--stream window (0: the base's)")
    ap.add_argument("--out", required=True, help="GGUF of the draft layer to write")
    ap.add_argument("--passes", type=int, default=3, help="training-time-test depth")
    ap.add_argument("--w-cls", type=float, default=0.1, help="weight of the token loss")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--batch", type=int, default=8, help="rows per step")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--val-fraction", type=float, default=0.05)
    ap.add_argument("--max-rows", type=int, default=0, help="use only the first N rows (smoke tests)")
    ap.add_argument("--max-len", type=int, default=0, help="cut rows to N tokens (0: keep)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bf16", action="store_true",
                    help="matrix products in bfloat16 (torch autocast; AMX or AVX512-BF16 make "
                         "them ~10x faster than f32 on this project's CPUs); weights stay f32")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--log-dir", default=str(REPO / "build/train/eagle"),
                    help="log.jsonl, summary.json and loss.svg")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    t0 = time.time()

    base = LlamaGguf(args.base)
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
        # after the prefill the drafter's last real input is the prompt's last position
        # (f_{P-1}, first answer token), whose guess gives the first drafted token
        first = torch.from_numpy(d["prompt_length"].astype(np.int64)) - 1
        n = len(ids_all)
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(1234))
        ids_all, length, first = ids_all[perm], length[perm], first[perm]
    if args.max_len:
        ids_all = ids_all[:, :args.max_len]
        length = length.clamp(max=args.max_len)
    if args.max_rows and args.max_rows < n:
        n = args.max_rows
        ids_all, length, first = ids_all[:n], length[:n], first[:n]
    first = first.clamp(min=0)
    n_val = max(1, int(n * args.val_fraction))
    feats_all = hidden_states(base, ids_all, length.numpy(), 8, args.threads, args.bf16)
    tr, va = slice(0, n - n_val), slice(n - n_val, n)

    remap = torch.arange(base.vocab)
    draft_ids = None
    output = base.output
    if args.draft_vocab and args.draft_vocab < base.vocab:
        j = torch.arange(ids_all.shape[1])[None, :]
        counted = (j >= first[tr, None] + 1) & (j < length[tr, None])
        counts = torch.bincount(ids_all[tr][counted], minlength=base.vocab)
        draft_ids = torch.sort(torch.argsort(counts, descending=True, stable=True)[
            :args.draft_vocab]).values
        remap = torch.full((base.vocab,), -100, dtype=torch.long)
        remap[draft_ids] = torch.arange(len(draft_ids))
        output = base.output[draft_ids]
        print(f"draft vocabulary: {len(draft_ids)} tokens, "
              f"{float(counts[draft_ids].sum() / counts.sum()):.1%} of the training targets",
              file=sys.stderr)

    layer = EagleLayer(base.dim, base.heads, base.kv_heads, args.ffn or base.w[
        "blk.0.ffn_gate.weight"].shape[0], base.eps, base.rope_base,
        base.w["token_embd.weight"], output)
    opt = torch.optim.AdamW([p for p in layer.parameters() if p.requires_grad], lr=args.lr,
                            weight_decay=0.0)
    steps_per_epoch = math.ceil((n - n_val) / args.batch)
    total = steps_per_epoch * args.epochs
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 50) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    log_dir = Path(args.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    log = (log_dir / "log.jsonl").open("w")
    x_va, f_va, l_va, fi_va = ids_all[va], feats_all[va], length[va], first[va]
    step = 0
    bar = tqdm(total=total, desc="EAGLE layer", unit="step", dynamic_ncols=True)
    for epoch in range(args.epochs):
        # Shuffled, then sorted by length within windows of 32 batches: little padding, random
        # batch order.
        order = torch.randperm(n - n_val)
        win = 32 * args.batch
        batches = []
        for w0 in range(0, len(order), win):
            chunk = order[w0:w0 + win]
            chunk = chunk[torch.argsort(length[chunk])]
            batches += [chunk[s:s + args.batch] for s in range(0, len(chunk), args.batch)]
        for b in torch.randperm(len(batches)).tolist():
            idx = batches[b]
            Tb = int(length[idx].max())
            x, f = ids_all[idx, :Tb], feats_all[idx, :Tb]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
                out = multipass(layer, x, f, args.passes)
                out = [(g.float(), lg.float()) for g, lg in out]
            loss, per = loss_fn(out, f, x, masks(length[idx], first[idx], Tb, args.passes), remap,
                                args.w_cls)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(layer.parameters(), 1.0)
            opt.step()
            sched.step()
            row = {"step": step, "epoch": epoch, "loss": float(loss),
                   "pass_loss": [r + args.w_cls * c for r, c in per]}
            if step % 100 == 0 or step == total - 1:
                with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16,
                                                     enabled=args.bf16):
                    vl, cnt = 0.0, 0
                    for v in range(0, len(x_va), 8):
                        Tv = int(l_va[v:v + 8].max())
                        o = [(g.float(), lg.float()) for g, lg in
                             multipass(layer, x_va[v:v + 8, :Tv], f_va[v:v + 8, :Tv], args.passes)]
                        vl += float(loss_fn(o, f_va[v:v + 8, :Tv], x_va[v:v + 8, :Tv],
                                            masks(l_va[v:v + 8], fi_va[v:v + 8], Tv, args.passes),
                                            remap, args.w_cls)[0]) * len(o[0][0])
                        cnt += len(o[0][0])
                row["val_loss"] = vl / max(cnt, 1)
                bar.set_postfix(loss=f"{float(loss):.3f}", val=f"{row['val_loss']:.3f}")
            log.write(json.dumps(row) + "\n")
            step += 1
            bar.update(1)
    bar.close()
    log.close()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
        after = evaluate(layer, x_va, f_va, l_va, fi_va, args.passes, remap, 8)
    layer.export(args.out, "EAGLE draft layer for " + str(base.kv.get("general.name", "the base")),
                 base.vocab, None if draft_ids is None else draft_ids.numpy(), args.dtype)
    plot.loss_svg(log_dir / "log.jsonl", log_dir / "loss.svg",
                  title=f"EAGLE draft layer ({args.passes} passes): weighted loss")
    summary = {"base": args.base, "out": args.out, "passes": args.passes, "w_cls": args.w_cls,
               "ffn": layer.ffn, "lr": args.lr, "rows_train": n - n_val, "rows_val": n_val,
               "tokens": int(length.sum()),
               "draft_vocab": 0 if draft_ids is None else len(draft_ids),
               "epochs": args.epochs, "steps": total, "seconds": round(time.time() - t0, 1),
               "threads": args.threads, "val_after": after}
    (log_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary), file=sys.stderr)


if __name__ == "__main__":
    main()
