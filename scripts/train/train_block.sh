#!/usr/bin/env bash
# Trains the block-diffusion twin (SDAR-style, block 4) and exports it:
#   models/unmask-tinystories-block.gguf (unmask's `sdar`) and models/unmask-tinystories-block-hf/.
# 1. Two pilots of 300 steps (the first 300 of the twins' 1,976-step schedule), from scratch and
#    from the AR twin, compared on the validation block-diffusion NELBO at step 300.
# 2. The better one continued to 1,976 steps (its pilot steps counted: the final model sees
#    exactly the twins' 8.09M training tokens), with a resumable checkpoint at step 1,676.
# 3. REMEDY=1: also the remedy branch: from the step-1,676 checkpoint, the last 300 steps on the AR
#    twin's greedy continuations of training-split prefixes (make_distill_data.py) with dParallel's
#    certainty-forcing term (--entropy-weight 2): build/train/block-distill, same budget of
#    optimizer steps and tokens. SHIP=distill exports that branch as the shipped model instead.
# Each run writes a resumable checkpoint every 100 steps; a stopped run resumes where it was
# (same data order, RNG and optimizer states). See models/README.md ("The block-diffusion twin").
#   [REMEDY=1] [SHIP=distill] scripts/train/train_block.sh [extra train_block.py flags for every run]
set -euo pipefail
cd "$(dirname "$0")/../.."
py=.venv/bin/python
t=build/train
[ -f $t/tokenizer.json ] || $py scripts/train/train_tokenizer.py --out $t/tokenizer.json
for init in scratch ar; do
  [ -f "$t/block-pilot-$init/summary.json" ] ||
    $py scripts/train/train_block.py --init "$init" --out-dir "$t/block-pilot-$init" \
      --stop-at 300 --threads 2 "$@"
done
best=$($py -c "
import json
v = {i: json.load(open(f'$t/block-pilot-{i}/summary.json'))['final_val_loss'] for i in ('scratch', 'ar')}
print(min(v, key=v.get))")
echo "pilot validation NELBO at step 300: $(grep -h final_val_loss $t/block-pilot-*/summary.json | tr -d '\n'); continuing '$best'" >&2
# A stage resumes its own periodic checkpoint (--save-every) if an earlier run was stopped.
stage() {  # stage OUT_DIR FROM_CHECKPOINT [flags]
  local dir=$1 from=$2
  shift 2
  [ -f "$dir/summary.json" ] && return 0
  [ -f "$dir/checkpoint.pt" ] && from=$dir/checkpoint.pt
  $py scripts/train/train_block.py --init "$best" --out-dir "$dir" --resume "$from" --threads 2 "$@"
}
stage $t/block-1676 "$t/block-pilot-$best/checkpoint.pt" --stop-at 1676 "$@"
stage $t/block $t/block-1676/checkpoint.pt "$@"
if [ "${REMEDY:-0}" = 1 ] || [ "${SHIP:-}" = distill ]; then
  [ -f $t/distill-ar.json ] ||
    $py scripts/train/make_distill_data.py --out $t/distill-ar.npy --tokenizer $t/tokenizer.json
  stage $t/block-distill $t/block-1676/checkpoint.pt --distill-stream $t/distill-ar.npy \
    --entropy-weight 2 "$@"
fi
ship=$t/block
[ "${SHIP:-}" = distill ] && ship=$t/block-distill
$py scripts/train/export_block.py $ship/checkpoint.pt \
  --gguf models/unmask-tinystories-block.gguf --hf models/unmask-tinystories-block-hf
