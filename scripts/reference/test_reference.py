#!/usr/bin/env python3
"""Self-tests of the Python reference (plain asserts; exit status 0 = all passed, 1 = failure).

  test_reference.py                  unit tests (RNG known answers, GGUF reader vs gguf-py,
                                     RoPE layouts, GQA mapping, schedule, sampling identities)
  test_reference.py --check-goldens  also regenerate every model and golden file in memory and
                                     compare with tests/data/ (what CI runs; well under 30 s)
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.dirname(HERE)
REPO = os.path.dirname(SCRIPTS)
sys.path.insert(0, HERE)
sys.path.insert(0, SCRIPTS)

import gguf  # noqa: E402

import generate as gen  # noqa: E402
import gguf_read  # noqa: E402
import llada  # noqa: E402
import make_goldens  # noqa: E402
import make_llada_gguf as mk  # noqa: E402
import rng  # noqa: E402

MODELS_DIR = os.path.join(REPO, make_goldens.MODELS_DIR)


def _tiny_models() -> list[str]:
    paths = [os.path.join(MODELS_DIR, n + ".gguf") for n in make_goldens.MODELS]
    missing = [p for p in paths if not os.path.exists(p)]
    assert not missing, f"missing test models {missing}; run scripts/make_goldens.py"
    return paths


# --------------------------------------------------------------------------------------- RNG
def test_philox_known_answers():
    kats = [
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
         (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
    ]
    for ctr, key, want in kats:
        assert rng.philox4x32_10_scalar(ctr, key) == want, (ctr, key)
        got = tuple(int(w) for w in rng.philox4x32_10(*ctr, *key))
        assert got == want, (ctr, key, [hex(x) for x in got])


def test_philox_vectorized_matches_scalar():
    r = np.random.default_rng(5)
    words = r.integers(0, 2**32, size=(200, 6), dtype=np.uint64)
    out = rng.philox4x32_10(*(words[:, i] for i in range(6)))
    for j in range(words.shape[0]):
        w = [int(v) for v in words[j]]
        assert rng.philox4x32_10_scalar(tuple(w[:4]), tuple(w[4:])) == \
            tuple(int(o[j]) for o in out), j


def test_uniform():
    seed = 0x0123456789ABCDEF
    u = rng.uniform(seed, rng.STREAM_GUMBEL, 3, np.arange(4)[:, None], np.arange(50)[None, :])
    assert u.shape == (4, 50) and u.dtype == np.float64
    assert np.all(u >= 0) and np.all(u < 1)
    for p in range(4):
        for v in (0, 7, 49):
            assert u[p, v] == rng.uniform_scalar(seed, rng.STREAM_GUMBEL, 3, p, v)
    # Definition: counter (index, position, step, stream), key (seed lo, seed hi).
    w = rng.philox4x32_10_scalar((7, 2, 3, 1), (seed & 0xFFFFFFFF, seed >> 32))
    assert u[2, 7] == ((w[0] >> 5) * 2**26 + (w[1] >> 6)) / 2**53
    # The streams and the high seed word matter.
    assert rng.uniform_scalar(seed, 2, 3, 2, 7) != u[2, 7]
    assert rng.uniform_scalar(seed & 0xFFFFFFFF, 1, 3, 2, 7) != u[2, 7]
    # Roughly uniform.
    big = rng.uniform(1, 1, 0, np.arange(100)[:, None], np.arange(1000)[None, :])
    assert abs(big.mean() - 0.5) < 0.01 and abs(big.var() - 1 / 12) < 0.005


# ------------------------------------------------------------------------------ GGUF reader
def test_reader_matches_gguf_py_on_test_models():
    for path in _tiny_models():
        mk.validate(path)            # every key and tensor: reference reader == gguf-py
        spec = make_goldens.MODELS[os.path.basename(path)[:-5]]
        mk.validate(path, spec)      # and the values are the generator's (within dtype rounding)


def test_reader_bf16_q8_0():
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in ("bf16", "q8_0"):
            spec = mk.ModelSpec(hidden=64, layers=1, heads=4, kv_heads=2, ffn=96, vocab=270,
                                dtype=dtype, tied=False, seed=9, init_std=0.3)
            path = os.path.join(tmp, dtype + ".gguf")
            mk.write_llada_gguf(path, spec)
            mk.validate(path, spec)
            g = gguf_read.GGUFFile(path)
            assert g.tensors["blk.0.attn_q.weight"].type_name == dtype.upper()
            assert g.tensors["blk.0.attn_norm.weight"].type_name == "F32"
            assert g.tensor("blk.0.ffn_down.weight").shape == (64, 96)
            llada.LladaModel(g).forward([1, 2, 3])


def test_reader_all_value_types():
    values = {
        "t.u8": (gguf.GGUFValueType.UINT8, 200), "t.i8": (gguf.GGUFValueType.INT8, -5),
        "t.u16": (gguf.GGUFValueType.UINT16, 65535), "t.i16": (gguf.GGUFValueType.INT16, -300),
        "t.u32": (gguf.GGUFValueType.UINT32, 4000000000), "t.i32": (gguf.GGUFValueType.INT32, -7),
        "t.f32": (gguf.GGUFValueType.FLOAT32, 0.25), "t.bool": (gguf.GGUFValueType.BOOL, True),
        "t.str": (gguf.GGUFValueType.STRING, "héllo\n"),
        "t.u64": (gguf.GGUFValueType.UINT64, 2**63 + 5), "t.i64": (gguf.GGUFValueType.INT64, -2**40),
        "t.f64": (gguf.GGUFValueType.FLOAT64, 1e-300),
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kv.gguf")
        w = gguf.GGUFWriter(path, "llada")
        for k, (t, v) in values.items():
            w.add_key_value(k, v, t)
        w.add_array("a.ints", [1, -2, 3])
        w.add_array("a.floats", [0.5, -1.5])
        w.add_array("a.strs", ["x", "", "zz"])
        w.add_array("a.bools", [True, False])
        w.add_array("a.nested", [[1, 2], [3, 4, 5]])
        w.add_array("a.nested_str", [["a", "b"], ["c"]])
        w.add_tensor("f32", np.arange(6, dtype=np.float32).reshape(2, 3))
        w.add_tensor("f16", np.array([[0.5, -2.0]], dtype=np.float16))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        g = gguf_read.GGUFFile(path)
        assert g.version == 3
        for k, (_, v) in values.items():
            assert g.metadata[k] == v and type(g.metadata[k]) is type(v), (k, g.metadata[k], v)
        assert g.value_types["t.bool"] == "bool" and g.value_types["t.i16"] == "i16"
        assert g.metadata["a.ints"] == [1, -2, 3]
        assert g.metadata["a.floats"] == [0.5, -1.5]
        assert g.metadata["a.strs"] == ["x", "", "zz"]
        assert g.metadata["a.bools"] == [True, False]
        assert g.metadata["a.nested"] == [[1, 2], [3, 4, 5]]
        assert g.metadata["a.nested_str"] == [["a", "b"], ["c"]]
        assert g.value_types["a.nested"] == "array[array]"
        assert g.tensors["f32"].dims == (3, 2) and g.tensor("f32").shape == (2, 3)
        assert np.array_equal(g.tensor("f32"), np.arange(6).reshape(2, 3))
        assert np.array_equal(g.tensor("f16"), [[0.5, -2.0]])
        # Agreement with gguf-py's reader on the flat keys.
        r = gguf.GGUFReader(path)
        for k in values:
            assert r.fields[k].contents() == g.metadata[k], k
        # Truncated / corrupted files are rejected with a message.
        data = open(path, "rb").read()
        cut = g.data_offset + g.tensors["f16"].offset + 2     # inside the last tensor's data
        for bad, what in ((data[:200], "truncated"), (data[:cut], "past the end"),
                          (b"GGUX" + data[4:], "bad magic"),
                          (data[:4] + b"\x01\x00\x00\x00" + data[8:], "version")):
            bad_path = os.path.join(tmp, "bad.gguf")
            open(bad_path, "wb").write(bad)
            try:
                gguf_read.GGUFFile(bad_path)
            except gguf_read.GGUFError as e:
                assert what in str(e) or what.split()[0] in str(e), (what, e)
            else:
                raise AssertionError(f"{what} file accepted")


# ------------------------------------------------------------------------------ model / RoPE
def test_rope_layouts_agree():
    # Unit level: the interleaved RoPE on permuted rows == permuted rotate_half RoPE.
    r = np.random.default_rng(3)
    L, H, hd = 7, 3, 8
    q_hf = r.standard_normal((L, H, hd))
    perm = llada.permute_rows(np.eye(H * hd), H)          # row permutation as a matrix
    q_st = (q_hf.reshape(L, H * hd) @ perm.T).reshape(L, H, hd)
    a = llada.rope_rotate_half(q_hf, 10000.0).reshape(L, H * hd) @ perm.T
    b = llada.rope_interleaved(q_st, 10000.0).reshape(L, H * hd)
    assert np.max(np.abs(a - b)) < 1e-12
    assert np.array_equal(llada._unpermute_rows(llada.permute_rows(perm, H), H), perm)
    # Model level: both layouts give the same logits on the committed test models.
    ids = [5, 17, 250, 3, 3, 99, 1, 42, 7, 7, 7, 120]
    for path in _tiny_models():
        a = llada.LladaModel(path, rope_mode="rotate_half").forward(ids)
        b = llada.LladaModel(path, rope_mode="interleaved").forward(ids)
        assert np.max(np.abs(a - b)) < 1e-10, path


def test_forward_properties():
    path = _tiny_models()[0]
    m = llada.LladaModel(path)
    ids = [10, 20, 30, 40, 50]
    base = m.forward(ids)
    assert base.shape == (5, m.cfg.n_vocab)
    # Bidirectional: changing the LAST token changes the FIRST position's logits.
    assert np.max(np.abs(m.forward([10, 20, 30, 40, 51])[0] - base[0])) > 1e-3
    # RoPE makes the model position-aware (a permuted input is not a permuted output).
    rev = m.forward(ids[::-1])
    assert np.max(np.abs(rev[::-1] - base)) > 1e-3
    # float32 evaluation stays close to float64.
    assert np.max(np.abs(llada.LladaModel(path, np.float32).forward(ids) - base)) < 1e-3


def test_gqa_equals_repeated_kv_mha():
    """A GQA model equals the MHA model whose K/V heads are repeated (HF repeat_kv order)."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = mk.ModelSpec(hidden=32, layers=2, heads=4, kv_heads=2, ffn=48, vocab=270,
                            tied=False, seed=4, init_std=0.3, norm_noise=0.1)
        path = os.path.join(tmp, "gqa.gguf")
        mk.write_llada_gguf(path, spec)
        gqa = llada.LladaModel(path)
        mha = llada.LladaModel(path)
        hd, rep = gqa.cfg.head_dim, gqa.cfg.n_head // gqa.cfg.n_head_kv
        for lw in mha.layers:
            for k in ("wk", "wv"):
                heads = lw[k].reshape(gqa.cfg.n_head_kv, hd, -1)
                lw[k] = np.repeat(heads, rep, axis=0).reshape(gqa.cfg.n_head * hd, -1)
        mha.cfg.n_head_kv = mha.cfg.n_head
        ids = [3, 9, 27, 81, 243, 1, 2]
        assert np.max(np.abs(gqa.forward(ids) - mha.forward(ids))) < 1e-12


