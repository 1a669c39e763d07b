#!/usr/bin/env bash
# The issue-2 speed benchmark: a random LLaDA GGUF with llama.cpp's naming (hidden 768, 12 layers,
# 12 heads, FFN 2048, vocab 8192, F16, 97.5M parameters; scripts/make_llada_gguf.py --preset bench),
# 32-token prompt, gen_length 128, block_length 32, 128 steps (one token per forward), 2 threads.
# Prints a markdown table (tokens/s, forward GFLOP/s, fraction of the GEMM peak measured in the same
# run, ratio to llama.cpp's llama-diffusion-cli on the same setting: 3.65-3.85 tokens/s, LLAMACPP.md).
#   scripts/bench-llada.sh [extra unmask bench flags, e.g. -r 5 --blas-list onednn] (3 reps by default)
set -euo pipefail
cd "$(dirname "$0")/.."
model=build/models/llada-bench-97m-f16.gguf
bin=build/release/bin/unmask
[ -x "$bin" ] || cmake --workflow --preset release >&2
if [ ! -f "$model" ]; then
  mkdir -p build/models
  .venv/bin/python scripts/make_llada_gguf.py --preset bench --out "$model" >/dev/null
fi
exec "$bin" bench -m "$model" --prompt-length 32 --gen-length 128 --block-length 32 --steps 128 \
  --threads 2 --reference-tps 3.75 "$@"
