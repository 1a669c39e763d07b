#!/usr/bin/env python3
"""Check that a GGUF file is what llama.cpp expects for its architecture.

Reads the file with llama.cpp's own Python package (gguf-py, pinned in scripts/requirements.txt) and
checks, for the `llada` architecture (LLAMACPP.md, llama.cpp conversion/llada.py and src/models/llada.cpp)
and the `llama` architecture (the project's AR twin; the mask token and the non-causal flag are then
not required):
  * every tensor name is one llama.cpp knows for the architecture (gguf.constants.MODEL_TENSORS),
    with .weight suffixes, and the required tensors exist for every block;
  * the metadata keys llama.cpp's loader requires exist with the right types;
  * tokenizer keys the diffusion CLI needs (model, pre, tokens, token_type, merges, mask id) exist and
    the special ids are inside the vocabulary;
  * tensor shapes agree with the hyper-parameters.
Exit status 0 when everything holds, 1 with one line per problem otherwise.

  scripts/check_llamacpp_gguf.py model.gguf
"""
import argparse
import sys

import gguf
from gguf.constants import MODEL_ARCH, MODEL_ARCH_NAMES, MODEL_TENSORS, TENSOR_NAMES

REQUIRED_TENSORS = ["token_embd", "output_norm", "blk.{bid}.attn_norm", "blk.{bid}.attn_q",
                    "blk.{bid}.attn_k", "blk.{bid}.attn_v", "blk.{bid}.attn_output",
                    "blk.{bid}.ffn_norm", "blk.{bid}.ffn_gate", "blk.{bid}.ffn_up",
                    "blk.{bid}.ffn_down"]
INT_TYPES = {gguf.GGUFValueType.UINT8, gguf.GGUFValueType.INT8, gguf.GGUFValueType.UINT16,
             gguf.GGUFValueType.INT16, gguf.GGUFValueType.UINT32, gguf.GGUFValueType.INT32,
             gguf.GGUFValueType.UINT64, gguf.GGUFValueType.INT64}
KNOWN_PRE = {"default", "gpt-2", "llama-bpe", "llama3", "qwen2", "deepseek-coder", "deepseek-llm",
             "smollm", "dbrx", "falcon", "starcoder", "refact", "command-r", "olmo", "gpt-4o"}


def field_value(field):
    """Scalar value, string, or list of values of a gguf-py ReaderField."""
    t = field.types[0]
    if t == gguf.GGUFValueType.STRING:
        return bytes(field.parts[field.data[0]]).decode("utf-8")
    if t == gguf.GGUFValueType.ARRAY:
        sub = field.types[1] if len(field.types) > 1 else None
        if sub == gguf.GGUFValueType.STRING:
            return [bytes(field.parts[i]).decode("utf-8", "replace") for i in field.data]
        return [field.parts[i][0] for i in field.data]
    return field.parts[field.data[0]][0]


