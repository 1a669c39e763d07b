#!/usr/bin/env python3
"""Runs the golden and conformance cases through a built `unmask` binary, the one users run.

The GoogleTest suite checks the library built by the test presets; this checks the binary of the
README's build (`cmake --workflow --preset release`, flags and all), so that a code-generation
problem of that build (such as the GCC 12 wrong-code bug of docs/benchmarks.md, "Build flags")
shows up as a wrong token here. scripts/test.sh runs it after the test presets.

  .venv/bin/python scripts/check_release.py [--bin build/release/bin/unmask] [--extra "FLAGS"]

--extra appends flags to every generate call (e.g. --extra "--compute bf16": how many cases a
lower compute precision keeps token-identical; scripts/bench/bench_compute_quality.py uses it).

Cases (each `generate --json`, compared token for token and by NFE):
  tests/data/golden/llada/*.json   LLaDA reference decoding on the tiny random models
  tests/data/golden/dream/*.json   Dream's reference sampler on the tiny random Dream models
  tests/data/golden/twins/llada_story*.json  the shipped diffusion twin, exact and accelerated
  stories260K (../shared/data)     the prompt + text equal llama2.c's greedy output
Prints one line per failure and 'N passed, N failed' at the end; exit status 1 on any failure.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")


EXTRA: list[str] = []


def run(binary: str, args: list[str]) -> dict:
    out = subprocess.run([binary, *args, *EXTRA], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"exit {out.returncode}: {out.stderr.strip()[-300:]}")
    return json.loads(out.stdout)


def ids(v: list[int]) -> str:
    return ",".join(str(i) for i in v)


def llada_args(g: dict, model: str) -> list[str]:
    a = ["generate", "-m", model, "--prompt-ids", ids(g["prompt_ids"]), "-n", str(g["gen_length"]),
         "--steps", str(g["steps"]), "--block-length", str(g["block_length"]),
         "--temperature", repr(g["temperature"]), "--cfg-scale", repr(g["cfg_scale"]),
         "--remasking", g["remasking"], "-s", str(g["seed"]), "--json", "-t", "1"]
    if g.get("suffix_ids"):
        a += ["--suffix-ids", ids(g["suffix_ids"])]
    if g.get("logits_eos_inf"):
        a.append("--logits-eos-inf")
    if g.get("confidence_eos_eot_inf"):
        a.append("--confidence-eos-eot-inf")
    for key, flag in (("cache", "--cache"), ("commit", "--commit"), ("threshold", "--threshold"),
                      ("factor", "--factor")):
        if key in g and g[key] is not None:
            a += [flag, str(g[key])]
    return a


def dream_args(g: dict, model: str) -> list[str]:
    a = ["generate", "-m", model, "--prompt-ids", ids(g["prompt_ids"]), "-n",
         str(g["gen_length"]), "--steps", str(g["steps"]), "--eps", repr(g["eps"]),
         "--alg", g["alg"], "--alg-temp", repr(g["alg_temp"]), "--temperature",
         repr(g["temperature"]), "--top-p", repr(g["top_p"]), "--top-k", str(g["top_k"]),
         "-s", str(g["seed"]), "--json", "-t", "1"]
    if g.get("suffix_ids"):
        a += ["--suffix-ids", ids(g["suffix_ids"])]
    return a


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "release", "bin", "unmask"))
    ap.add_argument("--extra", default="", help="flags appended to every generate call")
    args = ap.parse_args()
    EXTRA.extend(shlex.split(args.extra))
    if not os.access(args.bin, os.X_OK):
        print(f"check_release: {args.bin} is not an executable (build it with "
              "`cmake --workflow --preset release`)", file=sys.stderr)
        return 1
    passed, failed = 0, 0

    def check(name: str, argv: list[str], want_ids: list[int] | None, want_nfe: int | None,
              text_check=None) -> None:
        nonlocal passed, failed
        try:
            j = run(args.bin, argv)
            problems = []
            if want_ids is not None and j["output_ids"][:len(want_ids)] != want_ids:
                problems.append(f"output_ids {j['output_ids']} != {want_ids}")
            if want_nfe is not None and j["nfe"] != want_nfe:
                problems.append(f"nfe {j['nfe']} != {want_nfe}")
            if text_check is not None:
                msg = text_check(j)
                if msg:
                    problems.append(msg)
        except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
            problems = [str(e)]
        if problems:
            failed += 1
            print(f"FAIL {name}: {'; '.join(problems)}\n  {shlex.join([args.bin, *argv, *EXTRA])}")
        else:
            passed += 1

    models = os.path.join(REPO, "tests", "data", "models")
    for path in sorted(glob.glob(os.path.join(REPO, "tests/data/golden/llada/*.json"))):
        g = json.load(open(path))
        check("llada/" + g["case"], llada_args(g, os.path.join(models, g["model"])),
              g["output_ids"], g["nfe"])
    for path in sorted(glob.glob(os.path.join(REPO, "tests/data/golden/dream/*.json"))):
        g = json.load(open(path))
        check("dream/" + g["case"], dream_args(g, os.path.join(models, g["model"])),
              g["output_ids"], g["nfe"])
    for path in sorted(glob.glob(os.path.join(REPO, "tests/data/golden/twins/llada_story*.json"))):
        g = json.load(open(path))
        check("twins/" + g["case"], llada_args(g, os.path.join(REPO, g["model_path"])),
              g["output_ids"], g.get("nfe"))

    stories = os.path.join(SHARED, "models", "stories260K.gguf")
    expected = os.path.join(SHARED, "models", "stories260K_expected_greedy_runc.txt")
    if os.path.exists(stories) and os.path.exists(expected):
        cases: list[list[str]] = []
        for line in open(expected, encoding="utf-8").read().split("\n"):
            if line.startswith("### prompt=["):
                cases.append([line[len("### prompt=["):line.index("] steps=")], ""])
            elif cases:
                cases[-1][1] += ("\n" if cases[-1][1] else "") + line
        for prompt, text in cases:
            text = text.rstrip("\n")
            # run.c generates 257 - (prompt tokens with BOS) tokens and stops at a generated BOS
            # (id 1, the story separator); unmask ends only at EOS/EOT, so -n is set to that point.
            base = ["generate", "-m", stories, "-p", prompt, "--ignore-eos", "--json", "-t", "1"]
            try:
                full = run(args.bin, base + ["-n", "256"])
                n = 257 - len(full["prompt_ids"])
                if 1 in full["output_ids"][:n]:
                    n = full["output_ids"].index(1)
            except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
                failed += 1
                print(f"FAIL stories260K [{prompt}]: {e}")
                continue

            def same(j: dict, prompt=prompt, text=text) -> str | None:
                got = prompt + j["text"]
                return None if got == text else f"prompt + text {got[:80]!r}... != {text[:80]!r}..."

            check(f"stories260K [{prompt}]", base + ["-n", str(n)], None, None, same)
    elif os.environ.get("CI") == "true":
        print("FAIL stories260K: ../shared/data/models is missing (CI=true)")
        failed += 1
    else:
        print("check_release: ../shared/data missing, stories260K skipped", file=sys.stderr)

    print(f"release: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
