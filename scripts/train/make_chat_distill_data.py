#!/usr/bin/env python3
"""A chat model's own greedy answers to the shared prompt sets: the self-distillation data of its
Medusa heads (Medusa, Cai et al. 2024, section 2.3.2; EAGLE trains on the target's answers too).

Each prompt is rendered with the model's chat template by `unmask serve` (POST /tokenize with
"messages"), answered greedily (POST /v1/completions with the prompt as token ids, temperature 0,
at most --max-tokens tokens; 16 requests at once, so the server batches them), and the answer's
text is tokenized back without special tokens (the server returns text, not ids: a retokenized
answer can differ from the generated ids where the BPE has two spellings, which is rare and only
blurs a few training targets); an answer that ended at EOS gets the model's end-of-turn token.

Prompts: every record of the given JSONL(.gz) files, minus the first --skip of each (the
speculative benchmark's prompts: scripts/bench/bench_speculative.py reads the first 12
self-instruct tasks and the first 8 MT-Bench questions, which must stay unseen). Output: an .npz
with `tokens` [N, T] int32 (right-padded with 0), `length` [N] and `prompt_length` [N], plus the
texts in a .jsonl beside it.

  .venv/bin/python scripts/train/make_chat_distill_data.py -m $(scripts/fetch-smollm2.sh) \\
      --out build/train/distill-smollm2.npz \\
      --prompts ../shared/data/prompts/self_instruct_user_oriented_instructions.jsonl \\
                ../shared/data/prompts/vicuna_bench_question.jsonl ../shared/data/prompts/mbpp.jsonl
"""
import argparse
import concurrent.futures
import gzip
import json
import os
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
from tqdm import tqdm

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "server"))
sys.path.insert(0, str(REPO / "scripts" / "bench"))
from server_util import UnmaskServer  # noqa: E402
from bench_speculative import read_prompts  # noqa: E402  (the benchmark's own prompt reader)


def post(url, path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True, help="the chat model (GGUF)")
    ap.add_argument("--prompts", nargs="+", required=True, help="JSONL(.gz) prompt files")
    ap.add_argument("--skip", type=int, default=12,
                    help="leave out the first N prompts of each file (the benchmark's)")
    ap.add_argument("--limit", type=int, default=100000, help="at most N prompts per file")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--max-prompt", type=int, default=384, help="longer prompts are left out")
    ap.add_argument("--out", required=True, help=".npz to write")
    ap.add_argument("--unmask", default=str(REPO / "build/ci/bin/unmask"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=16, help="requests at once")
    args = ap.parse_args()

    prompts = []
    for f in args.prompts:
        got = read_prompts(f, args.skip + args.limit, 0)[args.skip:]
        print(f"{f}: {len(got)} prompts", file=sys.stderr)
        prompts += got
    t0 = time.time()
    server_args = ["-m", args.model, "-t", str(args.threads), "--max-batch", str(args.parallel),
                   "--max-queue", str(4 * args.parallel)]
    with UnmaskServer(args.unmask, server_args, ready_timeout_s=120) as srv:
        def one(text):
            p = post(srv.url, "/tokenize", {"messages": [{"role": "user", "content": text}]})
            ids = p["tokens"]
            if len(ids) > args.max_prompt:
                return None
            r = post(srv.url, "/v1/completions", {"prompt": ids, "max_tokens": args.max_tokens,
                                                  "temperature": 0})
            answer = r["choices"][0]["text"]
            out = post(srv.url, "/tokenize", {"prompt": answer, "add_special": False})["tokens"]
            if r["choices"][0]["finish_reason"] == "stop":
                out = out + [eot]
            return text, ids, out, answer

        # The end-of-turn token: the last id of an empty assistant turn's closing tag.
        eot = post(srv.url, "/tokenize", {"prompt": "<|im_end|>", "add_special": False})["tokens"]
        eot = eot[-1] if len(eot) == 1 else 2
        rows = []
        with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
            for r in tqdm(pool.map(one, prompts), total=len(prompts), desc="answers",
                          unit="prompt", dynamic_ncols=True):
                if r is not None:
                    rows.append(r)
    T = max(len(ids) + len(out) for _, ids, out, _ in rows)
    tokens = np.zeros((len(rows), T), np.int32)
    length = np.zeros(len(rows), np.int32)
    prompt_length = np.zeros(len(rows), np.int32)
    for i, (_, ids, out, _) in enumerate(rows):
        seq = ids + out
        tokens[i, :len(seq)] = seq
        length[i], prompt_length[i] = len(seq), len(ids)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, tokens=tokens, length=length, prompt_length=prompt_length)
    with open(os.path.splitext(args.out)[0] + ".jsonl", "w") as f:
        for text, ids, out, answer in rows:
            f.write(json.dumps({"prompt": text, "answer": answer}) + "\n")
    answer_tokens = int((length - prompt_length).sum())
    print(f"{len(rows)} answers, {answer_tokens} answer tokens, {time.time() - t0:.0f} s -> "
          f"{args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
