#!/usr/bin/env python3
"""Train the project's byte-level BPE tokenizer on the TinyStories training split.

GPT-2-style byte-level BPE (HuggingFace `tokenizers`, pinned in scripts/requirements.txt) with GPT-2's
pre-tokenizer regex, i.e. exactly what llama.cpp runs for `tokenizer.ggml.model = "gpt2"` with
`tokenizer.ggml.pre = "gpt-2"`. Special tokens (ids 0..3): <|startoftext|> (bos), <|endoftext|> (eos),
<|pad|> (pad), <|mdm_mask|> (mask). Only the training split is used (never the held-out stories).

  .venv/bin/python scripts/train/train_tokenizer.py --out build/train/tokenizer.json
"""
import argparse
import sys
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

sys.path.insert(0, str(Path(__file__).resolve().parent))
import data  # noqa: E402


def train(stories, vocab_size):
    """Returns a trained tokenizers.Tokenizer of exactly vocab_size tokens (specials included)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, special_tokens=data.SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(stories, trainer=trainer)
    return tok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="tokenizer.json to write")
    ap.add_argument("--vocab-size", type=int, default=3072)
    ap.add_argument("--corpus", help="corpus file (default: ../shared/data/corpus/...)")
    args = ap.parse_args()
    splits = data.load_splits(args.corpus)
    tok = train(splits["train"], args.vocab_size)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    tok.save(args.out)
    n = sum(len(tok.encode(s).ids) for s in splits["train"])
    chars = sum(len(s) for s in splits["train"])
    print(f"tokenizer: {tok.get_vocab_size()} tokens, {len(splits['train'])} training stories, "
          f"{n} tokens ({chars / n:.2f} chars/token) -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
