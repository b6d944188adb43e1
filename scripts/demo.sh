#!/usr/bin/env bash
# Install warmloop with the embedded local model into .venv and run an agent on the
# example workspace. The first install builds llama-cpp-python (about 6 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[local]'
.venv/bin/warmloop run "${1:-Which function in this project computes the order total?}" \
  --model local --workspace examples/workspace --max-steps 6
