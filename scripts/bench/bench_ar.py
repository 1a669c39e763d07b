#!/usr/bin/env python3
"""Batch-1 autoregressive decoding: unmask beside llama.cpp on the same GGUF files, in the same run.

llama.cpp is measured through its library as built by the PyPI package llama-cpp-python (pinned,
scripts/bench/setup-llamacpp.sh; a benchmark baseline only, never a runtime dependency of unmask),
the way `llama-bench -p 0 -n N` measures generation: one token per llama_decode call, after a
one-token context, no sampling, the KV cache cleared between repetitions. unmask is measured by
`unmask bench -o json` (the same token-by-token decoding from a short random prompt, greedy
argmax included). Runs alternate between the two engines, so drift in machine speed hits both.

  scripts/bench/setup-llamacpp.sh      # once (builds llama.cpp, ~20 min on 2 cores)
  .venv-llamacpp/bin/python scripts/bench/bench_ar.py MODEL.gguf [MODEL.gguf ...] -n 128 -t 2
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def llamacpp_decode_tps(path, n, threads, reps):
    import llama_cpp as L
    llm = L.Llama(model_path=path, n_ctx=max(512, n + 16), n_batch=512, n_threads=threads,
                  n_threads_batch=threads, verbose=False)
    ctx = llm.ctx
    mem = L.llama_get_memory(ctx)
    token = (ctypes.c_int * 1)()
    out = []
    for r in range(reps + 1):  # r == 0: warm-up
        L.llama_memory_clear(mem, True)
        token[0] = llm.token_bos() if llm.token_bos() >= 0 else 0
        if L.llama_decode(ctx, L.llama_batch_get_one(token, 1)) != 0:
            sys.exit("llama_decode failed")
        t0 = time.perf_counter()
        for i in range(n):
            token[0] = (i * 7919 + 13) % llm.n_vocab()  # fixed ids; decoding cost is the same
            if L.llama_decode(ctx, L.llama_batch_get_one(token, 1)) != 0:
                sys.exit("llama_decode failed")
        dt = time.perf_counter() - t0
        if r > 0:
            out.append(n / dt)
    del llm
    return out


def unmask_decode(args, path):
    cmd = [args.unmask, "bench", "-m", path, "-n", str(args.n), "--prompt-length", "1", "-r",
           str(args.reps), "-t", str(args.threads), "-o", "json"]
    # OpenMP's default (active) wait policy, like llama.cpp's spinning thread pool: with
    # OMP_WAIT_POLICY=passive every parallel region pays a thread wake-up (~1.5 ms per token on
    # stories260K instead of 0.06 ms).
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("-n", type=int, default=128, help="tokens decoded per repetition")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-r", "--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2, help="alternations of the two engines")
    ap.add_argument("--unmask", default=os.path.join(ROOT, "build/release/bin/unmask"))
    args = ap.parse_args()
    rows = []
    for path in args.models:
        ours, theirs, bw = [], [], []
        for k in range(args.rounds):
            print(f"\r{os.path.basename(path)}: round {k + 1}/{args.rounds}", end="",
                  file=sys.stderr)
            theirs += llamacpp_decode_tps(path, args.n, args.threads, args.reps)
            u = unmask_decode(args, path)
            ours.append(u["decode_tokens_per_second"])
            bw.append(u)
        print(file=sys.stderr)
        u = bw[-1]
        mean_u, mean_l = statistics.mean(ours), statistics.mean(theirs)
        gbs = u["weight_bytes_per_token"] * mean_u / 1e9
        rows.append((os.path.basename(path), u["model"], mean_u, statistics.pstdev(ours), mean_l,
                     statistics.pstdev(theirs), u["weight_bytes_per_token"] / 1e6, gbs,
                     u["measured_bandwidth_gb_per_second"]))
    print(f"batch-1 decode, {args.n} tokens per repetition, {args.threads} threads, "
          f"{args.rounds} rounds x {args.reps} reps per engine (llama-cpp-python "
          f"{__import__('llama_cpp').__version__})\n")
    print("| model | unmask tokens/s | llama.cpp tokens/s | unmask / llama.cpp | weight MB/token "
          "| unmask weight GB/s | bandwidth (same run) | % of bandwidth |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, desc, mu, su, ml, sl, mb, gbs, bw in rows:
        print(f"| {name} ({desc}) | {mu:.1f} ± {su:.1f} | {ml:.1f} ± {sl:.1f} | {mu / ml:.2f}x "
              f"| {mb:.2f} | {gbs:.1f} | {bw:.1f} GB/s | {100 * gbs / bw:.0f}% |")


if __name__ == "__main__":
    main()
