#!/usr/bin/env bash
# Install warmloop with every extra into .venv, then lint, type-check and run the tests.
# The first install builds llama-cpp-python from source (about 6 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev]'
bash scripts/chromium.sh
.venv/bin/ruff check warmloop tests benchmarks
.venv/bin/ruff format --check warmloop tests benchmarks
.venv/bin/mypy
.venv/bin/pytest "$@"
