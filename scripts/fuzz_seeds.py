#!/usr/bin/env python3
"""Writes the seed corpus of one libFuzzer harness (fuzz/<target>.cc) from the project's own files.

Usage: scripts/fuzz_seeds.py TARGET OUT_DIR

Every seed is built from files in this repository (tests/data, models/, fuzz/regressions) in the
input layout the harness's header comment describes; nothing is downloaded. Regression inputs
(fuzz/regressions/TARGET/*: inputs that once crashed, kept after the fix) are seeds too.
"""
import hashlib
import json
import os
import random
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The checkpoints of fuzz/hf_config_fuzz.cc, in its order.
HF_CHECKPOINTS = ["tests/data/hf/qwen3-tiny", "tests/data/hf/qwen2-tiny",
                  "tests/data/hf/sdar-tiny-f32", "tests/data/hf/fastdllm-v2-tiny",
                  "tests/data/hf/qwen3-moe-tiny", "tests/data/hf/llada-moe-tiny-f32",
                  "tests/data/hf/llada2-tiny-bf16", "tests/data/hf/sdar-moe-tiny-bf16",
                  "models/unmask-tinystories-block-hf"]

TEXTS = [
    "Once upon a time, there was a little girl named Lily.",
    "Hello world, <|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "  leading spaces\tand tabs\n\nnew lines 12345 67.89 ",
    "Z\u00fcrich \u00e9t\u00e9 \u4e2d\u6587 \U0001f600 \u0645\u0631\u062d\u0628\u0627",
    "caf\u0065\u0301 (decomposed) vs caf\u00e9, <mask> <|mask|> </s> <s>",
    "def f(x):\n    return x ** 2  # code\n",
]

GBNF = [
    'root ::= "yes" | "no"',
    'root ::= item+\nitem ::= [a-z]+ ", "?',
    'root ::= object\nobject ::= "{" ws (pair ("," ws pair)*)? "}"\n'
    'pair ::= string ":" ws value\nvalue ::= object | string | number | "true" | "false" | "null"\n'
    'string ::= "\\"" ([^"\\\\] | "\\\\" ["\\\\/bfnrt])* "\\""\nnumber ::= "-"? [0-9]+ ("." [0-9]+)?\n'
    'ws ::= [ \\t\\n]{0,20}',
    'root ::= (expr "=" ws term "\\n")+\nexpr ::= term ([-+*/] term)*\nterm ::= ident | num | "(" ws expr ")" ws\n'
    'ident ::= [a-z] [a-z0-9_]{0,10} ws\nnum ::= [0-9]+ ws\nws ::= [ ]*',
    'root ::= [^\\x00-\\x1F]{1,5} "\\u00e9" [\\U0001F600-\\U0001F64F]?',
]

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
     "required": ["name"]},
    {"type": "array", "items": {"enum": ["a", "b", 3, None]}, "minItems": 1, "maxItems": 3},
    {"$defs": {"node": {"type": "object", "properties": {"v": {"type": "number"},
                                                         "next": {"$ref": "#/$defs/node"}}}},
     "$ref": "#/$defs/node"},
    {"anyOf": [{"type": "string", "minLength": 2, "maxLength": 4}, {"type": "boolean"}]},
    {"type": "object", "additionalProperties": {"type": "integer"}},
    # Every other supported keyword once, so the fuzzer starts from each branch of the compiler.
    {"allOf": [{"type": "object", "properties": {"a": {"type": "integer", "minimum": -3,
                                                        "exclusiveMaximum": 120}},
                "required": ["a"]},
               {"$ref": "#/definitions/b"}],
     "definitions": {"b": {"properties": {"b": {"type": ["boolean", "null"]}}}}},
    {"oneOf": [{"const": {"k": [1, "x"]}}, {"type": "string", "format": "date-time"},
               {"type": "string", "format": "uuid", "nullable": True}]},
    {"type": "array", "prefixItems": [{"type": "number"}, {"$ref": "#"}], "items": False,
     "maxItems": 2, "title": "t", "description": "d"},
    {"type": "array", "items": {"$ref": "#"}},
    # The shapes real clients write (pydantic, OpenAI strict mode, OpenAPI; 2026-12-07).
    {"type": "object", "properties": {"a": {"type": "string"}, "b\u00e9": {"type": "null"}},
     "additionalProperties": {"type": "integer", "format": "int32"}},
    {"$defs": {"Base": {"type": "object", "properties": {"id": {"type": "integer"}},
                        "required": ["id"]}},
     "allOf": [{"$ref": "#/$defs/Base"}], "properties": {"n": {"allOf": [{"$ref": "#/$defs/Base"}],
                                                             "description": "d", "x-o": 1}},
     "required": ["n"]},
    {"type": ["object", "array", "null"], "properties": {"k": {"$ref": "#/$defs/My%20K",
                                                               "nullable": True}},
     "items": [{"type": "boolean"}], "additionalItems": False,
     "$defs": {"My K": {"type": ["string", "null"], "maxLength": 3}}},
    {"type": "object", "anyOf": [{"properties": {"a": {"const": "x"}}, "required": ["a"]},
                                 {"properties": {"b": {"type": "number"}}}],
     "discriminator": {"propertyName": "a"}},
]

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                    "unit": {"enum": ["c", "f"]}},
                   "required": ["city"]}}}]

