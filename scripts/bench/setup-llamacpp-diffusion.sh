#!/usr/bin/env bash
# Builds llama.cpp's `llama-diffusion-cli` from the llama.cpp source vendored in the PyPI sdist of
# llama-cpp-python (pinned version and SHA-256), for benchmarks that run llama.cpp's diffusion decoder
# beside unmask in the same run. Never a runtime dependency of unmask.
#
# Usage:
#   scripts/bench/setup-llamacpp-diffusion.sh          # prints the binary's path on stdout
#   .venv/bin/python scripts/bench/llamacpp_diffusion.py -r 5   # runs it on the twin (see there why
#                                                               # the prompt needs a template-free copy)
#
# What it does (each step is skipped when its result is already there, so reruns are cheap):
#   1. pip download llama-cpp-python==0.3.16 --no-binary llama-cpp-python (the sdist, ~50 MB; pip
#      verifies the pinned SHA-256 with --require-hashes; about a minute, as pip prepares the sdist's
#      metadata) into build/llamacpp-diffusion/dl/
#   2. extracts it to build/llamacpp-diffusion/src/ and checks that the vendored llama.cpp has
#      examples/diffusion and knows the `llada` architecture (fails naming what is missing)
#   3. configures with CMake (Release, -DGGML_NATIVE=ON -DLLAMA_CURL=OFF, examples on, tests/server
#      off, static libs) and builds only the llama-diffusion-cli and llama-simple targets with 2
#      jobs (about 6 minutes on 2 busy cores) into build/llamacpp-diffusion/build/, linked to
#      build/llamacpp-diffusion/bin/
# Needs: cmake >= 3.14, a C++17 compiler, python3 with pip (the project's .venv or /usr/bin/python3).
# Rebuild from scratch: rm -rf build/llamacpp-diffusion
set -euo pipefail
cd "$(dirname "$0")/../.."
version=0.3.16
sha256=34ed0f9bd9431af045bb63d9324ae620ad0536653740e9bb163a2e1fcb973be6
root=build/llamacpp-diffusion
sdist=$root/dl/llama_cpp_python-$version.tar.gz
src=$root/src/llama_cpp_python-$version/vendor/llama.cpp
bin=$root/bin/llama-diffusion-cli
simple=$root/bin/llama-simple  # greedy AR decoding, for scripts/bench/check_llamacpp_greedy.py
stamp=$root/bin/.built-from
log() { echo "setup-llamacpp-diffusion: $*" >&2; }

if [[ -x $bin && -x $simple && -f $stamp &&
      $(cat "$stamp") == "llama-cpp-python==$version sha256:$sha256" ]]; then
  log "already built: $bin (llama-cpp-python==$version)"
  echo "$bin"
  exit 0
fi

python=/usr/bin/python3
[[ -x .venv/bin/python ]] && python=.venv/bin/python
mkdir -p "$root/dl" "$root/src" "$root/bin"

if [[ -f $sdist ]] && echo "$sha256  $sdist" | sha256sum --check --status; then
  log "sdist present, SHA-256 ok: $sdist"
else
  log "downloading the sdist llama-cpp-python==$version from PyPI (pip also prepares its metadata)"
  rm -f "$sdist"
  req=$root/dl/requirements.txt
  echo "llama-cpp-python==$version --hash=sha256:$sha256" > "$req"
  "$python" -m pip download --disable-pip-version-check --no-cache-dir --no-deps \
    --no-binary llama-cpp-python --require-hashes -r "$req" -d "$root/dl" >&2
  echo "$sha256  $sdist" | sha256sum --check >&2
fi

if [[ ! -f $src/CMakeLists.txt ]]; then
  log "extracting $sdist -> $root/src/"
  rm -rf "$root/src/llama_cpp_python-$version"
  tar -xzf "$sdist" -C "$root/src"
  # the sdist keeps a submodule's .git file that points outside the tree; drop it so git (and
  # llama.cpp's build-info step) does not follow it
  rm -f "$src/.git"
fi

# The vendored llama.cpp must have the diffusion example and the LLaDA architecture.
missing=()
[[ -f $src/examples/diffusion/diffusion-cli.cpp ]] || missing+=("examples/diffusion/diffusion-cli.cpp")
grep -q 'add_subdirectory(diffusion)' "$src/examples/CMakeLists.txt" ||
  missing+=("add_subdirectory(diffusion) in examples/CMakeLists.txt")
grep -q '"llada"' "$src/src/llama-arch.cpp" || missing+=('the "llada" architecture in src/llama-arch.cpp')
if ((${#missing[@]})); then
  log "the llama.cpp vendored in llama-cpp-python==$version lacks: ${missing[*]}"
  exit 1
fi
log "vendored llama.cpp has examples/diffusion and the llada architecture"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
log "configuring $src -> $root/build (Release, GGML_NATIVE=ON, LLAMA_CURL=OFF, examples on)"
cmake -S "$src" -B "$root/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_TOOLS=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >&2
log "building llama-diffusion-cli and llama-simple with 2 jobs (about 6 minutes on 2 cores)"
cmake --build "$root/build" --target llama-diffusion-cli llama-simple -j 2 >&2
ln -sf ../build/bin/llama-diffusion-cli "$bin"
ln -sf ../build/bin/llama-simple "$simple"
echo "llama-cpp-python==$version sha256:$sha256" > "$stamp"
log "built $bin"
echo "$bin"
