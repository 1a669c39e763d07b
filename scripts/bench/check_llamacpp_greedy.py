#!/usr/bin/env python3
"""Greedy AR decoding of random-weight qwen2 / qwen3 checkpoints: unmask against llama.cpp.

For each tiny HF folder of tests/data/hf (qwen2-tiny: F32, qwen3-tiny: BF16, both made by
scripts/make_hf_checkpoints.py with random weights):
  1. `unmask convert --hf FOLDER -o X.gguf` writes the GGUF in llama.cpp's names (the token list
     padded to vocab_size with [PAD<id>] tokens, norms in F32, as convert_hf_to_gguf.py does);
  2. a copy of the folder with every tensor widened to F32 is converted too: llama.cpp's CPU
     kernels round the activations to BF16 when the weights are BF16, which unmask does not (f32
     activations against the stored weights), and on a random model with near-flat distributions
     that alone changes greedy tokens after a few steps; with F32 weights both compute in F32;
  3. llama.cpp's `llama-simple -m X.gguf -n N PROMPT` (greedy sampler, prompt without a chat
     template, stops at an end-of-generation token) and `unmask generate -m X.gguf -p PROMPT -n N
     --no-chat -t 1` (temperature 0, stops at EOS/EOT) should print the same continuation text.
  4. Where they differ, the independent float64 forward (scripts/reference/hf_model.py) of prompt +
     unmask's tokens decides: every unmask token must be the reference's argmax, and the step where
     llama.cpp's text leaves unmask's must be a near-tie, a top-2 logit gap under 0.01 in float64
     (llama.cpp keeps its KV cache in F16 by default, llama-simple has no flag to change it, and
     F16 rounds K and V by ~1e-3 relative).
Prints one line per (file, prompt); exits 1 when unmask leaves the float64 reference's argmax, or
when the F32 files differ at a step that is not a near-tie (the BF16 originals are reported, not
failed: see 2).

  scripts/bench/setup-llamacpp-diffusion.sh     # builds llama-simple too (once, ~6 min)
  .venv/bin/python scripts/bench/check_llamacpp_greedy.py --unmask build/ci/bin/unmask
"""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tokenizers import Tokenizer

REPO = Path(__file__).resolve().parents[2]
PROMPTS = ["Hello world, this is", "Once upon a time", "The quick brown fox jumps over",
           "1 2 3 4 5"]


def widen(folder, out):
    """Copies an HF folder with every safetensors tensor as F32 (torch_dtype float32)."""
    import torch
    from safetensors.torch import load_file, save_file
    shutil.copytree(folder, out)
    for f in Path(out).glob("*.safetensors"):
        save_file({k: v.to(torch.float32).contiguous() for k, v in load_file(str(f)).items()},
                  str(f), metadata={"format": "pt"})
    cfg = json.loads((Path(out) / "config.json").read_text())
    cfg["torch_dtype"] = "float32"
    (Path(out) / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def llamacpp(simple, gguf, prompt, n):
    r = subprocess.run([simple, "-m", gguf, "-n", str(n), prompt], capture_output=True,
                       text=True, errors="replace")
    if r.returncode != 0:
        raise SystemExit(f"llama-simple failed on {gguf}:\n{r.stderr[-2000:]}")
    out = r.stdout
    # llama-simple echoes the prompt, then the continuation; its last line is a newline.
    if not out.startswith(prompt):
        raise SystemExit(f"llama-simple output does not start with the prompt: {out!r}")
    return out[len(prompt):].rstrip("\n")


def unmask(binary, gguf, prompt, n):
    """(text, prompt ids, output ids)."""
    r = subprocess.run([binary, "generate", "-m", gguf, "-p", prompt, "-n", str(n), "--no-chat",
                        "-t", "1", "--json"], capture_output=True, text=True, check=True)
    j = json.loads(r.stdout)
    return j["text"], j["prompt_ids"], j["output_ids"]


def reference_check(folder, prompt_ids, out_ids, llama_text, tok):
    """(unmask tokens all the float64 argmax?, first divergent step or None, its top-2 gap)."""
    import numpy as np
    sys.path.insert(0, str(REPO / "scripts/reference"))
    from hf_model import HFModel
    m = HFModel(str(folder))
    seq = list(prompt_ids) + list(out_ids)
    logits = m.forward(np.array(seq))
    agree = all(int(np.argmax(logits[len(prompt_ids) - 1 + k])) == t for k, t in enumerate(out_ids))
    step = next((k for k in range(len(out_ids))
                 if not llama_text.startswith(tok.decode(out_ids[:k + 1]))), None)
    gap = None
    if step is not None:
        row = np.sort(logits[len(prompt_ids) - 1 + step])[::-1]
        gap = float(row[0] - row[1])
    return agree, step, gap


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unmask", default=str(REPO / "build/ci/bin/unmask"))
    ap.add_argument("--llama-simple", default=str(REPO / "build/llamacpp-diffusion/bin/llama-simple"))
    ap.add_argument("-n", type=int, default=32)
    args = ap.parse_args()
    if not Path(args.llama_simple).exists():
        raise SystemExit(f"{args.llama_simple} is missing: run scripts/bench/setup-llamacpp-diffusion.sh")
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("qwen2-tiny", "qwen3-tiny"):
            src = REPO / "tests/data/hf" / name
            wide = Path(tmp) / (name + "-f32")
            widen(src, wide)
            for folder, strict in ((src, False), (wide, True)):
                gguf = str(Path(tmp) / (folder.name + ".gguf"))
                subprocess.run([args.unmask, "convert", "--hf", str(folder), "-o", gguf],
                               check=True, capture_output=True)
                tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
                for p in PROMPTS:
                    a = llamacpp(args.llama_simple, gguf, p, args.n)
                    b, pids, oids = unmask(args.unmask, gguf, p, args.n)
                    tag = f"{folder.name} {p!r}"
                    if a == b:
                        print(f"same   {tag}: {a!r}")
                        continue
                    agree, step, gap = reference_check(folder, pids, oids, a, tok)
                    tie = gap is not None and gap < 0.01
                    print(f"DIFFER {tag}{'' if strict else ' (BF16 weights: reported only)'}: "
                          f"from token {step}, float64 top-2 gap there {gap:.3g}"
                          f"{' (a near-tie)' if tie else ''}; unmask's tokens "
                          f"{'are' if agree else 'are NOT'} the float64 argmax"
                          f"\n  llama.cpp {a!r}\n  unmask    {b!r}")
                    failed += (not agree) or (strict and not tie)
    print(f"{failed} difference(s) in the F32 files")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
