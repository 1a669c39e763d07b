#!/usr/bin/env bash
# Trains both twins with the same recipe, one after the other (2 threads each), and exports them:
#   models/unmask-tinystories-llada.gguf (diffusion) and models/unmask-tinystories-ar.gguf (AR).
# Budget: at most 60 minutes per model on the project's 2-core machine (see models/README.md).
#   scripts/train/train_twins.sh [extra train.py flags for both]
set -euo pipefail
cd "$(dirname "$0")/../.."
py=.venv/bin/python
$py scripts/train/train_tokenizer.py --out build/train/tokenizer.json
for objective in llada ar; do
  $py scripts/train/train.py --objective "$objective" --out-dir "build/train/$objective" \
    --tokenizer build/train/tokenizer.json --gguf "models/unmask-tinystories-$objective.gguf" \
    --threads 2 "$@"
done
