#!/usr/bin/env python3
"""What bf16 and int8 compute (`--compute`) change: token agreement with f32 at temperature 0 on
the TinyStories twins, judge perplexity of each type's outputs, and the logit error of each type
against the float64 reference on the golden models. Markdown on stdout; --out FILE.json keeps
everything.

Usage:
  .venv/bin/python scripts/bench/bench_compute_quality.py --unmask build/release/bin/unmask \\
      --model-test build/ci/bin/unmask_model_test            # 100 prompts, about 10 minutes
  .venv/bin/python scripts/bench/bench_compute_quality.py --n 5   # a quick look

Setting: the first --n (default 100) held-out prompts of the twins (never trained on), 32 tokens
each (scripts/bench/bench_diffusion_quality.py build_prompts: the same prompts as the quality table
of the fast diffusion modes), greedy (temperature 0), one process per run:
  * diffusion twin, exact:  unmask generate --gen-length 128 --block-length 32 --steps 128
  * diffusion twin, fast:   the same with --commit threshold --threshold 0.9 --cache dual
  * AR twin:                unmask generate -n 128 (stops at EOS, as a user sees it)
each with --compute f32, bf16 and int8. Columns, per type against f32 of the same setting:
  * identical: the fraction of prompts whose whole output equals f32's;
  * positions equal: the fraction of output positions equal to f32's (outputs padded to the longer);
  * first difference: the median position of the first differing token over the prompts that
    differ (0 = the first generated token);
  * judge ppl: corpus perplexity of the continuations up to and including the first EOS, scored by
    a model that is none of those compared (diffusion outputs: the AR twin; AR outputs: the AR draft
    model, models/unmask-tinystories-ar-draft.gguf), in the project's float64 numpy reference
    (scripts/reference/llada.py), never by unmask itself.
The golden-case table runs scripts/check_release.py with --extra "--compute T": how many of the
golden and conformance cases (pinned in f32) each type keeps token-identical.
The logit table runs the golden-logit test (tests/model/compute_golden_logits_test.cc) from the
--model-test binary and copies its rows: max |logit - float64 reference| per golden and type.
If the CPU lacks bf16 or int8 instructions, unmask falls back to f32 with a warning; the report
names the compute type each run actually used (from the JSON's backend line).
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "bench"))
sys.path.insert(0, str(ROOT / "scripts" / "train"))
sys.path.insert(0, str(ROOT / "scripts" / "reference"))
import bench_diffusion_quality as bdq  # noqa: E402

TYPES = ["f32", "bf16", "int8"]
GEN = 128


def settings(args):
    llada = str(ROOT / "models" / "unmask-tinystories-llada.gguf")
    ar = str(ROOT / "models" / "unmask-tinystories-ar.gguf")
    base = ["--gen-length", str(GEN), "--block-length", "32"]
    return [
        {"name": "diffusion twin, exact (128 steps)", "model": llada, "judge": ar,
         "flags": base + ["--steps", "128"]},
        {"name": "diffusion twin, fast (threshold 0.9 + dual cache)", "model": llada, "judge": ar,
         "flags": base + ["--commit", "threshold", "--threshold", "0.9", "--cache", "dual"]},
        {"name": "AR twin (greedy, stops at EOS)", "model": ar,
         "judge": str(ROOT / "models" / "unmask-tinystories-ar-draft.gguf"),
         "flags": ["-n", str(GEN)]},
    ]


def run(unmask, model, ids, flags, compute, threads):
    cmd = [unmask, "generate", "-m", model, "--json", "--prompt-ids", ",".join(map(str, ids)),
           "-t", str(threads), "--compute", compute, *flags]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {shlex.join(cmd)}\n{p.stderr[-3000:]}")
    r = json.loads(p.stdout)
    out = r["output_ids"]
    if out[:len(ids)] == ids and len(out) > GEN:  # the diffusion JSON includes the prompt
        out = out[len(ids):]
    used = next((t for t in TYPES if f"{t} compute" in r.get("backend", "")), "?")
    return {"output_ids": out, "used": used, "ms": r["timings"].get("generate_ms")}


def first_difference(a, b):
    for i in range(max(len(a), len(b))):
        if i >= len(a) or i >= len(b) or a[i] != b[i]:
            return i
    return None


def golden_logit_rows(model_test):
    if not model_test or not os.path.exists(model_test):
        return None
    p = subprocess.run([model_test, "--gtest_filter=ComputeGoldenLogitsTest.*"],
                       capture_output=True, text=True)
    rows = [line for line in p.stdout.splitlines() if line.startswith("| ")]
    return {"rows": rows, "passed": p.returncode == 0}


def release_cases(unmask, compute):
    """scripts/check_release.py with --compute: (passed, failed) of the golden and conformance
    cases (the f32 goldens: what a lower precision keeps token-identical)."""
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_release.py"), "--bin", unmask,
                        "--extra", f"--compute {compute}"], capture_output=True, text=True)
    last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    words = last.split()
    try:
        return int(words[1]), int(words[3])  # "release: N passed, M failed"
    except (IndexError, ValueError):
        sys.exit(f"check_release.py --compute {compute}: unexpected output {p.stdout[-500:]!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--unmask", default=str(ROOT / "build" / "release" / "bin" / "unmask"))
    ap.add_argument("--model-test", default=str(ROOT / "build" / "ci" / "bin" / "unmask_model_test"),
                    help="the unmask_model_test binary for the golden-logit table ('' to skip)")
    ap.add_argument("--n", type=int, default=100, help="prompts (default 100)")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--out", help="write the JSON report here")
    args = ap.parse_args()
    if not os.path.exists(args.unmask):
        sys.exit(f"--unmask {args.unmask}: not found (build it: README 'Quick start')")
    prompts, _, kv = bdq.build_prompts(str(ROOT / "models" / "unmask-tinystories-llada.gguf"), args.n)
    eos = kv["tokenizer.ggml.eos_token_id"]
    report = {"n": len(prompts), "threads": args.threads, "settings": []}
    t0 = time.time()
    for s in settings(args):
        outs = {t: [] for t in TYPES}
        used = {t: set() for t in TYPES}
        for i, ids in enumerate(prompts):
            for t in TYPES:
                r = run(args.unmask, s["model"], ids, s["flags"], t, args.threads)
                outs[t].append(r["output_ids"])
                used[t].add(r["used"])
            print(f"\r{s['name']}: prompt {i + 1}/{len(prompts)} ({time.time() - t0:.0f} s)",
                  end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        judge = bdq.Judge(s["judge"])
        rows = []
        for t in TYPES:
            same = sum(o == f for o, f in zip(outs[t], outs["f32"]))
            pos_equal = pos_total = 0
            firsts = []
            for o, f in zip(outs[t], outs["f32"]):
                n = max(len(o), len(f))
                pos_total += n
                pos_equal += sum(1 for k in range(min(len(o), len(f))) if o[k] == f[k])
                d = first_difference(o, f)
                if d is not None:
                    firsts.append(d)
            nll = count = 0
            for ids, o in zip(prompts, outs[t]):
                a, b = judge.nll(ids, bdq.continuation(o, eos))
                nll += a
                count += b
            rows.append({"compute": t, "used": sorted(used[t]), "identical": same / len(prompts),
                         "positions_equal": pos_equal / max(pos_total, 1),
                         "first_difference_median": statistics.median(firsts) if firsts else None,
                         "differing": len(firsts), "judge_ppl": float(np.exp(nll / max(count, 1)))})
        report["settings"].append({"name": s["name"], "flags": s["flags"],
                                   "judge": os.path.basename(s["judge"]), "rows": rows})
    report["golden_logits"] = golden_logit_rows(args.model_test)
    report["release_cases"] = {t: release_cases(args.unmask, t) for t in TYPES}

    print(f"{len(prompts)} held-out prompts of 32 tokens, temperature 0, {args.threads} threads; "
          f"each type against f32 in the same setting\n")
    for s in report["settings"]:
        print(f"**{s['name']}** (judge: {s['judge']}, float64 reference)\n")
        print("| compute | ran as | identical to f32 | positions equal | first difference (median) "
              "| judge ppl | ppl vs f32 |")
        print("|---|---|---:|---:|---:|---:|---:|")
        base = s["rows"][0]["judge_ppl"]
        for r in s["rows"]:
            fd = "-" if r["first_difference_median"] is None else \
                f"{r['first_difference_median']:.0f} ({r['differing']} differ)"
            print(f"| {r['compute']} | {','.join(r['used'])} | {100 * r['identical']:.0f}% | "
                  f"{100 * r['positions_equal']:.1f}% | {fd} | {r['judge_ppl']:.3f} | "
                  f"{r['judge_ppl'] / base:.3f}x |")
        print()
    print("**Golden and conformance cases** (scripts/check_release.py --extra \"--compute T\": "
          "token ids and NFE equal to the f32 goldens)\n")
    print("| compute | cases identical | cases differing |\n|---|---:|---:|")
    for t, (ok, bad) in report["release_cases"].items():
        print(f"| {t} | {ok} | {bad} |")
    print()
    g = report["golden_logits"]
    if g:
        print("**Logits against the float64 reference** (golden forwards; "
              f"tests/model/compute_golden_logits_test.cc: {'passed' if g['passed'] else 'FAILED'})\n")
        print("\n".join(g["rows"][:1] + ["|---|---|---:|---:|---:|"] + g["rows"][1:]))
    else:
        print("(no golden-logit table: --model-test binary not found)")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
