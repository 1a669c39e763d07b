#!/usr/bin/env python3
"""unmask's reading of Hugging Face tokenizer folders (src/tokenizer/tokenizer_hf.cc) against the
`tokenizers` package itself (pinned 0.20.3): for each folder, every text of the shared prompt sets
(../shared/data/prompts: questions, answers, prompts, code, instructions and their inputs) and a
list of hard strings (combining characters that NFC composes, whitespace runs, digits, scripts,
emoji, special tokens inside text) are encoded by `tokenizers.Tokenizer.from_file` and by
`unmask tokenize --tokenizer DIR --jsonl FILE`; the ids must be identical, and so must the decoded
text (special tokens skipped and kept). Three modes per folder: special tokens parsed and
post-processor on (HF defaults), post-processor off (--no-bos / add_special_tokens=False), special
tokens not parsed (no --parse-special / encode_special_tokens=True).

--variants DIR also writes variants of the first folder into DIR and checks them: added tokens
with lstrip/rstrip/normalized and overlapping contents, a TemplateProcessing post-processor, the
ByteLevel pre-tokenizer with GPT-2's regex and add_prefix_space, Digits + ByteLevel, and Llama 3's
Split regex. Exit status 0 when everything agrees.

  .venv/bin/python scripts/check_hf_tokenizer.py build/tok/bin/unmask \\
      tests/data/hf/tokenizers/qwen-style build/tok/test_tmp/hf-fixtures/gpt2-style \\
      --variants build/tok/test_tmp/hf-fixtures/variants
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, pre_tokenizers, processors

ROOT = Path(__file__).resolve().parent.parent
PROMPTS = ROOT.parent / "shared" / "data" / "prompts"

HARD = [
    "", " ", "  ", "\n", "\n\n\n", "\t\t x", "a  b   c", "   leading", "trailing   ",
    " \n \n ", "\r\n\r\n", "line\n\n  indented\n\tTab",
    "Hello world", "Hello, World!", "I'm you're he'll we'd they've she's IT'S I'M",
    "'s 'S 'ſ 'ﬆ 'K", "don't won't y'all 'twas",
    "123 4567 89012 3.14159 1,000,000 ١٢٣ ０１２ ²³ ½ Ⅻ",
    "café cafe\u0301 e\u0301\u0301 A\u030a Å \u212b ﬁ \u1e9b\u0323 \u0958 \u2126",
    "a\u0301\u0302\u0303b \u0041\u0308\u0304 \u1e0b\u0323 q\u0307\u0323",
    "한국어 조합 \u1100\u1161\u11a8 \u1112\u1161\u11ab", "日本語のテキスト 中文 汉字 ｶﾀｶﾅ",
    "Ελληνικά русский עברית العربية हिन्दी ไทย ქართული",
    "emoji 😀👍🏽 👨‍👩‍👧 🇺🇸 ❤️",
    "\u00a0nbsp\u2009thin\u3000ideo\u200bzw\u180emvs\u2060wj",
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "x<|endoftext|>y", "<|MASK|><|MASK|> mask <|MASK|>", "<|im_start|<|im_end|>>", "<|MASK",
    " <|im_end|> ", "<|im_end|>\n\n", "e\u0301<|im_end|>\u0301",
    "def f(x):\n\treturn x**2  # comment\r\n", "\u0000 nul \u007f del \u0085 nel \u001b[0m",
    "\ufeffBOM", "\u2028\u2029", "Ǆ ǅ ǆ İ ı ß ẞ ﬀ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟘𝟙𝟚", "\U0010ffff \U000e0001",
    "ab abc abcd bcd xabcdx", "a <L> b <L>c  <R> d<R>  e", "café cafe\u0301 e\u0301x e\u0301",
    "?!... ,,, ;; -- __ ** ## $$ %% ^^ && || ~~ `` <> {} [] ()",
]


def prompt_texts():
    """The strings of every prompt set, by their text fields."""
    out = []
    fields = ("question", "answer", "text", "code", "prompt", "canonical_solution", "instruction")

    def take(record):
        out.extend(record[k] for k in fields if isinstance(record.get(k), str) and record[k])
        out.extend(t for t in record.get("turns", []) if isinstance(t, str) and t)
        for inst in record.get("instances", []):
            out.extend(inst[k] for k in ("input", "output") if isinstance(inst.get(k), str)
                       and inst[k])

    for path in sorted(PROMPTS.glob("*.jsonl")):
        with open(path, encoding="utf-8") as f:
            for line in f:
                take(json.loads(line))
    with gzip.open(PROMPTS / "HumanEval.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            take(json.loads(line))
    return out


def unmask_batch(unmask, folder, texts, tmp, flags):
    """[{ids, text, text_special}] of `unmask tokenize --tokenizer folder --jsonl`."""
    path = Path(tmp) / "texts.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps(t) + "\n")
    run = subprocess.run([unmask, "tokenize", "--tokenizer", str(folder), "--jsonl", str(path)]
                         + flags, capture_output=True, text=True, encoding="utf-8")
    if run.returncode != 0:
        sys.exit(f"check_hf_tokenizer: unmask failed on {folder}: {run.stderr.strip()}")
    # Split on "\n" only: str.splitlines() would also split at U+2028 inside the JSON strings.
    rows = [json.loads(line) for line in run.stdout.split("\n") if line]
    if len(rows) != len(texts):
        sys.exit(f"check_hf_tokenizer: {len(rows)} outputs for {len(texts)} texts")
    return rows


def first_difference(got, want):
    return next((j for j, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))


MODES = [  # (name, unmask flags, add_special_tokens, encode_special_tokens)
    ("specials parsed", ["--parse-special"], True, False),
    ("no post-processor", ["--parse-special", "--no-bos"], False, False),
    ("specials as text", [], True, True),
]


def check_folder(unmask, folder, texts, tmp):
    """Number of disagreements (printed) of unmask against tokenizers on `folder`."""
    ref = Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
    bad = 0
    for mode, flags, add_special, as_text in MODES:
        ref.encode_special_tokens = as_text
        rows = unmask_batch(unmask, folder, texts, tmp, flags)
        tokens = 0
        for i, (text, row) in enumerate(zip(texts, rows)):
            want = ref.encode(text, add_special_tokens=add_special).ids
            tokens += len(want)
            got = row["ids"]
            problem = None
            if got != want:
                k = first_difference(got, want)
                problem = f"ids differ at {k}: unmask {got[k:k + 6]} vs tokenizers {want[k:k + 6]}"
            elif row["text"] != ref.decode(want, skip_special_tokens=True):
                problem = f"decode differs: {row['text'][:60]!r} vs {ref.decode(want)[:60]!r}"
            elif row["text_special"] != ref.decode(want, skip_special_tokens=False):
                problem = "decode with special tokens differs"
            if problem:
                bad += 1
                if bad <= 20:
                    print(f"  {Path(folder).name} [{mode}] text {i} {text[:50]!r}: {problem}")
        print(f"{Path(folder).name} [{mode}]: {len(texts)} texts, {tokens} tokens")
    ref.encode_special_tokens = False
    # The decode round trip itself: decode(encode(s)) is s in NFC where the normalizer is NFC.
    nfc = (json.loads((Path(folder) / "tokenizer.json").read_text(encoding="utf-8"))
           .get("normalizer") or {}).get("type") == "NFC"
    trips = sum(ref.decode(ref.encode(t).ids) == (unicodedata.normalize("NFC", t) if nfc else t)
                for t in texts)
    print(f"{Path(folder).name}: decode(encode(text)) == text{' (NFC)' if nfc else ''} "
          f"for {trips}/{len(texts)} texts (both tokenizers alike)")
    return bad


def write_variants(base, out):
    """Variants of folder `base` in out/<name>/: one rule of tokenizer_hf.h each."""
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    variants = {}

    def variant(name, edit):
        d = out / name
        shutil.copytree(base, d)
        tok = Tokenizer.from_file(str(d / "tokenizer.json"))
        edit(tok)
        tok.save(str(d / "tokenizer.json"))
        variants[name] = d

    variant("added-rules", lambda t: t.add_tokens([
        AddedToken("ab", normalized=True), AddedToken("bcd", normalized=True),
        AddedToken("<L>", special=True, lstrip=True, normalized=False),
        AddedToken("<R>", special=True, rstrip=True, normalized=False),
        AddedToken("café", normalized=True), AddedToken("e\u0301x", normalized=False),
        AddedToken("im_end", normalized=False)]))

    def template(t):
        t.post_processor = processors.TemplateProcessing(
            single="<|endoftext|> $A <|im_end|>", pair="<|endoftext|> $A <|im_end|> $B:1",
            special_tokens=[("<|endoftext|>", 1000), ("<|im_end|>", 1002)])
    variant("template", template)

    def gpt2_regex(t):
        t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
    variant("gpt2-regex-prefix", gpt2_regex)

    def digits(t):
        t.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    variant("digits", digits)

    def llama3(t):
        t.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(
                r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    variant("llama3-split", llama3)
    return variants


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("unmask")
    ap.add_argument("folders", nargs="+", help="Hugging Face tokenizer folders")
    ap.add_argument("--variants", help="write variants of the first folder here and check them")
    args = ap.parse_args()
    missing = [p for p in [PROMPTS, *map(Path, args.folders)] if not p.exists()]
    if missing:
        msg = f"check_hf_tokenizer: not found: {', '.join(map(str, missing))}"
        if os.environ.get("CI") == "true":
            print(msg, file=sys.stderr)
            return 1
        print(f"SKIPPED: {msg} (../shared/data is needed; scripts/make_hf_tokenizers.py writes "
              f"the folders)")
        return 0
    texts = prompt_texts() + HARD
    folders = list(args.folders)
    if args.variants:
        folders += [str(d) for d in write_variants(args.folders[0], args.variants).values()]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for folder in folders:
            bad += check_folder(args.unmask, folder, texts, tmp)
    compared = len(texts) * len(MODES) * len(folders)
    print(f"{len(folders)} folders x {len(MODES)} modes x {len(texts)} texts = {compared} "
          f"encodings: {'all identical (ids and decoded text)' if not bad else f'{bad} differ'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
