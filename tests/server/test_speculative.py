#!/usr/bin/env python3
"""Speculative decoding through `unmask serve`, with the official openai client:

- The AR twin's Medusa heads (models/unmask-tinystories-ar.medusa.gguf, beside the model) are
  found at start; /v1/models lists the "speculative" values each model takes (the draft model,
  which has no heads: no "medusa"; the diffusion twin: none).
- Greedy output with "speculative": "medusa" and "lookup" is the plain output, token for token,
  alone and in one continuous batch with plain requests (the heads read each request's own rows
  of the batch's hidden states); streamed pieces add up to the same text; Medusa drafted tokens.
- "medusa" for a model without heads is a 400 naming the missing file; for a diffusion model a
  400 (an AR parameter); sampling with Medusa runs.
- `--spec-medusa` makes it the default of the models that have heads; "none" turns it off.
- A heads file beside a model that does not load (garbage) stops the server's start with an
  error naming it.

Prints one line per check; exits 1 if any check failed.

  .venv/bin/python tests/server/test_speculative.py --unmask build/release/bin/unmask
"""
import argparse
import concurrent.futures
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import AR, AR_ID, LLADA, LLADA_ID, ROOT, UnmaskServer  # noqa: E402

from client_util import check, raw_json, run_tests, x_unmask  # noqa: E402

DRAFT = os.path.join(ROOT, "models", "unmask-tinystories-ar-draft.gguf")  # AR, no heads
DRAFT_ID = "unmask-tinystories-ar-draft"
PROMPTS = ["Once upon a time, there was a little girl named Lily.", "Tom had a red ball.",
           "The sun was shining and the birds", "One day, a big dog"]


def completion(client, prompt, spec=None, max_tokens=48, temperature=0.0, model=AR_ID):
    extra = {} if spec is None else {"speculative": spec}
    r = client.completions.create(model=model, prompt=prompt, max_tokens=max_tokens,
                                  temperature=temperature, extra_body=extra)
    return r.choices[0].text, x_unmask(r)


def models_list_the_modes(url, client):
    s, _, obj, data = raw_json(url, "GET", "/v1/models")
    by_id = {m["id"]: m.get("x_unmask", {}) for m in obj["data"]}
    check(by_id[AR_ID].get("speculative") == ["none", "lookup", "medusa"],
          "/v1/models: the AR twin takes none, lookup, medusa", repr(by_id[AR_ID]))
    check(by_id[DRAFT_ID].get("speculative") == ["none", "lookup"],
          "/v1/models: the draft model (no heads) takes none, lookup", repr(by_id[DRAFT_ID]))
    check(by_id[LLADA_ID].get("speculative") == [], "/v1/models: the diffusion twin takes none",
          repr(by_id[LLADA_ID]))


def greedy_is_lossless(url, client):
    drafted = accepted = 0
    for p in PROMPTS:
        plain, xu_plain = completion(client, p)
        check("speculative" not in xu_plain, f"plain {p[:20]!r}: no speculative stats",
              repr(xu_plain))
        for spec in ("medusa", "lookup"):
            text, xu = completion(client, p, spec)
            check(text == plain, f"{spec} {p[:20]!r}: the plain greedy text", f"{text!r} vs {plain!r}")
            if spec == "medusa":
                drafted += xu.get("speculative", {}).get("drafted", 0)
                accepted += xu.get("speculative", {}).get("accepted", 0)
    check(drafted > 0, f"medusa drafted tokens ({drafted} drafted, {accepted} accepted)",
          str(drafted))


def batched_with_plain_requests(url, client):
    # Alone first (the references), then 8 at once: medusa and plain interleaved in one batch.
    alone = {p: completion(client, p)[0] for p in PROMPTS}
    jobs = [(p, spec) for p in PROMPTS for spec in ("medusa", None)]
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        got = list(pool.map(lambda j: completion(client, j[0], j[1])[0], jobs))
    for (p, spec), text in zip(jobs, got):
        check(text == alone[p], f"batched {spec or 'plain'} {p[:20]!r}: the text alone",
              f"{text!r} vs {alone[p]!r}")


