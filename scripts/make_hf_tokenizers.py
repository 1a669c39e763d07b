#!/usr/bin/env python3
"""Writes the Hugging Face tokenizer fixtures read by src/tokenizer/tokenizer_hf.cc's tests, with
the pinned `tokenizers` package (0.20.3, scripts/requirements.txt).

qwen-style/ (committed in tests/data/hf/tokenizers/): a byte-level BPE trained on
  ../shared/data/corpus/tinystories_train_head_944k.txt with exactly 1000 model tokens (ids 0..999)
  and the structure of Qwen2's tokenizer.json: normalizer NFC; pre_tokenizer
  Sequence[Split(Qwen2 regex, Isolated), ByteLevel(add_prefix_space=false, use_regex=false)];
  decoder and post_processor ByteLevel; model fields as Qwen2 writes them
  (continuing_subword_prefix "", end_of_word_suffix ""). Added special tokens with FIXED ids
  (a contract: tiny random checkpoints with vocab_size 1024 reuse this tokenizer):
      <|endoftext|> 1000, <|im_start|> 1001, <|im_end|> 1002, <|MASK|> 1003 (the mask).
  tokenizer_config.json: ChatML chat_template (tests/data/chat_templates/qwen2_instruct.jinja),
  eos_token "<|im_end|>", pad_token "<|endoftext|>", bos_token null; generation_config.json:
  bos_token_id 1000, eos_token_id [1002, 1000], pad_token_id 1000.
gpt2-style/ (not committed, ~1.5 MB: written into the build tree by the ctest fixture of
  python.hf_tokenizer_agreement): GPT-2's vocabulary and merges from ../shared/data/vocab as a
  tokenizer.json with the ByteLevel(use_regex=true) pre-tokenizer and merges in the legacy
  "a b" string form.

Training is deterministic: running the script again writes byte-identical files (--check
rebuilds qwen-style in a temporary folder and compares it with the committed one).

  .venv/bin/python scripts/make_hf_tokenizers.py                      # qwen-style into tests/data
  .venv/bin/python scripts/make_hf_tokenizers.py --only gpt2-style --out build/test_tmp/hf
  .venv/bin/python scripts/make_hf_tokenizers.py --check
"""
import argparse
import filecmp
import json
import os
import sys
import tempfile
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, trainers

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"

# Qwen2's Split regex (tokenizer.json of Qwen/Qwen2-7B-Instruct; llama.cpp pre-tokenizer "qwen2").
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN_SPECIALS = [("<|endoftext|>", 1000), ("<|im_start|>", 1001), ("<|im_end|>", 1002),
                 ("<|MASK|>", 1003)]
QWEN_MODEL_TOKENS = 1000
BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
              "use_regex": False}


