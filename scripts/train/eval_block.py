#!/usr/bin/env python3
"""Tokens per forward and quality of the block-diffusion twin's decoding in unmask.

Prompts: the first sentence of each of the first --prompts held-out stories (never trained on),
64 new tokens, temperature 0 (unmask's default). For every setting, `unmask generate -m MODEL -p
SENTENCE -n 64 --json [flags]` is run and its JSON read:
  * tokens: the canvas positions the decoder filled (len(output_ids): the prompt's last partial
    block is filled too, and generation stops after the block holding EOS);
  * forwards: the JSON's `nfe`, under the engine's default fused schedule (decoding.md "Fused
    schedule": the prompt's whole blocks and each finished block are written by the next block's
    first denoising forward, so every forward is a denoising step);
  * TPF = tokens / nfe, pooled over the prompts (sum of tokens / sum of forwards). SDAR's own
    schedule (--separate-store) adds one prefill forward and one store forward per block.
Quality: the AR twin's (models/unmask-tinystories-ar.gguf, PyTorch from the GGUF) NLL of the
generated tokens given BOS + prompt, cut after the first EOS; perplexity = exp(pooled NLL per
token). A perplexity under another model rewards repetitive text, so distinct-2 (distinct bigrams
/ bigrams of each continuation, averaged) is reported next to it. Baselines on the same prompts:
the held-out stories' own next 64 tokens, the AR twin's greedy continuation (unmask, temperature
0: scored by the model that wrote it, so optimistic) and the LLaDA twin (64 steps, block 32).

  .venv/bin/python scripts/train/eval_block.py --unmask build/ci/bin/unmask --out eval.json
"""
import argparse
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts" / "train"))
import data  # noqa: E402
import gguf_model  # noqa: E402


def first_sentence(story):
    return re.split(r"(?<=[.!?])\s", story.strip(), maxsplit=1)[0]


def run(unmask, model, prompt, flags, n=64):
    cmd = [unmask, "generate", "-m", model, "-p", prompt, "-n", str(n), "--json", "-t", "1",
           *flags]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def cut_at_eos(ids, eos):
    return ids[:ids.index(eos) + 1] if eos in ids else ids


def ar_nll(ar, context, cont):
    """Total NLL of `cont` given `context` under the AR twin, and len(cont)."""
    if not cont:
        return 0.0, 0
    x = torch.tensor([(context + cont)[-ar.cfg.context:]])
    with torch.no_grad():
        logits = ar(x[:, :-1])[0]
    n = len(cont)
    ce = F.cross_entropy(logits[-n:], x[0, -n:], reduction="sum")
    return ce.item(), n


def distinct2(ids):
    bigrams = list(zip(ids, ids[1:]))
    return len(set(bigrams)) / len(bigrams) if bigrams else 1.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unmask", default=str(REPO / "build/ci/bin/unmask"))
    ap.add_argument("--model", default=str(REPO / "models/unmask-tinystories-block.gguf"))
    ap.add_argument("--ar", default=str(REPO / "models/unmask-tinystories-ar.gguf"))
    ap.add_argument("--llada", default=str(REPO / "models/unmask-tinystories-llada.gguf"))
    ap.add_argument("--prompts", type=int, default=20)
    ap.add_argument("--thresholds", default="0.95,0.9,0.85,0.8,0.7,0.5")
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument("--out", help="write all results (and every generation) as JSON here")
    args = ap.parse_args()
    torch.set_num_threads(1)

    ar, kv = gguf_model.load_model(args.ar)
    tok = gguf_model.load_tokenizer(kv)
    bos, eos = kv["tokenizer.ggml.bos_token_id"], kv["tokenizer.ggml.eos_token_id"]
    stories = data.load_splits()["held_out"][:args.prompts]
    prompts = [first_sentence(s) for s in stories]
    settings = [(f"low_confidence_dynamic, threshold {t}",
                 ["--remasking", "low_confidence_dynamic", "--threshold", t])
                for t in args.thresholds.split(",")]
    settings.append(("low_confidence_static (1 token per denoising step)",
                     ["--remasking", "low_confidence_static"]))
    rows, dump = [], {}
    for name, flags in settings:
        tokens = forwards = 0
        nll = scored = 0.0
        d2 = []
        gens = []
        for p in prompts:
            j = run(args.unmask, args.model, p, flags)
            out = j["output_ids"]
            tokens += len(out)
            forwards += j["nfe"]
            cont = cut_at_eos(out, eos)
            a, b = ar_nll(ar, j["prompt_ids"], cont)
            nll += a
            scored += b
            d2.append(distinct2(cont))
            gens.append({"prompt": p, "text": j["text"], "nfe": j["nfe"], "tokens": len(out)})
        rows.append({"setting": name, "flags": " ".join(flags), "tokens": tokens,
                     "nfe": forwards, "tpf_engine": tokens / forwards,
                     "ar_ppl": math.exp(nll / scored), "scored_tokens": int(scored),
                     "distinct2": sum(d2) / len(d2)})
        dump[name] = gens
        print(json.dumps(rows[-1]), file=sys.stderr)

    if not args.no_baselines:
        base = []
        # The stories' own continuations.
        nll = scored = 0.0
        d2 = []
        for s, p in zip(stories, prompts):
            ctx = [bos] + tok.encode(p).ids
            full = tok.encode(s).ids
            cont = full[len(ctx) - 1:len(ctx) - 1 + 64]
            a, b = ar_nll(ar, ctx, cont)
            nll, scored = nll + a, scored + b
            d2.append(distinct2(cont))
        base.append({"setting": "held-out text (next 64 tokens)", "ar_ppl": math.exp(nll / scored),
                     "distinct2": sum(d2) / len(d2)})
        for name, model, flags in (
                ("AR twin, greedy (unmask)", args.ar, ["--temperature", "0"]),
                ("LLaDA twin, 64 steps, block 32", args.llada,
                 ["--steps", "64", "--block-length", "32"])):
            nll = scored = 0.0
            d2, tokens, forwards = [], 0, 0
            for p in prompts:
                j = run(args.unmask, model, p, flags)
                cont = cut_at_eos(j["output_ids"], eos)
                a, b = ar_nll(ar, j["prompt_ids"], cont)
                nll, scored = nll + a, scored + b
                d2.append(distinct2(cont))
                tokens += len(j["output_ids"])
                forwards += j["nfe"]
            base.append({"setting": name, "ar_ppl": math.exp(nll / scored),
                         "distinct2": sum(d2) / len(d2), "tpf_engine": tokens / forwards})
            print(json.dumps(base[-1]), file=sys.stderr)
    else:
        base = []

    print(f"| decoding (64 tokens, {len(prompts)} prompts, temperature 0) | tokens | forwards "
          "(nfe) | tokens per forward | AR-twin perplexity | distinct-2 |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['setting']} | {r['tokens']} | {r['nfe']} | {r['tpf_engine']:.2f} | "
              f"{r['ar_ppl']:.2f} | {r['distinct2']:.2f} |")
    for r in base:
        tpf = f"{r['tpf_engine']:.2f}" if "tpf_engine" in r else ""
        print(f"| {r['setting']} | | | {tpf} | {r['ar_ppl']:.2f} | {r['distinct2']:.2f} |")
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows, "baselines": base,
                                              "generations": dump}, indent=1) + "\n")


if __name__ == "__main__":
    main()
