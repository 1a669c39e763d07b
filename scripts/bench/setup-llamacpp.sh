#!/usr/bin/env bash
# Builds llama.cpp's library through the PyPI package llama-cpp-python (pinned) into .venv-llamacpp,
# for the benchmark scripts that measure llama.cpp beside unmask in the same run. Never a runtime
# dependency of unmask. Compiles llama.cpp from source (about 10-20 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/../.."
version=0.3.16
if .venv-llamacpp/bin/python -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$version')" 2>/dev/null; then
  exit 0
fi
echo "setup-llamacpp: building llama-cpp-python==$version (llama.cpp from source; takes a while)" >&2
rm -rf .venv-llamacpp
/usr/bin/python3 -m venv --system-site-packages .venv-llamacpp
CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_CURL=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 \
  .venv-llamacpp/bin/python -m pip install --disable-pip-version-check --no-cache-dir \
  "llama-cpp-python==$version"
.venv-llamacpp/bin/python -c "import llama_cpp; print('llama-cpp-python', llama_cpp.__version__)"