def streamed_pieces_add_up(url, client):
    plain, _ = completion(client, PROMPTS[0])
    stream = client.completions.create(model=AR_ID, prompt=PROMPTS[0], max_tokens=48,
                                       temperature=0, stream=True,
                                       extra_body={"speculative": "medusa"})
    pieces = [c.choices[0].text for c in stream if c.choices]
    check("".join(pieces) == plain, "streamed medusa pieces add up to the plain text",
          f"{''.join(pieces)!r} vs {plain!r}")


def sampling_runs(url, client):
    r = client.completions.create(model=AR_ID, prompt=PROMPTS[1], max_tokens=32, temperature=0.8,
                                  extra_body={"speculative": "medusa", "seed": 7})
    check(r.usage.completion_tokens > 0 and r.choices[0].finish_reason in ("stop", "length"),
          "medusa with temperature 0.8 answers", repr(r.usage))


def refused_where_it_cannot_run(url, client):
    s, _, obj, data = raw_json(url, "POST", "/v1/completions",
                               {"model": DRAFT_ID, "prompt": "Tom", "max_tokens": 4,
                                "speculative": "medusa"})
    msg = obj.get("error", {}).get("message", "") if isinstance(obj, dict) else ""
    check(s == 400 and obj["error"].get("param") == "speculative" and "medusa.gguf" in msg,
          "medusa on a model without heads: 400 naming the file", f"{s} {data[:300]!r}")
    s, _, obj, data = raw_json(url, "POST", "/v1/completions",
                               {"model": LLADA_ID, "prompt": "Tom", "max_tokens": 4,
                                "speculative": "medusa"})
    check(s == 400 and "speculative" in data.decode(errors="replace"),
          "medusa on a diffusion model: 400", f"{s} {data[:300]!r}")
    s, _, obj, data = raw_json(url, "POST", "/v1/completions",
                               {"model": AR_ID, "prompt": "Tom", "max_tokens": 4,
                                "speculative": "eagle"})
    check(s == 400 and obj["error"].get("param") == "speculative",
          "an unknown speculative mode: 400", f"{s} {data[:300]!r}")


def spec_medusa_is_the_default(url, client):
    _, xu = completion(client, PROMPTS[0])
    check(xu.get("speculative", {}).get("drafted", 0) > 0,
          "--spec-medusa: a request without 'speculative' drafts", repr(xu))
    _, xu = completion(client, PROMPTS[0], "none")
    check("speculative" not in xu, "--spec-medusa: 'none' turns it off", repr(xu))
    _, xu = completion(client, PROMPTS[0], model=DRAFT_ID)
    check("speculative" not in xu, "--spec-medusa: a model without heads decodes plainly",
          repr(xu))


def bad_heads_stop_the_start(unmask):
    d = tempfile.mkdtemp(prefix="unmask-medusa-")
    try:
        os.symlink(AR, os.path.join(d, "m.gguf"))
        with open(os.path.join(d, "m.medusa.gguf"), "wb") as f:
            f.write(b"GGUF\x03\x00\x00\x00garbage")
        try:
            with UnmaskServer(unmask, ["-m", os.path.join(d, "m.gguf"), "-t", "1"]):
                ok, detail = False, "the server started"
        except RuntimeError as e:
            ok, detail = "Medusa heads" in str(e) and "m.medusa.gguf" in str(e), str(e)[-300:]
        check(ok, "a heads file that does not load stops the start, naming it", detail)
        return 0
    except Exception as e:  # noqa: BLE001 (one failing check, reported)
        print(f"FAIL  bad_heads_stop_the_start: {e}", flush=True)
        return 1
    finally:
        shutil.rmtree(d)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unmask", default=os.path.join(ROOT, "build", "release", "bin", "unmask"))
    args = ap.parse_args()
    base = ["-m", AR, "-m", DRAFT, "-m", LLADA, "-t", "1", "--max-batch", "8"]
    rc = run_tests(args.unmask, base,
                   [models_list_the_modes, greedy_is_lossless, batched_with_plain_requests,
                    streamed_pieces_add_up, sampling_runs, refused_where_it_cannot_run])
    rc |= run_tests(args.unmask, base + ["--spec-medusa"], [spec_medusa_is_the_default])
    rc |= bad_heads_stop_the_start(args.unmask)
    return rc


if __name__ == "__main__":
    sys.exit(main())
