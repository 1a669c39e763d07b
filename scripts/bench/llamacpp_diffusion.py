#!/usr/bin/env python3
"""Runs llama.cpp's `llama-diffusion-cli` on a LLaDA GGUF and measures tokens/s, for benchmarks that
compare unmask's diffusion decoding with llama.cpp's in the same run (importable; also a small CLI).

Build the CLI once (llama.cpp source vendored in the pinned llama-cpp-python sdist):
  scripts/bench/setup-llamacpp-diffusion.sh

Usage:
  .venv/bin/python scripts/bench/llamacpp_diffusion.py -r 5     # the benchmark's first prompt
  .venv/bin/python scripts/bench/llamacpp_diffusion.py --prompt-ids 0,590,268,... -t 2 -r 5
  .venv/bin/python scripts/bench/llamacpp_diffusion.py -p "TEXT" --print-command
(the prompt's token count + gen_length must be a multiple of the block length: the CLI asserts it)

What is measured, and how it maps onto unmask's setting (see ../shared/docs/LLAMACPP.md):
  * the canvas is prompt + gen_length tokens, set by `-ub` (its `-n` is ignored) and must be a
    multiple of the block (asserted); the CLI makes canvas / block_length blocks but starts them at
    the prompt end, so the last prompt / block_length of them lie past the canvas: empty, and each
    still costs one forward before its loop sees no mask. --diffusion-steps must be divisible by
    the number of blocks, so "one token per step" is --diffusion-steps = canvas: for a 32-token
    prompt, 128 tokens and block 32 the canvas is 160, 5 blocks, 160 steps, 129 forwards
    (4 x 32 + 1); the printed "time per step" divides by 160;
  * the default decoding of the CLI is kept (CONFIDENCE algorithm, its sampler chain top-k 40,
    top-p 0.95, temperature 0.8); --seed fixes its RNG;
  * tokens/s = gen_length / `total time` (the only timing it prints: the generation loop, model
    loading excluded);
  * the prompt: the CLI always applies a chat template, and a GGUF without one (the twins) gets
    llama.cpp's ChatML fallback, which the twins' tokenizer splits into ordinary text tokens (a
    different, longer prompt). The CLI ignores --chat-template, so `prepare_model` writes a copy of the
    GGUF whose only change is an identity template (`{{ messages[0]['content'] }}`): the prompt text
    then goes through unchanged, BOS is added by the tokenizer as unmask adds it, and the weights are
    the same bytes. The prompt is passed as text (the CLI takes no token ids), so exactness depends on
    the text round-tripping to the same ids: `llamacpp_token_ids` checks that with llama.cpp's own
    tokenizer (llama-cpp-python 0.3.16 in .venv-llamacpp, the same llama.cpp source);
  * output: the CLI prints only the detokenized canvas without special tokens (EOS is dropped), so the
    output ids cannot be recovered exactly; `run` returns the text.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CLI = ROOT / "build" / "llamacpp-diffusion" / "bin" / "llama-diffusion-cli"
DEFAULT_MODEL = ROOT / "models" / "unmask-tinystories-llada.gguf"
LLAMACPP_PYTHON = ROOT / ".venv-llamacpp" / "bin" / "python"
IDENTITY_TEMPLATE = "{{ messages[0]['content'] }}"
TOTAL_RE = re.compile(r"total time: ([0-9.]+)ms, time per step: ([0-9.]+)ms, "
                      r"sampling time per step: ([0-9.]+)ms")


def find_cli(path=None):
    """The llama-diffusion-cli binary, or None when it is not built."""
    p = Path(path) if path else DEFAULT_CLI
    return p if p.is_file() and os.access(p, os.X_OK) else None


def prepare_model(src, out_dir=None):
    """A copy of GGUF `src` with the identity chat template (only that metadata key differs), cached in
    build/llamacpp-diffusion/models/ and rebuilt when `src` is newer. Returns its path."""
    src = Path(src)
    out_dir = Path(out_dir) if out_dir else ROOT / "build" / "llamacpp-diffusion" / "models"
    dst = out_dir / (src.stem + ".identity-template.gguf")
    if dst.is_file() and dst.stat().st_mtime >= src.stat().st_mtime:
        return dst
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_suffix(".tmp")
    subprocess.run([sys.executable, "-m", "gguf.scripts.gguf_new_metadata", "--force",
                    "--chat-template", IDENTITY_TEMPLATE, str(src), str(tmp)],
                   check=True, capture_output=True, text=True)
    tmp.replace(dst)
    return dst


def command(cli, model, prompt, gen_length=128, block_length=32, threads=2, seed=0, extra=()):
    """The llama-diffusion-cli command for one-token-per-step block decoding of `gen_length` tokens
    after `prompt` = (text, number of tokens it makes, BOS included)."""
    text, n_prompt = prompt
    canvas = n_prompt + gen_length
    if canvas % block_length:  # the CLI asserts canvas % block_length == 0
        raise ValueError(f"prompt {n_prompt} + gen {gen_length} is not a multiple of block "
                         f"{block_length}: llama-diffusion-cli cannot run this canvas")
    n_blocks = canvas // block_length
    steps = block_length * n_blocks  # one token per step in every block (the empty ones break early)
    return [str(cli), "-m", str(model), "-p", text, "-ub", str(canvas), "-b", str(canvas),
            "-c", str(canvas), "--diffusion-steps", str(steps),
            "--diffusion-block-length", str(block_length), "-t", str(threads), "-tb", str(threads),
            "--seed", str(seed), *extra]


def run(cli, model, text, n_prompt, gen_length=128, block_length=32, threads=2, seed=0, extra=()):
    """Runs the CLI once. Returns dict(tokens_per_second, total_ms, ms_per_step,
    sampling_ms_per_step, text, command)."""
    cmd = command(cli, model, (text, n_prompt), gen_length, block_length, threads, seed, extra)
    p = subprocess.run(cmd, capture_output=True, text=True)
    out = p.stdout + p.stderr
    m = TOTAL_RE.search(out)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"llama-diffusion-cli failed (rc {p.returncode}): {' '.join(cmd)}\n"
                           f"{out[-3000:]}")
    total_ms = float(m.group(1))
    # the generated text follows the timing line (all on stderr): a blank line, the text, a newline
    tail = out[m.end():]
    gen_text = tail[2:-1] if tail.startswith("\n\n") and tail.endswith("\n") else tail.strip("\n")
    return {"tokens_per_second": gen_length / (total_ms / 1000.0), "total_ms": total_ms,
            "ms_per_step": float(m.group(2)), "sampling_ms_per_step": float(m.group(3)),
            "text": gen_text, "command": cmd}


def llamacpp_token_ids(model, texts, python=LLAMACPP_PYTHON):
    """llama.cpp's own tokenization (add BOS as the GGUF says, parse special tokens: what the CLI
    does) of each text, through llama-cpp-python in .venv-llamacpp; None when that is not installed."""
    if not Path(python).is_file():
        return None
    code = ("import json,sys,llama_cpp\n"
            "m=llama_cpp.Llama(model_path=sys.argv[1],vocab_only=True,verbose=False)\n"
            "print(json.dumps([m.tokenize(t.encode('utf-8'),add_bos=True,special=True) "
            "for t in json.load(sys.stdin)]))\n")
    p = subprocess.run([str(python), "-c", code, str(model)], input=json.dumps(texts),
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"llama-cpp-python tokenization failed:\n{p.stderr[-2000:]}")
    return json.loads(p.stdout)


def decode_ids(model, ids):
    """Text of token ids without special tokens, by the project's HF tokenizer built from the GGUF."""
    sys.path.insert(0, str(ROOT / "scripts" / "train"))
    import gguf_model  # noqa: E402
    _, kv = gguf_model.read_fields(model)
    tok = gguf_model.load_tokenizer(kv)
    return tok.decode(ids, skip_special_tokens=True), kv


