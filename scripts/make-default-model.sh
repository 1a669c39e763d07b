#!/usr/bin/env bash
# Writes the default model of the README's first command, models/unmask-default-llada.gguf, unless
# it exists: a small LLaDA-architecture model with RANDOM weights (hidden 256, 4 layers, 8 heads,
# FFN 768, 4096-token byte-level BPE vocabulary, F16, ~5M parameters), generated deterministically by
# scripts/make_llada_gguf.py. It exercises the whole engine but writes no meaningful text; the trained
# TinyStories models replace it (issue 3).
set -euo pipefail
cd "$(dirname "$0")/.."
out=models/unmask-default-llada.gguf
mkdir -p models
if [ -f "$out" ]; then exit 0; fi
echo "make-default-model: writing $out (random weights)" >&2
.venv/bin/python scripts/make_llada_gguf.py --out "$out" --hidden 256 --layers 4 --heads 8 \
  --ffn 768 --vocab 4096 --context 1024 --dtype f16 --untied --seed 42 --init-std 0.06 \
  --embed-std 1.0 >&2
