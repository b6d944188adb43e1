#!/usr/bin/env bash
# Build warmloop's sdist and wheel as a release would (`python -m build`: the wheel from the
# sdist), check them as the package index would (`twine check`) and that they hold the
# library only (scripts/dist_contents.py). Then install the wheel with each extra (none,
# anthropic, gemini, local) into its own clean venv, select and render with that extra's
# providers and run the README's first example from it (scripts/extras_smoke.py), so a
# missing or undeclared dependency fails here rather than for a user after `pip install`.
# Kept fast: the project is built once; no pip bootstrap per venv (the project venv's pip
# installs into each); llama-cpp-python comes from the wheel scripts/llama.sh built for this
# CPU, every other wheel from pip's cache, so nothing is compiled; the four installs run side
# by side.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
pip=(.venv/bin/python -m pip)
PIP_FIND_LINKS="${PIP_FIND_LINKS:-$(bash scripts/llama.sh .venv/bin/python)}"
export PIP_FIND_LINKS
work="$(mktemp -d "${TMPDIR:-/tmp}/warmloop-extras.XXXXXX")"
trap 'rm -rf "$work"' EXIT
.venv/bin/python -m build --quiet --outdir "$work/dist" "$root" >"$work/build.log" 2>&1 ||
  { grep -v '^WARNING: Location' "$work/build.log" >&2; exit 1; }
.venv/bin/python -m twine --no-color check --strict "$work"/dist/*
.venv/bin/python scripts/dist_contents.py "$work/dist"
wheel="$(ls "$work"/dist/warmloop-*.whl)"

check() {
  local extra="$1" venv="$work/$1" spec="$wheel"
  [[ "$extra" != none ]] && spec="warmloop[$extra] @ file://$wheel"
  python3 -m venv --without-pip "$venv"
  "${pip[@]}" --python "$venv/bin/python" install --quiet --disable-pip-version-check "$spec"
  # From outside the checkout, so the installed package is tested, not the source tree.
  (cd "$work" && env -u PYTHONPATH "$venv/bin/python" "$root/scripts/extras_smoke.py" "$extra")
}

pids=()
for extra in none anthropic gemini local; do
  check "$extra" >"$work/$extra.log" 2>&1 &
  pids+=("$!")
done
failed=0
for i in "${!pids[@]}"; do
  extra=(none anthropic gemini local)
  name="${extra[$i]}"
  if wait "${pids[$i]}"; then
    grep '^ok:' "$work/$name.log" | sed "s/^/extras [$name] /"
  else
    echo "extras [$name] FAILED:" >&2
    grep -v '^WARNING: Location' "$work/$name.log" >&2 || true
    failed=1
  fi
done
[[ "$failed" == 0 ]] && echo "extras: none, anthropic, gemini and local each install, select their providers and run the first example"
exit "$failed"