def write_json(path, obj):
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def qwen_style(out_dir):
    corpus = SHARED / "corpus" / "tinystories_train_head_944k.txt"
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=QWEN_MODEL_TOKENS, min_frequency=2, special_tokens=[],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train([str(corpus)], trainer=trainer)
    if tok.get_vocab_size() != QWEN_MODEL_TOKENS:
        sys.exit(f"qwen-style: trained {tok.get_vocab_size()} tokens, want {QWEN_MODEL_TOKENS}")
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, _ in QWEN_SPECIALS])
    for text, want in QWEN_SPECIALS:
        if tok.token_to_id(text) != want:
            sys.exit(f"qwen-style: {text} got id {tok.token_to_id(text)}, want {want}")
    j = json.loads(tok.to_str())
    # Qwen2's tokenizer.json writes these fields so; decoder and post_processor as Qwen2's.
    j["model"]["continuing_subword_prefix"] = ""
    j["model"]["end_of_word_suffix"] = ""
    j["pre_tokenizer"]["pretokenizers"][1] = dict(BYTE_LEVEL)
    j["decoder"] = dict(BYTE_LEVEL)
    j["post_processor"] = dict(BYTE_LEVEL)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "tokenizer.json", j)
    # The written file must load back with the same ids.
    back = Tokenizer.from_file(str(out_dir / "tokenizer.json"))
    assert back.get_vocab_size() == QWEN_MODEL_TOKENS + len(QWEN_SPECIALS)
    assert back.encode("<|im_start|>user\nHi<|im_end|>").ids[0] == 1001

    template = (ROOT / "tests" / "data" / "chat_templates" / "qwen2_instruct.jinja").read_text(
        encoding="utf-8")
    added = {str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                      "single_word": False, "special": True} for t, i in QWEN_SPECIALS}
    write_json(out_dir / "tokenizer_config.json", {
        "add_prefix_space": False,
        "added_tokens_decoder": added,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>", "<|MASK|>"],
        "bos_token": None,
        "chat_template": template,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 4096,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    })
    write_json(out_dir / "generation_config.json", {
        "bos_token_id": 1000, "eos_token_id": [1002, 1000], "pad_token_id": 1000})
    print(f"qwen-style: {back.get_vocab_size()} tokens, "
          f"{len(j['model']['merges'])} merges -> {out_dir}", file=sys.stderr)


def gpt2_style(out_dir):
    vocab = json.loads((SHARED / "vocab" / "gpt2_vocab.json").read_text(encoding="utf-8"))
    lines = (SHARED / "vocab" / "gpt2_merges.txt").read_text(encoding="utf-8").split("\n")
    merges = [m for m in lines if m and not m.startswith("#version")]
    j = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": vocab["<|endoftext|>"], "content": "<|endoftext|>",
                          "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": False,
                  "byte_fallback": False, "vocab": vocab, "merges": merges},
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "tokenizer.json", j)
    write_json(out_dir / "tokenizer_config.json", {
        "add_prefix_space": False, "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
        "unk_token": "<|endoftext|>", "model_max_length": 1024,
        "tokenizer_class": "GPT2Tokenizer"})
    back = Tokenizer.from_file(str(out_dir / "tokenizer.json"))
    assert back.get_vocab_size() == 50257
    print(f"gpt2-style: {back.get_vocab_size()} tokens, {len(merges)} merges -> {out_dir}",
          file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "hf" / "tokenizers"),
                    help="folder that receives <name>/ (default: tests/data/hf/tokenizers)")
    ap.add_argument("--only", choices=["qwen-style", "gpt2-style"],
                    help="write one fixture (default: qwen-style only; gpt2-style is not committed)")
    ap.add_argument("--check", action="store_true",
                    help="rebuild qwen-style elsewhere and compare with the committed files")
    args = ap.parse_args()
    if not SHARED.exists():
        msg = f"make_hf_tokenizers: shared data not found: {SHARED}"
        if os.environ.get("CI") == "true":
            sys.exit(msg)
        print(f"SKIPPED: {msg}")
        return 0
    if args.check:
        committed = ROOT / "tests" / "data" / "hf" / "tokenizers" / "qwen-style"
        with tempfile.TemporaryDirectory() as tmp:
            qwen_style(Path(tmp) / "qwen-style")
            names = sorted(p.name for p in (Path(tmp) / "qwen-style").iterdir())
            _, differ, absent = filecmp.cmpfiles(Path(tmp) / "qwen-style", committed, names,
                                                 shallow=False)
        if differ or absent:
            sys.exit(f"make_hf_tokenizers: {committed} is stale: {differ + absent} differ "
                     f"(run scripts/make_hf_tokenizers.py)")
        print(f"make_hf_tokenizers: {committed} is what the script writes ({len(names)} files)")
        return 0
    out = Path(args.out)
    if args.only in (None, "qwen-style"):
        qwen_style(out / "qwen-style")
    if args.only == "gpt2-style":
        gpt2_style(out / "gpt2-style")
    return 0


if __name__ == "__main__":
    sys.exit(main())