# --------------------------------------------------------------------------------- generate
def test_schedule():
    assert gen.num_transfer_tokens(32, 10) == [4, 4, 3, 3, 3, 3, 3, 3, 3, 3]
    assert gen.num_transfer_tokens(8, 3) == [3, 3, 2]
    assert gen.num_transfer_tokens(16, 6) == [3, 3, 3, 3, 2, 2]
    assert gen.num_transfer_tokens(8, 8) == [1] * 8
    assert gen.num_transfer_tokens(4, 6) == [1, 1, 1, 1, 0, 0]
    assert gen.num_transfer_tokens(128, 128) == [1] * 128


def test_gumbel_log_form():
    """argmax(l - T log(-log u)) == argmax(exp(l) / (-log u)^T) (the reference's form)."""
    r = np.random.default_rng(8)
    for t in (0.3, 0.7, 1.0, 2.0):
        l = r.standard_normal((50, 40)) * 3
        u = rng.uniform(77, rng.STREAM_GUMBEL, 0, np.arange(50)[:, None], np.arange(40)[None, :])
        a = np.argmax(np.exp(l) / (-np.log(u)) ** t, -1)
        b = np.argmax(l - t * np.log(-np.log(u)), -1)
        assert np.array_equal(a, b), t


def test_generate_invariants():
    path = _tiny_models()[2]
    m = llada.LladaModel(path)
    mask = m.gguf.require("tokenizer.ggml.mask_token_id")
    prompt = [m.gguf.require("tokenizer.ggml.bos_token_id"), 5, 6]
    p = gen.GenerateParams(gen_length=16, steps=16, block_length=8)
    r = gen.generate(m, prompt, p)
    assert r.nfe == 16 and len(r.output_ids) == 16 and mask not in r.output_ids
    # One token per step, blocks in order (semi-autoregressive).
    assert all(len(pos) == 1 for _, pos in r.trace)
    firsts = [pos[0] for _, pos in r.trace]
    assert all(3 <= q < 11 for q in firsts[:8]) and all(11 <= q < 19 for q in firsts[8:])
    # CFG costs one NFE per step; logits_eos_inf removes EOS.
    eos = m.gguf.require("tokenizer.ggml.eos_token_id")
    r2 = gen.generate(m, prompt, gen.GenerateParams(16, 8, 16, cfg_scale=1.0, logits_eos_inf=True))
    assert r2.nfe == 8 and eos not in r2.output_ids
    # Same seed, same result; the seed matters at T > 0.
    pt = gen.GenerateParams(16, 8, 8, temperature=1.0, seed=3)
    assert gen.generate(m, prompt, pt).output_ids == gen.generate(m, prompt, pt).output_ids
    outs = {tuple(gen.generate(m, prompt, gen.GenerateParams(16, 8, 8, temperature=1.0,
                                                             seed=s)).output_ids) for s in range(4)}
    assert len(outs) > 1
    for bad in (gen.GenerateParams(16, 8, 5), gen.GenerateParams(16, 3, 8),
                gen.GenerateParams(16, 8, 8, remasking="entropy")):
        try:
            gen.generate(m, prompt, bad)
        except ValueError:
            pass
        else:
            raise AssertionError(f"accepted {bad}")


