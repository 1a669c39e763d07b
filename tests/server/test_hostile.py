#!/usr/bin/env python3
"""`unmask serve` under hostile clients, on loopback, each attack bounded in time:

  slow_headers   300 connections that trickle a request's headers, a byte every 0.5 s
  slow_body      100 connections that send their headers and trickle a 2 KB body
  burst          1000 connects while the server accepts none (stopped): the kernel's accept queue
                 (the listen backlog) holds them all, none waits for a SYN retransmission
  idle           2000 connections that send nothing
  pipelined      three requests in one write on one connection: three answers, in order
  expect         "Expect: 100-continue": the interim answer at once, then the response
  departed       a whole response's client leaves: its requests end as aborted
  smuggling      two different Content-Length headers, Content-Length with Transfer-Encoding: 400
  oversized      a 64 KiB header line, then a 9 MiB body: 431 / 413, the connection closed
  stop_reading   streams whose client stops reading: the server frees their work
  garbage        random bytes and broken request lines on 200 connections

While each attack runs, a probe measures GET /health and a short completion on fresh connections
every 0.25 s: every answer must come within 1 s (the machine's limits allowing), and the server's
resident memory must stay within a bound. Prints per attack the worst latencies (what
docs/reliability.md records) and exits 1 if a check failed.

  .venv/bin/python tests/server/test_hostile.py --unmask build/release/bin/unmask [-k name]
"""
import argparse
import http.client
import json
import os
import random
import resource
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import AR, AR_ID, LLADA, UnmaskServer  # noqa: E402

LIMIT_S = 1.0


class Probe:
    """Measures /health and a short completion every 0.25 s on fresh connections."""

    def __init__(self, port):
        self.port, self.health, self.complete, self.errors = port, [], [], []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def one(self, method, path, body=None):
        t0 = time.time()
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            c.request(method, path, body=None if body is None else json.dumps(body),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            c.close()
            if r.status != 200:
                self.errors.append(f"{path}: HTTP {r.status}")
        except OSError as e:
            self.errors.append(f"{path}: {type(e).__name__}: {e}")
            return 10.0
        return time.time() - t0

    def run(self):
        while not self.stop.is_set():
            self.health.append(self.one("GET", "/health"))
            self.complete.append(self.one("POST", "/v1/completions",
                                          {"model": AR_ID, "prompt": "Once", "max_tokens": 4,
                                           "temperature": 0}))
            self.stop.wait(0.25)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=30)


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_to_close(s):
    """Everything the server sends until it closes the connection (or the socket times out)."""
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    s.close()
    return data


def close_all(socks):
    for s in socks:
        try:
            s.close()
        except OSError:
            pass


def attack_slow_headers(port, seconds):
    socks = [connect(port) for _ in range(300)]
    for s in socks:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
    header = b"X-Slow: " + b"a" * 64
    end = time.time() + seconds
    i = 0
    while time.time() < end:
        for s in socks:
            try:
                s.send(header[i % len(header):i % len(header) + 1])
            except OSError:
                pass
        i += 1
        time.sleep(0.5)
    close_all(socks)
    return "300 connections trickling headers"


def attack_slow_body(port, seconds):
    socks = [connect(port) for _ in range(100)]
    for s in socks:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 2048\r\n\r\n{")
    end = time.time() + seconds
    while time.time() < end:
        for s in socks:
            try:
                s.send(b" ")
            except OSError:
                pass
        time.sleep(0.5)
    close_all(socks)
    return "100 connections trickling a body"


def attack_idle(port, seconds):
    socks = []
    for _ in range(2000):
        try:
            socks.append(connect(port))
        except OSError:
            break
    time.sleep(seconds)
    n = len(socks)
    close_all(socks)
    return f"{n} idle connections"


def attack_garbage(port, seconds):
    rng = random.Random(1)
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        socks = []
        for _ in range(200):
            try:
                s = connect(port)
                kind = rng.randrange(3)
                if kind == 0:
                    s.send(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 512))))
                elif kind == 1:
                    s.send(b"GET /" + b"a" * rng.randrange(10000) + b" HTTP/1.1\r\n\r\n")
                else:
                    s.send(b"POST /v1/completions HTTP/1.1\r\nContent-Length: -5\r\n\r\n")
                socks.append(s)
                n += 1
            except OSError:
                pass
        time.sleep(0.5)
        close_all(socks)
    return f"{n} connections of garbage"


def run_attack(srv, name, fn, seconds, failures, rss_bound_kib):
    rss0 = srv.rss_kib()
    with Probe(int(srv.url.rsplit(":", 1)[1])) as probe:
        time.sleep(0.5)
        what = fn(int(srv.url.rsplit(":", 1)[1]), seconds)
        time.sleep(0.5)
    rss1 = srv.rss_kib()
    h = max(probe.health) if probe.health else float("inf")
    c = max(probe.complete) if probe.complete else float("inf")
    ok = (h <= LIMIT_S and c <= LIMIT_S and not probe.errors and srv.alive()
          and rss1 - rss0 <= rss_bound_kib)
    print(f"{'ok  ' if ok else 'FAIL'}  {name}: {what}; /health worst {h * 1000:.0f} ms "
          f"({len(probe.health)} probes), completion worst {c * 1000:.0f} ms, RSS "
          f"{rss0 // 1024} -> {rss1 // 1024} MiB" + (f"; errors {probe.errors[:3]}"
                                                      if probe.errors else ""), flush=True)
    if not ok:
        failures.append(name)


