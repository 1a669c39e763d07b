#!/usr/bin/env python3
"""Load test of `unmask serve`: concurrent mixed clients against a small queue.

Starts `unmask serve` with both twins and a small queue (`--max-queue 4 --max-batch 4`), then runs
--clients closed-loop client threads for --duration-s seconds, each sending a random mix: AR,
diffusion and `auto`, completions and chat, streaming and not, malformed bodies and bad parameters,
and requests the client abandons early (a stream closed after its first chunk, a request closed
before its answer). Then two identical short bursts.

Checks: every request got 200 (a complete, well-formed answer), a 4xx with an OpenAI error object
(400/404 only for the requests made to get one), or 429 with a Retry-After header; no 5xx and no
connection error other than those the client caused; at least one 429 and at least one 200 per
engine; the server is alive and /health is 200 at the end, and no request is still running; the
server's resident memory stays below its start + --rss-bound-mib during the run, and grows by less
than --rss-growth-mib from the first short burst to the second. Prints a summary (requests by kind
and status, p50/p99 latency) and exits 1 on failure.

  .venv/bin/python tests/server/test_load.py --unmask build/release/bin/unmask [--clients 16] [--duration-s 20]
"""
import argparse
import http.client
import json
import os
import random
import sys
import threading
import time
import urllib.parse
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import AR, AR_ID, LLADA, LLADA_ID, ROOT, UnmaskServer  # noqa: E402

ENGINE = {LLADA_ID: "diffusion", AR_ID: "ar"}
REQUEST_TIMEOUT_S = 60.0
PROMPTS = ["Once upon a time", "Lily and Tom were playing with their blocks.", "The cat",
           "Sara and Ben are friends. They like to play at the park.", "One day, a little bird"]

# kind -> weight. Kinds starting with "bad_" expect a 4xx; "abort_" ones are abandoned by the client.
MIX = {"ar": 3, "ar_stream": 3, "diff": 2, "diff_stream": 2, "auto": 2, "auto_stream": 1,
       "chat_ar": 1, "chat_diff_stream": 1, "bad_json": 1, "bad_param": 1, "bad_model": 1,
       "bad_too_long": 1, "abort_stream": 1, "abort_wait": 1}
EXPECTED_4XX = {"bad_json": {400}, "bad_param": {400}, "bad_model": {404}, "bad_too_long": {400}}


