#!/usr/bin/env bash
# The GPU checks of the CUDA backend in one prepared script, for a machine with an NVIDIA GPU (sized to
# finish in a few minutes, the build included).
#
#   scripts/device-check.sh --prepare   here (a Debian machine with libgtest-dev): copies
#                                       GoogleTest's source to build/device-gtest, which the GPU
#                                       machine lacks; carry that folder there
#   scripts/device-check.sh             on the GPU machine: builds scripts/device (the CUDA
#                                       backend, its tests, the roofline program) into
#                                       build/device-check, runs `ctest -L gpu` and the roofline,
#                                       and writes device-check.md (date, card, test summary,
#                                       roofline table) and the logs into $OUT (or
#                                       build/device-check/out)
#
# From a session with the project's device tool: command scripts/device-check.sh, carrying
# build/device-gtest.
# Exit status: 0 when every GPU test passed; 1 when a test failed or the build broke; 2 without a
# GPU or without the GoogleTest source.
set -euo pipefail
cd "$(dirname "$0")/.."
gtest=build/device-gtest

if [ "${1:-}" = "--prepare" ]; then
  [ -f /usr/src/googletest/CMakeLists.txt ] || { echo "device-check: no /usr/src/googletest (apt install libgtest-dev)" >&2; exit 2; }
  rm -rf "$gtest" && mkdir -p build && cp -r /usr/src/googletest "$gtest"
  echo "device-check: GoogleTest source in $gtest ($(du -sh "$gtest" | cut -f1)); carry it to the GPU machine" >&2
  exit 0
fi
if [ $# -gt 0 ]; then
  case "$1" in -h|--help) ;; *) echo "device-check: unknown argument '$1'" >&2 ;; esac
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi

out=${OUT:-build/device-check/out}
mkdir -p "$out"
report=$out/device-check.md
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "device-check: no NVIDIA GPU here (nvidia-smi -L failed)" >&2
  exit 2
fi
[ -f "$gtest/CMakeLists.txt" ] || { echo "device-check: no $gtest: run scripts/device-check.sh --prepare where libgtest-dev is, and carry $gtest" >&2; exit 2; }

card=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)
{
  echo "## GPU check $(date -u +%Y-%m-%dT%H:%MZ): $card"
  echo
  echo "nvcc: $(nvcc --version | tail -1); host: $(nproc) cores; commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo
} > "$report"

echo "device-check: building (scripts/device, $(nproc) jobs)" >&2
start=$(date +%s)
status=0
if cmake -S scripts/device -B build/device-check -G Ninja -DUNMASK_GTEST_SOURCE="$PWD/$gtest" \
     > "$out/build.log" 2>&1 && cmake --build build/device-check -j "$(nproc)" >> "$out/build.log" 2>&1; then
  echo "Build: $(( $(date +%s) - start )) s." >> "$report"
else
  echo "Build: FAILED (build.log)." >> "$report"
  tail -30 "$out/build.log" >&2
  exit 1
fi

echo "device-check: ctest -L gpu" >&2
if (cd build/device-check && ctest -L gpu --output-on-failure --timeout 300) > "$out/ctest.log" 2>&1; then
  :
else
  status=1
fi
{
  echo
  echo "\`ctest -L gpu\`: $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -1)"
  grep -E '^[[:space:]]+[0-9]+ - .*\((Failed|Skipped|Timeout)\)' "$out/ctest.log" | sed 's/^[[:space:]]*/    /' || true
  echo
} >> "$report"
# nvidia-smi sees a GPU, so a skipped GPU test (the runtime found no device: driver mismatch,
# CUDA_VISIBLE_DEVICES) is a failure of this check, not a pass.
if grep -qE '\(Skipped\)' "$out/ctest.log"; then
  echo "GPU tests were skipped although nvidia-smi lists a GPU: this check FAILED." >> "$report"
  status=1
fi

echo "device-check: roofline" >&2
if build/device-check/bin/unmask_cuda_roofline --reps 10 --json "$out/roofline.json" > "$out/roofline.md" 2>> "$out/ctest.log"; then
  cat "$out/roofline.md" >> "$report"
else
  echo "roofline: FAILED" >> "$report"
  status=1
fi
cat "$report"
exit $status
