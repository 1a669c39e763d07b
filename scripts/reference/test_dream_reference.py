#!/usr/bin/env python3
"""Self-tests of the Dream reference (dream_generate.py, the dream path of llada.py) and of the
Dream test models (plain asserts; exit status 0 = all passed).

  test_dream_reference.py                   unit tests
  test_dream_reference.py --check-goldens   also rebuild the Dream models/goldens in memory and
                                            compare with tests/data/ (make_dream_goldens.py --check)
  test_dream_reference.py --unmask BIN      also compare `BIN tokenize` with the HuggingFace
                                            tokenizers build of the Dream test vocabulary
"""
from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.dirname(HERE)
REPO = os.path.dirname(SCRIPTS)
sys.path.insert(0, HERE)
sys.path.insert(0, SCRIPTS)
sys.path.insert(0, os.path.join(SCRIPTS, "train"))

import dream_generate as dg  # noqa: E402
import llada  # noqa: E402
import make_dream_gguf as md  # noqa: E402
import make_dream_goldens as mdg  # noqa: E402
import make_goldens as mg  # noqa: E402
import rng  # noqa: E402

MODEL = os.path.join(REPO, mg.MODELS_DIR, "dream-tiny-gqa2-f32.gguf")


def _schedule(m: int, steps: int, ts) -> list[int]:
    ks = []
    for i in range(steps):
        ks.append(dg.num_transfer(m, ts, i, steps))
        m -= ks[-1]
    return ks


def test_schedule_steps_equal_gen_length():
    # ALGORITHMS.md 2.2: step 0 commits 0, the last step 2, every other step 1.
    for n in (16, 64, 256, 512):
        ks = _schedule(n, n, dg.timesteps(n, 1e-3))
        assert ks[0] == 0 and ks[-1] == 2 and set(ks[1:-1]) == {1} and sum(ks) == n, (n, ks)


def test_timesteps_match_torch_linspace_schedules():
    # The float32 formula gives torch.linspace's values at the ends, and the same k per step as
    # torch's CPU kernel for the shapes used in the goldens and the usual steps == gen_length runs.
    for steps, eps in ((16, 1e-3), (8, 1e-3), (6, 1e-3), (5, 1e-3), (10, 1e-3), (20, 0.05),
                       (128, 1e-3), (256, 1e-3), (512, 1e-3)):
        ts = dg.timesteps(steps, eps)
        ref = torch.linspace(1, eps, steps + 1).numpy()
        assert ts[0] == ref[0] and ts[-1] == ref[-1], steps
        assert np.max(np.abs(ts - ref)) <= 2 * np.finfo(np.float32).eps, steps
        for m in (steps, 16, 24):
            assert _schedule(m, steps, ts) == _schedule(m, steps, ref), (steps, eps, m)


def test_shift_logits():
    x = np.arange(12.0).reshape(4, 3)
    s = llada.shift_logits(x)
    assert np.array_equal(s[0], x[0]) and np.array_equal(s[1:], x[:-1])


def test_dream_config_and_biases():
    m = llada.LladaModel(MODEL)
    assert m.cfg.arch == "dream" and m.cfg.shift_logits and m.out_bias is not None
    assert all("bq" in lw for lw in m.layers)
    ids = [1, 2, 3, 4, 5]
    base = m.forward(ids)
    for lw in m.layers:
        lw["bk"] = lw["bk"] + 1.0       # a constant key bias shifts every score of a query by
    same = m.forward(ids)               # q . 1 ... which RoPE rotates: not softmax-invariant
    assert not np.allclose(base, same)
    try:
        llada.LladaModel(MODEL, rope_mode="interleaved")
        raise AssertionError("interleaved RoPE must be refused for dream")
    except ValueError:
        pass


def test_top_p_top_k_and_temperature_order():
    p = dg.DreamParams(top_p=0.6)
    row = np.log(np.array([0.3, 0.2, 0.5]))
    l, _ = dg.filter_logits(row, p)
    assert [v for v in range(3) if l[v] != dg.F32_MIN] == [0, 2]
    l, _ = dg.filter_logits(row, dg.DreamParams(top_p=0.4))
    assert [v for v in range(3) if l[v] != dg.F32_MIN] == [2]
    row = np.array([math.log(8.0), 0.0, 0.0])
    l, _ = dg.filter_logits(row, dg.DreamParams(temperature=3.0, top_p=0.7))
    assert l[2] == dg.F32_MIN and l[1] == 0.0      # tempered first; tie keeps the lower id
    l, _ = dg.filter_logits(np.array([1.0, 3.0, 2.0, 0.0]), dg.DreamParams(top_k=2))
    assert list(l) == [dg.F32_MIN, 3.0, 2.0, dg.F32_MIN]


