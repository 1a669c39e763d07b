#!/usr/bin/env python3
"""`unmask serve --compute bf16`: the served models say their compute type in /v1/models
(x_unmask.compute: bf16, or f32 where the CPU lacks bf16 instructions, which the server's log then
warns about) and in /metrics (unmask:model_info's compute label), both engines answer completions,
and `--compute bf16 --weights native` exits 1 with one line naming the flags. Prints one line per
check; exits 1 if any check failed.

  .venv/bin/python tests/server/test_compute.py --unmask build/release/unmask
"""
import argparse
import json
import os
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import AR, AR_ID, LLADA, LLADA_ID  # noqa: E402

from client_util import check, run_tests  # noqa: E402


def models_report_bf16(url, client):
    with urllib.request.urlopen(url + "/v1/models", timeout=10) as r:
        data = json.loads(r.read())["data"]
    by_id = {m["id"]: m for m in data}
    for mid in (LLADA_ID, AR_ID):
        compute = by_id[mid]["x_unmask"]["compute"]
        check(compute in ("bf16", "f32"), f"{mid}: x_unmask.compute is bf16 or f32", compute)
    models_report_bf16.types = {mid: by_id[mid]["x_unmask"]["compute"] for mid in (LLADA_ID, AR_ID)}


def metrics_name_the_compute_type(url, client):
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    for mid, compute in models_report_bf16.types.items():
        want = f'model="{mid}"'
        lines = [line for line in text.splitlines()
                 if line.startswith("unmask:model_info") and want in line]
        check(len(lines) == 1 and f'compute="{compute}"' in lines[0],
              f"{mid}: unmask:model_info has compute=\"{compute}\"", repr(lines))


def both_engines_answer(url, client):
    for mid in (LLADA_ID, AR_ID):
        r = client.completions.create(model=mid, prompt="Once upon a time", max_tokens=16,
                                      temperature=0)
        text = r.choices[0].text
        check(isinstance(text, str) and len(text) > 0, f"{mid}: non-empty completion", repr(text))
        check(r.usage.completion_tokens >= 1, f"{mid}: completion tokens counted")


def native_weights_refused(unmask):
    p = subprocess.run([unmask, "serve", "-m", LLADA, "--compute", "bf16", "--weights", "native",
                        "--port", "0", "-t", "1"], capture_output=True, text=True, timeout=60)
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    ok = p.returncode == 1 and len(lines) == 1 and "--weights native" in lines[0]
    print(("ok    " if ok else "FAIL  ") + "serve --compute bf16 --weights native: exit 1, one line",
          flush=True)
    if not ok:
        print(f"      exit {p.returncode}, stderr: {p.stderr!r}", flush=True)
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--unmask", required=True)
    args = ap.parse_args()
    rc = run_tests(args.unmask, ["-m", LLADA, "-m", AR, "-t", "1", "--compute", "bf16"],
                   [models_report_bf16, metrics_name_the_compute_type, both_engines_answer])
    if not native_weights_refused(args.unmask):
        rc = 1
    sys.exit(rc)


if __name__ == "__main__":
    main()
