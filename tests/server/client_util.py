"""Helpers of the server tests that speak HTTP to `unmask serve`: checks that print one line each,
the runner of a list of tests against one server, raw HTTP requests, the Prometheus text parser,
and the shape checks of usage and x_unmask."""
import http.client
import json
import re
import sys
import traceback
import urllib.parse

import openai
from openai import OpenAI

from server_util import AR_ID, LLADA_ID, UnmaskServer

PROMPT = "Once upon a time"
TIMEOUT_S = 60.0  # every client call; the twins generate 128 tokens in well under a second


class CheckFailed(Exception):
    pass


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = []

    def __call__(self, cond, name, detail=""):
        if not cond:
            raise CheckFailed(f"{name}: {detail}" if detail else name)
        self.passed += 1
        print(f"ok    {name}", flush=True)


check = Checks()


# ----------------------------------------------------------------------------------------------
# helpers


def raw(url, method, path, body=None, headers=None, timeout=TIMEOUT_S):
    """One HTTP request on a fresh connection: (status, headers (lower-case keys), body bytes)."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            headers = {"Content-Type": "application/json", **(headers or {})}
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        conn.close()


def raw_json(url, method, path, body=None, timeout=TIMEOUT_S):
    status, headers, data = raw(url, method, path, body, timeout=timeout)
    try:
        obj = json.loads(data)
    except ValueError:
        obj = None
    return status, headers, obj, data


def is_error_object(obj):
    return (isinstance(obj, dict) and isinstance(obj.get("error"), dict)
            and isinstance(obj["error"].get("message"), str) and obj["error"]["message"] != ""
            and "type" in obj["error"])


def x_unmask(obj):
    d = obj.to_dict() if hasattr(obj, "to_dict") else {}
    xu = d.get("x_unmask")
    if xu is None and getattr(obj, "model_extra", None):
        xu = obj.model_extra.get("x_unmask")
    return xu


METRIC_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?\s*$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """Prometheus text format -> list of (name, {label: value}, float)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = METRIC_LINE.match(line)
        if not m:
            raise CheckFailed(f"/metrics: unparsable line {line!r}")
        out.append((m.group(1), dict(LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return out


def metrics(url):
    status, headers, data = raw(url, "GET", "/metrics", timeout=10)
    if status != 200:
        raise CheckFailed(f"GET /metrics -> {status} {data[:200]!r}")
    return data.decode(), parse_metrics(data.decode())


def msum(samples, name, **labels):
    return sum(v for n, lab, v in samples
               if n == name and all(lab.get(k) == w for k, w in labels.items()))


def mvalues(samples, name):
    return [(lab, v) for n, lab, v in samples if n == name]


def check_usage(name, usage, max_tokens):
    check(usage is not None, f"{name}: usage present")
    p, c, t = usage.prompt_tokens, usage.completion_tokens, usage.total_tokens
    check(p > 0 and c >= 1 and t == p + c, f"{name}: usage consistent",
          f"prompt {p} completion {c} total {t}")
    if max_tokens is not None:
        check(c <= max_tokens, f"{name}: completion_tokens <= max_tokens", f"{c} > {max_tokens}")


def check_x_unmask(name, xu, engine=None, model=None):
    check(isinstance(xu, dict), f"{name}: x_unmask present", repr(xu))
    missing = [k for k in ("model", "engine", "nfe", "tokens_per_forward", "queue_ms", "ttft_ms",
                           "total_ms") if k not in xu]
    check(not missing, f"{name}: x_unmask fields", f"missing {missing} in {xu}")
    if engine:
        check(xu["engine"] == engine, f"{name}: x_unmask.engine == {engine}", repr(xu))
    if model:
        check(xu["model"] == model, f"{name}: x_unmask.model == {model}", repr(xu))
    check(isinstance(xu["nfe"], int) and xu["nfe"] >= 1, f"{name}: x_unmask.nfe >= 1", repr(xu))


ENGINE = {LLADA_ID: "diffusion", AR_ID: "ar"}


def complete(client, model, max_tokens=32, temperature=0.0, **kw):
    return client.completions.create(model=model, prompt=kw.pop("prompt", PROMPT),
                                     max_tokens=max_tokens, temperature=temperature, **kw)


def expect_status(fn, exc_type, status):
    """Calls fn, expects the openai exception exc_type with status_code status; returns it."""
    try:
        r = fn()
    except exc_type as e:
        if getattr(e, "status_code", None) != status:
            raise CheckFailed(f"expected HTTP {status}, got {e.status_code}: {e}")
        return e
    except openai.APIStatusError as e:
        raise CheckFailed(f"expected {exc_type.__name__} ({status}), got "
                          f"{type(e).__name__} {e.status_code}: {e.body}")
    raise CheckFailed(f"expected {exc_type.__name__} ({status}), got a response: {str(r)[:300]}")


def error_message(e):
    body = e.body if isinstance(e.body, dict) else {}
    err = body.get("error", body) if isinstance(body, dict) else {}
    return str(err.get("message", "")) if isinstance(err, dict) else "", err


# ----------------------------------------------------------------------------------------------
# runner


def run_tests(unmask, server_args, tests, api_key="none"):
    """Starts `unmask serve <server_args>` and runs each test: a function test(url, client)
    (named by its __name__) or a (name, function) pair. A failing check or an exception fails only
    that test; the run stops when the server dies. Prints the failures and the server log's tail;
    returns the exit status (0: all passed)."""
    srv = UnmaskServer(unmask, server_args)
    failed = []
    try:
        srv.__enter__()
        client = OpenAI(base_url=srv.url + "/v1", api_key=api_key, max_retries=0,
                        timeout=TIMEOUT_S)
        print(f"info  server {srv.url} (log {srv.log})", flush=True)
        for t in tests:
            name, fn = t if isinstance(t, tuple) else (t.__name__, t)
            try:
                fn(srv.url, client)
            except CheckFailed as e:
                failed.append(f"{name}: {e}")
                print(f"FAIL  {name}: {e}", flush=True)
            except Exception as e:  # an unexpected exception is a failure of that test
                failed.append(f"{name}: {type(e).__name__}: {e}")
                print(f"FAIL  {name}: unexpected {type(e).__name__}: {e}", flush=True)
                traceback.print_exc()
            if not srv.alive():
                failed.append(f"server died (exit {srv.proc.returncode}) during {name}")
                print(f"FAIL  server died during {name}", flush=True)
                break
        if srv.alive():
            s, _, obj, _ = raw_json(srv.url, "GET", "/health", timeout=10)
            if s == 200:
                print("ok    server alive and healthy after all tests")
            else:
                failed.append(f"/health -> {s} after all tests")
    except Exception as e:
        failed.append(f"setup: {type(e).__name__}: {e}")
        print(f"FAIL  setup: {e}", flush=True)
    finally:
        srv.__exit__(None, None, None)
    if failed:
        log = srv.stderr() if srv.log else ""
        print(f"\n{len(failed)} test(s) FAILED, {check.passed} checks passed:", file=sys.stderr)
        for f in failed:
            print(f"  {f}", file=sys.stderr)
        print(f"--- server log (last 3000 chars of {srv.log}) ---\n{log[-3000:]}", file=sys.stderr)
        return 1
    print(f"all {check.passed} checks passed")
    return 0
