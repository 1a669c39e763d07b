#!/usr/bin/env bash
# Trains the AR twin's draft model for speculative decoding (`--spec draft`):
#   models/unmask-tinystories-ar-draft.gguf — a causal model with the twins' tokenizer and data,
#   hidden 64, 2 layers, 2 heads, FFN 192 (0.50M parameters, 5.9x fewer than the AR twin), trained
#   for the twins' 38 epochs (19.4 minutes on 2 cores, sharing them). See models/README.md.
#   scripts/train/train_draft.sh [extra train.py flags]
set -euo pipefail
cd "$(dirname "$0")/../.."
py=.venv/bin/python
[ -f build/train/tokenizer.json ] || $py scripts/train/train_tokenizer.py --out build/train/tokenizer.json
$py scripts/train/train.py --objective ar --out-dir build/train/ar-draft \
  --tokenizer build/train/tokenizer.json --gguf models/unmask-tinystories-ar-draft.gguf \
  --dim 64 --layers 2 --heads 2 --ffn 192 --threads 2 "$@"
