#!/usr/bin/env bash
# CI smoke test of the training pipeline (never the full training): trains the tokenizer and each
# twin for a few steps of a tiny configuration on a few kilobytes of TinyStories text, exports both
# GGUF files, and checks that llama.cpp's gguf-py accepts them and that unmask loads them; the same
# for the block-diffusion twin's scripts (train, resume, export to GGUF and HF, distillation data)
# and for draft heads (train_medusa.py and train_eagle.py, then generate --spec medusa / eagle).
#   scripts/train/smoke_test.sh UNMASK_BINARY [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
unmask=${1:?usage: smoke_test.sh UNMASK_BINARY [WORK_DIR]}
work=${2:-build/train-smoke}
corpus=../shared/data/corpus/cs336_tinystories_sample.txt
if [ ! -f "$corpus" ]; then
  if [ "${CI:-}" = true ]; then echo "smoke_test: $corpus missing" >&2; exit 1; fi
  echo "SKIPPED: $corpus not found (../shared/data)"; exit 0
fi
rm -rf "$work" && mkdir -p "$work"
py=.venv/bin/python
export UNMASK_CORPUS=$corpus
$py scripts/train/train_tokenizer.py --out "$work/tokenizer.json" --vocab-size 300
for objective in llada ar; do
  $py scripts/train/train.py --objective "$objective" --out-dir "$work/$objective" \
    --tokenizer "$work/tokenizer.json" --gguf "$work/$objective.gguf" --dim 32 --layers 2 \
    --heads 4 --ffn 64 --context 64 --batch 2 --max-steps 3 --warmup 1 --eval-every 2 --threads 1
  test -s "$work/$objective/loss.svg" && test -s "$work/$objective/log.jsonl"
  "$unmask" inspect "$work/$objective.gguf" --no-tensors > "$work/$objective.inspect.txt"
done
grep -q "architecture: llada" "$work/llada.inspect.txt"
grep -q "architecture: llama" "$work/ar.inspect.txt"
"$unmask" generate -m "$work/llada.gguf" -p "Once upon a time" -n 16 --steps 16 --block-length 16 \
  --json > "$work/llada.generate.json"
$py -c "import json,sys; j=json.load(open('$work/llada.generate.json')); assert len(j['output_ids'])==16"
# The block-diffusion twin's pipeline: two steps, resumed to a third (the resumable checkpoint),
# exported to GGUF and an HF folder, both generated from; then a distillation stream from the AR
# model and one step on it.
tiny=(--tokenizer "$work/tokenizer.json" --dim 32 --layers 2 --heads 4 --ffn 64 --context 64
  --batch 2 --warmup 1 --eval-every 1 --threads 1)
$py scripts/train/train_block.py --init scratch --out-dir "$work/block" "${tiny[@]}" --stop-at 2
$py scripts/train/train_block.py --init scratch --out-dir "$work/block3" "${tiny[@]}" --stop-at 3 \
  --resume "$work/block/checkpoint.pt"
test "$(wc -l < "$work/block3/log.jsonl")" = 3
$py scripts/train/export_block.py "$work/block3/checkpoint.pt" --gguf "$work/block.gguf" \
  --hf "$work/block-hf"
for m in "$work/block.gguf" "$work/block-hf"; do
  "$unmask" generate -m "$m" -p "Once upon a time" -n 12 --json > "$work/block.generate.json"
  $py -c "import json; j=json.load(open('$work/block.generate.json')); \
assert j['params']['decoder'] == 'block_diffusion' and len(j['output_ids']) >= 12, j"
done
$py scripts/train/make_distill_data.py --unmask "$unmask" --teacher "$work/ar.gguf" \
  --tokenizer "$work/tokenizer.json" --context 64 --tokens 400 --out "$work/distill.npy"
$py scripts/train/train_block.py --init scratch --out-dir "$work/block-distill" "${tiny[@]}" \
  --stop-at 1 --distill-stream "$work/distill.npy"
# Medusa heads for the tiny AR model on its distillation stream (a few steps, a draft vocabulary),
# then greedy generation with them: the plain tokens (lossless), drafts proposed.
$py scripts/train/train_medusa.py --base "$work/ar.gguf" --stream "$work/distill.npy" --context 64 \
  --heads 2 --epochs 1 --batch 2 --draft-vocab 100 --threads 1 --log-dir "$work/medusa" \
  --out "$work/ar.medusa.gguf"
test -s "$work/medusa/loss.svg" && test -s "$work/medusa/summary.json"
"$unmask" generate -m "$work/ar.gguf" -p "Once upon a time" -n 16 --temperature 0 --json \
  > "$work/plain.json"
"$unmask" generate -m "$work/ar.gguf" -p "Once upon a time" -n 16 --temperature 0 --json \
  --spec medusa > "$work/medusa.json"
$py -c "import json; a=json.load(open('$work/plain.json')); b=json.load(open('$work/medusa.json')); \
assert a['output_ids'] == b['output_ids'] and b['speculative']['drafted'] > 0, b"
# An EAGLE draft layer the same way (two training-time-test passes), then --spec eagle: lossless.
$py scripts/train/train_eagle.py --base "$work/ar.gguf" --stream "$work/distill.npy" --context 64 \
  --passes 2 --epochs 1 --batch 2 --draft-vocab 100 --ffn 32 --threads 1 --log-dir "$work/eagle" \
  --out "$work/ar.eagle.gguf"
test -s "$work/eagle/loss.svg" && test -s "$work/eagle/summary.json"
"$unmask" generate -m "$work/ar.gguf" -p "Once upon a time" -n 16 --temperature 0 --json \
  --spec eagle > "$work/eagle.json"
$py -c "import json; a=json.load(open('$work/plain.json')); b=json.load(open('$work/eagle.json')); \
assert a['output_ids'] == b['output_ids'] and b['speculative']['drafted'] > 0, b"
$py scripts/check_llamacpp_gguf.py "$work/llada.gguf"
$py scripts/check_llamacpp_gguf.py "$work/ar.gguf"
echo "smoke_test: ok"
