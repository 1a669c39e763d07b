#!/usr/bin/env python3
"""Train one of the twin models on the TinyStories training split (CPU, PyTorch).

  --objective llada : the LLaDA masked-diffusion objective (Nie et al. 2025, "Large Language Diffusion
                      Models", Eq. 3; ML-GSAI/LLaDA GUIDELINES forward_process): per sequence
                      t ~ U(0, 1] (stratified over the batch by default, see sample_t),
                      p = (1 - eps) t + eps, each token masked with probability p, loss =
                      sum over masked positions of cross-entropy / p, divided by batch x length;
                      bidirectional attention.
  --objective ar    : next-token cross-entropy with causal attention.
Both twins use the same layout, size, data order, token budget, optimizer (AdamW) and schedule
(linear warm-up, cosine decay), so they differ only in the objective and the attention mask.
With --experts E (> 0) the model is an MoE twin instead (model_moe.py: the block twin's Qwen3
layout, every FFN replaced by E routed experts of width --expert-ffn, --top-k of them per position,
bidirectional for llada and causal for ar), and the loss adds the Switch load-balancing term
(--aux-weight); exported as llama.cpp's `llada-moe` or `qwen3moe` (export_moe.py).
Writes into --out-dir: checkpoint.pt, log.jsonl (one line per logged step), loss.svg (loss curves)
and, with --gguf, the exported model.

  .venv/bin/python scripts/train/train.py --objective llada --out-dir build/train/llada \\
      --gguf models/unmask-tinystories-llada.gguf
"""
import argparse
import json
import math
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX" if os.path.exists("/proc/cpuinfo") and
                      "avx512f" in open("/proc/cpuinfo").read() else "Haswell")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402
from tqdm import tqdm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import data  # noqa: E402
import plot  # noqa: E402
from model import ModelConfig, TwinModel  # noqa: E402
from model_moe import MoeConfig, MoeModel  # noqa: E402

TORCH_VERSION = "1.13.1"  # Debian 12's python3-torch (CPU), installed by scripts/install-deps.sh
MASK_EPS = 1e-3  # LLaDA forward_process eps: p_mask = (1 - eps) t + eps


def sample_t(b, gen, stratified):
    """Diffusion times t [B] in [0, 1), each marginally U(0, 1).

    stratified: one uniform draw u shared by the batch and t_i = (u + i / B) mod 1, the
    low-discrepancy sampler of MDLM (Sahoo et al. 2024, sec. 3.5.1). Every t_i is still U(0, 1),
    so the loss stays an unbiased estimate of the same LLaDA bound, but each batch covers the whole
    range of mask ratios, which lowers the variance of the 1/t-weighted loss: at batch 16 it
    leaves the unigram plateau sooner (scripts/train/sampler_experiment.py; models/README.md).
    """
    if stratified:
        return (torch.rand(1, generator=gen) + torch.arange(b) / b) % 1.0
    return torch.rand(b, generator=gen)


def llada_loss(model, x, mask_id, gen, stratified=True):
    """LLaDA masked-diffusion loss of a batch x [B, T] (an upper bound on the NLL, per token)."""
    b, n = x.shape
    t = sample_t(b, gen, stratified)
    p = (1 - MASK_EPS) * t + MASK_EPS
    masked = torch.rand(b, n, generator=gen) < p[:, None]
    logits = model(torch.where(masked, torch.full_like(x, mask_id), x))
    ce = F.cross_entropy(logits[masked], x[masked], reduction="none")
    return (ce / p[:, None].expand(b, n)[masked]).sum() / (b * n)


def ar_loss(model, x):
    """Mean next-token cross-entropy of a batch x [B, T]."""
    logits = model(x[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))


def encode_stream(tok, stories, ids):
    return data.token_stream([tok.encode(s).ids for s in stories], ids["bos"], ids["eos"])