def prompt_text(model, ids):
    """(text, n_tokens) to pass to the CLI for prompt ids `ids` (a leading BOS is dropped: llama.cpp
    adds it itself when the GGUF says add_bos_token)."""
    _, kv = decode_ids(model, [])
    body = list(ids)
    if kv.get("tokenizer.ggml.add_bos_token") and body and body[0] == kv["tokenizer.ggml.bos_token_id"]:
        body = body[1:]
    text, _ = decode_ids(model, body)
    return text, len(ids)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", default=str(DEFAULT_MODEL), help="LLaDA GGUF (default: the twin)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("-p", "--prompt", help="prompt text (BOS added by the tokenizer)")
    g.add_argument("--prompt-ids", help="prompt ids, e.g. 0,431,454 (as unmask's --prompt-ids; "
                   "default: the first 32-token prompt of bench_diffusion_quality.py)")
    ap.add_argument("--gen-length", type=int, default=128)
    ap.add_argument("--block-length", type=int, default=32)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-r", "--reps", type=int, default=3, help="timed repetitions (seed = rep index)")
    ap.add_argument("--cli", default=str(DEFAULT_CLI), help="llama-diffusion-cli binary")
    ap.add_argument("--print-command", action="store_true", help="print the command and exit")
    args = ap.parse_args()

    cli = find_cli(args.cli)
    if cli is None:
        sys.exit(f"{args.cli} is not built: run scripts/bench/setup-llamacpp-diffusion.sh")
    model = prepare_model(args.model)
    if args.prompt is None and not args.prompt_ids:  # the benchmark's first prompt (32 tokens)
        import bench_diffusion_quality
        args.prompt_ids = ",".join(map(str, bench_diffusion_quality.build_prompts(args.model, 1)[0][0]))
    if args.prompt_ids:
        ids = [int(x) for x in args.prompt_ids.split(",")]
        text, n_prompt = prompt_text(args.model, ids)
    else:
        text, ids = args.prompt, None
    got = llamacpp_token_ids(model, [text])
    if got is not None:
        if ids is None:
            ids = got[0]
        n_prompt = len(got[0])
        print(f"llama.cpp prompt ids ({n_prompt}): {got[0]}"
              + ("" if got[0] == ids else f"\n  DIFFER from the given ids {ids}"), file=sys.stderr)
    elif ids is None:
        sys.exit("need .venv-llamacpp (scripts/bench/setup-llamacpp.sh) to count the prompt's tokens; "
                 "or pass --prompt-ids")
    try:
        cmd = command(cli, model, (text, n_prompt), args.gen_length, args.block_length, args.threads)
    except ValueError as e:
        sys.exit(str(e))
    print("command: " + " ".join(repr(c) if " " in c else c for c in cmd), file=sys.stderr)
    if args.print_command:
        return
    tps = []
    for r in range(args.reps):
        res = run(cli, model, text, n_prompt, args.gen_length, args.block_length, args.threads, seed=r)
        tps.append(res["tokens_per_second"])
        print(f"rep {r}: {res['tokens_per_second']:.1f} tokens/s (total {res['total_ms']:.1f} ms, "
              f"{res['ms_per_step']:.2f} ms/step, sampling {res['sampling_ms_per_step']:.2f} ms/step)",
              file=sys.stderr)
    sd = statistics.stdev(tps) if len(tps) > 1 else 0.0
    print(f"llama-diffusion-cli: {statistics.mean(tps):.1f} ± {sd:.1f} tokens/s "
          f"(median {statistics.median(tps):.1f}, {len(tps)} reps, {args.threads} threads)")
    print(f"last output: {res['text'][:300]!r}")


if __name__ == "__main__":
    main()
