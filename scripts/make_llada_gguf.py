#!/usr/bin/env python3
"""Write a random LLaDA model as GGUF, with llama.cpp's naming and metadata (gguf-py writer).

The file is what llama.cpp's converter would write for a LLaDA checkpoint (architecture
`llada`, see docs LLAMACPP.md): hyper-parameter keys `llada.*`, `llada.attention.causal =
false`, `diffusion.shift_logits = false`, a byte-level BPE tokenizer (`gpt2` / `gpt-2`) and
the LLaDA chat template. Weights are random normals (fixed seed => byte-identical files):
2-D weights have std --init-std (token_embd / output: --embed-std), Q/K are drawn in HF
row order and then permuted for interleaved RoPE exactly like convert_hf_to_gguf. Norm
weights are 1 + --norm-noise * N(0, 1), stored as F32; 2-D weights use --dtype.

Vocabulary (exactly --vocab tokens, a valid byte-level BPE vocabulary):
  ids 0..255   the GPT-2 byte-to-unicode tokens (id = byte value);
  then merged tokens, one per merge "a b" (a, b and "ab" all in the vocabulary): first
  learned by BPE on a built-in English paragraph, then synthetic merges (token + letter)
  to fill;
  last six ids: <|startoftext|> (bos), <|endoftext|> (eos, pad), <|start_header_id|>,
  <|end_header_id|>, <|eot_id|> (eot), <|mdm_mask|> (mask), token type CONTROL (3);
  all other tokens are NORMAL (1).

After writing, the file is validated: read back with gguf-py's GGUFReader (tensor names must be
gguf-py's names for MODEL_ARCH.LLADA) and with the independent reader in scripts/reference/,
and both must agree on every key and every tensor value.

Examples:
  scripts/make_llada_gguf.py --out /tmp/tiny.gguf --hidden 32 --layers 2 --heads 4 --ffn 64 --vocab 300
  scripts/make_llada_gguf.py --preset bench --out models/llada-bench-97m-f16.gguf
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference"))

import gguf  # noqa: E402
from gguf.constants import MODEL_ARCH, MODEL_TENSORS, TENSOR_NAMES  # noqa: E402

from gguf_read import GGUFFile  # noqa: E402

LLADA_CHAT_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

SPECIAL_TOKENS = ["<|startoftext|>", "<|endoftext|>", "<|start_header_id|>", "<|end_header_id|>",
                  "<|eot_id|>", "<|mdm_mask|>"]

# Built-in training text for the toy BPE merges (original text, plain ASCII).
BPE_TEXT = """\
The little engine reads a prompt, fills the rest of the canvas with masks, and then asks the
model which words belong in every empty place at once. In each step it keeps the answers it is
most sure about and leaves the others masked for later. When the first block is complete, the
next block starts, and the story grows from left to right while each block is written in
parallel. Tests compare the tokens with the reference, one by one, and they must match exactly.
There is a quiet pleasure in watching the text appear: at first only a few of the strongest
words are there, then the spaces between them fill in, and in the end the whole sentence
stands on the page as if it had always been there. The same numbers, the same seed, the same
steps: the same answer, on every machine, in every run of the test.
"""

_PRETOKENIZE = re.compile(r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+")


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable unicode character map."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) \
        + list(range(ord("\xae"), ord("\xff") + 1))
    out = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in out:
            out[b] = chr(256 + extra)
            extra += 1
    return out


def build_vocab(n_vocab: int) -> tuple[list[str], list[int], list[str], dict[str, int]]:
    """Returns (tokens, token_types, merges, special ids by role)."""
    n_merges = n_vocab - 256 - len(SPECIAL_TOKENS)
    if n_merges < 0:
        raise ValueError(f"--vocab must be at least {256 + len(SPECIAL_TOKENS)}")
    b2u = bytes_to_unicode()
    tokens = [b2u[b] for b in range(256)]
    known = set(tokens)
    merges: list[str] = []
    # 1. BPE on the built-in paragraph.
    words = Counter(tuple(b2u[b] for b in w.encode("utf-8"))
                    for w in _PRETOKENIZE.findall(BPE_TEXT))
    banned: set[tuple[str, str]] = set()
    while len(merges) < n_merges:
        pairs: Counter = Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                if (a, b) not in banned:
                    pairs[(a, b)] += c
        if not pairs:
            break
        best = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        if best[1] < 2:
            break
        a, b = best[0]
        if a + b in known:          # would duplicate an existing token: never merge this pair
            banned.add((a, b))
            continue
        merges.append(f"{a} {b}")
        tokens.append(a + b)
        known.add(a + b)
        new_words: Counter = Counter()
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new_words[tuple(out)] += c
        words = new_words
    # 2. Synthetic merges: breadth-first "token + letter", starting from the letters and the
    #    space-prefixed letters, so every merge's parts already exist.
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    queue = [b2u[0x20] + c for c in letters] + letters + tokens[256:]
    qi = 0
    while len(merges) < n_merges:
        base = queue[qi]
        qi += 1
        if base not in known:       # "Ġx" (space + letter) first needs its own merge
            head, tail = base[0], base[1:]
            merges.append(f"{head} {tail}")
            tokens.append(base)
            known.add(base)
            if len(merges) >= n_merges:
                break
        for c in letters:
            if len(merges) >= n_merges:
                break
            new = base + c
            if new in known:
                continue
            merges.append(f"{base} {c}")
            tokens.append(new)
            known.add(new)
            queue.append(new)
    types = [int(gguf.TokenType.NORMAL)] * len(tokens)
    specials = {}
    for role, tok in zip(["bos", "eos", "start_header", "end_header", "eot", "mask"],
                         SPECIAL_TOKENS):
        specials[role] = len(tokens)
        tokens.append(tok)
        types.append(int(gguf.TokenType.CONTROL))
    assert len(tokens) == n_vocab and len(set(tokens)) == n_vocab
    return tokens, types, merges, specials


@dataclass
class ModelSpec:
    hidden: int = 32
    layers: int = 2
    heads: int = 4
    kv_heads: int = 4
    ffn: int = 64
    vocab: int = 300
    context: int = 128
    dtype: str = "f32"            # f32 | f16 | bf16 | q8_0 (2-D weights)
    tied: bool = True
    seed: int = 0
    init_std: float = 0.02
    embed_std: float | None = None  # token_embd / output std (default: init_std)
    norm_noise: float = 0.0
    special_out_scale: float = 1.0  # scale of the EOS and EOT output rows (token_embd if tied)
    rope_base: float = 500000.0
    rms_eps: float = 1e-5
    name: str = "unmask-random-llada"


BENCH_PRESET = dict(hidden=768, layers=12, heads=12, kv_heads=12, ffn=2048, vocab=8192,
                    context=4096, dtype="f16", tied=False, seed=1234, init_std=0.02)

_QTYPES = {"f32": gguf.GGMLQuantizationType.F32, "f16": gguf.GGMLQuantizationType.F16,
           "bf16": gguf.GGMLQuantizationType.BF16, "q8_0": gguf.GGMLQuantizationType.Q8_0}
_FTYPES = {"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
           "bf16": gguf.LlamaFileType.MOSTLY_BF16, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}


def permute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf's Llama permutation: HF rotate_half rows -> interleaved-RoPE rows."""
    n_out, n_in = w.shape
    return w.reshape(n_head, 2, n_out // n_head // 2, n_in).swapaxes(1, 2).reshape(n_out, n_in)


def generate_weights(spec: ModelSpec, specials: dict[str, int]):
    """Yields (name, float32 array in row-major [out, in] layout) in file order."""
    if spec.hidden % spec.heads or spec.heads % spec.kv_heads:
        raise ValueError("--hidden must be divisible by --heads, and --heads by --kv-heads")
    hd = spec.hidden // spec.heads
    if hd % 2:
        raise ValueError("head_dim must be even for RoPE")
    rng = np.random.default_rng(spec.seed)
    d, ff, V = spec.hidden, spec.ffn, spec.vocab
    estd = spec.embed_std if spec.embed_std is not None else spec.init_std

    def normal(shape, std):
        return (rng.standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(np.float32)

    def norm_w():
        w = np.ones(d, dtype=np.float32)
        if spec.norm_noise:
            w += normal((d,), spec.norm_noise)
        return w

    def boost(w):
        if spec.special_out_scale != 1.0:
            for role in ("eos", "eot"):
                w[specials[role]] *= np.float32(spec.special_out_scale)
        return w

    emb = normal((V, d), estd)
    if spec.tied:
        emb = boost(emb)
    yield "token_embd.weight", emb
    if not spec.tied:
        yield "output.weight", boost(normal((V, d), estd))
    for i in range(spec.layers):
        p = f"blk.{i}."
        yield p + "attn_norm.weight", norm_w()
        yield p + "attn_q.weight", permute_qk(normal((spec.heads * hd, d), spec.init_std), spec.heads)
        yield p + "attn_k.weight", permute_qk(normal((spec.kv_heads * hd, d), spec.init_std),
                                              spec.kv_heads)
        yield p + "attn_v.weight", normal((spec.kv_heads * hd, d), spec.init_std)
        yield p + "attn_output.weight", normal((d, spec.heads * hd), spec.init_std)
        yield p + "ffn_norm.weight", norm_w()
        yield p + "ffn_gate.weight", normal((ff, d), spec.init_std)
        yield p + "ffn_up.weight", normal((ff, d), spec.init_std)
        yield p + "ffn_down.weight", normal((d, ff), spec.init_std)
    yield "output_norm.weight", norm_w()


def add_hparams(w: gguf.GGUFWriter, spec) -> None:
    """The hyper-parameter keys of a bidirectional llama-family file (llada, dream), in file order.
    `spec` has name, dtype, context, hidden, layers, ffn, heads, kv_heads, rms_eps, rope_base and
    vocab."""
    w.add_name(spec.name)
    w.add_file_type(int(_FTYPES[spec.dtype]))
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_context_length(spec.context)
    w.add_embedding_length(spec.hidden)
    w.add_block_count(spec.layers)
    w.add_feed_forward_length(spec.ffn)
    w.add_head_count(spec.heads)
    w.add_head_count_kv(spec.kv_heads)
    w.add_layer_norm_rms_eps(spec.rms_eps)
    w.add_causal_attention(False)
    w.add_rope_freq_base(spec.rope_base)
    w.add_rope_dimension_count(spec.hidden // spec.heads)
    w.add_vocab_size(spec.vocab)


def add_weight(w: gguf.GGUFWriter, name: str, arr: np.ndarray, qtype) -> None:
    """Adds a float32 array: 1-D and F32 as they are, F16 converted, other types quantized."""
    if arr.ndim == 1 or qtype == gguf.GGMLQuantizationType.F32:
        w.add_tensor(name, arr)
    elif qtype == gguf.GGMLQuantizationType.F16:
        w.add_tensor(name, arr.astype(np.float16))
    else:
        # uint8 data in the byte shape; gguf-py derives the element shape from it.
        w.add_tensor(name, gguf.quants.quantize(arr, qtype), raw_dtype=qtype)


def readers_agree(path: str) -> tuple[gguf.GGUFReader, GGUFFile]:
    """Reads `path` with gguf-py and the reference reader; asserts the same keys and values."""
    r = gguf.GGUFReader(path)
    mine = GGUFFile(path)
    # Metadata: same keys, same values (gguf-py adds GGUF.* pseudo-fields for the header).
    keys = [k for k in r.fields if not k.startswith("GGUF.")]
    assert keys == list(mine.metadata), (keys, list(mine.metadata))
    for k in keys:
        a, b = _reader_value(r.fields[k]), mine.metadata[k]
        if isinstance(a, float) or (isinstance(a, list) and a and isinstance(a[0], float)):
            assert np.array_equal(np.asarray(a, np.float64), np.asarray(b, np.float64)), k
        else:
            assert a == b, (k, a if not isinstance(a, list) else a[:5], b if not
                            isinstance(b, list) else b[:5])
    return r, mine


def write_llada_gguf(path: str, spec: ModelSpec, progress: bool = False) -> dict:
    """Writes the model; returns a summary (parameter count, special ids)."""
    if spec.dtype not in _QTYPES:
        raise ValueError(f"unknown dtype {spec.dtype!r}")
    tokens, types, merges, specials = build_vocab(spec.vocab)
    w = gguf.GGUFWriter(path, gguf.MODEL_ARCH_NAMES[MODEL_ARCH.LLADA])
    add_hparams(w, spec)
    w.add_diffusion_shift_logits(False)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(specials["bos"])
    w.add_eos_token_id(specials["eos"])
    w.add_eot_token_id(specials["eot"])
    w.add_mask_token_id(specials["mask"])
    w.add_pad_token_id(specials["eos"])
    w.add_add_bos_token(False)
    w.add_chat_template(LLADA_CHAT_TEMPLATE)
    qtype = _QTYPES[spec.dtype]
    n_params = 0
    for name, arr in generate_weights(spec, specials):
        n_params += arr.size
        add_weight(w, name, arr, qtype)
        if progress:
            print(f"\r  generated {name:28s} ({n_params / 1e6:.1f}M parameters)", end="",
                  file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()
    return {"n_params": n_params, "specials": specials}


def expected_tensor_names(n_layers: int, tied: bool) -> list[str]:
    """gguf-py's tensor names for MODEL_ARCH.LLADA (without the optional rope_freqs)."""
    out = []
    for t in MODEL_TENSORS[MODEL_ARCH.LLADA]:
        name = TENSOR_NAMES[t]
        if name == "rope_freqs" or (tied and name == "output"):
            continue
        if "{bid}" in name:
            out += [name.format(bid=i) + ".weight" for i in range(n_layers)]
        else:
            out.append(name + ".weight")
    return out


def _reader_value(field):
    """Python value of a gguf-py ReaderField."""
    main = field.types[0]
    if main == gguf.GGUFValueType.ARRAY:
        return list(field.contents())
    return field.contents()


def validate(path: str, spec: ModelSpec | None = None, progress: bool = False) -> None:
    """Reads `path` with gguf-py and with the reference reader and checks they agree."""
    r, mine = readers_agree(path)
    arch = r.fields["general.architecture"].contents()
    assert arch == "llada", arch
    for k in ("llada.attention.causal", "diffusion.shift_logits", "tokenizer.ggml.add_bos_token"):
        assert mine.metadata[k] is False, k
    assert mine.metadata["tokenizer.ggml.model"] == "gpt2"
    assert mine.metadata["tokenizer.ggml.pre"] == "gpt-2"
    # Vocabulary sanity: merges refer to tokens, specials are CONTROL.
    tokens = mine.metadata["tokenizer.ggml.tokens"]
    tset = set(tokens)
    for m in mine.metadata["tokenizer.ggml.merges"]:
        a, b = m.split(" ")
        assert a in tset and b in tset and a + b in tset, m
    ttypes = mine.metadata["tokenizer.ggml.token_type"]
    for key in ("bos", "eos", "eot", "mask", "padding"):
        tid = mine.metadata[f"tokenizer.ggml.{key}_token_id"]
        assert ttypes[tid] == int(gguf.TokenType.CONTROL), key
    # Tensors: gguf-py's names for LLaDA; same shapes, types and values in both readers.
    n_layers = mine.metadata["llada.block_count"]
    tied = "output.weight" not in mine.tensors
    names = [t.name for t in r.tensors]
    assert sorted(names) == sorted(expected_tensor_names(n_layers, tied)), names
    assert names == list(mine.tensors), "tensor order differs between readers"
    for t in r.tensors:
        ti = mine.tensors[t.name]
        assert tuple(int(x) for x in t.shape) == ti.dims, (t.name, t.shape, ti.dims)
        assert int(t.tensor_type) == ti.ggml_type, t.name
        ref = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64)
        ref = ref.reshape(ti.shape)
        got = mine.tensor(t.name)
        assert np.array_equal(ref, got), f"tensor {t.name}: readers disagree"
        if ti.ggml_type != 0 and got.ndim == 1:
            raise AssertionError(f"1-D tensor {t.name} is not F32")
        if progress:
            print(f"\r  validated {t.name:28s}", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    if spec is not None:
        # Shapes and values against the generator itself (independent of gguf-py's dequantizer).
        assert mine.metadata["llada.embedding_length"] == spec.hidden
        assert mine.metadata["llada.vocab_size"] == spec.vocab == len(tokens)
        specials = {"eos": mine.metadata["tokenizer.ggml.eos_token_id"],
                    "eot": mine.metadata["tokenizer.ggml.eot_token_id"]}
        for name, src in generate_weights(spec, specials):
            got = mine.tensor(name)
            assert got.shape == src.shape, (name, got.shape, src.shape)
            src = src.astype(np.float64)
            err = float(np.max(np.abs(got - src)))
            scale = float(np.max(np.abs(src)))
            tol = {"f32": 0.0, "f16": 2.0**-11, "bf16": 2.0**-8, "q8_0": 1 / 127}[spec.dtype]
            if got.ndim == 1:
                tol = 0.0
            assert err <= tol * scale, f"{name}: max error {err} > {tol} * {scale}"
    mine.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("Examples:")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    d = ModelSpec()
    ap.add_argument("--out", required=True, help="output .gguf path")
    ap.add_argument("--preset", choices=["bench"],
                    help="bench: hidden 768, 12 layers, 12 heads, FFN 2048, vocab 8192, F16, "
                         "untied, context 4096, seed 1234 (97.5M parameters); explicit options "
                         "override it")
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--layers", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--kv-heads", type=int, help="default: --heads (MHA)")
    ap.add_argument("--ffn", type=int)
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--context", type=int)
    ap.add_argument("--dtype", choices=list(_QTYPES), help="type of the 2-D weights (norms: F32)")
    tie = ap.add_mutually_exclusive_group()
    tie.add_argument("--tied", dest="tied", action="store_true", default=None,
                     help="no output.weight (tied to token_embd) [default]")
    tie.add_argument("--untied", dest="tied", action="store_false", help="write output.weight")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--init-std", type=float, help=f"std of 2-D weights (default {d.init_std})")
    ap.add_argument("--embed-std", type=float, help="std of token_embd/output (default: --init-std)")
    ap.add_argument("--norm-noise", type=float, help="norm weights = 1 + this * N(0,1) (default 0)")
    ap.add_argument("--special-out-scale", type=float,
                    help="multiply the EOS and EOT output rows by this (default 1)")
    ap.add_argument("--rope-base", type=float, help=f"default {d.rope_base:g}")
    ap.add_argument("--no-validate", action="store_true", help="skip the read-back checks")
    args = ap.parse_args()
    values = dict(BENCH_PRESET) if args.preset == "bench" else {}
    for f in ("hidden", "layers", "heads", "kv_heads", "ffn", "vocab", "context", "dtype", "tied",
              "seed", "init_std", "embed_std", "norm_noise", "special_out_scale", "rope_base"):
        v = getattr(args, f)
        if v is not None:
            values[f] = v
    if "kv_heads" not in values and "heads" in values:
        values["kv_heads"] = values["heads"]
    spec = ModelSpec(**values)
    t0 = time.time()
    big = spec.vocab * spec.hidden + spec.layers * spec.hidden * (4 * spec.hidden + 3 * spec.ffn) > 5e6
    info = write_llada_gguf(args.out, spec, progress=big)
    print(f"wrote {args.out}: {info['n_params'] / 1e6:.2f}M parameters, "
          f"{os.path.getsize(args.out) / 1e6:.2f} MB, {time.time() - t0:.1f} s", file=sys.stderr)
    if not args.no_validate:
        t0 = time.time()
        validate(args.out, spec, progress=big)
        print(f"validated {args.out} with gguf-py and the reference reader "
              f"({time.time() - t0:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