def check_pipelined(srv, failures):
    port = int(srv.url.rsplit(":", 1)[1])
    body = json.dumps({"model": AR_ID, "prompt": "Once", "max_tokens": 3, "temperature": 0})
    req = (b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
           b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
           b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" +
           body.encode())
    s = connect(port)
    s.sendall(req)
    s.settimeout(10)
    data = read_to_close(s)
    answers = data.count(b"HTTP/1.1 200")
    ok = (answers == 3 and data.index(b'"status"') < data.index(b'"object":"list"')
          < data.index(b'"text_completion"'))
    print(f"{'ok  ' if ok else 'FAIL'}  pipelined: {answers} of 3 answers in order", flush=True)
    if not ok:
        failures.append("pipelined")


def check_expect_continue(srv, failures):
    """A client that sends "Expect: 100-continue" (curl, for bodies over 1 KiB) gets the interim
    answer at once, sends its body, and gets its response."""
    port = int(srv.url.rsplit(":", 1)[1])
    body = json.dumps({"model": AR_ID, "prompt": "Once", "max_tokens": 2,
                       "user": "u" * 2000}).encode()  # over 1 KiB, as curl would send
    s = connect(port)
    t0 = time.time()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Expect: 100-continue\r\nConnection: close\r\nContent-Length: " +
              str(len(body)).encode() + b"\r\n\r\n")
    s.settimeout(5)
    interim = s.recv(64)
    t_interim = time.time() - t0
    s.sendall(body)
    data = read_to_close(s)
    ok = interim.startswith(b"HTTP/1.1 100") and t_interim < 0.5 and b"HTTP/1.1 200" in data
    status = b" ".join(line for line in data.splitlines() if line.startswith(b"HTTP/1.1"))
    print(f"{'ok  ' if ok else 'FAIL'}  expect_continue: 100 Continue after {t_interim * 1000:.0f} "
          f"ms, then {status[:60]!r}", flush=True)
    if not ok:
        failures.append("expect_continue")


def check_departed(srv, failures):
    """A client that leaves a whole (non-streaming) response: the server's keep-alive spaces,
    written at least every second even while tokens are being made, notice it and the requests
    are cancelled, instead of running to their end (they take ~3 s here)."""
    port = int(srv.url.rsplit(":", 1)[1])
    body = json.dumps({"model": "unmask-tinystories-llada", "prompt": "Once upon a time",
                       "max_tokens": 128, "steps": 128, "block_length": 32, "n": 3}).encode()
    before = metric(srv, "requests_total") - 0
    aborted_before = metric(srv, "requests_total", "abort")
    s = connect(port)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    time.sleep(0.3)
    s.close()
    deadline = time.time() + 10
    while time.time() < deadline and metric(srv, "num_requests_running") > 0:
        time.sleep(0.1)
    aborted = metric(srv, "requests_total", "abort") - aborted_before
    ended = metric(srv, "requests_total") - before
    ok = aborted == 3 and ended == 3
    print(f"{'ok  ' if ok else 'FAIL'}  departed: a whole response's client left: {aborted:g} of "
          f"{ended:g} requests ended as abort", flush=True)
    if not ok:
        failures.append("departed")


def check_smuggling(srv, failures):
    """Ambiguous body lengths (two Content-Length values, Content-Length with Transfer-Encoding)
    are refused: behind a proxy that reads the other one, they smuggle a second request."""
    port = int(srv.url.rsplit(":", 1)[1])
    answers = []
    for extra in (b"Content-Length: 2\r\nContent-Length: 50\r\n",
                  b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n"):
        s = connect(port)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + extra + b"\r\n{}")
        s.settimeout(10)
        try:
            answers.append(s.recv(4096).split(b"\r\n", 1)[0].decode("latin-1"))
        except OSError as e:
            answers.append(str(e))
        s.close()
    ok = all(a.startswith("HTTP/1.1 400") for a in answers)
    print(f"{'ok  ' if ok else 'FAIL'}  smuggling: {answers}", flush=True)
    if not ok:
        failures.append("smuggling")