REQUESTS_CHAT = [
    {"messages": [{"role": "user", "content": "Hi"}]},
    {"model": "m", "messages": [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Hi"}],
     "max_tokens": 8, "temperature": 0.7, "top_p": 0.9, "seed": 3, "stream": True,
     "stream_options": {"include_usage": True}, "stop": ["\n", "END"]},
    {"messages": [{"role": "user", "content": "Weather?"}], "tools": TOOLS,
     "tool_choice": "required", "parallel_tool_calls": False},
    {"messages": [{"role": "user", "content": "Weather?"},
                  {"role": "assistant", "content": None, "tool_calls": [
                      {"id": "c1", "type": "function",
                       "function": {"name": "get_weather", "arguments": "{\"city\": \"Bern\"}"}}]},
                  {"role": "tool", "tool_call_id": "c1", "content": "{\"t\": 3}"},
                  {"role": "user", "content": "<tool_call>{\"name\": \"get_weather\", "
                                              "\"arguments\": {\"city\": \"Z\"}}</tool_call>"}],
     "tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
    {"messages": [{"role": "user", "content": "JSON"}],
     "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMAS[0]}}},
    {"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"},
     "logprobs": True, "top_logprobs": 3, "n": 2},
    {"messages": [{"role": "user", "content": [{"type": "text", "text": "parts"}]}],
     "steps": 8, "block_length": 4, "remasking": "low_confidence", "cfg_scale": 0.5,
     "threshold": 0.9},
]

REQUESTS_COMPLETIONS = [
    {"prompt": "Once upon a time", "max_tokens": 16},
    {"model": "auto", "prompt": [1, 2, 3], "max_tokens": 4, "echo": True, "logprobs": 2},
    {"prompt": "x", "grammar": GBNF[0], "n_predict": 3, "repeat_penalty": 1.1,
     "repeat_last_n": 16, "min_p": 0.05, "top_k": 40},
    {"prompt": "x", "guided_choice": ["red", "green"], "ignore_eos": True, "user": "u"},
    {"prompt": "x", "guided_json": SCHEMAS[2], "timeout_s": 3, "latency_target_ms": 50},
    {"prompt": "x", "gen_length": 32, "steps": 32, "alg": "entropy", "eps": 0.001,
     "alg_temp": 0.1, "speculative": "lookup", "x_canvas": True},
]

# Ollama bodies (/api/generate, /api/chat), as tests/server/ollama_api_test.cc sends them.
OLLAMA_GENERATE = [
    {"model": "m:latest", "prompt": "hi", "system": "be brief"},
    {"model": "m", "prompt": "hi", "raw": True, "stream": False},
    {"model": "m", "prompt": "a", "suffix": "b", "keep_alive": "5m"},
    {"model": "m", "prompt": "x", "options": {"num_predict": 12, "temperature": 0.5, "top_k": 20,
                                              "top_p": 0.9, "min_p": 0.05, "seed": 3,
                                              "stop": ["\n"], "repeat_penalty": 1.1,
                                              "num_ctx": 512}},
    {"model": "m", "prompt": "x", "format": "json"},
    {"model": "m", "prompt": "x", "format": SCHEMAS[0]},
    {"model": "m"},
]
OLLAMA_CHAT = [
    {"model": "m", "messages": [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Hi"}], "stream": False},
    {"model": "m", "messages": [{"role": "user", "content": "Weather?"},
                                {"role": "assistant", "content": "", "tool_calls": [
                                    {"function": {"name": "get_weather",
                                                  "arguments": {"city": "Bern"}}}]},
                                {"role": "tool", "content": "{\"t\": 3}"}],
     "tools": TOOLS, "options": {"temperature": 0}},
    {"model": "m", "messages": []},
]


def chat_template_seeds():
    goldens = json.loads((ROOT / "tests/data/chat_templates/goldens.json").read_text())
    cases = goldens["cases"].values()
    for jinja in sorted((ROOT / "tests/data/chat_templates").glob("*.jinja")):
        template = jinja.read_bytes()
        for case in cases:
            seed = template + b"\0" + json.dumps(case["messages"]).encode()
            if "tools" in case:
                seed += b"\0" + json.dumps(case["tools"]).encode()
            yield seed


def llama2c_seed(version, shared, rng):
    dim, hidden, layers, heads, kv_heads, vocab, seq = 8, 16, 1, 2, 1, 6, 4
    raw_vocab = vocab if (shared or version == 1) else -vocab
    if version == 0:
        header = struct.pack("<7i", dim, hidden, layers, heads, kv_heads, raw_vocab, seq)
    else:
        header = b"ak42" + struct.pack("<i", 1) + struct.pack(
            "<7i", dim, hidden, layers, heads, kv_heads, vocab, seq) + bytes([1 if shared else 0])
        header += b"\0" * (256 - len(header))
    kv_dim = dim * kv_heads // heads
    floats = (vocab * dim + layers * dim * 2 + layers * dim * dim * 2 + layers * kv_dim * dim * 2 +
              layers * hidden * dim * 3 + dim)
    if version == 0:
        floats += seq * (dim // heads)  # freq_cis_real and _imag: seq * head_size / 2 each
    if not shared:
        floats += vocab * dim
    weights = struct.pack(f"<{floats}f", *[rng.uniform(-1, 1) for _ in range(floats)])
    pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n", b" a", b"b", b"<0x41>"]
    tok = struct.pack("<i", max(len(p) for p in pieces))
    for i, p in enumerate(pieces):
        tok += struct.pack("<fi", -float(i), len(p)) + p
    return header + weights + b"\0\0\0\0SEP" + tok


def _string(b):
    return struct.pack("<Q", len(b)) + b


def _gguf(rng, kv, tensors):
    """A GGUF file (version 3) of metadata kv [(key, type, packed value)] and f32 tensors
    [(name, dims in GGUF order)] of random values, written by hand."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for key, kind, value in kv:
        out += _string(key) + struct.pack("<I", kind) + value
    data, offset = b"", 0
    for name, dims in tensors:
        count = 1
        for d in dims:
            count *= d
        out += _string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        out += struct.pack("<IQ", 0, offset)
        blob = struct.pack(f"<{count}f", *[rng.uniform(-1, 1) for _ in range(count)])
        blob += b"\0" * (-len(blob) % 32)
        data += blob
        offset += len(blob)
    return out + b"\0" * (-len(out) % 32) + data


def _u32(key, v):
    return (key, 4, struct.pack("<I", v))


def _draft_vocab(key, ids):  # an int32 array
    return (key, 9, struct.pack("<IQ", 5, len(ids)) + struct.pack(f"<{len(ids)}i", *ids))


def medusa_seed(rng, heads=2, hidden=8, vocab=16, draft_vocab=None):
    """A small Medusa heads GGUF (src/model/medusa_heads.h)."""
    kv = [(b"general.architecture", 8, _string(b"medusa")), _u32(b"medusa.head_count", heads),
          _u32(b"medusa.layer_count", 1), _u32(b"medusa.embedding_length", hidden),
          _u32(b"medusa.vocab_size", vocab)]
    if draft_vocab:
        kv.append(_draft_vocab(b"medusa.draft_vocab", draft_vocab))
    n_out = len(draft_vocab) if draft_vocab else vocab
    tensors = []
    for k in range(heads):
        tensors.append((f"medusa.blk.{k}.res.0.weight".encode(), [hidden, hidden]))
        tensors.append((f"medusa.blk.{k}.res.0.bias".encode(), [hidden]))
    tensors.append((b"medusa.output.weight", [hidden, n_out]))
    return _gguf(rng, kv, tensors)


def eagle_seed(rng, hidden=8, heads=2, kv_heads=1, ffn=12, vocab=16, draft_vocab=None):
    """A small EAGLE draft-layer GGUF (src/model/eagle_head.h)."""
    kv = [(b"general.architecture", 8, _string(b"eagle")), _u32(b"eagle.embedding_length", hidden),
          _u32(b"eagle.vocab_size", vocab), _u32(b"eagle.feed_forward_length", ffn),
          _u32(b"eagle.attention.head_count", heads),
          _u32(b"eagle.attention.head_count_kv", kv_heads)]
    if draft_vocab:
        kv.append(_draft_vocab(b"eagle.draft_vocab", draft_vocab))
    n_out = len(draft_vocab) if draft_vocab else vocab
    kv_dim = kv_heads * hidden // heads
    tensors = [(b"eagle.fc.weight", [2 * hidden, hidden]), (b"eagle.attn_q.weight", [hidden, hidden]),
               (b"eagle.attn_k.weight", [hidden, kv_dim]), (b"eagle.attn_v.weight", [hidden, kv_dim]),
               (b"eagle.attn_output.weight", [hidden, hidden]), (b"eagle.ffn_norm.weight", [hidden]),
               (b"eagle.ffn_gate.weight", [hidden, ffn]), (b"eagle.ffn_up.weight", [hidden, ffn]),
               (b"eagle.ffn_down.weight", [ffn, hidden]), (b"eagle.output.weight", [hidden, n_out])]
    return _gguf(rng, kv, tensors)


def seeds(target):
    rng = random.Random(0)
    if target == "gguf_fuzz":
        for f in sorted((ROOT / "tests/data/models").glob("*.gguf")):
            yield f.read_bytes()
        yield medusa_seed(rng)
        yield medusa_seed(rng, heads=3, hidden=4, vocab=12, draft_vocab=[3, 0, 7, 11])
        yield eagle_seed(rng)
        yield eagle_seed(rng, hidden=12, heads=3, kv_heads=3, ffn=8, vocab=10, draft_vocab=[9, 2, 4])
    elif target == "safetensors_fuzz":
        for f in sorted((ROOT / "tests/data/hf").glob("*/*.safetensors")):
            yield f.read_bytes()
    elif target == "hf_config_fuzz":
        for i, ckpt in enumerate(HF_CHECKPOINTS):
            seed = bytes([i]) + (ROOT / ckpt / "config.json").read_bytes()
            yield seed
            index = ROOT / ckpt / "model.safetensors.index.json"
            if index.exists():
                yield seed + b"\0" + index.read_bytes()
    elif target == "llama2c_fuzz":
        for version in (0, 1):
            for shared in (True, False):
                yield llama2c_seed(version, shared, rng)
    elif target == "tokenizer_fuzz":
        for text in TEXTS:
            for flags in (0, 1, 2, 3, 4 | 8, 5 | 8 | 16, 6 | 8 | 64, 7 | 8):
                yield bytes([flags]) + text.encode()
        ids = struct.pack("<8i", 0, 1, 2, 3, 100, 4000, -5, 2**31 - 1)
        for flags in (32, 33, 34, 35 | 16):
            yield bytes([flags]) + ids
    elif target == "hf_tokenizer_fuzz":
        for d in sorted({f.parent for f in ROOT.glob("tests/data/hf/**/tokenizer.json")} |
                        {ROOT / "models/unmask-tinystories-block-hf"}):
            seed = (d / "tokenizer.json").read_bytes()
            yield seed
            if (d / "tokenizer_config.json").exists():
                yield seed + b"\0" + (d / "tokenizer_config.json").read_bytes()
    elif target == "chat_template_fuzz":
        yield from chat_template_seeds()
    elif target == "grammar_fuzz":
        samples = [b'{"name": "Lily", "age": 3}', b"yes", b"abc, de", b"x = (1+2)*y\n",
                   "caf\u00e9 \U0001F600".encode(), b'[ "a", 3 ]']
        for g in GBNF:
            for s in samples:
                yield b"\0" + g.encode() + b"\0" + s
        for schema in SCHEMAS:
            for s in samples:
                yield b"\1" + json.dumps(schema).encode() + b"\0" + s
    elif target == "openai_request_fuzz":
        for body in REQUESTS_CHAT:
            yield b"\1" + json.dumps(body).encode()
        for body in REQUESTS_COMPLETIONS:
            yield b"\0" + json.dumps(body).encode()
        for body in OLLAMA_GENERATE:  # bit 1: the Ollama route; bit 2: a chat template
            yield b"\6" + json.dumps(body).encode()
            yield b"\2" + json.dumps(body).encode()
        for body in OLLAMA_CHAT:
            yield b"\7" + json.dumps(body).encode()
    elif target == "hub_fuzz":
        yield b"\1" + (ROOT / "data/catalog.json").read_bytes()
        model = ROOT / "models/unmask-tinystories-block-hf"
        siblings = []
        for f in sorted(model.iterdir()):
            data = f.read_bytes()
            s = {"rfilename": f.name, "size": len(data),
                 "blobId": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()}
            if f.suffix == ".safetensors":
                s["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
            siblings.append(s)
        siblings.append({"rfilename": "gguf/m-Q8_0.gguf", "size": 1, "blobId": "a" * 40})
        info = {"sha": "c" * 40, "siblings": siblings}
        yield b"\0" + json.dumps(info).encode()
        yield b"\2" + json.dumps(info).encode()
    else:
        raise SystemExit(f"fuzz_seeds.py: unknown target {target}")
    regressions = ROOT / "fuzz/regressions" / target
    if regressions.is_dir():
        for f in sorted(regressions.iterdir()):
            yield f.read_bytes()


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    target, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        old.unlink()
    n = 0
    for n, seed in enumerate(seeds(target), start=1):
        (out / f"seed-{n:04d}").write_bytes(seed)
    print(f"fuzz_seeds: {n} seeds for {target} in {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