def test_tie_rule_lower_position_first():
    """Equal confidences are committed lower position first; exact ties are not 'fragile'."""
    real = llada.LladaModel(_tiny_models()[1])

    eos = real.gguf.require("tokenizer.ggml.eos_token_id")
    eot = real.gguf.require("tokenizer.ggml.eot_token_id")

    class SameRowModel:      # every position gets identical logits -> identical confidences
        gguf, cfg = real.gguf, real.cfg

        def forward(self, ids):
            row = real.forward(ids)[0]
            row[[eos, eot]] = -100.0
            return np.tile(row, (len(ids), 1))

    p = gen.GenerateParams(gen_length=8, steps=4, block_length=8)
    r = gen.generate(SameRowModel(), [1, 2], p)
    assert [pos for _, pos in r.trace] == [[2, 3], [4, 5], [6, 7], [8, 9]], r.trace
    assert r.min_selection_margin == float("inf")
    # EOS/EOT predictions get confidence exactly 0 with confidence_eos_eot_inf at T = 0.

    class EotModel(SameRowModel):
        def forward(self, ids):
            out = super().forward(ids)
            out[1::2, eot] = 100.0     # odd positions predict EOT
            return out

    p = gen.GenerateParams(gen_length=8, steps=4, block_length=8, confidence_eos_eot_inf=True)
    r = gen.generate(EotModel(), [1, 2], p)
    # Even positions (non-EOT, equal confidence) first, then the EOT ones (conf 0), each in order.
    assert [pos for _, pos in r.trace] == [[2, 4], [6, 8], [3, 5], [7, 9]], r.trace
    assert r.output_ids[1::2] == [eot] * 4