def check_oversized(srv, failures):
    port = int(srv.url.rsplit(":", 1)[1])
    results = []
    for req in (b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n",
                b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 9437184\r\n\r\n"):
        s = connect(port)
        try:
            s.sendall(req)
            s.settimeout(10)
            data = s.recv(4096)
        except OSError as e:
            data = str(e).encode()
        s.close()
        results.append(data.split(b"\r\n", 1)[0].decode("latin-1"))
    ok = (results[0].startswith("HTTP/1.1 4") and "413" in results[1] and srv.alive())
    print(f"{'ok  ' if ok else 'FAIL'}  oversized: header line -> {results[0]!r}, 9 MiB body -> "
          f"{results[1]!r}", flush=True)
    if not ok:
        failures.append("oversized")


def metric(srv, name, outcome=None):
    """The sum of a metric's series (those of one requests_total outcome when given)."""
    c = http.client.HTTPConnection("127.0.0.1", int(srv.url.rsplit(":", 1)[1]), timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("unmask:" + name + "{")
               and (outcome is None or f'outcome="{outcome}"' in line))


def check_stop_reading(srv, failures):
    """Streams whose client stops reading: the server's writes time out and the engine drops
    the requests (num_requests_running back to 0) while /health keeps answering."""
    port = int(srv.url.rsplit(":", 1)[1])
    # As long as the AR twin's context allows (256), 8 choices each: more than the socket buffers
    # hold once the client stops reading.
    body = json.dumps({"model": AR_ID, "prompt": "Once upon a time", "max_tokens": 240, "n": 8,
                       "ignore_eos": True, "stream": True, "temperature": 0}).encode()
    socks = []
    for _ in range(4):
        s = connect(port)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        socks.append(s)
    t0 = time.time()
    running = None
    with Probe(port) as probe:
        time.sleep(1)
        busy = metric(srv, "num_requests_running")
        deadline = time.time() + 45
        while time.time() < deadline:
            running = metric(srv, "num_requests_running")
            if running == 0:
                break
            time.sleep(0.5)
    freed_s = time.time() - t0
    close_all(socks)
    h = max(probe.health) if probe.health else float("inf")
    ok = running == 0 and h <= LIMIT_S and srv.alive()
    print(f"{'ok  ' if ok else 'FAIL'}  stop_reading: 4 streams not read ({busy:.0f} running); "
          f"their work freed after {freed_s:.1f} s; /health worst {h * 1000:.0f} ms", flush=True)
    if not ok:
        failures.append("stop_reading")


def check_burst(srv, failures, n=1000):
    """The listen backlog, measured: with the server stopped (SIGSTOP) nothing is accepted, so each
    connect completes only while the kernel's accept queue has room. A backlog of 5 (cpp-httplib's
    default) fails at the 7th: its SYN is dropped and the client would retry 1 s later."""
    port = int(srv.url.rsplit(":", 1)[1])
    try:  # the kernel caps every backlog at net.core.somaxconn
        with open("/proc/sys/net/core/somaxconn") as f:
            n = min(n, int(f.read()))
    except (OSError, ValueError):
        pass
    socks, err = [], None
    srv.proc.send_signal(signal.SIGSTOP)
    try:
        for _ in range(n):
            try:
                socks.append(socket.create_connection(("127.0.0.1", port), timeout=0.5))
            except OSError as e:
                err = f"{type(e).__name__}: {e}"
                break
    finally:
        srv.proc.send_signal(signal.SIGCONT)
    close_all(socks)
    ok = len(socks) == n
    print(f"{'ok  ' if ok else 'FAIL'}  burst: {len(socks)} of {n} connects queued while the "
          f"server accepted none" + (f" (then {err})" if err else ""), flush=True)
    if not ok:
        failures.append("burst")


ATTACKS = [("slow_headers", attack_slow_headers), ("slow_body", attack_slow_body),
           ("idle", attack_idle), ("garbage", attack_garbage)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--unmask", default="build/release/bin/unmask")
    ap.add_argument("--seconds", type=float, default=8.0, help="length of each attack")
    ap.add_argument("--rss-bound-mib", type=int, default=200)
    ap.add_argument("-k", help="run only the attacks whose name contains this")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    failures = []
    with UnmaskServer(args.unmask, ["-m", LLADA, "-m", AR, "-t", "1"]) as srv:
        print(f"info  server {srv.url} (log {srv.log})", flush=True)
        if not args.k or args.k in "burst":
            check_burst(srv, failures)
        for name, fn in ATTACKS:
            if not args.k or args.k in name:
                run_attack(srv, name, fn, args.seconds, failures, args.rss_bound_mib * 1024)
        if not args.k or args.k in "pipelined":
            check_pipelined(srv, failures)
        if not args.k or args.k in "expect_continue":
            check_expect_continue(srv, failures)
        if not args.k or args.k in "departed":
            check_departed(srv, failures)
        if not args.k or args.k in "smuggling":
            check_smuggling(srv, failures)
        if not args.k or args.k in "oversized":
            check_oversized(srv, failures)
        if not args.k or args.k in "stop_reading":
            check_stop_reading(srv, failures)
        alive = srv.alive()
        if not alive:
            failures.append("server died")
        log = srv.stderr()
    if failures:
        print(f"\nFAILED: {', '.join(failures)}\n--- server log ---\n{log[-2000:]}", file=sys.stderr)
        return 1
    print("all attacks survived")
    return 0


if __name__ == "__main__":
    sys.exit(main())
