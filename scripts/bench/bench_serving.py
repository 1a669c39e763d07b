#!/usr/bin/env python3
"""Serving benchmark of `unmask serve` (the conventions of vLLM's benchmark_serving).

Starts `unmask serve` with the diffusion and the AR twin (or uses --url), then for each target (the
diffusion model, the AR model, `auto`) and each --concurrency level runs closed-loop clients: that
many threads, each sending its next streaming completion as soon as the previous one finished,
until --requests-per-level requests are done. Prompts are the first lines of the held-out
TinyStories stories (scripts/train/data.py: the last 5% of
../shared/data/corpus/tinystories_train_head_944k.txt, never trained on), in order, cycled.

Per request: TTFT (arrival of the first chunk with content), E2E latency (until `data: [DONE]`),
output tokens (`usage.completion_tokens` of the usage chunk, `stream_options.include_usage`). Per
level: output tokens/s and requests/s over the wall time of the level, p50/p90/p99 of TTFT and E2E,
and for `auto` the router's choices (`x_unmask.router.choice`). One warm-up request per target first.

Writes DIR/serving.json (configuration, per-level summaries and per-request records) and
DIR/serving.md (the table), and prints the table.

  .venv/bin/python scripts/bench/bench_serving.py --unmask build/release/unmask --out build/bench-serving \\
      --concurrency 1,4,16 --requests-per-level 64 --max-tokens 64 -t 2
"""
import argparse
import datetime
import http.client
import json
import os
import platform
import subprocess
import sys
import threading
import time
import urllib.parse
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
sys.path.insert(0, os.path.join(ROOT, "scripts", "train"))
from server_util import AR, LLADA, UnmaskServer  # noqa: E402

FALLBACK_PROMPTS = ["Once upon a time, there was a little girl named Lily.",
                    "Tom and his dog went to the park one sunny day.",
                    "Sara had a big red ball. She liked to play with it every day.",
                    "One day, a little bird flew into the garden."]
REQUEST_TIMEOUT_S = 600.0


def load_prompts():
    try:
        import data  # scripts/train/data.py
        path = data.corpus_path()
        if not os.path.exists(path):
            raise FileNotFoundError(path)
        stories = data.load_splits(path)["held_out"]
        prompts = [s.split("\n")[0].strip() for s in stories]
        return [p for p in prompts if p], f"held-out TinyStories ({len(stories)} stories, {path})"
    except (ImportError, OSError) as e:
        print(f"WARNING: held-out TinyStories not available ({e}); using "
              f"{len(FALLBACK_PROMPTS)} fixed prompts", file=sys.stderr)
        return FALLBACK_PROMPTS, "fixed prompts (held-out TinyStories not found)"