TESTS = [v for k, v in list(globals().items()) if k.startswith("test_") and callable(v)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check-goldens", action="store_true",
                    help="also regenerate all models/goldens in memory and compare with tests/data")
    ap.add_argument("-k", metavar="SUBSTRING", help="run only tests whose name contains this")
    args = ap.parse_args()
    failed = 0
    tests = [t for t in TESTS if not args.k or args.k in t.__name__]
    t_all = time.time()
    for t in tests:
        t0 = time.time()
        try:
            t()
            print(f"PASS {t.__name__} ({time.time() - t0:.2f} s)", file=sys.stderr)
        except Exception:  # noqa: BLE001 - report every failure and continue
            failed += 1
            print(f"FAIL {t.__name__}", file=sys.stderr)
            traceback.print_exc()
    if args.check_goldens:
        t0 = time.time()
        try:
            files = make_goldens.build_all(REPO, progress=False)
            problems = make_goldens.check(REPO, files)
            for p in problems:
                print("  MISMATCH " + p, file=sys.stderr)
            assert not problems, f"{len(problems)} golden files differ; run scripts/make_goldens.py"
            print(f"PASS check_goldens ({len(files)} files, {time.time() - t0:.2f} s)",
                  file=sys.stderr)
        except Exception:  # noqa: BLE001
            failed += 1
            print("FAIL check_goldens", file=sys.stderr)
            traceback.print_exc()
    total = len(tests) + (1 if args.check_goldens else 0)
    print(f"{total - failed}/{total} passed ({time.time() - t_all:.1f} s)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
