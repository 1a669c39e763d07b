#!/usr/bin/env python3
"""Speculative decoding through `unmask serve`, with the official openai client:

- The AR twin's Medusa heads and EAGLE draft layer (models/unmask-tinystories-ar.medusa.gguf,
  .eagle.gguf, beside the model) are found at start; /v1/models lists the "speculative" values
  each model takes (the draft model, which has neither: no "medusa", no "eagle"; the diffusion
  twin: none).
- Greedy output with "speculative": "eagle", "medusa" and "lookup" is the plain output, token
  for token, alone and in one continuous batch with plain requests (the heads read each request's
  own rows of the batch's hidden states; EAGLE's trees are verified beside plain rows); streamed
  pieces add up to the same text; Medusa and EAGLE drafted tokens.
- "medusa" / "eagle" for a model without heads is a 400 naming the missing file; for a diffusion
  model a 400 (an AR parameter); sampling with Medusa and with EAGLE runs.
- `--spec-medusa` / `--spec-eagle` make them the default of the models that have heads; "none"
  turns it off.
- A heads or draft-layer file beside a model that does not load (garbage) stops the server's
  start with an error naming it.
- `--draft-heads [MODEL_ID=]FILE` names the files instead (a model with nothing beside it gets
  Medusa and EAGLE from files elsewhere, lossless); a FILE without an id while two AR models are
  served, an id that is not served or is a diffusion model, two files of one kind, and a garbage
  named file (which replaces a good one beside the model) and a missing one each stop the start
  with a message naming the cause.

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
    check(by_id[AR_ID].get("speculative") == ["none", "lookup", "medusa", "eagle"],
          "/v1/models: the AR twin takes none, lookup, medusa, eagle", repr(by_id[AR_ID]))
    check(by_id[DRAFT_ID].get("speculative") == ["none", "lookup"],
          "/v1/models: the draft model (no heads) takes none, lookup", repr(by_id[DRAFT_ID]))
    check(by_id[LLADA_ID].get("speculative") == [], "/v1/models: the diffusion twin takes none",
          repr(by_id[LLADA_ID]))


def greedy_is_lossless(url, client):
    drafted = {"medusa": 0, "eagle": 0}
    accepted = dict(drafted)
    for p in PROMPTS:
        plain, xu_plain = completion(client, p)
        check("speculative" not in xu_plain, f"plain {p[:20]!r}: no speculative stats",
              repr(xu_plain))
        for spec in ("eagle", "medusa", "lookup"):
            text, xu = completion(client, p, spec)
            check(text == plain, f"{spec} {p[:20]!r}: the plain greedy text", f"{text!r} vs {plain!r}")
            if spec in drafted:
                drafted[spec] += xu.get("speculative", {}).get("drafted", 0)
                accepted[spec] += xu.get("speculative", {}).get("accepted", 0)
    for spec in drafted:
        check(drafted[spec] > 0,
              f"{spec} drafted tokens ({drafted[spec]} drafted, {accepted[spec]} accepted)",
              str(drafted[spec]))


def batched_with_plain_requests(url, client):
    # Alone first (the references), then 12 at once: eagle, medusa and plain interleaved in one
    # batch.
    alone = {p: completion(client, p)[0] for p in PROMPTS}
    jobs = [(p, spec) for p in PROMPTS for spec in ("eagle", "medusa", None)]
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        got = list(pool.map(lambda j: completion(client, j[0], j[1])[0], jobs))
    for (p, spec), text in zip(jobs, got):
        check(text == alone[p], f"batched {spec or 'plain'} {p[:20]!r}: the text alone",
              f"{text!r} vs {alone[p]!r}")


def streamed_pieces_add_up(url, client):
    plain, _ = completion(client, PROMPTS[0])
    for spec in ("medusa", "eagle"):
        stream = client.completions.create(model=AR_ID, prompt=PROMPTS[0], max_tokens=48,
                                           temperature=0, stream=True,
                                           extra_body={"speculative": spec})
        pieces = [c.choices[0].text for c in stream if c.choices]
        check("".join(pieces) == plain, f"streamed {spec} pieces add up to the plain text",
              f"{''.join(pieces)!r} vs {plain!r}")


def sampling_runs(url, client):
    for spec in ("medusa", "eagle"):
        r = client.completions.create(model=AR_ID, prompt=PROMPTS[1], max_tokens=32,
                                      temperature=0.8, extra_body={"speculative": spec, "seed": 7})
        check(r.usage.completion_tokens > 0 and r.choices[0].finish_reason in ("stop", "length"),
              f"{spec} with temperature 0.8 answers", repr(r.usage))


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
                               {"model": DRAFT_ID, "prompt": "Tom", "max_tokens": 4,
                                "speculative": "eagle"})
    msg = obj.get("error", {}).get("message", "") if isinstance(obj, dict) else ""
    check(s == 400 and obj["error"].get("param") == "speculative" and "eagle.gguf" in msg,
          "eagle on a model without a draft layer: 400 naming the file", f"{s} {data[:300]!r}")
    s, _, obj, data = raw_json(url, "POST", "/v1/completions",
                               {"model": AR_ID, "prompt": "Tom", "max_tokens": 4,
                                "speculative": "hydra"})
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


def spec_eagle_is_the_default(url, client):
    plain, _ = completion(client, PROMPTS[2], "none")
    text, xu = completion(client, PROMPTS[2])
    check(xu.get("speculative", {}).get("drafted", 0) > 0 and text == plain,
          "--spec-eagle: a request without 'speculative' drafts trees, the plain text", repr(xu))
    _, xu = completion(client, PROMPTS[0], model=DRAFT_ID)
    check("speculative" not in xu, "--spec-eagle: a model without a layer decodes plainly",
          repr(xu))


def bad_heads_stop_the_start(unmask):
    rc = 0
    for kind, name in (("medusa", "Medusa heads"), ("eagle", "EAGLE draft layer")):
        d = tempfile.mkdtemp(prefix=f"unmask-{kind}-")
        try:
            os.symlink(AR, os.path.join(d, "m.gguf"))
            with open(os.path.join(d, f"m.{kind}.gguf"), "wb") as f:
                f.write(b"GGUF\x03\x00\x00\x00garbage")
            try:
                with UnmaskServer(unmask, ["-m", os.path.join(d, "m.gguf"), "-t", "1"]):
                    ok, detail = False, "the server started"
            except RuntimeError as e:
                ok, detail = name in str(e) and f"m.{kind}.gguf" in str(e), str(e)[-300:]
            check(ok, f"a {kind} file that does not load stops the start, naming it", detail)
        except Exception as e:  # noqa: BLE001 (one failing check, reported)
            print(f"FAIL  bad_heads_stop_the_start ({kind}): {e}", flush=True)
            rc = 1
        finally:
            shutil.rmtree(d)
    return rc


MEDUSA = os.path.join(ROOT, "models", "unmask-tinystories-ar.medusa.gguf")
EAGLE = os.path.join(ROOT, "models", "unmask-tinystories-ar.eagle.gguf")


def named_heads_files(unmask):
    """--draft-heads: the twin copied where nothing is beside it, its heads from elsewhere."""
    rc = 0
    d = tempfile.mkdtemp(prefix="unmask-named-heads-")
    try:
        os.symlink(AR, os.path.join(d, "m.gguf"))
        os.mkdir(os.path.join(d, "heads"))
        medusa, eagle = os.path.join(d, "heads", "h1.gguf"), os.path.join(d, "heads", "h2.gguf")
        os.symlink(MEDUSA, medusa)
        os.symlink(EAGLE, eagle)

        def served(url, client):
            _, _, obj, _ = raw_json(url, "GET", "/v1/models")
            by_id = {m["id"]: m.get("x_unmask", {}) for m in obj["data"]}
            check(by_id["m"].get("speculative") == ["none", "lookup", "medusa", "eagle"],
                  "--draft-heads: the named files give medusa and eagle", repr(by_id["m"]))
            plain, _ = completion(client, PROMPTS[0], model="m")
            for spec in ("medusa", "eagle"):
                text, xu = completion(client, PROMPTS[0], spec, model="m")
                check(text == plain and xu.get("speculative", {}).get("drafted", 0) > 0,
                      f"--draft-heads: {spec} drafts and gives the plain text", repr(xu))

        # One AR model: FILE alone; the diffusion twin beside it takes none.
        rc |= run_tests(unmask, ["-m", os.path.join(d, "m.gguf"), "-m", LLADA, "-t", "1",
                                 "--draft-heads", medusa, "--draft-heads", "m=" + eagle],
                        [served])

        garbage = os.path.join(d, "heads", "garbage.gguf")
        with open(garbage, "wb") as f:
            f.write(b"GGUF\x03\x00\x00\x00garbage")
        refused = [
            (["-m", AR, "-m", DRAFT, "--draft-heads", medusa],
             "give the model it is for as MODEL_ID=FILE"),
            (["-m", AR, "--draft-heads", "typo=" + medusa], "no model 'typo' is served"),
            (["-m", AR, "-m", LLADA, "--draft-heads", LLADA_ID + "=" + medusa],
             "is a diffusion model"),
            (["-m", AR, "--draft-heads", medusa, "--draft-heads", AR_ID + "=" + medusa],
             "two medusa files for " + AR_ID),
            (["-m", AR, "--draft-heads", AR], "--draft-heads"),  # a model, not heads
            (["-m", AR, "--draft-heads", garbage], "garbage.gguf"),  # replaces the good one
            (["-m", AR, "--draft-heads", "x=" + os.path.join(d, "missing.gguf")], "no such file"),
        ]
        for args, want in refused:
            try:
                with UnmaskServer(unmask, args + ["-t", "1"]):
                    ok, detail = False, "the server started"
            except RuntimeError as e:
                ok, detail = want in str(e), str(e)[-300:]
            name = " ".join(os.path.basename(a) for a in args)
            print(f"{'ok   ' if ok else 'FAIL '} --draft-heads refused ({name}): {want!r}"
                  + ("" if ok else f": {detail}"), flush=True)
            rc |= 0 if ok else 1
    finally:
        shutil.rmtree(d)
    return rc


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
    rc |= run_tests(args.unmask, base + ["--spec-eagle"], [spec_eagle_is_the_default])
    rc |= bad_heads_stop_the_start(args.unmask)
    rc |= named_heads_files(args.unmask)
    return rc


if __name__ == "__main__":
    sys.exit(main())
