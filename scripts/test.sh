#!/usr/bin/env bash
# Install warmloop with every extra into .venv, then lint, type-check and run the tests.
# The first install builds llama-cpp-python from source (about 6 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# llama-cpp-python built for this CPU without AMX (scripts/llama.sh says why); every pip
# below, the extras' clean venvs included, takes it from there.
PIP_FIND_LINKS="$(bash scripts/llama.sh .venv/bin/python)"
export PIP_FIND_LINKS
.venv/bin/python -m pip install --quiet --no-deps --force-reinstall "$PIP_FIND_LINKS"/llama_cpp_python-*.whl
.venv/bin/python -m pip install --quiet -e '.[dev]'
# The benchmarks' own dependencies (tiktoken, matplotlib): never a library extra.
.venv/bin/python -m pip install --quiet -r benchmarks/requirements.txt
bash scripts/debian.sh
.venv/bin/ruff check warmloop tests benchmarks
.venv/bin/ruff format --check warmloop tests benchmarks
.venv/bin/mypy
# Each extra (none, anthropic, gemini, local) in a clean venv selects and renders with its
# providers; once per CI run (about two minutes on a warm pip cache). Skip it locally with
# WARMLOOP_SKIP_EXTRAS=1.
if [[ "${WARMLOOP_SKIP_EXTRAS:-}" != 1 ]]; then
  bash scripts/extras.sh
fi
# A PostgreSQL server for the session store tests (they skip, saying why, if it cannot start).
if url="$(bash scripts/postgres.sh)"; then
  export WARMLOOP_TEST_POSTGRES="$url"
else
  echo "warning: PostgreSQL could not be started; the PostgreSQL session tests will skip" >&2
fi
# The docs site, strict: a broken link, a missing page or reference fails (output in site/).
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet
# The tests in two tiers, each given this script's arguments: the default one (plain `pytest`,
# a few minutes), then the slow one (`-m slow`: real processes, the real engine, the whole
# scenario benchmark). The slow tier runs even when the default one failed. Exit status 5 says the arguments selected no
# test of that tier: a failure only when neither tier ran a test.
fast=0
.venv/bin/pytest "$@" || fast=$?
slow=0
.venv/bin/pytest -m slow "$@" || slow=$?
for status in "$fast" "$slow"; do
  if [[ $status != 0 && $status != 5 ]]; then
    exit "$status"
  fi
done
if [[ $fast == 5 && $slow == 5 ]]; then
  exit 5
fi
