#!/usr/bin/env python3
"""Train the block-diffusion twin (SDAR-style) on the TinyStories training split (CPU, PyTorch).

Objective (BD3-LM, Arriola et al. 2025, kuleshov-group/bd3lms; SDAR, JetAstra/SDAR; docs
ALGORITHMS.md 5.1): a window x_0 of L = 256 tokens is cut into blocks of B tokens aligned to
position 0. Each block b gets its own t_b ~ U(0, 1) (stratified over all blocks of the batch and
shuffled: each t_b still uniform), p_b = (1 - 1e-3) t_b + 1e-3, and each of its tokens is replaced
by <|mdm_mask|> with probability p_b, giving x_t. One forward of [x_t ; x_0] (2L positions, both
halves at positions 0..L-1) under the BD3-LM mask (x_t -> x_t same block, x_t -> x_0 strictly
earlier blocks, x_0 -> x_0 block-causal, x_0 -> x_t never) predicts every masked token of x_t from
its own noisy block and the clean earlier blocks. Loss = sum over masked positions of CE / p_b,
divided by batch x L: the negative ELBO of the block diffusion model (BD3-LM eq. 8 with the linear
schedule alpha_t = 1 - t, whose weight -alpha'_t / (1 - alpha_t) is 1/t), an upper bound on the
NLL per token, the same estimator as the LLaDA twin's but per block.

Everything else is the twins' recipe (models/README.md): the same windows in the same order (the
same order_rng draws), batch 16, AdamW (0.9, 0.95), weight decay 0.1 on matrices, clipping 1,
linear warm-up 100 steps to 2e-3, cosine to 2e-4 over the run's 1,976 steps, residual dropout 0.1.

  --init scratch : random init (the twins' init)
  --init ar      : the AR twin's weights (models/unmask-tinystories-ar.gguf), Q/K rows reordered
                   to rotate-half, q/k norms 1 (model_block.from_ar_twin)
  --init moe-ar  : the MoE AR twin's checkpoint (--ar-checkpoint, train.py --experts: the same
                   MoeModel layout, so every weight is kept as it is); the model stays an MoE
                   model (model_moe.py), the loss adds its load-balancing term, and it exports
                   as `sdar-moe` (export_moe.py): the MoE block twin
  --stop-at N    : stop after step N of the (full-length) schedule and save a resumable checkpoint
  --resume CK    : continue such a checkpoint (same data order, RNG states and optimizer state),
                   so a pilot can be continued into the final run with its steps counted.
  --distill-stream F.npy : train on this token stream (int32, BOS text EOS BOS ...) instead of
                   the training split's: the AR twin's greedy continuations of training-split
                   prefixes (make_distill_data.py), the remedy run's data. Windows, order and
                   batch as for the corpus.
  --entropy-weight W : adds W x dParallel's certainty-forcing term (Chen et al. 2025, arXiv
                   2509.26488): the mean entropy of softmax(logits / 0.5) at the masked positions
                   the model already predicts correctly (block_diffusion_loss); dParallel uses
                   W = 2. A remedy for low confidence in parallel decoding; 0 (default) = off.

  .venv/bin/python scripts/train/train_block.py --init scratch --out-dir build/train/block
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
from model_block import BlockConfig, BlockModel, from_ar_twin  # noqa: E402
from model_moe import MoeConfig, MoeModel  # noqa: E402

MASK_EPS = 1e-3
CERTAINTY_TEMPERATURE = 0.5  # dParallel's entropy temperature
REPO = Path(__file__).resolve().parents[2]


def block_times(n_blocks, gen, stratified=True):
    """t [n_blocks] in [0, 1), each marginally U(0, 1); stratified: (u + perm(i) / n) mod 1."""
    if stratified:
        u = torch.rand(1, generator=gen)
        perm = torch.randperm(n_blocks, generator=gen)
        return (u + perm / n_blocks) % 1.0
    return torch.rand(n_blocks, generator=gen)


def block_diffusion_loss(model, x, mask_id, gen, entropy_weight=0.0, stratified=True):
    """(loss, nelbo) for a batch x [B, L]: loss = NELBO (+ the certainty-forcing term), per token.

    Certainty-forcing term (dParallel, Chen et al. 2025, arXiv 2509.26488; czg1225/dParallel
    llada_train.py `DLMTrainer.compute_loss`): the mean entropy of softmax(logits / 0.5) over the
    masked positions whose argmax is already the right token, times entropy_weight (dParallel: 2).
    Only correct predictions are sharpened, so the model is pushed to commit what it already gets
    right, not to be confidently wrong."""
    b, n = x.shape
    B = model.cfg.block_length
    nb = n // B
    t = block_times(b * nb, gen, stratified).view(b, nb)
    p = ((1 - MASK_EPS) * t + MASK_EPS).repeat_interleave(B, 1)          # [b, n]
    masked = torch.rand(b, n, generator=gen) < p
    xt = torch.where(masked, torch.full_like(x, mask_id), x)
    h = model.forward_train(xt, x)
    logits = model.output(h[masked])
    target = x[masked]
    ce = F.cross_entropy(logits, target, reduction="none")
    nelbo = (ce / p[masked]).sum() / (b * n)
    loss = nelbo
    if entropy_weight:
        correct = logits.argmax(-1) == target
        if correct.any():
            logp = torch.log_softmax(logits[correct] / CERTAINTY_TEMPERATURE, -1)
            loss = loss + entropy_weight * -(logp.exp() * logp).sum(-1).mean()
    return loss, nelbo


def evaluate(model, seqs, mask_id, batch):
    """Validation NELBO per token with a fixed mask draw (seed 0), comparable across steps/runs."""
    model.eval()
    gen = torch.Generator().manual_seed(0)
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(seqs), batch):
            x = seqs[i:i + batch]
            _, nelbo = block_diffusion_loss(model, x, mask_id, gen)
            total += nelbo.item() * len(x)
            count += len(x)
    model.train()
    return total / max(count, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--init", choices=["scratch", "ar", "moe-ar"], default="scratch")
    ap.add_argument("--ar-checkpoint", default=str(REPO / "build/train/moe-ar/checkpoint.pt"),
                    help="--init moe-ar: the MoE AR twin's train.py checkpoint")
    ap.add_argument("--ar-gguf", default=str(REPO / "models/unmask-tinystories-ar.gguf"))
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--tokenizer", default="build/train/tokenizer.json")
    ap.add_argument("--corpus")
    ap.add_argument("--block-length", type=int, default=4)
    ap.add_argument("--dim", type=int, default=BlockConfig.dim)
    ap.add_argument("--layers", type=int, default=BlockConfig.layers)
    ap.add_argument("--heads", type=int, default=BlockConfig.heads)
    ap.add_argument("--ffn", type=int, default=BlockConfig.ffn)
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--epochs", type=float, default=38.0)
    ap.add_argument("--stop-at", type=int, default=0, help="stop after this step (resumable)")
    ap.add_argument("--resume", help="resumable checkpoint to continue")
    ap.add_argument("--save-every", type=int, default=100,
                    help="also write the resumable checkpoint every N steps (0 = only at the end)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr", type=float, default=2e-4)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--entropy-weight", type=float, default=0.0)
    ap.add_argument("--distill-stream", help="int32 .npy token stream to train on instead")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.set_num_threads(args.threads)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer.from_file(args.tokenizer)
    ids = {k: tok.token_to_id(v) for k, v in (("bos", data.BOS), ("eos", data.EOS),
                                               ("pad", data.PAD), ("mask", data.MASK))}
    cfg = BlockConfig(vocab_size=tok.get_vocab_size(), context=args.context,
                      block_length=args.block_length, dropout=args.dropout, dim=args.dim,
                      layers=args.layers, heads=args.heads, head_dim=args.dim // args.heads,
                      ffn=args.ffn)
    splits = data.load_splits(args.corpus)

    def stream(stories):
        return data.token_stream([tok.encode(s).ids for s in stories], ids["bos"], ids["eos"])

    train_stream = stream(splits["train"])
    # The schedule (steps per epoch, total steps) is always the corpus's, as for the twins.
    num_windows = len(train_stream) // cfg.context
    if args.distill_stream:
        train_stream = np.load(args.distill_stream).astype(np.int64).tolist()
    val_seqs = torch.tensor(data.stream_windows(stream(splits["validation"]), cfg.context),
                            dtype=torch.long)

    moe = args.init == "moe-ar"
    if moe:
        ar = torch.load(args.ar_checkpoint, map_location="cpu")
        if not ar.get("moe") or ar.get("objective") != "ar":
            raise SystemExit(f"{args.ar_checkpoint}: not an MoE AR twin (train.py --experts)")
        cfg = MoeConfig(**{**ar["config"], "block_length": args.block_length,
                           "dropout": args.dropout})
        model = MoeModel(cfg)
        model.load_state_dict(ar["model"])
    else:
        model = from_ar_twin(args.ar_gguf, cfg) if args.init == "ar" else BlockModel(cfg)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    steps_per_epoch = math.ceil(num_windows / args.batch)
    total_steps = max(1, round(args.epochs * steps_per_epoch))

    def lr_at(step):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        frac = (step - args.warmup) / max(1, total_steps - args.warmup)
        return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * min(frac, 1.0)))

    gen = torch.Generator().manual_seed(args.seed)
    order_rng = np.random.default_rng(args.seed)
    step, ema, prior_seconds = 0, None, 0.0
    if args.resume:
        ck = torch.load(args.resume, map_location="cpu")
        if ck["args"]["init"] != args.init or ck["total_steps"] != total_steps:
            raise SystemExit(f"{args.resume}: made with init {ck['args']['init']}, "
                             f"{ck['total_steps']} steps")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        gen.set_state(ck["gen_state"])
        torch.set_rng_state(ck["torch_rng_state"])
        step, ema, prior_seconds = ck["steps"], ck["ema"], ck["seconds"]
        log_rows = (Path(args.resume).parent / "log.jsonl").read_text().splitlines()[:step]
    else:
        log_rows = []
    print(f"block diffusion (init {args.init}, block {cfg.block_length}): "
          f"{model.num_parameters() / 1e6:.2f}M parameters, "
          + (f"distillation stream of {len(train_stream)} tokens ({args.distill_stream}), schedule "
             f"of the corpus's {num_windows} windows of {cfg.context}: "
             if args.distill_stream else
             f"{len(train_stream)} training tokens in {num_windows} windows of {cfg.context}, ")
          + f"{total_steps} steps "
          f"({total_steps * args.batch * cfg.context / 1e6:.2f}M tokens), from step {step}",
          file=sys.stderr)
    log = open(out / "log.jsonl", "w")
    for r in log_rows:
        log.write(r + "\n")
    stop = min(total_steps, args.stop_at) if args.stop_at else total_steps

    def save_checkpoint():
        """Writes out/checkpoint.pt (resumable while step < total_steps); returns the seconds."""
        seconds = prior_seconds + time.time() - start
        ck = {"config": cfg.to_dict(), "model": model.state_dict(), "tokenizer": args.tokenizer,
              "objective": "block_diffusion", "steps": step, "total_steps": total_steps,
              "minutes": seconds / 60, "seconds": seconds, "args": vars(args), "ema": ema,
              "name": "unmask-tinystories-moe-block" if moe else "unmask-tinystories-block",
              "moe": moe, "tokenizer": args.tokenizer}
        if step < total_steps:
            ck.update(optimizer=opt.state_dict(), gen_state=gen.get_state(),
                      torch_rng_state=torch.get_rng_state())
        torch.save(ck, out / "checkpoint.tmp")
        os.replace(out / "checkpoint.tmp", out / "checkpoint.pt")  # never a half-written file
        return seconds
    start = time.time()
    bar = tqdm(total=stop, initial=step, desc=f"block-{args.init}", unit="step", dynamic_ncols=True)
    done, record = 0, {}
    while done < stop:
        # The twins' data order: a fresh cut at a random offset per epoch, shuffled.
        offset = int(order_rng.integers(cfg.context))
        train_seqs = torch.tensor(data.stream_windows(train_stream, cfg.context, offset),
                                  dtype=torch.long)
        order = order_rng.permutation(len(train_seqs))
        for i in range(0, len(order), args.batch):
            if done >= stop:
                break
            done += 1
            if done <= step:  # replaying the data order up to a resumed checkpoint
                continue
            x = train_seqs[torch.from_numpy(order[i:i + args.batch])]
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            loss, nelbo = block_diffusion_loss(model, x, ids["mask"], gen, args.entropy_weight)
            if moe:
                loss = loss + model.aux_loss()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            ema = nelbo.item() if ema is None else 0.95 * ema + 0.05 * nelbo.item()
            record = {"step": step, "tokens": step * args.batch * cfg.context,
                      "loss": nelbo.item(), "lr": lr_at(step - 1),
                      "seconds": round(prior_seconds + time.time() - start, 2)}
            if args.entropy_weight:
                record["objective"] = loss.item()
            if step % args.eval_every == 0 or step == stop:
                record["val_loss"] = evaluate(model, val_seqs, ids["mask"], args.batch)
                bar.set_postfix(loss=f"{ema:.3f}", val=f"{record['val_loss']:.3f}")
            else:
                bar.set_postfix(loss=f"{ema:.3f}")
            log.write(json.dumps(record) + "\n")
            log.flush()
            bar.update(1)
            if args.save_every and step % args.save_every == 0 and step < stop:
                save_checkpoint()
    bar.close()
    log.close()
    seconds = save_checkpoint()
    plot.loss_svg(out / "log.jsonl", out / "loss.svg", title=f"block diffusion ({args.init})")
    summary = {"objective": "block_diffusion", "init": args.init, "block_length": cfg.block_length,
               "parameters": model.num_parameters(), "steps": step, "total_steps": total_steps,
               "tokens": step * args.batch * cfg.context, "epochs": step / steps_per_epoch,
               "minutes": round(seconds / 60, 2), "threads": torch.get_num_threads(),
               "final_train_loss_ema": ema, "final_val_loss": record.get("val_loss"),
               "torch": torch.__version__, "args": vars(args)}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"trained to step {step} in {seconds / 60:.1f} min -> {out}/checkpoint.pt",
          file=sys.stderr)


if __name__ == "__main__":
    main()
