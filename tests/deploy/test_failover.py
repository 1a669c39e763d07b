#!/usr/bin/env python3
"""Three `unmask serve` replicas behind HAProxy with the shipped configuration
(deploy/haproxy/haproxy.cfg), on loopback, under load: one replica is killed (SIGKILL) mid-load and
restarted, another is restarted gracefully (SIGTERM: it drains). Checks that

  - every request admitted either completes or gets a clean error (an HTTP error status, or a
    stream that ends early), and none hangs;
  - only requests in flight on the killed replica fail (at most one per client thread);
  - HAProxy marks the killed replica DOWN within its health-check window (inter 1 s x fall 2,
    plus one interval of slack) and UP again after the restart;
  - the graceful restart loses nothing: no request fails while the replica drains and restarts.

Prints the timeline and the counts (docs/reliability.md records a run); exits 1 on a failure.

  .venv/bin/python tests/deploy/test_failover.py --unmask build/release/bin/unmask
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLADA = os.path.join(ROOT, "models", "unmask-tinystories-llada.gguf")
AR = os.path.join(ROOT, "models", "unmask-tinystories-ar.gguf")
CLIENT_TIMEOUT_S = 60


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(port):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        c.request("GET", "/health")
        ok = c.getresponse().status == 200
        c.close()
        return ok
    except OSError:
        return False


class Replica:
    def __init__(self, unmask, port):
        self.unmask, self.port, self.proc = unmask, port, None
        fd, self.log = tempfile.mkstemp(prefix=f"unmask-replica-{port}-", suffix=".log")
        os.close(fd)

    def start(self):
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(
                [self.unmask, "serve", "--host", "127.0.0.1", "--port", str(self.port), "-m", LLADA,
                 "-m", AR, "-t", "1", "--max-batch", "4", "--drain-timeout", "20"],
                stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"replica {self.port} exited: {open(self.log).read()[-2000:]}")
            if healthy(self.port):
                return
            time.sleep(0.05)
        raise RuntimeError(f"replica {self.port} not ready")

    def stop(self, sig=signal.SIGINT, timeout=30):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class HAProxy:
    def __init__(self, listen, ports):
        self.listen, self.ports, self.lines, self.proc = listen, ports, [], None

    def start(self):
        env = dict(os.environ, UNMASK_LISTEN=f"127.0.0.1:{self.listen}",
                   UNMASK_R1=f"127.0.0.1:{self.ports[0]}", UNMASK_R2=f"127.0.0.1:{self.ports[1]}",
                   UNMASK_R3=f"127.0.0.1:{self.ports[2]}")
        # -db: foreground; the shipped file as is (its log goes to stderr).
        self.proc = subprocess.Popen(["haproxy", "-db", "-f",
                                      os.path.join(ROOT, "deploy", "haproxy", "haproxy.cfg")],
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.time() + 20
        while time.time() < deadline and not healthy(self.listen):
            time.sleep(0.05)
        if not healthy(self.listen):
            raise RuntimeError("haproxy not ready: " + "".join(t for _, t in self.lines))

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.time(), line))

    def first(self, pattern, after):
        for t, line in self.lines:
            if t >= after and re.search(pattern, line):
                return t
        return None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


BODIES = [
    ("/v1/completions", {"model": "unmask-tinystories-ar", "prompt": "Once upon a time",
                         "max_tokens": 24, "temperature": 0}),
    ("/v1/completions", {"model": "unmask-tinystories-ar", "prompt": "Tom had a red ball.",
                         "max_tokens": 24, "stream": True}),
    ("/v1/completions", {"model": "unmask-tinystories-llada", "prompt": "Once upon a time",
                         "max_tokens": 16, "steps": 8, "temperature": 0}),
    ("/v1/chat/completions", {"model": "unmask-tinystories-ar", "max_tokens": 16,
                              "messages": [{"role": "user", "content": "Lily saw a cat."}],
                              "stream": True}),
    ("/api/generate", {"model": "unmask-tinystories-ar", "prompt": "The sun",
                       "options": {"num_predict": 16}}),
]


def one_request(port, path, body):
    """(outcome, detail): ok | error (a clean HTTP error or a stream that ended early) | hang."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=CLIENT_TIMEOUT_S)
    try:
        c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read().decode("utf-8", "replace")
        if r.status != 200:
            return "error", f"HTTP {r.status}"
        if path == "/api/generate":
            lines = [json.loads(x) for x in data.splitlines() if x.strip()]
            ok = lines and lines[-1].get("done") is True
            return ("ok", "") if ok else ("error", "NDJSON stream ended early")
        if body.get("stream"):
            ok = data.rstrip().endswith("data: [DONE]") and '"finish_reason":"' in data
            return ("ok", "") if ok else ("error", "SSE stream ended early")
        obj = json.loads(data)
        ok = obj["choices"][0]["finish_reason"] in ("stop", "length")
        return ("ok", "") if ok else ("error", "no finish_reason")
    except socket.timeout:
        return "hang", "no answer within the client timeout"
    except (OSError, http.client.HTTPException, ValueError) as e:
        return "error", type(e).__name__
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--unmask", default=os.path.join(ROOT, "build", "release", "bin", "unmask"))
    ap.add_argument("--clients", type=int, default=6)
    args = ap.parse_args()
    if shutil.which("haproxy") is None:
        print("SKIPPED: haproxy is not installed (scripts/install-deps.sh installs it)")
        return 1 if os.environ.get("CI") == "true" else 0
    ports = [free_port() for _ in range(3)]
    replicas = [Replica(args.unmask, p) for p in ports]
    proxy = HAProxy(free_port(), ports)
    results, lock, stop = [], threading.Lock(), threading.Event()
    failures = []

    def check(cond, what, detail=""):
        print(("ok    " if cond else "FAIL  ") + what + (f": {detail}" if detail and not cond else ""),
              flush=True)
        if not cond:
            failures.append(what)

    def worker(k):
        i = k
        while not stop.is_set():
            path, body = BODIES[i % len(BODIES)]
            t0 = time.time()
            outcome, detail = one_request(proxy.listen, path, body)
            with lock:
                results.append((t0, time.time(), outcome, detail, path))
            i += 1

    try:
        for r in replicas:
            r.start()
        proxy.start()
        t_start = time.time()
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(args.clients)]
        for t in threads:
            t.start()
        time.sleep(3)
        t_kill = time.time()
        replicas[1].proc.kill()  # SIGKILL: no drain, its connections drop
        replicas[1].proc.wait()
        time.sleep(4)
        t_restart = time.time()
        replicas[1].start()
        t_restarted = time.time()
        time.sleep(3)
        t_term = time.time()
        replicas[2].stop(signal.SIGTERM)  # drains: the running requests finish
        t_drained = time.time()
        replicas[2].start()
        t_back = time.time()
        time.sleep(3)
        stop.set()
        for t in threads:
            t.join(timeout=CLIENT_TIMEOUT_S + 10)
        check(not any(t.is_alive() for t in threads), "every client thread ended")
        t_end = time.time()

        n = len(results)
        by = {o: sum(1 for r in results if r[2] == o) for o in ("ok", "error", "hang")}
        print(f"info  {n} requests in {t_end - t_start:.1f} s through HAProxy: {by['ok']} ok, "
              f"{by['error']} clean errors, {by['hang']} hung")
        check(n > 50, "the load ran", f"{n} requests")
        check(by["hang"] == 0, "no request hung")
        errors = [r for r in results if r[2] == "error"]
        for r in errors:
            print(f"info  error at t={r[0] - t_start:.2f}-{r[1] - t_start:.2f} s {r[4]}: {r[3]}")
        # Only requests in flight on the killed replica may fail: started before the kill, ended
        # after it, at most one per client.
        stray = [r for r in errors if not (r[0] <= t_kill + 0.05 and r[1] >= t_kill)]
        check(not stray, "errors only for requests in flight at the kill",
              f"{len(stray)} others: {stray[:3]}")
        check(len(errors) <= args.clients, f"at most one error per client ({len(errors)})")
        down = proxy.first(r"r2 is DOWN", t_kill)
        check(down is not None and down - t_kill <= 3.0,
              "HAProxy marks the killed replica DOWN within its check window (3 s)",
              "never" if down is None else f"{down - t_kill:.2f} s")
        if down is not None:
            print(f"info  r2 DOWN {down - t_kill:.2f} s after SIGKILL")
        up = proxy.first(r"r2 is UP", t_restart)
        check(up is not None and up - t_restarted <= 3.0, "and UP again after the restart",
              "never" if up is None else f"{up - t_restarted:.2f} s after it was ready")
        during_term = [r for r in results if r[1] >= t_term and r[0] <= t_back + 2]
        lost = [r for r in during_term if r[2] != "ok"]
        check(during_term and not lost,
              f"graceful restart (SIGTERM, drained in {t_drained - t_term:.2f} s) loses nothing",
              f"{len(lost)} of {len(during_term)} failed: {lost[:3]}")
        print(f"info  {len(during_term)} requests overlapped the SIGTERM restart, "
              f"{len(lost)} failed")
    except Exception as e:  # setup failures
        failures.append(f"{type(e).__name__}: {e}")
        print(f"FAIL  {type(e).__name__}: {e}")
    finally:
        stop.set()
        proxy.stop()
        for r in replicas:
            r.stop()
    if failures:
        print(f"\n{len(failures)} check(s) FAILED", file=sys.stderr)
        for t, line in proxy.lines[-30:]:
            print("haproxy: " + line.rstrip(), file=sys.stderr)
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
