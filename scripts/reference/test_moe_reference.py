#!/usr/bin/env python3
"""Self-checks of the mixture-of-experts references (moe.py, the MoE paths of hf_model.py,
llada2_generate.py), each against a second computation written differently, then (with
--check-goldens) the MoE decoding goldens rebuilt in memory and compared with tests/data/golden/moe.

  route            == a per-token brute force (explicit group sums, sorted lists), every variant
  top-k = E        == the dense mixture sum_e w_e expert_e(h) (grouping and scatter add up)
  partial rotary   leaves the dims past rotary_dim unchanged and rotates the rest as full RoPE
  LLaDA2 forward   cached (prefill + block against the cache) == full block-causal recompute
  LLaDA 2.0 loop   == sdar_generate's transfer rule without over-commit, on the same model
                   (a different loop: KV cache and store forwards; the tokens must agree)
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import hf_model  # noqa: E402
import llada2_generate as l2  # noqa: E402
import make_hf_checkpoints as mh  # noqa: E402
import make_moe_goldens as mmg  # noqa: E402
import moe  # noqa: E402
import sdar_generate as sg  # noqa: E402

HF = os.path.join(REPO, mh.HF_DIR)


def brute_route(logits, cfg: moe.MoeConfig, bias):
    ids, ws = [], []
    E = cfg.num_experts
    for row in logits.astype(np.float64):
        if cfg.gating == "softmax":
            e = [np.exp(v - row.max()) for v in row]
            p = [v / sum(e) for v in e]
        else:
            p = [1 / (1 + np.exp(-v)) for v in row]
        choice = [p[i] + (0.0 if bias is None else float(bias[i])) for i in range(E)]
        allowed = set(range(E))
        if cfg.groups > 1:
            size = E // cfg.groups
            score = []
            for g in range(cfg.groups):
                best = sorted(choice[g * size:(g + 1) * size], reverse=True)
                score.append((-(best[0] + (best[1] if size > 1 else 0.0)), g))
            kept = [g for _, g in sorted(score)[:cfg.groups_used]]
            allowed = {i for g in kept for i in range(g * size, (g + 1) * size)}
        order = sorted(allowed, key=lambda i: (-choice[i], i))[:cfg.top_k]
        w = [p[i] for i in order]
        if cfg.normalize:
            w = [v / (sum(w) + cfg.norm_eps) for v in w]
        ids.append(order)
        ws.append([v * cfg.scale for v in w])
    return np.array(ids), np.array(ws)


def test_route_matches_brute_force():
    rng = np.random.default_rng(5)
    cases = [moe.MoeConfig(8, 2, 4, False), moe.MoeConfig(64, 8, 4, True),
             moe.MoeConfig(16, 4, 4, True, 2.5, "sigmoid", 4, 2, 1e-20),
             moe.MoeConfig(256, 8, 4, True, 2.5, "sigmoid", 8, 4, 1e-20),
             moe.MoeConfig(8, 1, 4, False, 1.0, "sigmoid", 8, 3)]
    for cfg in cases:
        logits = rng.standard_normal((23, cfg.num_experts))
        bias = rng.standard_normal(cfg.num_experts) * 0.3 if cfg.gating == "sigmoid" else None
        ids, w, margin = moe.route(logits, cfg, bias)
        bids, bw = brute_route(logits, cfg, bias)
        assert (ids == bids).all(), cfg
        assert np.allclose(w, bw, rtol=1e-12, atol=0), cfg
        assert (margin > 0).all()


def test_all_experts_equal_the_dense_mixture():
    rng = np.random.default_rng(6)
    E, d, f = 6, 8, 5
    experts = [{"gate": rng.standard_normal((f, d)), "up": rng.standard_normal((f, d)),
                "down": rng.standard_normal((d, f))} for _ in range(E)]
    router = rng.standard_normal((E, d))
    h = rng.standard_normal((7, d))
    cfg = moe.MoeConfig(E, E, f, True)
    got = moe.moe_ffn(h, router, experts, cfg)
    p = np.exp(h @ router.T)
    p /= p.sum(-1, keepdims=True)
    want = sum(p[:, [e]] * moe.swiglu(h, experts[e]) for e in range(E))
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)


def test_partial_rotary_leaves_the_tail():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 2, 16))
    pos = np.arange(3, 8)
    y = hf_model.rope(x, pos, 1e4, rotary_dim=8)
    assert np.array_equal(y[..., 8:], x[..., 8:])
    assert np.allclose(y[..., :8], hf_model.rope(x[..., :8], pos, 1e4))
    assert not np.allclose(y[..., :8], x[..., :8])


def test_llada2_cached_equals_full_recompute():
    m = hf_model.HFModel(os.path.join(HF, "llada2-tiny-bf16"))
    assert m.cfg.rotary_dim == 8 and m.cfg.dense_layers == 1 and m.cfg.expert_bias
    rng = np.random.default_rng(8)
    ids = [int(v) for v in rng.integers(0, 1000, 40)] + [mh.MASK] * 24
    full = m.forward(ids, mask="block", block_length=32)
    cache = m.new_cache()
    m.forward(ids[:32], mask="block", block_length=32, cache=cache, store_kv=True)
    rest = m.forward(ids[32:], mask="block", block_length=32, cache=cache)
    assert np.max(np.abs(full[32:] - rest)) < 1e-10


def test_llada2_loop_equals_the_sdar_rule_without_overcommit():
    m = hf_model.HFModel(os.path.join(HF, "llada2-tiny-bf16"))
    rng = np.random.default_rng(9)
    for trial in range(3):
        prompt = [int(v) for v in rng.integers(0, 1000, 5 + 7 * trial)]
        p = l2.Llada2Params(gen_length=16, block_length=8, steps=4, threshold=0.5,
                            stop_ids=[mh.IM_END])
        a = l2.generate(m, prompt, p, mh.MASK)
        sp = sg.SdarParams(gen_length=16, block_length=8, denoising_steps=4,
                           remasking_strategy="low_confidence_dynamic",
                           confidence_threshold=0.5, stopping_criteria_idx=[mh.IM_END])
        b = sg.generate(m, prompt, sp, mask_id=mh.MASK, overcommit=False)
        assert a.output_ids == b.output_ids, (trial, a.output_ids, b.output_ids)
        assert [t[2] for t in a.trace] == [t[2] for t in b.trace]


TESTS = [test_route_matches_brute_force, test_all_experts_equal_the_dense_mixture,
         test_partial_rotary_leaves_the_tail, test_llada2_cached_equals_full_recompute,
         test_llada2_loop_equals_the_sdar_rule_without_overcommit]


def check_goldens() -> None:
    problems = mmg.check(REPO, mmg.build_all(REPO, progress=False))
    for p in problems:
        print("  MISMATCH " + p, file=sys.stderr)
    assert not problems, f"{len(problems)} files differ; run scripts/make_moe_goldens.py"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check-goldens", action="store_true",
                    help="also rebuild the MoE goldens in memory and compare")
    args = ap.parse_args()
    checks = [(t.__name__, t) for t in TESTS]
    if args.check_goldens:
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
