#!/usr/bin/env python3
"""unmask's tokenizer on SmolLM2-135M-Instruct against an independent HuggingFace `tokenizers`
build of the same vocabulary: byte-level BPE from the GGUF's tokens and merges, with SmolLM2's
pre-tokenizer (tokenizer.json of HuggingFaceTB/SmolLM2: Sequence[Digits(individual_digits),
ByteLevel(add_prefix_space=False)], which llama.cpp calls pre-tokenizer "smollm").

Texts: the prompt sets in ../shared/data/prompts (MT-Bench, GSM8K, HumanEval code, self-instruct
tasks with their inputs). Exit status 0 when every text gives identical ids.

  .venv/bin/python scripts/check_smollm2_tokenizer.py build/release/bin/unmask \\
      $(scripts/fetch-smollm2.sh) [--n 60]
"""
import argparse
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "train"))
import gguf_model  # noqa: E402


def texts(prompts_dir, n):
    out = []
    with open(prompts_dir / "mt_bench_question.jsonl", encoding="utf-8") as f:
        out += [t for line in f for t in json.loads(line)["turns"]][:n]
    with open(prompts_dir / "gsm8k_test.jsonl", encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i == n:
                break
            r = json.loads(line)
            out += [r["question"], r["answer"]]
    with gzip.open(prompts_dir / "HumanEval.jsonl.gz", "rt", encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i == n:
                break
            r = json.loads(line)
            out += [r["prompt"], r["canonical_solution"]]
    with open(prompts_dir / "self_instruct_user_oriented_instructions.jsonl", encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i == n:
                break
            r = json.loads(line)
            out += [r["instruction"]] + [x["input"] for x in r["instances"] if x.get("input")]
    return out


def reference(model_path):
    _, kv = gguf_model.read_fields(model_path)
    return gguf_model.load_tokenizer(kv, pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("unmask")
    ap.add_argument("model")
    ap.add_argument("--n", type=int, default=40, help="texts taken from each prompt set")
    args = ap.parse_args()
    prompts_dir = ROOT.parent / "shared" / "data" / "prompts"
    for path, what in ((Path(args.model), "model"), (prompts_dir, "prompt sets")):
        if not path.exists():
            if os.environ.get("CI") == "true":
                print(f"check_smollm2_tokenizer: {what} not found: {path}", file=sys.stderr)
                return 1
            print(f"SKIPPED: {what} not found: {path} (scripts/fetch-smollm2.sh fetches the model)")
            return 0
    ref = reference(args.model)
    all_texts = texts(prompts_dir, args.n)
    bad, count = 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, text in enumerate(all_texts):
            got = gguf_model.unmask_token_ids(args.unmask, args.model, text, tmp)
            want = ref.encode(text).ids
            count += len(want)
            if got != want:
                bad += 1
                k = gguf_model.first_difference(got, want)
                print(f"text {i} differs at token {k}: unmask {got[k:k + 6]} vs reference "
                      f"{want[k:k + 6]}: {text[:60]!r}")
    print(f"{len(all_texts)} texts, {count} tokens: "
          f"{'all identical' if not bad else f'{bad} mismatches'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