def evaluate(model, objective, seqs, mask_id, batch):
    """Validation loss with a fixed mask draw (seed 0) so numbers are comparable across steps."""
    model.eval()
    gen = torch.Generator().manual_seed(0)
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(seqs), batch):
            x = seqs[i:i + batch]
            loss = llada_loss(model, x, mask_id, gen) if objective == "llada" else ar_loss(model, x)
            total += loss.item() * len(x)
            count += len(x)
    model.train()
    return total / max(count, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objective", choices=["llada", "ar"], required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--tokenizer", default="build/train/tokenizer.json",
                    help="tokenizer.json (made by train_tokenizer.py when missing)")
    ap.add_argument("--corpus", help="corpus file (default: ../shared/data/corpus/...)")
    ap.add_argument("--gguf", help="also export the trained model to this GGUF file")
    ap.add_argument("--vocab-size", type=int, default=3072,
                    help="vocabulary size when the tokenizer has to be trained first")
    ap.add_argument("--dim", type=int, default=192)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--ffn", type=int, default=512)
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--epochs", type=float, default=38.0)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (smoke tests)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr", type=float, default=2e-4)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--dropout", type=float, default=0.1, help="residual dropout (both twins)")
    ap.add_argument("--t-sampler", choices=["stratified", "uniform"], default="stratified",
                    help="how the batch's diffusion times are drawn (llada objective)")
    ap.add_argument("--experts", type=int, default=0,
                    help="routed experts per layer: an MoE twin (0: the dense twin)")
    ap.add_argument("--top-k", type=int, default=2, help="experts per position (MoE twin)")
    ap.add_argument("--expert-ffn", type=int, default=256, help="each expert's width (MoE twin)")
    ap.add_argument("--aux-weight", type=float, default=0.01,
                    help="weight of the load-balancing loss (MoE twin; LLaDA-MoE/OLMoE: 0.01)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: all cores)")
    args = ap.parse_args()

    if not torch.__version__.startswith(TORCH_VERSION):
        print(f"warning: PyTorch {torch.__version__}; the shipped twins were trained with "
              f"{TORCH_VERSION} (Debian 12 python3-torch), results will differ in the last bits",
              file=sys.stderr)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)

    if not Path(args.tokenizer).exists():
        import train_tokenizer
        Path(args.tokenizer).parent.mkdir(parents=True, exist_ok=True)
        train_tokenizer.train(data.load_splits(args.corpus)["train"], args.vocab_size).save(
            args.tokenizer)
    tok = Tokenizer.from_file(args.tokenizer)
    ids = {k: tok.token_to_id(v) for k, v in (("bos", data.BOS), ("eos", data.EOS),
                                               ("pad", data.PAD), ("mask", data.MASK))}
    moe = args.experts > 0
    if moe:
        cfg = MoeConfig(vocab_size=tok.get_vocab_size(), dim=args.dim, layers=args.layers,
                        heads=args.heads, head_dim=args.dim // args.heads, ffn=0,
                        context=args.context,
                        block_length=1 if args.objective == "ar" else args.context,
                        dropout=args.dropout, experts=args.experts, top_k=args.top_k,
                        expert_ffn=args.expert_ffn, aux_weight=args.aux_weight)
    else:
        cfg = ModelConfig(vocab_size=tok.get_vocab_size(), dim=args.dim, layers=args.layers,
                          heads=args.heads, ffn=args.ffn, context=args.context,
                          causal=args.objective == "ar", dropout=args.dropout)
    splits = data.load_splits(args.corpus)
    train_stream = encode_stream(tok, splits["train"], ids)
    val_seqs = torch.tensor(data.stream_windows(encode_stream(tok, splits["validation"], ids),
                                                cfg.context), dtype=torch.long)
    num_windows = len(train_stream) // cfg.context

    model = MoeModel(cfg) if moe else TwinModel(cfg)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    steps_per_epoch = math.ceil(num_windows / args.batch)
    total_steps = max(1, round(args.epochs * steps_per_epoch))
    if args.max_steps:
        total_steps = min(total_steps, args.max_steps)

    def lr_at(step):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        frac = (step - args.warmup) / max(1, total_steps - args.warmup)
        return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * min(frac, 1.0)))

    print(f"{args.objective}: {model.num_parameters() / 1e6:.2f}M parameters, "
          f"{len(train_stream)} training tokens in {num_windows} windows of {cfg.context}, "
          f"{total_steps} steps "
          f"({total_steps / steps_per_epoch:.1f} epochs, "
          f"{total_steps * args.batch * cfg.context / 1e6:.2f}M tokens)", file=sys.stderr)
    gen = torch.Generator().manual_seed(args.seed)
    order_rng = np.random.default_rng(args.seed)
    log = open(out / "log.jsonl", "w")
    start, ema, step = time.time(), None, 0
    bar = tqdm(total=total_steps, desc=args.objective, unit="step", dynamic_ncols=True)
    while step < total_steps:
        # Same data order for both twins: a fresh cut of the stream at a random offset, shuffled.
        offset = int(order_rng.integers(cfg.context))
        train_seqs = torch.tensor(data.stream_windows(train_stream, cfg.context, offset),
                                  dtype=torch.long)
        order = order_rng.permutation(len(train_seqs))
        for i in range(0, len(order), args.batch):
            if step >= total_steps:
                break
            x = train_seqs[torch.from_numpy(order[i:i + args.batch])]
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            loss = (llada_loss(model, x, ids["mask"], gen, args.t_sampler == "stratified")
                    if args.objective == "llada" else ar_loss(model, x))
            if moe:
                loss = loss + model.aux_loss()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
            record = {"step": step, "tokens": step * args.batch * cfg.context, "loss": loss.item(),
                      "lr": lr_at(step - 1), "seconds": round(time.time() - start, 2)}
            if moe:  # the routing's balance: aux (1 = uniform) and the busiest expert's share
                record["aux"] = round(model.aux_loss().item() / args.aux_weight, 4)
                record["max_load"] = round(model.expert_load().max().item(), 4)
            if step % args.eval_every == 0 or step == total_steps:
                record["val_loss"] = evaluate(model, args.objective, val_seqs, ids["mask"], args.batch)
                bar.set_postfix(loss=f"{ema:.3f}", val=f"{record['val_loss']:.3f}")
            else:
                bar.set_postfix(loss=f"{ema:.3f}")
            log.write(json.dumps(record) + "\n")
            log.flush()
            bar.update(1)
    bar.close()
    log.close()
    minutes = (time.time() - start) / 60
    name = f"unmask-tinystories-{'moe-' if moe else ''}{args.objective}"
    torch.save({"config": cfg.to_dict(), "model": model.state_dict(), "tokenizer": args.tokenizer,
                "objective": args.objective, "steps": step, "minutes": minutes, "moe": moe,
                "args": vars(args), "name": name},
               out / "checkpoint.pt")
    plot.loss_svg(out / "log.jsonl", out / "loss.svg", title=f"{name} twin")
    summary = {"objective": args.objective, "parameters": model.num_parameters(), "steps": step,
               "tokens": step * args.batch * cfg.context, "epochs": step / steps_per_epoch,
               "minutes": round(minutes, 2), "threads": torch.get_num_threads(),
               "final_train_loss_ema": ema, "final_val_loss": record.get("val_loss"),
               "torch": torch.__version__, "args": vars(args)}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"trained {step} steps in {minutes:.1f} min -> {out}/checkpoint.pt, {out}/loss.svg",
          file=sys.stderr)
    if args.gguf:
        import export_gguf
        import export_moe
        (export_moe.export if moe else export_gguf.export)(out / "checkpoint.pt", args.gguf)
        print(f"exported {args.gguf}", file=sys.stderr)


if __name__ == "__main__":
    main()
