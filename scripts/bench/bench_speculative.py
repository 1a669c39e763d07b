#!/usr/bin/env python3
"""Speculative decoding benchmark: acceptance rate, tokens per target forward and speed-up of each
drafter against plain decoding, measured in the same run on the same prompts (greedy, so every mode
must also produce exactly the plain tokens: the script checks it and reports mismatches).

Each (prompt, mode) is one `unmask generate --json` run; times are the generation phase only
(model loading excluded). Modes: plain, lookup, draft=DRAFT.gguf, diffusion=DIFFUSION.gguf,
medusa (the heads beside the model, MODEL.medusa.gguf) or medusa=HEADS.gguf, eagle (the EAGLE draft
layer beside the model, MODEL.eagle.gguf) or eagle=LAYER.gguf, each optionally with its tree as
@DEPTH,TOPK,NODES (default @4,2,6: --draft-depth, --draft-topk, --draft-max), e.g. eagle@5,3,12,
and a fourth value for --draft-p-min (eagle@6,3,12,0.2: nodes the layer gives less are pruned).

Examples (README, docs/benchmarks.md):
  scripts/bench/bench_speculative.py -m models/unmask-tinystories-ar.gguf --prompts stories \\
      --modes plain lookup diffusion=models/unmask-tinystories-llada.gguf --n 20
  scripts/bench/bench_speculative.py -m $(scripts/fetch-smollm2.sh) --chat \\
      --prompts ../shared/data/prompts/mt_bench_question.jsonl --modes plain lookup --n 10
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read_prompts(spec, n, words):
    """Prompt texts: 'stories' = openings (first `words` words) of the twins' held-out stories;
    otherwise a JSONL(.gz) file whose records hold the text in one of the usual fields."""
    if spec == "stories":
        sys.path.insert(0, os.path.join(ROOT, "scripts", "train"))
        import data  # noqa: E402  (the twins' own split: held-out stories were never trained on)
        stories = data.load_splits()["held_out"]
        return [" ".join(s.split()[:words]) for s in stories[:n]]
    opener = gzip.open if spec.endswith(".gz") else open
    out = []
    with opener(spec, "rt", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if "instruction" in r and r.get("instances"):  # self-instruct: task plus its input
                inp = r["instances"][0].get("input", "")
                out.append(r["instruction"] + ("\n\n" + inp if inp else ""))
                if len(out) == n:
                    break
                continue
            for key in ("turns", "question", "instruction", "prompt", "text"):
                if key in r:
                    v = r[key]
                    out.append(v[0] if isinstance(v, list) else v)
                    break
            if len(out) == n:
                break
    return out


def run(args, prompt, mode):
    cmd = [args.unmask, "generate", "-m", args.model, "-p", prompt, "--json", "--temperature", "0",
           "-n", str(args.n_predict), "-t", str(args.threads)]
    cmd += ["--chat"] if args.chat else ["--no-chat"]
    if mode.startswith("eagle"):
        spec, _, tree = mode.partition("@")
        depth, topk, nodes, *p_min = (tree or "4,2,6").split(",")
        cmd += ["--spec", "eagle", "--draft-depth", depth, "--draft-topk", topk, "--draft-max", nodes]
        if p_min:
            cmd += ["--draft-p-min", p_min[0]]
        if "=" in spec:
            cmd += ["--draft-heads", spec.split("=", 1)[1]]
    else:
        cmd += ["--draft-max", str(args.draft_max)]
    if mode.startswith("eagle"):
        pass
    elif mode in ("lookup", "medusa"):
        cmd += ["--spec", mode]
    elif mode.startswith("medusa="):
        cmd += ["--spec", "medusa", "--draft-heads", mode.split("=", 1)[1]]
    elif mode.startswith("draft=") or mode.startswith("diffusion="):
        kind, path = mode.split("=", 1)
        cmd += ["--spec", kind, "--draft-model", path]
    p = subprocess.run(cmd, capture_output=True, text=True)  # OpenMP's default (spinning) waits
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True, help="target AR model (GGUF)")
    ap.add_argument("--modes", nargs="+", default=["plain", "lookup"])
    ap.add_argument("--prompts", default="stories", help="'stories' or a JSONL(.gz) prompt file")
    ap.add_argument("--n", type=int, default=20, help="number of prompts")
    ap.add_argument("--words", type=int, default=12, help="story opening length in words")
    ap.add_argument("--n-predict", type=int, default=128)
    ap.add_argument("--draft-max", type=int, default=3)
    ap.add_argument("--chat", action="store_true", help="wrap prompts in the chat template")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--unmask", default=os.path.join(ROOT, "build/release/bin/unmask"))
    ap.add_argument("--json-out", help="write every run as one JSON line here")
    args = ap.parse_args()
    if "plain" not in args.modes:
        args.modes = ["plain"] + args.modes
    prompts = read_prompts(args.prompts, args.n, args.words)
    results = {m: [] for m in args.modes}
    start = time.time()
    for i, prompt in enumerate(prompts):
        for mode in args.modes:  # interleaved, so drift in machine speed hits every mode alike
            results[mode].append(run(args, prompt, mode))
        done = i + 1
        eta = (time.time() - start) / done * (len(prompts) - done)
        print(f"\rprompts {done}/{len(prompts)}  ETA {eta:4.0f} s", end="", file=sys.stderr)
    print(file=sys.stderr)

    plain = results["plain"]
    base_tps = sum(r["nfe"] and len(r["output_ids"]) for r in plain) / sum(
        r["timings"]["generate_ms"] for r in plain) * 1000
    print(f"target: {args.model} | prompts: {args.prompts} ({len(prompts)}) | n_predict "
          f"{args.n_predict}, draft_max {args.draft_max}, greedy, {args.threads} threads\n")
    print("| mode | tokens | acceptance rate | tokens / target forward | tokens/s | speed-up vs plain "
          "(same run) | identical to plain |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    summary = {}
    for mode in args.modes:
        rs = results[mode]
        tokens = sum(len(r["output_ids"]) for r in rs)
        ms = sum(r["timings"]["generate_ms"] for r in rs)
        forwards = sum(r["nfe"] for r in rs)
        drafted = sum(r.get("speculative", {}).get("drafted", 0) for r in rs)
        accepted = sum(r.get("speculative", {}).get("accepted", 0) for r in rs)
        same = sum(r["output_ids"] == p["output_ids"] for r, p in zip(rs, plain))
        tps = tokens / ms * 1000
        acc = f"{accepted / drafted:.1%}" if drafted else "-"
        spec, _, tree = mode.partition("@")
        label = spec.split("=")[0] + (" (" + os.path.basename(spec.split("=")[1]) + ")"
                                      if "=" in spec else "")
        if tree:
            parts = tree.split(",")
            label += " depth {}, top-k {}, {} nodes".format(*parts[:3])
            if len(parts) > 3:
                label += f", p-min {parts[3]}"
        print(f"| {label} "
              f"| {tokens} | {acc} | {tokens / forwards:.2f} | {tps:.1f} | {tps / base_tps:.2f}x "
              f"| {same}/{len(rs)} |")
        summary[mode] = dict(tokens=tokens, acceptance=accepted / drafted if drafted else None,
                             tokens_per_forward=tokens / forwards, tokens_per_second=tps,
                             speedup=tps / base_tps, identical=same, runs=len(rs))
    if args.json_out:
        with open(args.json_out, "w") as f:
            for mode in args.modes:
                for r in results[mode]:
                    f.write(json.dumps(dict(mode=mode, **r)) + "\n")
    bad = [m for m in args.modes if summary[m]["identical"] != len(prompts)]
    if bad:
        sys.exit(f"NOT LOSSLESS: {bad} differ from plain greedy decoding")


if __name__ == "__main__":
    main()