def check(path):
    problems = []
    reader = gguf.GGUFReader(path)
    fields = reader.fields

    def need(key, kinds):
        f = fields.get(key)
        if f is None:
            problems.append(f"missing key {key}")
            return None
        if f.types[0] not in kinds:
            problems.append(f"key {key} has type {f.types[0].name}, expected one of "
                            f"{sorted(k.name for k in kinds)}")
            return None
        return field_value(f)

    arch = need("general.architecture", {gguf.GGUFValueType.STRING})
    if arch is None:
        return problems
    archs = {MODEL_ARCH_NAMES[a]: a for a in (MODEL_ARCH.LLADA, MODEL_ARCH.LLAMA)}
    if arch not in archs:
        return [f"architecture '{arch}': this checker knows only {sorted(archs)}"]
    diffusion = archs[arch] == MODEL_ARCH.LLADA
    known = [TENSOR_NAMES[t] for t in MODEL_TENSORS[archs[arch]]]

    n_embd = need(f"{arch}.embedding_length", INT_TYPES)
    n_layer = need(f"{arch}.block_count", INT_TYPES)
    n_ff = need(f"{arch}.feed_forward_length", INT_TYPES)
    n_head = need(f"{arch}.attention.head_count", INT_TYPES)
    need(f"{arch}.context_length", INT_TYPES)
    need(f"{arch}.attention.layer_norm_rms_epsilon", {gguf.GGUFValueType.FLOAT32})
    n_head_kv = n_head
    if f"{arch}.attention.head_count_kv" in fields:
        n_head_kv = need(f"{arch}.attention.head_count_kv", INT_TYPES)
    if diffusion and f"{arch}.attention.causal" in fields:
        if need(f"{arch}.attention.causal", {gguf.GGUFValueType.BOOL}):
            problems.append(f"{arch}.attention.causal must be false for a diffusion model")

    tok_model = need("tokenizer.ggml.model", {gguf.GGUFValueType.STRING})
    tokens = need("tokenizer.ggml.tokens", {gguf.GGUFValueType.ARRAY}) or []
    need("tokenizer.ggml.token_type", {gguf.GGUFValueType.ARRAY})
    if tok_model == "gpt2":
        need("tokenizer.ggml.merges", {gguf.GGUFValueType.ARRAY})
        pre = need("tokenizer.ggml.pre", {gguf.GGUFValueType.STRING})
        if pre is not None and pre not in KNOWN_PRE:
            problems.append(f"tokenizer.ggml.pre '{pre}' is not a name llama.cpp knows")
    for key in ["tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                "tokenizer.ggml.mask_token_id", "tokenizer.ggml.eot_token_id",
                "tokenizer.ggml.padding_token_id"]:
        if key in fields or (diffusion and key == "tokenizer.ggml.mask_token_id"):
            v = need(key, INT_TYPES)
            if v is not None and not 0 <= int(v) < len(tokens):
                problems.append(f"{key} = {v} is outside the vocabulary of {len(tokens)} tokens")

    names = {t.name: t for t in reader.tensors}
    for name in names:
        base = name[:-len(".weight")] if name.endswith(".weight") else None
        if base is None:
            problems.append(f"tensor {name}: llama.cpp names end in .weight for this architecture")
            continue
        generic = base
        if base.startswith("blk."):
            parts = base.split(".", 2)
            generic = f"blk.{{bid}}.{parts[2]}" if len(parts) == 3 else base
        if generic not in known:
            problems.append(f"tensor {name} is not a {arch} tensor llama.cpp knows")
    if None in (n_embd, n_layer, n_ff, n_head, n_head_kv):
        return problems
    head_dim = int(n_embd) // int(n_head)
    expect = {"token_embd": [int(n_embd), len(tokens)], "output_norm": [int(n_embd)]}
    for b in range(int(n_layer)):
        p = f"blk.{b}."
        expect.update({p + "attn_norm": [n_embd], p + "ffn_norm": [n_embd],
                       p + "attn_q": [n_embd, n_head * head_dim],
                       p + "attn_k": [n_embd, n_head_kv * head_dim],
                       p + "attn_v": [n_embd, n_head_kv * head_dim],
                       p + "attn_output": [n_head * head_dim, n_embd],
                       p + "ffn_gate": [n_embd, n_ff], p + "ffn_up": [n_embd, n_ff],
                       p + "ffn_down": [n_ff, n_embd]})
    if "output.weight" in names:
        expect["output"] = [int(n_embd), len(tokens)]
    for base, dims in expect.items():
        t = names.get(base + ".weight")
        if t is None:
            problems.append(f"missing tensor {base}.weight")
            continue
        got = [int(x) for x in t.shape]
        if got != [int(x) for x in dims]:
            problems.append(f"tensor {base}.weight has GGUF dims {got}, expected {dims}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    ap.add_argument("gguf", nargs="+", help="GGUF file(s)")
    args = ap.parse_args()
    bad = 0
    for path in args.gguf:
        try:
            problems = check(path)
        except Exception as e:  # gguf-py raises on unreadable files
            problems = [f"gguf-py cannot read it: {e}"]
        for p in problems:
            print(f"{path}: {p}")
        if problems:
            bad += 1
        else:
            print(f"{path}: ok (llama.cpp naming, keys and shapes)")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
