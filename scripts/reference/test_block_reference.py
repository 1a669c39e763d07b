#!/usr/bin/env python3
"""Self-tests of the HF-checkpoint and block-diffusion references (hf_read.py, hf_model.py,
sdar_generate.py, fastdllm_v2_generate.py, hf_ar_generate.py) and of the tiny checkpoints
(plain asserts; exit status 0 = all passed).

  test_block_reference.py                   unit tests
  test_block_reference.py --check-goldens   also rebuild tests/data/hf and the block goldens in
                                            memory and compare with the files on disk
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shutil
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

import fastdllm_v2_generate as fd  # noqa: E402
import hf_ar_generate as ar  # noqa: E402
import hf_model  # noqa: E402
import hf_read  # noqa: E402
import make_block_goldens as mbg  # noqa: E402
import make_hf_checkpoints as mh  # noqa: E402
import sdar_generate as sg  # noqa: E402

HF = os.path.join(REPO, mh.HF_DIR)
SDAR_F32 = os.path.join(HF, "sdar-tiny-f32")
SDAR_BF16 = os.path.join(HF, "sdar-tiny-bf16-sharded")
FAST = os.path.join(HF, "fastdllm-v2-tiny")
_MODELS: dict = {}


def model(folder: str, dtype=np.float64) -> hf_model.HFModel:
    key = (folder, np.dtype(dtype).name)
    if key not in _MODELS:
        _MODELS[key] = hf_model.HFModel(folder, dtype)
    return _MODELS[key]


def test_schedule():
    assert sg.get_num_transfer_tokens(4, 4) == [1, 1, 1, 1]
    assert sg.get_num_transfer_tokens(8, 3) == [3, 3, 2]
    assert sg.get_num_transfer_tokens(8, 2) == [4, 4]
    assert sg.get_num_transfer_tokens(4, 8) == [1, 1, 1, 1, 0, 0, 0, 0]
    assert sg.get_num_transfer_tokens(32, 10) == [4, 4, 3, 3, 3, 3, 3, 3, 3, 3]
    for b in range(1, 17):
        for s in range(1, 20):
            n = sg.get_num_transfer_tokens(b, s)
            assert sum(n) == b and max(n) - min(n) <= 1 and n == sorted(n, reverse=True)


def test_block_mask_is_sdar_matrix():
    # generate.py: tril(ones(nb, nb)) repeated B times along both axes.
    for nb, b in ((3, 4), (2, 8), (5, 1)):
        want = np.kron(np.tril(np.ones((nb, nb), dtype=bool)), np.ones((b, b), dtype=bool))
        pos = np.arange(nb * b)
        assert np.array_equal(hf_model.allowed(pos, pos, "block", b), want)
    pos = np.arange(6)
    assert np.array_equal(hf_model.allowed(pos, pos, "causal", None), np.tril(np.ones((6, 6))))


def test_bf16_bit_expansion_and_rounding():
    bits = np.array([0x3F80, 0xBF80, 0x0000, 0x8000, 0x7F80, 0xFF80, 0x0001, 0x4049, 0x7F7F],
                    dtype=np.uint16)
    got = hf_read.bf16_bits_to_f32(bits)
    want = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16).float().numpy()
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert got[0] == 1.0 and got[1] == -1.0 and math.isinf(got[4]) and got[6] > 0
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.standard_normal(4000).astype(np.float32) * 3,
                        # exact halfway cases: ties to even
                        (np.arange(64, dtype=np.uint32) << 16 | 0x8000).view(np.float32)])
    ours = mh.f32_to_bf16_bits(x)
    theirs = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(ours, theirs)


def test_bf16_checkpoint_holds_rounded_weights():
    spec = mh.SPECS["sdar-tiny-bf16-sharded"]
    weights = mh.make_weights(spec)
    raw = hf_read.load_raw(SDAR_BF16)
    assert {dt for dt, _, _ in raw.values()} == {"BF16"}
    assert set(raw) == set(weights)
    for name, (dt, bits, _) in raw.items():
        assert np.array_equal(bits, mh.f32_to_bf16_bits(weights[name])), name
    m = model(SDAR_BF16)
    w = weights["model.layers.1.mlp.down_proj.weight"]
    got = m.layers[1]["down"]
    assert got.dtype == np.float64 and np.max(np.abs(got - w)) <= np.max(np.abs(w)) * 2 ** -8
    assert np.array_equal(got, hf_read.bf16_bits_to_f32(mh.f32_to_bf16_bits(w)).astype(np.float64))


def test_sharded_equals_unsharded():
    spec = mh.SPECS["sdar-tiny-bf16-sharded"]
    index = hf_read.read_json(SDAR_BF16, hf_read.INDEX_FILE)
    assert sorted(set(index["weight_map"].values())) == [
        f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)]
    size = sum(a.nbytes for _, a, _ in hf_read.load_raw(SDAR_BF16).values())
    assert index["metadata"]["total_size"] == size
    with tempfile.TemporaryDirectory() as tmp:
        one = os.path.join(tmp, "one")
        mh.write_checkpoint(one, dataclasses.replace(spec, shards=1))
        assert not os.path.exists(os.path.join(one, hf_read.INDEX_FILE))
        a, b = hf_read.load_tensors(SDAR_BF16), hf_read.load_tensors(one)
        assert set(a) == set(b) and all(np.array_equal(a[k], b[k]) for k in a)
        ids = [5, 17, 900, 3, mh.MASK, mh.MASK, mh.MASK, mh.MASK]
        la = model(SDAR_BF16).forward(ids, mask="block", block_length=4)
        lb = hf_model.HFModel(one).forward(ids, mask="block", block_length=4)
        assert np.array_equal(la, lb)
        # The index must name every tensor in the shard that holds it.
        bad = os.path.join(tmp, "bad")
        shutil.copytree(SDAR_BF16, bad)
        idx = dict(index, weight_map=dict(index["weight_map"]))
        idx["weight_map"]["model.norm.weight"] = "model-00001-of-00003.safetensors"
        with open(os.path.join(bad, hf_read.INDEX_FILE), "w") as f:
            json.dump(idx, f)
        try:
            hf_read.load_raw(bad)
            raise AssertionError("a wrong weight_map entry must be refused")
        except hf_read.CheckpointError:
            pass


def test_checkpoint_layouts():
    for name, s in mh.SPECS.items():
        m = model(os.path.join(HF, name))
        c = m.cfg
        assert (c.hidden_size, c.num_layers, c.num_heads, c.num_kv_heads, c.head_dim) == \
            (s.hidden, s.layers, s.heads, s.kv_heads, s.head_dim), name
        assert c.tie_word_embeddings == s.tied and (m.lm_head is m.embed) == s.tied
        assert ("head_dim" in c.raw) == s.write_head_dim
        assert ("q_norm" in m.layers[0]) == (s.layout in ("qwen3", "llada2"))
        assert ("bq" in m.layers[0]) == (s.layout == "qwen2")
        g = m.generation_config
        assert g["eos_token_id"] == [mh.IM_END, mh.ENDOFTEXT], name
    assert model(SDAR_F32).cfg.head_dim * 4 != model(SDAR_F32).cfg.hidden_size


def test_logits_vary():
    # Not trivially constant: the argmax varies over positions and prompts.
    rng = np.random.default_rng(3)
    for name in mh.SPECS:
        m = model(os.path.join(HF, name))
        ids = [int(v) for v in rng.integers(0, 1000, 12)] + [mh.MASK] * 4
        am = m.forward(ids, mask="block", block_length=4).argmax(-1)
        assert len(set(am.tolist())) >= 8, (name, am)


def test_norm_weights_matter():
    m = hf_model.HFModel(SDAR_F32)
    ids = [3, 4, 5, 6, mh.MASK, mh.MASK]
    base = m.forward(ids, mask="block", block_length=4)
    for key in ("q_norm", "k_norm", "in_norm", "post_norm"):
        saved = m.layers[0][key]
        m.layers[0][key] = np.ones_like(saved)
        assert np.max(np.abs(m.forward(ids, mask="block", block_length=4) - base)) > 1e-3, key
        m.layers[0][key] = saved


def test_kv_cache_api():
    m = model(SDAR_F32)
    ids = [11, 12, 13, 14, 15, 16, 17, 18, mh.MASK, mh.MASK, mh.MASK, mh.MASK]
    full = m.forward(ids, mask="block", block_length=4)
    cache = m.new_cache()
    a = m.forward(ids[:8], mask="block", block_length=4, cache=cache, store_kv=True)
    assert len(cache) == 8 and list(cache.positions) == list(range(8))
    b = m.forward(ids[8:], mask="block", block_length=4, cache=cache, store_kv=False)
    assert len(cache) == 8                                  # read, not stored
    b2 = m.forward(ids[8:], mask="block", block_length=4, cache=cache, store_kv=True)
    assert len(cache) == 12 and np.array_equal(b, b2)
    assert np.max(np.abs(np.concatenate([a, b]) - full)) < 1e-12
    # Causal: token-by-token with the cache equals the full causal forward.
    c = m.new_cache()
    rows = [m.forward([t], cache=c, store_kv=True)[0] for t in ids[:6]]
    assert np.max(np.abs(np.array(rows) - m.forward(ids[:6]))) < 1e-12


def _cached_vs_recompute(folder: str, prompt, params) -> sg.SdarResult:
    m = model(folder)
    seen = {}
    r1 = sg.generate(m, prompt, params, on_forward=lambda k, b, s, l: seen.setdefault((b, s), l))
    worst = 0.0

    def check(kind, b, s, logits):
        nonlocal worst
        worst = max(worst, float(np.max(np.abs(logits - seen[(b, s)]))))

    r2 = sg.generate(m, prompt, params, recompute=True, on_forward=check)
    assert worst < 1e-9, worst
    assert (r1.output_ids, r1.trace, r1.nfe, r1.overcommit) == \
        (r2.output_ids, r2.trace, r2.nfe, r2.overcommit)
    return r1


def test_cached_sdar_equals_full_recompute():
    rng = np.random.default_rng(11)
    for folder in (SDAR_F32, SDAR_BF16):
        for strat in sg.STRATEGIES:
            for lp, b, s in ((3, 4, 4), (8, 4, 2), (11, 8, 3), (5, 4, 2)):
                steps = b if strat == "entropy_bounded" else s
                p = sg.SdarParams(gen_length=12, block_length=b, denoising_steps=steps,
                                  remasking_strategy=strat, confidence_threshold=0.45,
                                  eb_threshold=2.0, stopping_criteria_idx=[mh.IM_END])
                _cached_vs_recompute(folder, [int(v) for v in rng.integers(0, 1000, lp)], p)


def test_nfe_and_prefill():
    m = model(SDAR_F32)
    p = sg.SdarParams(gen_length=8, block_length=4, denoising_steps=4,
                      remasking_strategy="low_confidence_static")
    r = sg.generate(m, [1, 2, 3, 4, 5, 6], p)      # prefill 4; blocks 1..3 (canvas 16)
    assert r.num_blocks == 4 and len(r.output_ids) == 10
    # prefill + block 1 (2 masks: 2 steps + store) + blocks 2, 3 (4 steps + store each)
    assert r.nfe == 1 + 3 + 5 + 5, r.nfe
    r = sg.generate(m, [1, 2, 3], p)               # no prefill; canvas 12
    assert r.num_blocks == 3 and r.nfe == 2 + 5 + 5   # block 0: 3 prompt ids + 1 mask


class StubModel:
    """Deterministic logits: slot at position q predicts token TOKENS[q % 8] with a confidence
    that grows with `rank[q % 4]`; records the ids of every store-kv forward."""

    TOKENS = [20, 21, 22, 23, 24, 25, 26, 27]

    def __init__(self, rank=(3, 2, 1, 0), vocab=40, mask_id=39):
        self.rank = rank
        self.cfg = type("C", (), {"raw": {"mask_token_id": mask_id}, "num_layers": 1})()
        self.vocab = vocab
        self.stored = []

    def new_cache(self):
        return hf_model.KVCache(1)

    def forward(self, ids, positions=None, mask="block", block_length=None, cache=None,
                store_kv=False):
        pos = np.asarray(positions)
        out = np.zeros((len(ids), self.vocab))
        for j, q in enumerate(pos):
            out[j, self.TOKENS[q % 8]] = 1.0 + self.rank[q % 4]
        if store_kv:
            self.stored.append((int(pos[0]), [int(t) for t in ids]))
        return out


def test_overcommit_overwrites_prompt_token():
    # B 4, steps 2 -> quotas [2, 2]; prompt of 5: block 1 = [prompt 4] + 3 masks. Step 0 takes
    # the two most confident masks (positions 5, 6: ranks 2, 1); step 1 has 1 mask (7) and quota
    # 2 -> top-2 = mask 7 and the lowest -inf slot, position 4 (prompt), overwritten by x0.
    m = StubModel()
    p = sg.SdarParams(gen_length=3, block_length=4, denoising_steps=2,
                      remasking_strategy="low_confidence_static")
    r = sg.generate(m, [1, 2, 3, 4, 5], p)
    assert r.trace == [[1, 0, [5, 6]], [1, 1, [4, 7]]], r.trace
    assert r.overcommit == [[1, 1, 4, 5, 24]], r.overcommit
    assert m.stored[-1] == (4, [24, 25, 26, 27])      # the K/V of the overwritten prompt token
    assert r.output_ids == [25, 26, 27] and r.nfe == 1 + 3
    plain = sg.generate(StubModel(), [1, 2, 3, 4, 5], p, overcommit=False)
    assert plain.overcommit == [] and plain.trace[-1] == [1, 1, [7]]


def test_dynamic_overcommit_then_top_n():
    # B 8, steps 4 (quota 2): step 0 commits every slot above the threshold (5 > quota), so the
    # later quota of 2 finds one mask and also takes the lowest non-mask slot.
    mask_index = np.array([True] * 8)
    conf = np.array([0.9, 0.95, 0.1, 0.91, 0.2, 0.99, 0.97, 0.3])
    probs = np.zeros((8, 3))
    p = sg.SdarParams(confidence_threshold=0.85)
    t = sg.choose_transfer("low_confidence_dynamic", mask_index, conf, probs, 2, p)
    assert list(np.flatnonzero(t)) == [0, 1, 3, 5, 6]
    t = sg.choose_transfer("low_confidence_dynamic", mask_index, np.full(8, 0.5), probs, 2, p)
    assert list(np.flatnonzero(t)) == [0, 1]                    # ties: lower position first
    one = np.array([False, False, True, False, False, False, False, False])
    t = sg.choose_transfer("low_confidence_dynamic", one, conf, probs, 2, p)
    assert list(np.flatnonzero(t)) == [0, 2]                    # mask 2 + non-mask slot 0
    t = sg.choose_transfer("low_confidence_dynamic", one, conf, probs, 2, p, overcommit=False)
    assert list(np.flatnonzero(t)) == [2]
    t = sg.choose_transfer("low_confidence_dynamic", mask_index, conf, probs, 0, p)
    assert list(np.flatnonzero(t)) == [0, 1, 3, 5, 6]           # quota 0: |H| >= 0 -> H


def test_static_and_sequential():
    p = sg.SdarParams()
    mi = np.array([False, True, True, True])
    conf = np.array([0.99, 0.2, 0.6, 0.6])
    probs = np.zeros((4, 3))
    t = sg.choose_transfer("low_confidence_static", mi, conf, probs, 2, p)
    assert list(np.flatnonzero(t)) == [2, 3]       # the non-mask 0.99 does not count
    t = sg.choose_transfer("low_confidence_static", mi, conf, probs, 1, p)
    assert list(np.flatnonzero(t)) == [2]          # tie 0.6 / 0.6: lower position
    t = sg.choose_transfer("sequential", np.array([False, False, True, True]), conf, probs, 3, p)
    assert list(np.flatnonzero(t)) == [2, 3]       # cut at the block end
    t = sg.choose_transfer("sequential", mi, conf, probs, 0, p)
    assert not t.any()


def test_entropy_bounded():
    p = sg.SdarParams(eb_threshold=1.0)
    # Entropies of uniform distributions over n tokens: log n.
    def uniform(n, v=8):
        row = np.zeros(v)
        row[:n] = 1.0 / n
        return row
    probs = np.array([uniform(2), uniform(1), uniform(3), uniform(1), uniform(1)])
    mi = np.array([True, True, True, True, False])
    conf = np.zeros(5)
    # masked entropies [0.69, 0, 1.10, 0]; sorted 0 (1), 0 (3), 0.69 (0), 1.10 (2); prefix sums
    # 0, 0, 0.69, 1.79: three below 1.0 -> positions 1, 3, 0.
    t = sg.choose_transfer("entropy_bounded", mi, conf, probs, None, p)
    assert list(np.flatnonzero(t)) == [0, 1, 3]
    t = sg.choose_transfer("entropy_bounded", mi, conf, probs, None,
                           sg.SdarParams(eb_threshold=0.0))
    assert list(np.flatnonzero(t)) == [1]          # none below 0 -> at least 1 (lower position)
    t = sg.choose_transfer("entropy_bounded", mi, conf, probs, None,
                           sg.SdarParams(eb_threshold=50.0))
    assert list(np.flatnonzero(t)) == [0, 1, 2, 3]  # at most the masked ones
    h = sg.entropies(np.array([uniform(4, 4)]))[0]
    assert abs(h - math.log(4)) < 1e-12
    z = sg.entropies(np.array([[1.0, 0.0, 0.0]]))[0]  # the 1e-12 clamp of the zeros
    assert 0 < z < 1e-9


def test_greedy_sampling_and_filters():
    l = np.array([[1.0, 3.0, 3.0, 0.0], [0.0, 2.0, 1.0, 2.0]])
    x0, conf, probs, gap = sg.sample_greedy(l)
    assert list(x0) == [1, 1] and gap[0] == 0.0       # lowest id on ties
    e = np.exp(l[0] - 3.0)
    assert abs(conf[0] - e[1] / e.sum()) < 1e-15
    f = sg.filter_logits(np.array([[1.0, 3.0, 2.0, 2.0]]), 2, 1.0)
    assert list(np.isfinite(f[0])) == [False, True, True, True]   # ties at the k-th value kept
    f = sg.filter_logits(np.array([[math.log(0.5), math.log(0.3), math.log(0.2)]]), 0, 0.6)
    assert list(np.isfinite(f[0])) == [True, True, False]
    f = sg.filter_logits(np.array([[0.0, 5.0, 1.0]]), 0, 0.01)
    assert list(np.isfinite(f[0])) == [False, True, False]        # the first is always kept
    _, conf, _, _ = sg.sample_greedy(np.array([[1.0, 3.0, 2.0]]), top_k=2)
    assert abs(conf[0] - 1 / (1 + math.exp(-1))) < 1e-15
    try:
        sg.SdarParams(temperature=0.7).validate()
        raise AssertionError("temperature > 0 must be refused")
    except ValueError:
        pass


def test_stop_after_the_block():
    m = model(SDAR_F32)
    p = sg.SdarParams(gen_length=32, block_length=4, denoising_steps=4,
                      remasking_strategy="low_confidence_static", stopping_criteria_idx=None)
    prompt = [1, 2, 3, 4, 5, 6]
    r = sg.generate(m, prompt, p)
    tok = r.output_ids[5]                              # a token of block 2 (positions 8..11)
    p2 = dataclasses.replace(p, stopping_criteria_idx=[tok])
    r2 = sg.generate(m, prompt, p2)
    first = r.output_ids.index(tok)
    end = (len(prompt) + first) // 4 * 4 + 4 - len(prompt)       # end of that block in x[Lp:]
    assert r2.first_stop_index == first
    assert r2.output_ids[:end] == r.output_ids[:end]
    assert set(r2.output_ids[end:]) == {mh.MASK}


def test_entropy_bounded_unfinished_block_is_refused():
    m = StubModel()
    p = sg.SdarParams(gen_length=8, block_length=4, denoising_steps=1,
                      remasking_strategy="entropy_bounded", eb_threshold=0.0)
    try:
        sg.generate(m, [1, 2, 3, 4], p)            # 1 token per iteration, 2 iterations, 4 masks
        raise AssertionError("a block left with masks must be refused")
    except ValueError:
        pass


def test_ar_greedy_cache_equals_recompute():
    for name in ("qwen3-tiny", "qwen2-tiny"):
        m = model(os.path.join(HF, name))
        a = ar.greedy(m, [5, 6, 7], 10, [mh.IM_END])
        b = ar.greedy(m, [5, 6, 7], 10, [mh.IM_END], use_cache=False)
        assert a.output_ids == b.output_ids and len(a.output_ids) == 10
        assert abs(a.min_decision_margin - b.min_decision_margin) < 1e-9


def test_qwen2_matches_transformers_if_installed():
    # Optional independent check (transformers is not a pinned dependency): HF's Qwen2 forward
    # in float64, with its float32 islands (RMSNorm, RoPE tables, softmax, logits) made float64.
    try:
        import transformers  # noqa: F401
        from transformers.models.qwen2 import modeling_qwen2 as mq
    except ImportError:
        print("  (transformers not installed: skipped)", file=sys.stderr)
        return
    import torch.nn.functional as F
    saved = (mq.Qwen2RMSNorm.forward, mq.Qwen2RotaryEmbedding.forward, F.softmax)

    def rms(self, x):
        return self.weight * (x / torch.sqrt((x * x).mean(-1, keepdim=True) +
                                             self.variance_epsilon))

    def rot(self, x, position_ids):
        d = 2 * self.inv_freq.numel()
        inv = self.config.rope_theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        f = position_ids[0].to(torch.float64)[:, None] * inv[None]
        emb = torch.cat([f, f], -1)[None]
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    mq.Qwen2RMSNorm.forward, mq.Qwen2RotaryEmbedding.forward = rms, rot
    F.softmax = lambda x, dim=None, dtype=None, **kw: saved[2](x, dim=dim)
    try:
        for name in ("qwen2-tiny", "fastdllm-v2-tiny"):
            with tempfile.TemporaryDirectory() as tmp:
                for fn in os.listdir(os.path.join(HF, name)):
                    shutil.copy(os.path.join(HF, name, fn), tmp)
                c = hf_read.read_config(tmp)
                c.update(architectures=["Qwen2ForCausalLM"], model_type="qwen2")
                with open(os.path.join(tmp, "config.json"), "w") as f:
                    json.dump(c, f)
                tm = transformers.AutoModelForCausalLM.from_pretrained(
                    tmp, torch_dtype=torch.float64, attn_implementation="eager")
            ids = [7, 300, 999, 12, 1001, 45, 46, 47, 1002, 600]
            with torch.no_grad():
                out = tm(torch.tensor([ids]), output_hidden_states=True)
                want = tm.lm_head(out.hidden_states[-1])[0].numpy()
            got = model(os.path.join(HF, name)).forward(ids)
            assert np.max(np.abs(got - want)) < 1e-10, (name, np.max(np.abs(got - want)))
    finally:
        mq.Qwen2RMSNorm.forward, mq.Qwen2RotaryEmbedding.forward, F.softmax = saved


class RecomputeModel:
    """Wraps an HFModel: every forward is a full forward of (everything stored so far + ids) with
    the block-causal mask of block `block`, returning the rows of ids (no cache involved)."""

    def __init__(self, m: hf_model.HFModel, block: int):
        self.m, self.block, self.stored, self.cfg = m, block, [], m.cfg

    def new_cache(self):
        self.stored = []
        return hf_model.KVCache(1)

    def forward(self, ids, positions=None, mask="block", block_length=None, cache=None,
                store_kv=False):
        seq = self.stored + [int(t) for t in ids]
        assert list(positions) == list(range(len(self.stored), len(seq)))
        out = self.m.forward(seq, mask="block", block_length=self.block)[len(self.stored):]
        if store_kv:
            self.stored = seq
        return out


def test_fastdllm_cached_equals_full_recompute():
    m = model(FAST)
    rng = np.random.default_rng(21)
    for lp, b, th, n in ((5, 4, 0.9, 16), (11, 2, 0.3, 24), (16, 8, 0.5, 16), (8, 4, 0.5, 16)):
        prompt = [int(v) for v in rng.integers(0, 1000, lp)]
        p = fd.FastDllmV2Params(max_new_tokens=n, block_size=8, small_block_size=b, threshold=th,
                                stop_token=mh.IM_END, pad_token_id=mh.ENDOFTEXT)
        seen = []
        r1 = fd.generate(m, prompt, p, mh.MASK, on_forward=lambda bi, sb, l: seen.append(l))
        it = iter(seen)
        worst = 0.0

        def check(bi, sb, logits):
            nonlocal worst
            worst = max(worst, float(np.max(np.abs(logits - next(it)))))

        r2 = fd.generate(RecomputeModel(m, 8), prompt, p, mh.MASK, on_forward=check)
        assert worst < 1e-9, worst
        assert (r1.output_ids, r1.trace, r1.nfe, r1.ar_tokens) == \
            (r2.output_ids, r2.trace, r2.nfe, r2.ar_tokens)


class FastStub:
    """Row of position q: logit LEVEL[q % 8] at token 20 + (q + 1) % 16 (a next-token
    prediction), 0 elsewhere; records (first position, store_kv, mask block) of each forward."""

    LEVEL = [9.0, 1.0, 6.0, 2.0, 8.0, 3.0, 7.0, 0.5]

    def __init__(self, vocab=40):
        self.vocab = vocab
        self.calls = []

    def new_cache(self):
        return hf_model.KVCache(1)

    def forward(self, ids, positions=None, mask="block", block_length=None, cache=None,
                store_kv=False):
        pos = np.asarray(positions)
        self.calls.append((int(pos[0]), len(ids), store_kv, block_length))
        out = np.zeros((len(ids), self.vocab))
        for j, q in enumerate(pos):
            out[j, 20 + (q + 1) % 16] = self.LEVEL[q % 8]
        return out


def _conf(level: float, vocab: int = 40) -> float:
    return math.exp(level) / (math.exp(level) + vocab - 1)


def test_fastdllm_token_shift_threshold_and_ar_step():
    # Prompt of 8 = one block: prefill (block 8) + the AR step (argmax of row 7 -> 20 + 8 % 16),
    # then block 1 = positions 8..15 with slot 8 = that token. Shift: slot q uses row q - 1, which
    # predicts 20 + q % 16 with confidence _conf(LEVEL[(q - 1) % 8]).
    stub = FastStub()
    p = fd.FastDllmV2Params(max_new_tokens=8, block_size=8, small_block_size=4, threshold=0.5,
                            stop_token=99, pad_token_id=98)
    r = fd.generate(stub, list(range(8)), p, mask_id=39)
    assert r.ar_tokens[0] == [8, 28] and r.output_ids[0] == 28
    assert r.output_ids[1:8] == [20 + q % 16 for q in range(9, 16)]
    # Sub-block 0 (slots 9..11): rows 8, 9, 10 -> levels 9, 1, 6: conf > 0.5 for 9 and 11 only
    # (_conf(6) = 0.91, _conf(1) = 0.065); then slot 10 alone (forced argmax).
    assert _conf(6.0) > 0.5 > _conf(3.0)
    assert r.trace[0] == [1, 0, [9, 11]] and r.trace[1] == [1, 0, [10]]
    # Sub-block 1 (slots 12..15): rows 11..14, levels 2, 8, 3, 7 -> 13, 15 then 12 (conf 0.16 vs
    # 0.34: the larger, slot 14, is forced), then 12.
    assert r.trace[2] == [1, 1, [13, 15]] and r.trace[3] == [1, 1, [14]] and \
        r.trace[4] == [1, 1, [12]]
    # Forwards: prefill (store, block 8), 5 denoising (no store, default mask block 32), store.
    assert stub.calls[0] == (0, 8, True, 8)
    assert all(c == (8, 8, False, fd.DENOISE_MASK_BLOCK) for c in stub.calls[1:6])
    assert stub.calls[6] == (8, 8, True, 8) and r.nfe == 7
    assert r.ar_tokens[-1] == [16, 20 + 16 % 16] and len(r.output_ids) == 9


def test_fastdllm_short_prompt_has_no_prefill():
    stub = FastStub()
    p = fd.FastDllmV2Params(max_new_tokens=8, block_size=8, small_block_size=8, threshold=0.95,
                            stop_token=99, pad_token_id=98)
    r = fd.generate(stub, [1, 2, 3], p, mask_id=39)
    assert stub.calls[0] == (0, 8, False, fd.DENOISE_MASK_BLOCK)     # prompt inside the block
    assert r.output_ids[:5] == [20 + q % 16 for q in range(3, 8)] and not r.ar_tokens[:-1]
    # threshold 0.95: masked slots 3..7 use rows 2..6 (levels 6, 2, 8, 3, 7): conf 0.91, 0.16,
    # 0.99, 0.34, 0.97 -> slots 5 and 7 pass.
    assert r.trace[0] == [0, 0, [5, 7]]


def test_fastdllm_stop_pads_and_skips_the_cache_update():
    stub = FastStub()
    stop = 20 + 10 % 16                              # predicted for slot 10
    p = fd.FastDllmV2Params(max_new_tokens=24, block_size=8, small_block_size=4, threshold=0.5,
                            stop_token=stop, pad_token_id=98)
    r = fd.generate(stub, list(range(8)), p, mask_id=39)
    assert r.finished and r.first_stop_index == 2     # x[10]
    assert r.output_ids[:3] == [28, 29, stop] and r.output_ids[3:] == [98] * 5
    assert not any(c[2] for c in stub.calls[1:])      # no storing forward after the prefill
    assert len(r.ar_tokens) == 1


TESTS = [v for k, v in list(globals().items()) if k.startswith("test_") and callable(v)]


def check_goldens() -> None:
    problems = mh.check(REPO, mh.build_all())
    files = mbg.build_all(REPO, progress=False)
    problems += [p for p in mbg.mg.check(REPO, files)
                 if not p.startswith(f"{mbg.mg.GOLDEN_DIR}/llada")]
    for p in problems:
        print("  MISMATCH " + p, file=sys.stderr)
    assert not problems, f"{len(problems)} files differ; run scripts/make_hf_checkpoints.py and " \
                         f"scripts/make_block_goldens.py"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check-goldens", action="store_true",
                    help="also rebuild the checkpoints and goldens in memory and compare")
    ap.add_argument("-k", metavar="SUBSTRING", help="run only tests whose name contains this")
    args = ap.parse_args()
    checks = [(t.__name__, t) for t in TESTS if not args.k or args.k in t.__name__]
    if args.check_goldens:
        checks.append(("check_goldens", check_goldens))
    failed = 0
    t_all = time.time()
    for name, fn in checks:
        t0 = time.time()
        try:
            fn()
            print(f"PASS {name} ({time.time() - t0:.2f} s)", file=sys.stderr)
        except Exception:  # noqa: BLE001 - report every failure and continue
            failed += 1
            print(f"FAIL {name}", file=sys.stderr)
            traceback.print_exc()
    print(f"{len(checks) - failed}/{len(checks)} passed ({time.time() - t_all:.1f} s)",
          file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