def build_request(kind, rng):
    """Returns (path, body bytes, stream?, model)."""
    model = {"ar": AR_ID, "diff": LLADA_ID, "auto": "auto", "chat": None}.get(kind.split("_")[0])
    if kind.startswith("chat"):
        model = AR_ID if "ar" in kind else LLADA_ID
    if kind.startswith("abort"):
        model = rng.choice([AR_ID, LLADA_ID])
    if kind.startswith("bad"):
        model = rng.choice([AR_ID, LLADA_ID, "auto"])
    stream = kind.endswith("stream")
    body = {"model": model, "max_tokens": 96 if kind.startswith("abort") else rng.randint(8, 32),
            "temperature": rng.choice([0, 0.8]), "seed": rng.randint(0, 1000)}
    if model == LLADA_ID and rng.random() < 0.5:
        blocks = -(-body["max_tokens"] // 16)  # the canvas is max_tokens rounded up to blocks
        body.update(rng.choice([{"cache": "dual", "threshold": 0.9, "block_length": 16},
                                {"cache": "prefix", "commit": "threshold", "threshold": 0.8},
                                {"steps": 8 * blocks, "block_length": 16}]))
    if model == "auto" and rng.random() < 0.5:
        body["latency_target_ms"] = rng.choice([50, 200, 1000])
    if kind.startswith("chat"):
        path = "/v1/chat/completions"
        body["messages"] = [{"role": "user", "content": rng.choice(PROMPTS)}]
    else:
        path = "/v1/completions"
        body["prompt"] = rng.choice(PROMPTS)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    if kind == "bad_json":
        raw = json.dumps(body).encode()
        bad = [raw[:len(raw) // 2], b"{nope}", b"[]", b"",
               json.dumps({"model": model, "prompt": 5}).encode()]
        return path, rng.choice(bad), False, model
    if kind == "bad_param":
        body.update(rng.choice([{"temperature": -1}, {"max_tokens": 0}, {"n": 65}, {"top_p": 2},
                                {"max_tokens": "x"}, {"stop": ["a", "b", "c", "d", "e"]}]))
    if kind == "bad_model":
        body["model"] = "no-such-model"
    if kind == "bad_too_long":
        body["max_tokens"] = 100000
    return path, json.dumps(body).encode(), body.get("stream", False), model


class Result:
    __slots__ = ("kind", "status", "latency", "engine", "problem", "retry_after")

    def __init__(self, kind):
        self.kind, self.status, self.latency, self.engine = kind, None, None, None
        self.problem, self.retry_after = None, None


def is_error_object(obj):
    return (isinstance(obj, dict) and isinstance(obj.get("error"), dict)
            and isinstance(obj["error"].get("message"), str) and "type" in obj["error"])


def do_request(host, port, kind, rng):
    res = Result(kind)
    path, body, stream, model = build_request(kind, rng)
    conn = http.client.HTTPConnection(host, port, timeout=REQUEST_TIMEOUT_S)
    t0 = time.perf_counter()
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        if kind == "abort_wait":  # give up before the answer
            time.sleep(rng.uniform(0.01, 0.3))
            res.status = "client_abort"
            return res
        r = conn.getresponse()
        res.status = r.status
        if kind == "abort_stream" and r.status == 200:
            r.readline()  # the first line of the stream, then hang up
            res.status = "client_abort"
            return res
        if r.status == 200 and stream:
            usage_seen, done, events = None, False, 0
            while True:
                line = r.readline()
                if not line:
                    break
                line = line.decode().rstrip("\r\n")
                if not line.startswith("data: "):
                    continue
                if line == "data: [DONE]":
                    done = True
                    break
                ev = json.loads(line[6:])
                events += 1
                if "error" in ev:
                    res.problem = f"error event in a 200 stream: {line[:300]}"
                    return res
                if not ev.get("choices") and ev.get("usage"):
                    usage_seen = ev
            if not done:
                res.problem = f"stream ended without data: [DONE] after {events} events"
            elif usage_seen is None:
                res.problem = "stream without the usage chunk"
            else:
                res.engine = (usage_seen.get("x_unmask") or {}).get("engine") or ENGINE.get(model)
            res.latency = time.perf_counter() - t0
            return res
        data = r.read()
        res.latency = time.perf_counter() - t0
        try:
            obj = json.loads(data)
        except ValueError:
            obj = None
        if r.status == 200:
            ch = (obj or {}).get("choices") or [{}]
            text = ch[0].get("text") if "text" in ch[0] else (ch[0].get("message") or {}).get("content")
            if not isinstance(text, str) or not isinstance((obj or {}).get("usage"), dict):
                res.problem = f"malformed 200 body: {data[:300]!r}"
            else:
                res.engine = (obj.get("x_unmask") or {}).get("engine") or ENGINE.get(model)
        elif 400 <= r.status < 500:
            if not is_error_object(obj):
                res.problem = f"{r.status} without an OpenAI error object: {data[:300]!r}"
            if r.status == 429:
                res.retry_after = r.getheader("Retry-After")
                if res.retry_after is None:
                    res.problem = f"429 without Retry-After: {data[:300]!r}"
        else:
            res.problem = f"HTTP {r.status}: {data[:300]!r}"
        if res.problem is None and r.status != 429:
            want = EXPECTED_4XX.get(kind, {200})
            if r.status not in want:
                res.problem = (f"{kind}: HTTP {r.status}, expected {sorted(want)}; request "
                               f"{body[:200]!r}; answer {data[:300]!r}")
        return res
    except (OSError, http.client.HTTPException, ValueError) as e:
        res.status = "conn_error"
        res.problem = f"{type(e).__name__}: {e} (request {kind} {body[:160]!r})"
        return res
    finally:
        conn.close()


def run_phase(url, clients, duration_s, seed, tag):
    u = urllib.parse.urlsplit(url)
    results, lock = [], threading.Lock()
    stop_at = time.time() + duration_s
    kinds, weights = list(MIX), list(MIX.values())

    def client(i):
        rng = random.Random(seed * 1000 + i)
        while time.time() < stop_at:
            kind = rng.choices(kinds, weights)[0]
            res = do_request(u.hostname, u.port, kind, rng)
            with lock:
                results.append(res)
            if res.status == 429:  # honour Retry-After, a little
                try:
                    wait = float(res.retry_after or 0.2)
                except ValueError:
                    wait = 0.2
                time.sleep(min(wait, 0.5) * rng.uniform(0.5, 1.0))

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(duration_s + REQUEST_TIMEOUT_S + 10)
    hung = sum(t.is_alive() for t in threads)
    print(f"info  {tag}: {len(results)} requests in {duration_s:.0f} s by {clients} clients"
          + (f"; {hung} client threads still blocked" if hung else ""), flush=True)
    return results, hung


def get(url, path, timeout=10):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def running_requests(url):
    s, data = get(url, "/metrics")
    total = 0.0
    for line in data.decode().splitlines():
        if line.startswith("unmask:num_requests_running"):
            total += float(line.split()[-1])
    return total


def metric_sum(url, name):
    s, data = get(url, "/metrics")
    return sum(float(line.split()[-1]) for line in data.decode().splitlines()
               if line.startswith("unmask:" + name + "{"))


def write_rss(samples, csv_path, svg_path, title):
    """The RSS curve as CSV (seconds, MiB) and as a small SVG line plot."""
    if csv_path:
        with open(csv_path, "w") as f:
            f.write("seconds,rss_mib\n")
            for t, v in samples:
                f.write(f"{t:.1f},{v:.2f}\n")
    if svg_path and samples:
        w, h, pad = 640, 280, 48
        t_max = max(t for t, _ in samples) or 1.0
        v_lo, v_hi = 0.0, max(v for _, v in samples) * 1.15
        def xy(t, v):
            return (pad + (w - 2 * pad) * t / t_max,
                    h - pad - (h - 2 * pad) * (v - v_lo) / (v_hi - v_lo))
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(t, v) for t, v in samples))
        ticks = "".join(
            f'<text x="{pad - 6}" y="{xy(0, v)[1] + 4:.1f}" text-anchor="end">{v:.0f}</text>'
            for v in (v_hi * i / 4 for i in range(5)))
        ticks += "".join(
            f'<text x="{xy(t, 0)[0]:.1f}" y="{h - pad + 16}" text-anchor="middle">{t / 60:.0f}</text>'
            for t in (t_max * i / 5 for i in range(6)))
        svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
               f'font-family="sans-serif" font-size="11">'
               f'<rect width="{w}" height="{h}" fill="white"/>'
               f'<text x="{w / 2}" y="18" text-anchor="middle" font-size="13">{title}</text>'
               f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>'
               f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>{ticks}'
               f'<text x="{w / 2}" y="{h - 10}" text-anchor="middle">minutes</text>'
               f'<text x="14" y="{h / 2}" transform="rotate(-90 14 {h / 2})" '
               f'text-anchor="middle">RSS (MiB)</text>'
               f'<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="{pts}"/></svg>\n')
        with open(svg_path, "w") as f:
            f.write(svg)


