#!/usr/bin/env bash
# Runs the libFuzzer harnesses of fuzz/ (clang 14, ASan + UBSan; preset "fuzz").
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...]   one harness for SECONDS
#   scripts/fuzz.sh all SECONDS                          every harness, SECONDS each
#   scripts/fuzz.sh --regress                             every harness over its regression inputs
#                                                         (fuzz/regressions/TARGET) and seeds only
#   scripts/fuzz.sh --list                                the harnesses
# The corpus grows in build/fuzz/corpus/TARGET across runs (seeded from the project's files by
# scripts/fuzz_seeds.py); crashes, timeouts and out-of-memory inputs land in
# build/fuzz/artifacts/TARGET, and the run's log in build/fuzz/logs. A run ends with a one-line
# summary: executions, executions/s, corpus size, coverage (edges), crashes. Exit status 1 when a
# harness found a crash (the input is named), 0 otherwise. UNMASK_FUZZ_NO_BUILD=1 skips the build
# (a long run while the tree is being edited).
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(gguf_fuzz safetensors_fuzz hf_config_fuzz llama2c_fuzz tokenizer_fuzz hf_tokenizer_fuzz
         chat_template_fuzz grammar_fuzz openai_request_fuzz hub_fuzz)
# Largest input per harness: the seeds' size (model files, tokenizer.json) bounds it.
declare -A max_len=([gguf_fuzz]=600000 [safetensors_fuzz]=450000 [hf_tokenizer_fuzz]=250000
                    [chat_template_fuzz]=16384 [openai_request_fuzz]=16384 [grammar_fuzz]=8192
                    [tokenizer_fuzz]=4096 [hf_config_fuzz]=16384 [llama2c_fuzz]=8192
                    [hub_fuzz]=16384)
# A JSON dictionary helps the harnesses whose input is JSON.
declare -A dict=([openai_request_fuzz]=json [hf_config_fuzz]=json [hf_tokenizer_fuzz]=json [hub_fuzz]=json
                 [chat_template_fuzz]=jinja [grammar_fuzz]=gbnf)

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }
[ $# -ge 1 ] || usage
case "$1" in
  --list) printf '%s\n' "${targets[@]}"; exit 0 ;;
  -h|--help) usage 0 ;;
esac

if [ "${UNMASK_FUZZ_NO_BUILD:-0}" = 1 ]; then
  # Long runs beside ongoing edits: fuzz the binaries already built instead of rebuilding.
  echo "fuzz: UNMASK_FUZZ_NO_BUILD=1: the harnesses as built (build/fuzz/bin)" >&2
else
  echo "fuzz: building the harnesses (preset fuzz, clang 14)" >&2
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export TMPDIR=$scratch  # the harnesses' scratch folders (hf_config_fuzz, hf_tokenizer_fuzz)

status=0
run_one() {  # target seconds [flags...]
  local t=$1 secs=$2
  shift 2
  local bin=build/fuzz/bin/$t
  [ -x "$bin" ] || { echo "fuzz: no harness $t (scripts/fuzz.sh --list)" >&2; exit 2; }
  local corpus=build/fuzz/corpus/$t seeds=build/fuzz/seeds/$t art=build/fuzz/artifacts/$t
  mkdir -p "$corpus" "$art" build/fuzz/logs
  .venv/bin/python scripts/fuzz_seeds.py "$t" "$seeds"
  local log
  log=build/fuzz/logs/$t-$(date -u +%Y%m%dT%H%M%S).log
  local extra=()
  if [ -n "${dict[$t]:-}" ]; then extra+=("-dict=fuzz/dicts/${dict[$t]}.dict"); fi
  echo "fuzz: $t for ${secs} s (log $log)" >&2
  local rc=0
  "$bin" "$corpus" "$seeds" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -max_len="${max_len[$t]}" -print_final_stats=1 -artifact_prefix="$art/" "${extra[@]}" "$@" \
    >"$log" 2>&1 || rc=$?
  local execs cov corp
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}' | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')
  corp=$(ls "$corpus" | wc -l)
  local per_s=$(( ${execs:-0} / (secs > 0 ? secs : 1) ))
  if [ $rc -ne 0 ]; then
    status=1
    echo "fuzz: $t FOUND A PROBLEM (exit $rc):" >&2
    grep -E 'ERROR: |SUMMARY: |Test unit written to|fuzz invariant broken' "$log" | head -8 >&2
  fi
  echo "fuzz: $t: ${execs:-0} executions (${per_s}/s), corpus $corp inputs, coverage ${cov:-?} edges, $( [ $rc -eq 0 ] && echo 0 || echo 1) crashes" >&2
}

case "$1" in
  --regress)
    # Every harness over its seeds and regression inputs, nothing mutated (CI's short pass adds
    # seconds of fuzzing on top: see scripts/test.sh --fuzz).
    for t in "${targets[@]}"; do
      mkdir -p build/fuzz/seeds
      .venv/bin/python scripts/fuzz_seeds.py "$t" "build/fuzz/seeds/$t"
      echo "fuzz: $t over its seeds and regression inputs" >&2
      build/fuzz/bin/$t -runs=0 "build/fuzz/seeds/$t" >"$scratch/$t.log" 2>&1 ||
        { status=1; tail -20 "$scratch/$t.log" >&2; }
    done ;;
  all)
    [ $# -ge 2 ] || usage
    for t in "${targets[@]}"; do run_one "$t" "$2"; done ;;
  *)
    [ $# -ge 2 ] || usage
    run_one "$@" ;;
esac
exit $status
