#!/usr/bin/env bash
# Builds and runs the whole test suite: C++ (GoogleTest, via ctest) and the Python reference checks
# (registered in ctest too). This is what CI runs (.ci/run).
#   scripts/test.sh          release build with warnings as errors (preset "ci")
#   scripts/test.sh --asan   AddressSanitizer + UndefinedBehaviorSanitizer build (preset "asan")
#   scripts/test.sh --all    both
set -euo pipefail
cd "$(dirname "$0")/.."

presets=(ci)
case "${1:-}" in
  --asan) presets=(asan) ;;
  --all) presets=(ci asan) ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--asan|--all]" >&2; exit 2 ;;
esac

scripts/install-deps.sh
for p in "${presets[@]}"; do
  echo "== test: preset $p ==" >&2
  cmake --workflow --preset "$p"
done
