"""Load a twin GGUF (llada or llama, llama.cpp naming) back into the PyTorch TwinModel, and build the
HuggingFace tokenizer from the GGUF's own vocabulary and merges (so evaluation runs on exactly the
shipped files)."""
import json
import sys
from pathlib import Path

import gguf
import numpy as np
import torch
from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model import ModelConfig, TwinModel  # noqa: E402


def _value(field):
    if field.types[0] == gguf.GGUFValueType.STRING:
        return bytes(field.parts[field.data[0]]).decode("utf-8")
    if field.types[0] == gguf.GGUFValueType.ARRAY:
        if field.types[1] == gguf.GGUFValueType.STRING:
            return [bytes(field.parts[i]).decode("utf-8") for i in field.data]
        return [field.parts[i][0].item() for i in field.data]
    return field.parts[field.data[0]][0].item()


def read_fields(path):
    reader = gguf.GGUFReader(str(path))
    return reader, {k: _value(f) for k, f in reader.fields.items() if not k.startswith("GGUF.")}


def load_model(path):
    """(TwinModel in eval mode, metadata dict) from a twin GGUF."""
    reader, kv = read_fields(path)
    arch = kv["general.architecture"]
    cfg = ModelConfig(vocab_size=len(kv["tokenizer.ggml.tokens"]), dim=kv[f"{arch}.embedding_length"],
                      layers=kv[f"{arch}.block_count"], heads=kv[f"{arch}.attention.head_count"],
                      ffn=kv[f"{arch}.feed_forward_length"], context=kv[f"{arch}.context_length"],
                      rope_base=kv[f"{arch}.rope.freq_base"],
                      norm_eps=kv[f"{arch}.attention.layer_norm_rms_epsilon"],
                      causal=arch == "llama")
    names = {"token_embd.weight": "tok_embd.weight", "output_norm.weight": "norm.weight",
             "output.weight": "output.weight"}
    per_block = {"attn_norm": "attn_norm", "attn_q": "wq", "attn_k": "wk", "attn_v": "wv",
                 "attn_output": "wo", "ffn_norm": "ffn_norm", "ffn_gate": "w_gate",
                 "ffn_up": "w_up", "ffn_down": "w_down"}
    state = {}
    for t in reader.tensors:
        if t.name.startswith("blk."):
            _, i, kind, _ = t.name.split(".")
            key = f"blocks.{i}.{per_block[kind]}.weight"
        else:
            key = names[t.name]
        arr = np.asarray(t.data, dtype=np.float32).reshape([int(d) for d in reversed(t.shape)])
        state[key] = torch.from_numpy(arr.copy())
    model = TwinModel(cfg)
    model.load_state_dict(state)
    model.eval()
    return model, kv


def load_tokenizer(kv, pre_tokenizer=None):
    """A HuggingFace byte-level BPE tokenizer from the GGUF's tokens and merges; `pre_tokenizer` (a
    tokenizers JSON spec) replaces the default GPT-2 ByteLevel one (e.g. SmolLM2's Digits first)."""
    tokens = kv["tokenizer.ggml.tokens"]
    types = kv["tokenizer.ggml.token_type"]
    spec = {
        "version": "1.0",
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}
                         for i, (t, ty) in enumerate(zip(tokens, types)) if ty == 3],
        "normalizer": None,
        "pre_tokenizer": pre_tokenizer or {"type": "ByteLevel", "add_prefix_space": False,
                                           "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(tokens)},
                  "merges": [m.split(" ", 1) for m in kv["tokenizer.ggml.merges"]]},
    }
    return Tokenizer.from_str(json.dumps(spec))


def unmask_token_ids(unmask, model, text, tmp_dir):
    """Ids of `unmask tokenize -m MODEL -f FILE --no-bos` for `text` (written to a file in tmp_dir)."""
    import subprocess
    from pathlib import Path
    path = Path(tmp_dir) / "text.txt"
    path.write_text(text, encoding="utf-8")
    out = subprocess.run([unmask, "tokenize", "-m", model, "-f", str(path), "--no-bos"],
                         capture_output=True, text=True, check=True).stdout
    return [int(x) for x in out.split()]


def first_difference(got, want):
    """Index of the first differing id (the shorter length when one is a prefix of the other)."""
    return next((j for j, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
