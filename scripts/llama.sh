#!/usr/bin/env bash
# Build llama-cpp-python's wheel once for this machine's CPU, without Intel AMX, and print the
# folder that holds it (for pip's --find-links; the scripts export it as PIP_FIND_LINKS).
#
# Why: llama-cpp-python compiles llama.cpp with -march=native, and on a CPU that lists AMX
# (amx_tile, amx_int8, amx_bf16) ggml then runs AMX tile instructions, which a kernel or
# hypervisor that has not granted the process AMX state answers with SIGILL: the embedded
# model died with "Illegal instruction" on its first token on such a machine. The rest of
# -march=native (AVX-512 included) is kept. The wheel is native code, so its folder is named
# by the CPU's feature flags: a machine with other flags builds its own. pip's own wheel cache
# is bypassed (it would hand back a wheel built with other flags); the first build takes
# about 4-6 minutes on 2 cores, later calls only print the folder.
#
#   bash scripts/llama.sh [PYTHON]    # PYTHON: the interpreter whose pip builds (.venv's)
set -euo pipefail
python="${1:-.venv/bin/python}"
version=0.3.36
flags="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
cpu="$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | sha256sum | cut -c1-12)"
folder="${XDG_CACHE_HOME:-$HOME/.cache}/warmloop/llama-wheels/$version-noamx-$cpu"
if ! compgen -G "$folder/llama_cpp_python-$version-*.whl" >/dev/null; then
  mkdir -p "$folder"
  echo "scripts/llama.sh: building llama-cpp-python $version for this CPU (4-6 minutes the first time)" >&2
  build="$(mktemp -d "${TMPDIR:-/tmp}/warmloop-llama.XXXXXX")"
  trap 'rm -rf "$build"' EXIT
  CMAKE_ARGS="-DCMAKE_C_FLAGS='$flags' -DCMAKE_CXX_FLAGS='$flags'" \
    "$python" -m pip wheel --quiet --no-deps --no-cache-dir --no-binary llama-cpp-python \
    --wheel-dir "$build" "llama-cpp-python==$version" >&2
  mv "$build"/llama_cpp_python-"$version"-*.whl "$folder"/
fi
echo "$folder"
