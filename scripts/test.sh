#!/usr/bin/env bash
# Builds and runs the whole test suite: C++ (GoogleTest, via ctest) and the Python reference checks
# (registered in ctest too). This is what CI runs (.ci/run).
#   scripts/test.sh          release build with warnings as errors (preset "ci"), then the
#                            README's release build through scripts/check_release.py
#   scripts/test.sh --asan   AddressSanitizer + UndefinedBehaviorSanitizer build (preset "asan")
#   scripts/test.sh --fuzz   the libFuzzer harnesses (preset "fuzz", clang): each over its seeds and
#                            regression inputs, then FUZZ_SECONDS (default 10) of fuzzing each
#   scripts/test.sh --all    ci, asan and fuzz
set -euo pipefail
cd "$(dirname "$0")/.."

presets=(ci)
fuzz=0
case "${1:-}" in
  --asan) presets=(asan) ;;
  --fuzz) presets=(); fuzz=1 ;;
  --all) presets=(ci asan); fuzz=1 ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--asan|--fuzz|--all]" >&2; exit 2 ;;
esac

scripts/install-deps.sh
for p in "${presets[@]}"; do
  echo "== test: preset $p ==" >&2
  cmake --workflow --preset "$p"
done
if [ "$fuzz" -eq 1 ]; then
  echo "== test: fuzz harnesses (scripts/fuzz.sh) ==" >&2
  scripts/fuzz.sh --regress
  scripts/fuzz.sh all "${FUZZ_SECONDS:-10}"
fi
# The binary of the README's own build (preset release, no test code in it) through the golden and
# conformance cases: a code-generation problem of that configuration shows up as a wrong token.
if [[ " ${presets[*]} " == *" ci "* ]]; then
  echo "== test: the README's release build (scripts/check_release.py) ==" >&2
  cmake --workflow --preset release
  .venv/bin/python scripts/check_release.py --bin build/release/bin/unmask
fi