def stream_request(host, port, body):
    """One streaming completion. Returns a dict: ttft_s, e2e_s, output_tokens, prompt_tokens,
    router choice, error."""
    out = {"ttft_s": None, "e2e_s": None, "output_tokens": None, "prompt_tokens": None,
           "choice": None, "error": None}
    conn = http.client.HTTPConnection(host, port, timeout=REQUEST_TIMEOUT_S)
    t0 = time.perf_counter()
    try:
        conn.request("POST", "/v1/completions", body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        if r.status != 200:
            out["error"] = f"HTTP {r.status}: {r.read()[:300]!r}"
            return out
        done = False
        while True:
            line = r.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data: "):
                continue
            if line == b"data: [DONE]":
                done = True
                break
            ev = json.loads(line[6:])
            if "error" in ev:
                out["error"] = f"error event: {line[:300]!r}"
                return out
            ch = ev.get("choices") or []
            if ch and ch[0].get("text") and out["ttft_s"] is None:
                out["ttft_s"] = time.perf_counter() - t0
            if not ch and ev.get("usage"):
                out["output_tokens"] = ev["usage"].get("completion_tokens")
                out["prompt_tokens"] = ev["usage"].get("prompt_tokens")
                xu = ev.get("x_unmask") or {}
                out["choice"] = (xu.get("router") or {}).get("choice") or xu.get("model")
        out["e2e_s"] = time.perf_counter() - t0
        if not done:
            out["error"] = "stream ended without data: [DONE]"
        elif out["output_tokens"] is None:
            out["error"] = "no usage chunk"
        if out["ttft_s"] is None:  # no text at all (an empty completion): TTFT = E2E
            out["ttft_s"] = out["e2e_s"]
        return out
    except (OSError, http.client.HTTPException, ValueError) as e:
        out["error"] = f"{type(e).__name__}: {e}"
        return out
    finally:
        conn.close()


def percentile(xs, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def run_level(url, target, concurrency, n_requests, prompts, args, extra):
    u = urllib.parse.urlsplit(url)
    lock = threading.Lock()
    next_i = [0]
    records = [None] * n_requests
    progress = [0]

    def worker():
        while True:
            with lock:
                i = next_i[0]
                if i >= n_requests:
                    return
                next_i[0] += 1
            body = {"model": target, "prompt": prompts[i % len(prompts)],
                    "max_tokens": args.max_tokens, "temperature": args.temperature,
                    "seed": i, "stream": True, "stream_options": {"include_usage": True}, **extra}
            rec = stream_request(u.hostname, u.port, body)
            rec["prompt_index"] = i % len(prompts)
            records[i] = rec
            with lock:
                progress[0] += 1
                print(f"\r{target} c={concurrency}: {progress[0]}/{n_requests}", end="",
                      file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    print(file=sys.stderr)
    ok = [r for r in records if r and not r["error"]]
    errors = [r["error"] for r in records if r and r["error"]]
    tokens = sum(r["output_tokens"] for r in ok)
    ttft = [r["ttft_s"] * 1000 for r in ok]
    e2e = [r["e2e_s"] * 1000 for r in ok]
    summary = {
        "target": target, "concurrency": concurrency, "requests": len(ok),
        "failed": len(errors), "errors": errors[:5], "wall_s": wall,
        "output_tokens": tokens, "output_tok_s": tokens / wall, "req_s": len(ok) / wall,
        "mean_output_tokens": tokens / len(ok) if ok else None,
        "mean_prompt_tokens": (sum(r["prompt_tokens"] or 0 for r in ok) / len(ok)) if ok else None,
    }
    for name, xs in (("ttft_ms", ttft), ("e2e_ms", e2e)):
        for q in (50, 90, 99):
            summary[f"{name}_p{q}"] = percentile(xs, q)
        summary[f"{name}_mean"] = sum(xs) / len(xs) if xs else None
    if target == "auto":
        summary["router_choices"] = dict(Counter(r["choice"] for r in ok))
    return summary, records


def fmt(x, digits=0):
    return "-" if x is None else f"{x:.{digits}f}"


def short(model_id):
    return model_id.replace("unmask-tinystories-", "")


def table(summaries):
    head = ("| target | concurrency | requests | output tok/s | req/s | TTFT p50 / p90 / p99 ms "
            "| E2E p50 / p90 / p99 ms | auto's choices |")
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---|"]
    for s in summaries:
        choices = ", ".join(f"{short(k)} {v}" for k, v in sorted(s.get("router_choices", {}).items()))
        req = f"{s['requests']}" + (f" ({s['failed']} failed)" if s["failed"] else "")
        lines.append(
            f"| {s['target']} | {s['concurrency']} | {req} | {fmt(s['output_tok_s'], 1)} | "
            f"{fmt(s['req_s'], 2)} | {fmt(s['ttft_ms_p50'])} / {fmt(s['ttft_ms_p90'])} / "
            f"{fmt(s['ttft_ms_p99'])} | {fmt(s['e2e_ms_p50'])} / {fmt(s['e2e_ms_p90'])} / "
            f"{fmt(s['e2e_ms_p99'])} | {choices or '-'} |")
    return "\n".join(lines)


def get_json(url, path):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return json.loads(r.read())
    finally:
        conn.close()


def git_commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unmask", default=os.path.join(ROOT, "build", "release", "unmask"))
    ap.add_argument("--out", required=True, help="directory for serving.json and serving.md")
    ap.add_argument("--url", help="benchmark a running server instead of starting one")
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--requests-per-level", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--targets", default="diffusion,ar,auto",
                    help="comma-separated: diffusion, ar, auto (or model ids)")
    ap.add_argument("--llada", default=LLADA)
    ap.add_argument("--ar", default=AR)
    ap.add_argument("--extra-body", default="{}",
                    help="JSON object of extension fields sent to diffusion and auto targets, "
                         'e.g. \'{"cache": "dual", "threshold": 0.9}\'')
    ap.add_argument("--server-args", default="",
                    help="extra arguments for unmask serve (space-separated)")
    args = ap.parse_args()
    levels = [int(c) for c in args.concurrency.split(",") if c]
    extra = json.loads(args.extra_body)
    prompts, prompt_source = load_prompts()
    os.makedirs(args.out, exist_ok=True)

    srv = None
    server_cmd = None
    try:
        if args.url:
            url = args.url.rstrip("/")
        else:
            sargs = ["-m", args.llada, "-m", args.ar, "-t", str(args.threads)] + args.server_args.split()
            server_cmd = [args.unmask, "serve"] + sargs
            srv = UnmaskServer(args.unmask, sargs).__enter__()
            url = srv.url
            print(f"server {url} (log {srv.log})", file=sys.stderr)
        models = get_json(url, "/v1/models")["data"]
        by_engine = {}
        for m in models:
            eng = (m.get("x_unmask") or {}).get("engine")
            if eng:
                by_engine.setdefault(eng, m["id"])
        targets = []
        for t in args.targets.split(","):
            t = t.strip()
            tid = by_engine.get(t, t) if t in ("diffusion", "ar") else t
            if tid in ("diffusion", "ar"):
                sys.exit(f"no {tid} model is loaded ({[m['id'] for m in models]})")
            targets.append(tid)
        engine_of = {m["id"]: (m.get("x_unmask") or {}).get("engine") for m in models}

        summaries, all_records = [], {}
        u = urllib.parse.urlsplit(url)
        for target in targets:
            tx = extra if engine_of.get(target) != "ar" else {}
            warm = stream_request(u.hostname, u.port, {
                "model": target, "prompt": prompts[0], "max_tokens": args.max_tokens,
                "temperature": args.temperature, "stream": True,
                "stream_options": {"include_usage": True}, **tx})
            if warm["error"]:
                sys.exit(f"warm-up request to {target} failed: {warm['error']}")
            for c in levels:
                s, recs = run_level(url, target, c, args.requests_per_level, prompts, args, tx)
                summaries.append(s)
                all_records[f"{target}@{c}"] = recs
                if s["failed"]:
                    print(f"WARNING: {target} c={c}: {s['failed']} failed: {s['errors'][:2]}",
                          file=sys.stderr)
    finally:
        if srv is not None:
            srv.__exit__(None, None, None)

    config = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git_commit(), "machine": platform.machine(), "cpus": os.cpu_count(),
        "server_cmd": server_cmd, "url": args.url, "threads": args.threads,
        "concurrency": levels, "requests_per_level": args.requests_per_level,
        "max_tokens": args.max_tokens, "temperature": args.temperature, "extra_body": extra,
        "prompts": prompt_source, "num_prompts": len(prompts), "targets": targets,
        "method": "closed loop: `concurrency` client threads, each sends its next streaming "
                  "completion when the previous one finished; TTFT = first chunk with text; "
                  "E2E = until data: [DONE]; output tokens from the usage chunk; tok/s and req/s "
                  "over the wall time of the level",
    }
    with open(os.path.join(args.out, "serving.json"), "w") as f:
        json.dump({"config": config, "results": summaries, "requests": all_records}, f, indent=1)
    md = table(summaries)
    with open(os.path.join(args.out, "serving.md"), "w") as f:
        f.write(f"<!-- bench_serving.py, {config['date']}, commit {config['git_commit']}, "
                f"{config['cpus']} CPUs, -t {args.threads}, max_tokens {args.max_tokens}, "
                f"temperature {args.temperature:g}, {args.requests_per_level} requests per level, "
                f"prompts: {prompt_source}, extra {json.dumps(extra)} -->\n\n{md}\n")
    print(md)
    failed = sum(s["failed"] for s in summaries)
    if failed:
        print(f"{failed} requests failed (see serving.json)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
