#!/usr/bin/env python3
"""Dream served over HTTP: every Dream golden case (tests/data/golden/dream, the Python reference's
output) posted to `unmask serve` as /v1/completions through the official `openai` client.

Starts `unmask serve -m tests/data/models/dream-tiny-gqa1-f16.gguf -m .../dream-tiny-gqa2-f32.gguf
-t 1` on a free loopback port and posts each case with prompt = its token ids and
max_tokens (= gen_length), temperature, seed, top_p, and the extensions steps, top_k, alg, eps and
alg_temp: the server runs Dream's reference sampler by default, so the text must be the golden
canvas cut as served text is (engine/text_stream.h): the prefix before the first mask id, ending
before the first EOS/EOT, decoded with the model's vocabulary (here from the GGUF, byte-level BPE;
bytes that are not UTF-8 arrive as U+FFFD). Checked whole and streamed (the deltas joined), with
finish_reason, usage and x_unmask.nfe (never more forwards than the reference). Prints one line per
check; exits 1 if any check failed.

  .venv/bin/python tests/server/test_dream_goldens.py --unmask build/release/unmask
"""
import argparse
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import ROOT  # noqa: E402

import gguf  # noqa: E402

from client_util import check, run_tests, x_unmask  # noqa: E402

GOLDENS = os.path.join(ROOT, "tests", "data", "golden", "dream")
MODELS = os.path.join(ROOT, "tests", "data", "models")
CONTROL = 3  # tokenizer.ggml.token_type of a control (special) token


def byte_decoder():
    """GPT-2's byte-level alphabet, character -> byte (the inverse of bytes_to_unicode)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


class Vocab:
    """The tokens of a Dream test GGUF: byte-level pieces, token types and the special ids."""

    def __init__(self, path):
        r = gguf.GGUFReader(path)
        f = r.fields["tokenizer.ggml.tokens"]
        self.pieces = [bytes(f.parts[i]).decode("utf-8") for i in f.data]
        t = r.fields["tokenizer.ggml.token_type"]
        self.types = [int(t.parts[i][0]) for i in t.data]

        def special(name):
            return int(r.fields[f"tokenizer.ggml.{name}_token_id"].parts[-1][0])

        self.eos, self.eot, self.mask = special("eos"), special("eot"), special("mask")
        self._bytes = byte_decoder()

    def text(self, ids):
        """The text of `ids`, special tokens skipped; invalid UTF-8 replaced as JSON output does."""
        data = b"".join(bytes(self._bytes[c] for c in self.pieces[i])
                        for i in ids if self.types[i] != CONTROL)
        return data.decode("utf-8", errors="replace")


def served_cut(g, vocab):
    """The golden canvas as served: before the first mask, through the first EOS/EOT, at most
    max_tokens; returns (ids, ended by EOS/EOT)."""
    out = []
    for t in g["output_ids"][:g["gen_length"]]:
        if t == vocab.mask:
            break
        out.append(t)
        if t in (vocab.eos, vocab.eot):
            return out, True
    return out, False


def request(g):
    return dict(model=os.path.splitext(g["model"])[0], prompt=g["prompt_ids"],
                max_tokens=g["gen_length"], temperature=g["temperature"], seed=g["seed"],
                top_p=g["top_p"],
                extra_body={"steps": g["steps"], "top_k": g["top_k"], "alg": g["alg"],
                            "eps": g["eps"], "alg_temp": g["alg_temp"]},
                **({"suffix": g["suffix_text"]} if "suffix_text" in g else {}))


def check_case(client, g, vocab):
    name = g["case"]
    ids, ended = served_cut(g, vocab)
    want = vocab.text(ids[:-1] if ended else ids)
    finish = "stop" if ended else "length"
    r = client.completions.create(**request(g))
    got = r.choices[0].text
    check(got == want, f"{name}: text is the golden cut ({len(ids)} tokens)",
          f"{got!r} != {want!r}")
    check(r.choices[0].finish_reason == finish, f"{name}: finish_reason {finish}",
          repr(r.choices[0].finish_reason))
    check(r.usage.completion_tokens == len(ids) and r.usage.prompt_tokens == len(g["prompt_ids"]),
          f"{name}: usage counts the cut", repr(r.usage))
    xu = x_unmask(r) or {}
    check(1 <= xu.get("nfe", 0) <= g["nfe"], f"{name}: nfe <= the reference's {g['nfe']}",
          repr(xu))
    chunks = list(client.completions.create(stream=True, **request(g)))
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    last = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    check(text == want and last == [finish], f"{name}: streamed text and finish_reason",
          f"{text!r} {last} != {want!r} {finish}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unmask", default=os.path.join(ROOT, "build", "release", "unmask"))
    args = ap.parse_args()
    cases = []
    for path in sorted(glob.glob(os.path.join(GOLDENS, "*.json"))):
        with open(path) as f:
            cases.append(json.load(f))
    models = sorted({g["model"] for g in cases})
    vocabs = {m: Vocab(os.path.join(MODELS, m)) for m in models}
    def has_cases(url, client):
        check(len(cases) >= 10, "the Dream golden cases are there", str(len(cases)))

    tests = [has_cases]
    for g in cases:
        tests.append((g["case"],
                      lambda url, client, g=g: check_case(client, g, vocabs[g["model"]])))
    server_args = [a for m in models for a in ("-m", os.path.join(MODELS, m))] + ["-t", "1"]
    return run_tests(args.unmask, server_args, tests)


if __name__ == "__main__":
    sys.exit(main())