def test_confidences():
    row = np.array([1.0, 3.0, 2.0, 0.5])
    p = np.exp(row - row.max())
    p /= p.sum()
    s = dg.sample_tokens(row, dg.DreamParams(alg="maskgit_plus"), 0, 0)
    assert s.x0 == 1 and abs(s.conf - p[1]) < 1e-15
    s = dg.sample_tokens(row, dg.DreamParams(alg="topk_margin"), 0, 0)
    assert abs(s.conf - (p[1] - p[2])) < 1e-15
    s = dg.sample_tokens(row, dg.DreamParams(alg="entropy"), 0, 0)
    assert abs(s.conf - float(np.sum(p * np.log(p + 1e-10)))) < 1e-14


def test_categorical_and_alg_temp_frequencies():
    # Gumbel-max on stream GUMBEL samples softmax(l): frequency of id 0 for probs (0.8, .1, .1).
    row = np.array([math.log(8.0), 0.0, 0.0])
    params = dg.DreamParams(alg="maskgit_plus", temperature=1.0, seed=5)
    hits = sum(dg.sample_tokens(row, params, 2, pos).x0 == 0 for pos in range(3000))
    assert abs(hits / 3000 - 0.8) < 0.03, hits
    # Gumbel-top-1 over positions with stream DREAM_ALG_TEMP picks position j with probability
    # softmax(conf / alg_temp)_j.
    conf = np.array([0.0, math.log(3.0)])
    wins = 0
    for step in range(3000):
        u = rng.uniform(1, dg.STREAM_DREAM_ALG_TEMP, step, np.arange(2), 0)
        keys = conf - np.log(-np.log(u))
        wins += int(np.argmax(keys) == 1)
    assert abs(wins / 3000 - 0.75) < 0.03, wins


def test_generate_invariants():
    m = llada.LladaModel(MODEL)
    mask = m.gguf.require("tokenizer.ggml.mask_token_id")
    for alg in dg.ALGS:
        p = dg.DreamParams(alg=alg, gen_length=8, steps=4, seed=3)
        r = dg.generate(m, [1, 2, 3], p)
        assert r.nfe == 4 and len(r.output_ids) == 8 and len(r.trace) == 4
        if alg != "origin":
            assert sum(r.num_transfer) == 8 and mask not in r.output_ids
        committed = [q for step in r.trace for q in step]
        assert all(3 <= q < 11 for q in committed)


def test_tie_rule_lower_position_first():
    order, gap = dg._top_k_positions([0.5, 0.7, 0.5, 0.5], 2)
    assert order == [1, 0] and gap == math.inf


def tokenizer_agreement(unmask: str) -> None:
    tok = md.hf_tokenizer(MODEL)
    import gguf_model
    texts = mdg.PROMPTS + md.BPE_TEXT.split("\n") + [
        md.BPE_TEXT, "naïve café — 東京 2026!!\n\n  spaces   and\ttabs", "'s 're 've I'M",
        "<|im_start|>user\n<|mask|><|im_end|>"]
    with tempfile.TemporaryDirectory() as tmp:
        for t in texts:
            want = tok.encode(t).ids                   # HF parses the added special tokens
            if "<|" in t:
                path = os.path.join(tmp, "special.txt")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(t)
                out = subprocess.run([unmask, "tokenize", "-m", MODEL, "-f", path, "--no-bos",
                                      "--parse-special"], capture_output=True, text=True,
                                     check=True).stdout
                got = [int(x) for x in out.split()]
            else:
                got = gguf_model.unmask_token_ids(unmask, MODEL, t, tmp)
            assert got == want, (t, got, want)


TESTS = [test_schedule_steps_equal_gen_length, test_timesteps_match_torch_linspace_schedules,
         test_shift_logits, test_dream_config_and_biases, test_top_p_top_k_and_temperature_order,
         test_confidences, test_categorical_and_alg_temp_frequencies, test_generate_invariants,
         test_tie_rule_lower_position_first]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check-goldens", action="store_true")
    ap.add_argument("--unmask", metavar="BIN", help="unmask binary for the tokenizer check")
    args = ap.parse_args()
    checks = [(t.__name__, t) for t in TESTS]
    if args.unmask:
        checks.append(("tokenizer_agreement", lambda: tokenizer_agreement(args.unmask)))
    if args.check_goldens:
        def check_goldens():
            problems = [p for p in mg.check(REPO, mdg.build_all(progress=False))
                        if not p.startswith(f"{mg.GOLDEN_DIR}/llada")]
            assert not problems, problems[:5]
        checks.append(("check_goldens", check_goldens))
    failed = 0
    for name, fn in checks:
        t0 = time.time()
        try:
            fn()
            print(f"PASS {name} ({time.time() - t0:.2f} s)", file=sys.stderr)
        except Exception:  # noqa: BLE001 - report every failure and continue
            failed += 1
            print(f"FAIL {name}", file=sys.stderr)
            traceback.print_exc()
    print(f"{len(checks) - failed}/{len(checks)} passed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
