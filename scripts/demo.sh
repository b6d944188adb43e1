#!/usr/bin/env bash
# Install warmloop with the embedded local model into .venv and ask it a question about the
# example workspace (pass another question as the first argument). The first install builds
# llama-cpp-python (about 6 minutes on 2 cores); afterwards run .venv/bin/warmloop directly.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# llama-cpp-python built for this CPU without AMX (scripts/llama.sh says why); every pip
# below, the extras' clean venvs included, takes it from there.
PIP_FIND_LINKS="$(bash scripts/llama.sh .venv/bin/python)"
export PIP_FIND_LINKS
.venv/bin/python -m pip install --quiet --no-deps --force-reinstall "$PIP_FIND_LINKS"/llama_cpp_python-*.whl
.venv/bin/python -m pip install --quiet -e '.[local]'
.venv/bin/warmloop run "${1:-Which function computes the order total?}" \
  --model local --workspace examples/workspace --max-steps 6
