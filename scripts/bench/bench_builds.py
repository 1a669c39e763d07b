#!/usr/bin/env python3
"""Compares unmask binaries and thread counts on the shipped and test models, in one run.

Binaries: builds with other flags, or the previous commit. Runs are interleaved (and every other
round reversed) so that machine drift hits every binary alike.

  .venv/bin/python scripts/bench/bench_builds.py --bin old=/tmp/old/bin/unmask \\
      --bin new=build/release/bin/unmask [--rounds 2] [--threads 1,2,default] [--cases ...]

Each row is one (model, setting); each cell the median over rounds of `unmask bench`'s tokens/s
(decode tokens/s for AR models; generation tokens/s for diffusion models), with the ratio to the
first binary, or with one binary the ratio to the same model at the first --threads setting. Progress goes to stderr, the markdown table to stdout.
The CPU model is printed with the table: figures are only comparable on the same machine class.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(REPO), "shared", "data", "models")
SMOLLM2 = os.path.expanduser("~/.cache/unmask/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
BENCH_LLADA = os.path.join(REPO, "build", "models", "llada-bench-97m-f16.gguf")

# name -> (model path, unmask bench flags)
CASES = {
    "stories260K (AR f32)": (os.path.join(SHARED, "stories260K.gguf"),
                              ["-n", "256", "--prompt-length", "8", "-r", "5"]),
    "AR twin (F16)": (os.path.join(REPO, "models", "unmask-tinystories-ar.gguf"),
                      ["-n", "128", "--prompt-length", "16", "-r", "5"]),
    "SmolLM2-135M Q4_1 (AR)": (SMOLLM2, ["-n", "64", "--prompt-length", "16", "-r", "3"]),
    "tiny LLaDA test model (exact 32 steps)": (
        os.path.join(REPO, "tests", "data", "models", "llada-tiny-gqa2-untied-f16.gguf"),
        ["-n", "32", "--steps", "32", "--block-length", "32", "--prompt-length", "16",
         "--blas-list", "onednn", "-r", "5"]),
    "LLaDA twin (exact 64 steps)": (os.path.join(REPO, "models", "unmask-tinystories-llada.gguf"),
                                     ["-n", "64", "--steps", "64", "--block-length", "32",
                                      "--prompt-length", "16", "--blas-list", "onednn", "-r", "3"]),
    "LLaDA 97.5M bench (exact 32 steps)": (BENCH_LLADA,
                                            ["-n", "32", "--steps", "32", "--block-length", "32",
                                             "--prompt-length", "32", "--blas-list", "onednn",
                                             "-r", "1"]),
}


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def run_once(binary: str, model: str, flags: list[str], threads: str) -> float:
    cmd = [binary, "bench", "-m", model, "-o", "json", *flags]
    if threads != "default":
        cmd += ["-t", threads]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr.strip()[-300:]}")
    row = json.loads(out.stdout.strip().splitlines()[0])
    return float(row.get("decode_tokens_per_second", row.get("tokens_per_second")))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                 epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True, metavar="NAME=PATH",
                    help="a binary to compare (repeatable; the first is the baseline)")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds (median reported)")
    ap.add_argument("--threads", default="1,2,default",
                    help="comma-separated thread settings; 'default' passes no -t")
    ap.add_argument("--cases", default=",".join(CASES),
                    help="comma-separated subset of: " + ", ".join(CASES))
    args = ap.parse_args()
    bins = []
    for b in args.bin:
        name, _, path = b.partition("=")
        if not path or not os.access(path, os.X_OK):
            ap.error(f"--bin {b}: expected NAME=PATH to an executable")
        bins.append((name, path))
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    threads = [t.strip() for t in args.threads.split(",") if t.strip()]
    for t in threads:
        if t != "default" and not (t.isdigit() and int(t) >= 1):
            ap.error(f"--threads: '{t}' is not a positive integer or 'default'")
    if not threads:
        ap.error("--threads: give at least one setting")
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    for c in cases:
        if c not in CASES:
            ap.error(f"unknown case '{c}'")
    if any(CASES[c][0] == BENCH_LLADA for c in cases) and not os.path.exists(BENCH_LLADA):
        print("bench_builds: making the 97.5M bench model (scripts/make_llada_gguf.py)",
              file=sys.stderr)
        os.makedirs(os.path.dirname(BENCH_LLADA), exist_ok=True)
        subprocess.run([sys.executable, os.path.join(REPO, "scripts", "make_llada_gguf.py"),
                        "--preset", "bench", "--out", BENCH_LLADA], check=True,
                       stdout=subprocess.DEVNULL)

    results: dict[tuple[str, str, str], list[float]] = {}
    jobs = [(c, t, b) for c in cases for t in threads for b in bins]
    total = len(jobs) * args.rounds
    done = 0
    start = time.time()
    for r in range(args.rounds):
        order = jobs if r % 2 == 0 else list(reversed(jobs))
        for case, t, (bname, bpath) in order:
            model, flags = CASES[case]
            if not os.path.exists(model):
                print(f"bench_builds: skipping {case}: {model} not found", file=sys.stderr)
                done += 1
                continue
            tps = run_once(bpath, model, flags, t)
            results.setdefault((case, t, bname), []).append(tps)
            done += 1
            print(f"\r[{done}/{total}] {time.time() - start:5.0f} s  {case} -t {t} {bname}: "
                  f"{tps:.1f} tokens/s\033[K", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)

    print(f"CPU: {cpu_name()}, {os.cpu_count()} threads; median of {args.rounds} interleaved "
          f"rounds; tokens/s (decode tokens/s for AR)\n")
    head = ["model", "threads"] + [b for b, _ in bins]
    if len(bins) > 1:
        head += [f"{b} / {bins[0][0]}" for b, _ in bins[1:]]
    else:
        head += [f"vs -t {threads[0]}"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * 2 + "---:|" * (len(head) - 2))
    for case in cases:
        for t in threads:
            vals = [results.get((case, t, b)) for b, _ in bins]
            if any(v is None for v in vals):
                continue
            med = [statistics.median(v) for v in vals]
            cells = [f"{m:,.1f}" for m in med]
            if len(bins) > 1:
                cells += [f"{m / med[0]:.2f}x" for m in med[1:]]
            else:
                first = results.get((case, threads[0], bins[0][0]))
                cells += [f"{med[0] / statistics.median(first):.2f}x" if first else ""]
            print(f"| {case} | {t} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