def wait_idle(url, timeout_s=15):
    deadline = time.time() + timeout_s
    while True:
        n = running_requests(url)
        if n == 0 or time.time() > deadline:
            return n
        time.sleep(0.2)


def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unmask", default=os.path.join(ROOT, "build", "release", "unmask"))
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--duration-s", type=float, default=20)
    ap.add_argument("--burst-s", type=float, default=4, help="length of each of the two bursts")
    ap.add_argument("--rss-bound-mib", type=float, default=200)
    ap.add_argument("--rss-growth-mib", type=float, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rss-csv", help="write the RSS curve (seconds, MiB) here (a soak run)")
    ap.add_argument("--rss-svg", help="and plot it here")
    args = ap.parse_args()

    failures = []
    t_start = time.time()
    srv = UnmaskServer(args.unmask, ["-m", LLADA, "-m", AR, "-t", "1", "--max-queue", "4",
                                     "--max-batch", "4"])
    rss_samples, rss_curve, sampling = [], [], threading.Event()
    try:
        srv.__enter__()
        print(f"info  server {srv.url} (log {srv.log})", flush=True)
        u = urllib.parse.urlsplit(srv.url)
        for kind in ("ar", "diff"):  # warm-up: allocate what one request of each engine needs
            r = do_request(u.hostname, u.port, kind, random.Random(0))
            if r.status != 200 or r.problem:
                failures.append(f"warm-up {kind}: {r.status} {r.problem}")
        rss0 = srv.rss_kib() / 1024
        print(f"info  RSS after warm-up {rss0:.1f} MiB", flush=True)

        t_sample0 = time.time()

        def sampler():
            while not sampling.is_set() and srv.alive():
                try:
                    rss_samples.append(srv.rss_kib() / 1024)
                    rss_curve.append((time.time() - t_sample0, rss_samples[-1]))
                except OSError:
                    break
                sampling.wait(0.2)
        threading.Thread(target=sampler, daemon=True).start()

        results, hung = run_phase(srv.url, args.clients, args.duration_s, args.seed, "main run")
        if hung:
            failures.append(f"{hung} client threads blocked beyond the request timeout")
        burst_rss = []
        for b in range(2):
            if not srv.alive():
                break
            left = wait_idle(srv.url)
            if left:
                failures.append(f"{left} requests still running 15 s after the load stopped")
            r_b, hung = run_phase(srv.url, args.clients, args.burst_s, args.seed + 1, f"burst {b + 1}")
            results += r_b
            if hung:
                failures.append(f"burst {b + 1}: {hung} client threads blocked")
            if srv.alive():
                left = wait_idle(srv.url)
                if left:
                    failures.append(f"burst {b + 1}: {left} requests still running after 15 s")
                time.sleep(0.5)
                burst_rss.append(srv.rss_kib() / 1024)
        sampling.set()

        # ---- checks
        alive = srv.alive()
        print(f"{'ok  ' if alive else 'FAIL'}  server alive after the load", flush=True)
        if not alive:
            failures.append(f"server died (exit {srv.proc.returncode})")
        else:
            s, body = get(srv.url, "/health")
            print(f"{'ok  ' if s == 200 else 'FAIL'}  /health -> {s}", flush=True)
            if s != 200:
                failures.append(f"/health -> {s} {body[:200]!r}")
            n = running_requests(srv.url)
            print(f"{'ok  ' if n == 0 else 'FAIL'}  num_requests_running 0 at the end ({n:g})")
            if n:
                failures.append(f"num_requests_running {n:g} at the end")
            admitted = metric_sum(srv.url, "requests_admitted_total")
            ended = metric_sum(srv.url, "requests_total")
            good = admitted == ended and admitted > 0
            print(f"{'ok  ' if good else 'FAIL'}  metrics consistent: admitted {admitted:g} = "
                  f"finished + cancelled + failed {ended:g} (requests_total over outcomes)")
            if not good:
                failures.append(f"requests_admitted_total {admitted:g} != requests_total {ended:g}")

        problems = [r for r in results if r.problem]
        by_problem = Counter(r.problem.split(":")[0] for r in problems)
        print(f"{'ok  ' if not problems else 'FAIL'}  every answer is 200 / 4xx error object / "
              f"429 with Retry-After; no 5xx, no connection error ({len(problems)} problems)")
        for r in problems[:10]:
            failures.append(f"{r.kind}: {r.problem}")
        if len(problems) > 10:
            failures.append(f"... {len(problems) - 10} more problems: {dict(by_problem)}")

        n429 = sum(r.status == 429 for r in results)
        print(f"{'ok  ' if n429 else 'FAIL'}  at least one 429 (queue full): {n429}")
        if not n429:
            failures.append("no 429 although the queue holds 4 and "
                            f"{args.clients} clients were sending")
        ok_by_engine = Counter(r.engine for r in results if r.status == 200 and not r.problem)
        for eng in ("ar", "diffusion"):
            good = ok_by_engine[eng] > 0
            print(f"{'ok  ' if good else 'FAIL'}  200s answered by the {eng} engine: "
                  f"{ok_by_engine[eng]}")
            if not good:
                failures.append(f"no 200 from the {eng} engine")

        rss_max = max(rss_samples) if rss_samples else float("nan")
        good = rss_samples and rss_max < rss0 + args.rss_bound_mib
        print(f"{'ok  ' if good else 'FAIL'}  RSS max {rss_max:.1f} MiB < start {rss0:.1f} + "
              f"{args.rss_bound_mib:g} MiB ({len(rss_samples)} samples)")
        if not good:
            failures.append(f"RSS max {rss_max:.1f} MiB >= {rss0:.1f} + {args.rss_bound_mib:g} MiB")
        if len(burst_rss) == 2:
            growth = burst_rss[1] - burst_rss[0]
            good = growth < args.rss_growth_mib
            print(f"{'ok  ' if good else 'FAIL'}  RSS after burst 1 {burst_rss[0]:.1f} MiB, after "
                  f"burst 2 {burst_rss[1]:.1f} MiB: growth {growth:+.1f} < "
                  f"{args.rss_growth_mib:g} MiB")
            if not good:
                failures.append(f"RSS grew {growth:.1f} MiB between two identical bursts")
        else:
            failures.append("the two bursts did not run")

        write_rss(rss_curve, args.rss_csv, args.rss_svg,
                  f"unmask serve RSS, {args.clients} clients, {args.duration_s / 60:.0f} min")
        if len(rss_curve) > 30:
            third = len(rss_curve) // 3
            first = sum(v for _, v in rss_curve[:third]) / third
            last = sum(v for _, v in rss_curve[-third:]) / third
            print(f"info  RSS mean first third {first:.1f} MiB, last third {last:.1f} MiB")
        # ---- summary
        by_status = Counter(str(r.status) for r in results)
        lat = [r.latency for r in results if r.status == 200 and r.latency is not None]
        print(f"summary: {len(results)} requests in {time.time() - t_start:.0f} s; by status "
              + ", ".join(f"{k}: {v}" for k, v in sorted(by_status.items())))
        per_kind = defaultdict(Counter)
        for r in results:
            per_kind[r.kind][str(r.status)] += 1
        for k in MIX:
            print(f"  {k:17s} " + ", ".join(f"{s}: {n}" for s, n in sorted(per_kind[k].items())))
        print(f"  200 latency: p50 {pct(lat, 50) * 1000:.0f} ms, p99 {pct(lat, 99) * 1000:.0f} ms "
              f"({len(lat)} requests); 200s by engine {dict(ok_by_engine)}")
    except Exception as e:
        failures.append(f"{type(e).__name__}: {e}")
    finally:
        sampling.set()
        srv.__exit__(None, None, None)
    if failures:
        print(f"\nFAILED ({len(failures)}):", file=sys.stderr)
        for f in failures:
            print(f"  {f}", file=sys.stderr)
        if srv.log:
            print(f"--- server log (last 2000 chars of {srv.log}) ---\n{srv.stderr()[-2000:]}",
                  file=sys.stderr)
        return 1
    print("load test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
