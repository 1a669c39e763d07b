#!/usr/bin/env python3
"""Token-for-token agreement of unmask's tokenizer with the training tokenizer on the held-out split.

For every held-out story, compares the ids of `unmask tokenize -m MODEL -f story --no-bos` with the
HuggingFace tokenizer the model was trained with: the training tokenizer.json when given, and always
the same tokenizer rebuilt from the GGUF's own tokens and merges. Exit status 0 when every story
agrees; otherwise the first differences are printed.

  .venv/bin/python scripts/train/check_tokenizer.py build/release/bin/unmask \\
      models/unmask-tinystories-llada.gguf [--training-tokenizer build/train/tokenizer.json]
"""
import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import data  # noqa: E402
import gguf_model  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("unmask")
    ap.add_argument("model")
    ap.add_argument("--training-tokenizer", help="the tokenizer.json used for training")
    args = ap.parse_args()
    corpus = data.corpus_path()
    if not corpus.exists():
        if os.environ.get("CI") == "true":
            print(f"check_tokenizer: corpus not found: {corpus}", file=sys.stderr)
            return 1
        print(f"SKIPPED: corpus not found: {corpus}")
        return 0
    _, kv = gguf_model.read_fields(args.model)
    references = {"tokenizer rebuilt from the GGUF": gguf_model.load_tokenizer(kv)}
    if args.training_tokenizer:
        from tokenizers import Tokenizer
        references["training tokenizer.json"] = Tokenizer.from_file(args.training_tokenizer)
    stories = data.load_splits()["held_out"]
    bad, tokens = 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, story in enumerate(stories):
            got = gguf_model.unmask_token_ids(args.unmask, args.model, story, tmp)
            tokens += len(got)
            for name, ref in references.items():
                want = ref.encode(story).ids
                if got != want:
                    bad += 1
                    k = gguf_model.first_difference(got, want)
                    print(f"story {i}: unmask differs from the {name} at token {k}: "
                          f"{got[k:k + 5]} vs {want[k:k + 5]}")
    print(f"{len(stories)} held-out stories, {tokens} tokens: "
          f"{'all identical' if not bad else f'{bad} mismatches'} "
          f"({', '.join(references)})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
