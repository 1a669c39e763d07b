#!/usr/bin/env bash
# Trains the MoE twins and exports them (models/README.md, "The MoE twins"; not stored in the
# repository, 22.6 MB each):
#   build/train/unmask-tinystories-moe-llada.gguf  masked diffusion, llama.cpp's `llada-moe`
#   build/train/unmask-tinystories-moe-ar.gguf     next token, llama.cpp's `qwen3moe`
#   build/train/unmask-tinystories-moe-block.gguf  block diffusion (block 4), unmask's `sdar-moe`
# 1. The diffusion and the AR twin side by side (1 thread each): the twins' recipe (tokenizer,
#    data, data order, batch, optimizer, warm-up and cosine) over 19 epochs (988 steps, half the
#    dense twins' 1,976), each FFN replaced by 16 experts of width 256, top-2 (the dense twins'
#    active FFN width of 512), plus the Switch load-balancing loss (weight 0.01).
# 2. The block twin: the AR twin adapted to block diffusion (BD3-LM objective, block 4) for 300
#    steps of its own warm-up and cosine (train_block.py --init moe-ar), as the block twin was
#    adapted from the AR twin.
# 3. Exports, then scripts/train/check_moe_twins.py (GGUF = PyTorch = numpy reference; unmask's
#    greedy generations = the reference decoders').
# About 45 + 25 min on 2 cores. A finished stage (summary.json) is not run again.
#   scripts/train/train_moe_twins.sh [extra train.py flags for stage 1]
set -euo pipefail
cd "$(dirname "$0")/../.."
py=.venv/bin/python
t=build/train
[ -f $t/tokenizer.json ] || $py scripts/train/train_tokenizer.py --out $t/tokenizer.json
moe=(--experts 16 --top-k 2 --expert-ffn 256 --aux-weight 0.01 --epochs 19)
pids=()
for objective in llada ar; do
  if [ ! -f "$t/moe-$objective/summary.json" ]; then
    $py scripts/train/train.py --objective "$objective" --out-dir "$t/moe-$objective" \
      --tokenizer $t/tokenizer.json --threads 1 "${moe[@]}" "$@" \
      2> "$t/moe-$objective.log" &
    pids+=($!)
    echo "training the MoE $objective twin (progress: $t/moe-$objective.log)" >&2
  fi
done
for p in "${pids[@]}"; do wait "$p"; done
[ -f $t/moe-block/summary.json ] ||
  $py scripts/train/train_block.py --init moe-ar --ar-checkpoint $t/moe-ar/checkpoint.pt \
    --out-dir $t/moe-block --block-length 4 --epochs 5.77 --warmup 30 --threads 2
for objective in llada ar block; do
  $py scripts/train/export_moe.py "$t/moe-$objective/checkpoint.pt" \
    --gguf "$t/unmask-tinystories-moe-$objective.gguf"
done
[ -x build/ci/bin/unmask ] && check=(--unmask build/ci/bin/unmask) || check=()
$py scripts/train/check_moe_twins.py "${check[@]}"
