#!/usr/bin/env python3
"""Diffusion speed per compute type (f32 / bf16 / int8, `--compute`), beside llama.cpp's
`llama-diffusion-cli` on the same GGUF, in the same run: markdown on stdout.

Usage:
  scripts/bench/setup-llamacpp-diffusion.sh      # once (llama.cpp's diffusion CLI, ~6 minutes)
  .venv/bin/python scripts/bench/bench_compute_speed.py [--rounds 2] [-r 2]

Settings (2 threads):
  * exact: the 97.5M bench model (scripts/make_llada_gguf.py --preset bench, built by
    scripts/bench-llada.sh), 32-token prompt, gen_length 128, block_length 32, 128 steps (one token
    per forward): `unmask bench --compute-list f32,bf16,int8 --blas-list onednn`, and
    llama-diffusion-cli in its one-token-per-step setting on the same file (llamacpp_diffusion.py
    explains the command; its canvas costs 129 forwards where unmask runs 128, and it samples with
    its default chain);
  * fast: the diffusion twin (models/unmask-tinystories-llada.gguf) with --commit threshold
    --threshold 0.9 --cache dual, same lengths.
Rounds alternate llama.cpp and unmask so that drift in machine speed hits both. Each unmask row is
judged against the GEMM peak of its own type measured in the same run (`unmask bench` prints the
peaks of f32, bf16 and int8 where the CPU has their instructions).
"""
import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "bench"))
import llamacpp_diffusion as lcd  # noqa: E402

BENCH_MODEL = ROOT / "build" / "models" / "llada-bench-97m-f16.gguf"
TWIN = ROOT / "models" / "unmask-tinystories-llada.gguf"
# 32 tokens of the bench model's vocabulary (checked below with llama.cpp's tokenizer).
PROMPT = "the quick brown fox jumps over the lazy dog and then it runs away into the forest whe"


def unmask_bench(unmask, model, flags, reps):
    cmd = [unmask, "bench", "-m", str(model), "--prompt-length", "32", "--gen-length", "128",
           "--block-length", "32", "-t", "2", "--blas-list", "onednn", "--compute-list",
           "f32,bf16,int8", "-r", str(reps), "-o", "json", *flags]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--unmask", default=str(ROOT / "build" / "release" / "bin" / "unmask"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("-r", "--reps", type=int, default=2, help="timed repetitions per round")
    ap.add_argument("--cli", default=None, help="llama-diffusion-cli (default: the setup script's)")
    args = ap.parse_args()
    if not BENCH_MODEL.exists():
        sys.exit(f"{BENCH_MODEL} missing: run scripts/bench-llada.sh once (it builds the model)")
    cli = lcd.find_cli(args.cli)
    lc_model = lcd.prepare_model(str(BENCH_MODEL)) if cli else None
    lc, exact, fast = [], [], []
    for rnd in range(args.rounds):
        if cli:
            for rep in range(args.reps):
                r = lcd.run(cli, lc_model, PROMPT, 32, 128, 32, 2, seed=rep)
                lc.append(r["tokens_per_second"])
        exact += unmask_bench(args.unmask, BENCH_MODEL, ["--steps", "128"], args.reps)
        fast += unmask_bench(args.unmask, TWIN, ["--commit", "threshold", "--threshold", "0.9",
                                                 "--cache", "dual"], args.reps)
        print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    lc_tps = statistics.median(lc) if lc else None
    peaks = exact[0].get("gemm_peaks", {}) if exact else {}
    print(f"2 threads, {args.rounds} rounds x {args.reps} reps; GEMM peaks (same run): " +
          ", ".join(f"{k} {v:.0f}" for k, v in peaks.items()) + " GFLOP/s (int8: GOP/s); " +
          (exact[0]["backend"] if exact else ""))
    if lc_tps:
        print(f"llama-diffusion-cli (same file, same run): {lc_tps:.2f} tokens/s (median of "
              f"{len(lc)}: {', '.join(f'{v:.2f}' for v in lc)})")
    for name, rows in (("exact, 97.5M bench model, 128 steps", exact),
                       ("fast, diffusion twin, threshold 0.9 + dual cache", fast)):
        print(f"\n**{name}**\n")
        print("| compute | NFE | tokens/s | ms/forward | forward GFLOP/s | GEMM peak of its type | "
              "% of that peak | vs f32 |" + (" vs llama.cpp |" if lc_tps and rows is exact else ""))
        print("|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if lc_tps and rows is exact else ""))
        by = {}
        for r in rows:
            by.setdefault(r["compute"], []).append(r)
        base = statistics.median(r["tokens_per_second"] for r in by.get("f32", rows))
        for c, rs in by.items():
            tps = statistics.median(r["tokens_per_second"] for r in rs)
            ms = statistics.median(r["forward_ms"] for r in rs)
            gf = statistics.median(r["forward_gflops"] for r in rs)
            peak = statistics.median(r["gemm_peak_gflops"] for r in rs)
            line = (f"| {c} | {rs[0]['nfe']} | {tps:.2f} | {ms:.1f} | {gf:.0f} | {peak:.0f} | "
                    f"{100 * gf / peak:.0f}% | {tps / base:.2f}x |")
            if lc_tps and rows is exact:
                line += f" {tps / lc_tps:.1f}x |"
            print(line)


if __name__ == "__main__":
    main()
