#!/usr/bin/env python3
"""The AR twin's greedy continuations of training-split prefixes: the distillation stream of the
block twin's remedy run (train_block.py --distill-stream).

Why (models/README.md "The block-diffusion twin"): a block-diffusion model decodes several tokens
per forward only where it is confident about tokens whose left neighbours are still masked. On
human text that is rarely so (the next-but-one word is genuinely uncertain); on a teacher's greedy
text every token is a deterministic function of the prefix, so it can be learnt with confidence.
Training on a teacher's or the model's own decoded trajectories is the data side of dParallel's
certainty-forcing distillation (Chen et al. 2025, arXiv 2509.26488, which uses the model's own
trajectories) and of sequence-level knowledge distillation (Kim & Rush 2016); here the teacher is
the AR twin, so the block twin learns to write what AR writes.

Prompts: for every story of the training split (never the validation or held-out ones), BOS + the
story's text up to the end of its 1st, 2nd, ... sentence (at most --max-cuts cuts, prefixes of at
most 128 tokens). Each is continued by `unmask generate -m AR_TWIN --prompt-ids ... --temperature 0
-n (256 - prompt length)`, stopping at EOS. The stream is the concatenation of prompt + continuation
(+ EOS when the continuation ran to the length limit), in story order, until it holds --tokens ids.

  .venv/bin/python scripts/train/make_distill_data.py --out build/train/distill-ar.npy
"""
import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer
from tqdm import tqdm

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts" / "train"))
import data  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="int32 .npy token stream to write")
    ap.add_argument("--unmask", default=str(REPO / "build/ci/bin/unmask"))
    ap.add_argument("--teacher", default=str(REPO / "models/unmask-tinystories-ar.gguf"))
    ap.add_argument("--tokenizer", default="build/train/tokenizer.json",
                    help="tokenizer.json (default: built from the teacher GGUF when absent)")
    ap.add_argument("--tokens", type=int, default=300 * 16 * 256 + 256,
                    help="stream length to reach (default: 300 steps of 16 windows of 256)")
    ap.add_argument("--max-cuts", type=int, default=4)
    ap.add_argument("--context", type=int, default=256)
    args = ap.parse_args()
    if Path(args.tokenizer).exists():
        tok = Tokenizer.from_file(args.tokenizer)
    else:  # the teacher's own vocabulary and merges (the same tokenizer, read from its GGUF)
        from gguf_model import load_tokenizer, read_fields
        tok = load_tokenizer(read_fields(args.teacher)[1])
    bos, eos = tok.token_to_id(data.BOS), tok.token_to_id(data.EOS)
    stories = data.load_splits()["train"]
    prompts = []  # (cut, story, ids)
    for k, s in enumerate(stories):
        ends = [m.end() for m in re.finditer(r"[.!?][\"']?(?=\s)", s)][:args.max_cuts]
        for c, e in enumerate(ends):
            ids = [bos] + tok.encode(s[:e]).ids
            if len(ids) <= 128:
                prompts.append((c, k, ids))
    # All stories' first cuts, then their second cuts, ...: a shorter run still covers every story.
    prompts.sort(key=lambda t: (t[0], t[1]))
    stream, made, teacher_tokens = [], 0, 0
    bar = tqdm(total=args.tokens, desc="AR-twin continuations", unit="tok", dynamic_ncols=True)
    for _, _, p in prompts:
        n = args.context - len(p)
        r = subprocess.run([args.unmask, "generate", "-m", args.teacher, "--prompt-ids",
                            ",".join(map(str, p)), "-n", str(n), "--temperature", "0", "-t", "1",
                            "--json"], capture_output=True, text=True, check=True)
        out = json.loads(r.stdout)["output_ids"]
        if eos in out:
            out = out[:out.index(eos) + 1]
        else:
            out = out + [eos]
        stream += p + out
        made += 1
        teacher_tokens += len(out)
        bar.update(len(p) + len(out))
        if len(stream) >= args.tokens:
            break
    bar.close()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    np.save(args.out, np.array(stream, dtype=np.int32))
    summary = {"sequences": made, "prompts_available": len(prompts), "tokens": len(stream),
               "teacher_tokens": teacher_tokens, "teacher": args.teacher,
               "stories": len(stories)}
    Path(args.out).with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary), file=sys.stderr)


if __name__ == "__main__":
    main()
