#!/usr/bin/env python3
"""Write a random Dream model as GGUF, with llama.cpp's naming and metadata (gguf-py writer).

The file is what llama.cpp's converter writes for a Dream checkpoint (architecture `dream`, see
docs LLAMACPP.md "Dream GGUF"): hyper-parameter keys `dream.*`, `dream.attention.causal = false`,
no `diffusion.shift_logits` key (a missing key means shifted logits), q/k/v projection biases
`blk.N.attn_{q,k,v}.bias`, an optional `output.bias`, and Q/K rows in HF order (Qwen2 uses NEOX
RoPE, so the converter does not permute them). Weights are random normals (fixed seed =>
byte-identical files); 2-D weights use --dtype, norm weights are F32, biases --bias-dtype.

Tokenizer: a byte-level BPE (`tokenizer.ggml.model = gpt2`, `tokenizer.ggml.pre = qwen2`) trained
by this script with HuggingFace `tokenizers` (Qwen2's pre-tokenizer: its split regex, then
ByteLevel without regex) on a built-in paragraph, then Qwen's special tokens appended as the last
ids: <|endoftext|> (eos, pad), <|im_start|>, <|im_end|> (eot), <|mask|> (mask), all CONTROL.
`hf_tokenizer(path)` rebuilds the same tokenizer from the written file for agreement checks.

After writing, the file is read back with gguf-py and with the independent reader in
scripts/reference/ and both must agree on every key and tensor.

Example:
  scripts/make_dream_gguf.py --out /tmp/dream.gguf --hidden 64 --layers 2 --heads 4 --kv-heads 2
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
sys.path.insert(0, os.path.join(HERE, "train"))
sys.path.insert(0, HERE)

import gguf  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers, trainers  # noqa: E402

import make_llada_gguf as mk  # noqa: E402

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|mask|>"]
SPECIAL_ROLES = ["eos", "im_start", "eot", "mask"]

# Qwen2's pre-tokenizer (tokenizer.json of Qwen/Qwen2.5-7B, which Dream-v0 uses).
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
               r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PRE_TOKENIZER = {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT}, "behavior": "Isolated", "invert": False},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]}

CHATML_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")

# Training text: the LLaDA generator's paragraph plus digits, punctuation and newlines, so that
# Qwen2's split rules (single digits, punctuation runs with newlines) all occur.
BPE_TEXT = mk.BPE_TEXT + (
    "In 2026 the engine ran 128 steps over 64 tokens: 3.5 tokens/s, then 12.75!\n"
    "Why? Because the model's answers can't wait; they're masked... until they aren't.\n\n"
    "def f(x):\n    return x * 2  # doubled\n")


def train_vocab(n_vocab: int) -> tuple[list[str], list[int], list[str], dict[str, int]]:
    """Trains the byte-level BPE; returns (tokens by id, token types, merges, special ids)."""
    n_plain = n_vocab - len(SPECIAL_TOKENS)
    if n_plain < 256:
        raise ValueError(f"--vocab must be at least {256 + len(SPECIAL_TOKENS)}")
    spec = json.loads(Tokenizer(models.BPE()).to_str())
    spec["pre_tokenizer"] = QWEN2_PRE_TOKENIZER
    tok = Tokenizer.from_str(json.dumps(spec))
    trainer = trainers.BpeTrainer(vocab_size=n_plain, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([BPE_TEXT], trainer=trainer)
    model = json.loads(tok.to_str())["model"]
    vocab: dict[str, int] = model["vocab"]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    assert [vocab[t] for t in tokens] == list(range(len(tokens)))
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    types = [int(gguf.TokenType.NORMAL)] * len(tokens)
    specials = {}
    for role, t in zip(SPECIAL_ROLES, SPECIAL_TOKENS):
        specials[role] = len(tokens)
        tokens.append(t)
        types.append(int(gguf.TokenType.CONTROL))
    return tokens, types, merges, specials


def hf_tokenizer(path: str) -> Tokenizer:
    """The HuggingFace tokenizer of a file written here (vocabulary and merges from the GGUF)."""
    import gguf_model  # scripts/train: the shared GGUF -> tokenizers builder
    _, kv = gguf_model.read_fields(path)
    return gguf_model.load_tokenizer(kv, pre_tokenizer=QWEN2_PRE_TOKENIZER)


@dataclass
class DreamSpec:
    hidden: int = 64
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    ffn: int = 128
    vocab: int = 384
    context: int = 256
    dtype: str = "f32"        # 2-D weights: f32 | f16 | bf16 | q8_0
    bias_dtype: str = "f32"   # q/k/v (and output) biases: f32 | f16
    output_bias: bool = True
    seed: int = 0
    init_std: float = 0.25
    embed_std: float = 0.6
    bias_std: float = 0.5
    norm_noise: float = 0.1
    rope_base: float = 1000000.0
    rms_eps: float = 1e-6
    name: str = "unmask-random-dream"


def generate_weights(spec: DreamSpec, n_vocab: int):
    """Yields (name, float32 array in row-major [out, in] layout) in file order."""
    if spec.hidden % spec.heads or spec.heads % spec.kv_heads or (spec.hidden // spec.heads) % 2:
        raise ValueError("--heads must divide --hidden (even head size), --kv-heads --heads")
    hd = spec.hidden // spec.heads
    rng = np.random.default_rng(spec.seed)
    d, ff = spec.hidden, spec.ffn

    def normal(shape, std):
        return (rng.standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(np.float32)

    def norm_w():
        return np.ones(d, dtype=np.float32) + normal((d,), spec.norm_noise)

    yield "token_embd.weight", normal((n_vocab, d), spec.embed_std)
    yield "output.weight", normal((n_vocab, d), spec.embed_std)
    if spec.output_bias:
        yield "output.bias", normal((n_vocab,), spec.bias_std)
    for i in range(spec.layers):
        p = f"blk.{i}."
        yield p + "attn_norm.weight", norm_w()
        yield p + "attn_q.weight", normal((spec.heads * hd, d), spec.init_std)
        yield p + "attn_q.bias", normal((spec.heads * hd,), spec.bias_std)
        yield p + "attn_k.weight", normal((spec.kv_heads * hd, d), spec.init_std)
        yield p + "attn_k.bias", normal((spec.kv_heads * hd,), spec.bias_std)
        yield p + "attn_v.weight", normal((spec.kv_heads * hd, d), spec.init_std)
        yield p + "attn_v.bias", normal((spec.kv_heads * hd,), spec.bias_std)
        yield p + "attn_output.weight", normal((d, spec.heads * hd), spec.init_std)
        yield p + "ffn_norm.weight", norm_w()
        yield p + "ffn_gate.weight", normal((ff, d), spec.init_std)
        yield p + "ffn_up.weight", normal((ff, d), spec.init_std)
        yield p + "ffn_down.weight", normal((d, ff), spec.init_std)
    yield "output_norm.weight", norm_w()


def write_dream_gguf(path: str, spec: DreamSpec) -> dict:
    """Writes the model; returns {"n_params", "specials"}."""
    tokens, types, merges, specials = train_vocab(spec.vocab)
    w = gguf.GGUFWriter(path, "dream")
    mk.add_hparams(w, spec)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(specials["eos"])   # Qwen: bos = eos = pad = <|endoftext|>
    w.add_eos_token_id(specials["eos"])
    w.add_eot_token_id(specials["eot"])
    w.add_pad_token_id(specials["eos"])
    w.add_mask_token_id(specials["mask"])
    w.add_add_bos_token(False)
    w.add_chat_template(CHATML_TEMPLATE)
    qtype = mk._QTYPES[spec.dtype]
    n_params = 0
    for name, arr in generate_weights(spec, len(tokens)):
        n_params += arr.size
        if name.endswith(".bias"):
            w.add_tensor(name, arr.astype(np.float16) if spec.bias_dtype == "f16" else arr)
        else:
            mk.add_weight(w, name, arr, qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()
    return {"n_params": n_params, "specials": specials}


def validate(path: str, spec: DreamSpec) -> None:
    """Reads `path` with gguf-py and the reference reader; checks names, values and the spec."""
    r, mine = mk.readers_agree(path)
    assert mine.metadata["general.architecture"] == "dream"
    assert "diffusion.shift_logits" not in mine.metadata
    assert mine.metadata["tokenizer.ggml.pre"] == "qwen2"
    tokens = mine.metadata["tokenizer.ggml.tokens"]
    assert len(tokens) == spec.vocab == len(set(tokens))
    tset = set(tokens)
    for m in mine.metadata["tokenizer.ggml.merges"]:
        a, b = m.split(" ")
        assert a in tset and b in tset and a + b in tset, m
    known = {n.replace("{bid}", str(i)) for n in
             (gguf.TENSOR_NAMES[t] for t in gguf.MODEL_TENSORS[gguf.MODEL_ARCH.DREAM])
             for i in range(spec.layers)}
    for t in r.tensors:
        base = t.name.rsplit(".", 1)[0]
        assert base in known, f"{t.name}: not a gguf-py tensor name of MODEL_ARCH.DREAM"
        ref = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64)
        assert np.array_equal(ref.reshape(mine.tensors[t.name].shape), mine.tensor(t.name)), t.name
    for name, src in generate_weights(spec, spec.vocab):
        got = mine.tensor(name)
        tol = 0.0 if got.ndim == 1 and not name.endswith(".bias") else \
            {"f32": 0.0, "f16": 2.0**-11, "bf16": 2.0**-8, "q8_0": 1 / 127}[
                spec.bias_dtype if name.endswith(".bias") else spec.dtype]
        assert np.max(np.abs(got - src)) <= tol * np.max(np.abs(src)), name
    mine.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("Example:")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    d = DreamSpec()
    ap.add_argument("--out", required=True)
    for f in ("hidden", "layers", "heads", "kv_heads", "ffn", "vocab", "context", "seed"):
        ap.add_argument("--" + f.replace("_", "-"), type=int, default=getattr(d, f))
    ap.add_argument("--dtype", choices=list(mk._QTYPES), default=d.dtype)
    ap.add_argument("--bias-dtype", choices=["f32", "f16"], default=d.bias_dtype)
    ap.add_argument("--no-output-bias", dest="output_bias", action="store_false")
    args = ap.parse_args()
    spec = DreamSpec(**{k: v for k, v in vars(args).items() if k != "out"})
    info = write_dream_gguf(args.out, spec)
    validate(args.out, spec)
    print(f"wrote {args.out}: {info['n_params'] / 1e6:.3f}M parameters, "
          f"{os.path.getsize(args.out) / 1e3:.0f} kB (validated)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
