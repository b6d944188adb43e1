#!/usr/bin/env bash
# Install the real coding agents the `clients` test tier drives (tests/proxy/test_real_clients.py)
# into .clients/ (ignored), from the npm registry, at the versions that tier was tested with.
# Idempotent: a version already installed is kept. Prints the bin dir (.clients/node_modules/.bin).
# Fails loudly when npm or an install fails: CI must not run the tier without its clients.
set -euo pipefail
cd "$(dirname "$0")/.."
PINNED=(
  "@anthropic-ai/claude-code@2.1.337"
  "@openai/codex@0.171.0"
  "opencode-ai@1.18.33"
)
prefix="$PWD/.clients"
if ! command -v npm >/dev/null; then
  echo "scripts/clients.sh: npm is not on PATH; install Node.js 20 and npm 10 (the clients tier needs them)" >&2
  exit 1
fi
mkdir -p "$prefix"
missing=()
for spec in "${PINNED[@]}"; do
  name="${spec%@*}"
  version="${spec##*@}"
  manifest="$prefix/node_modules/$name/package.json"
  have=""
  if [[ -f "$manifest" ]]; then
    have="$(node -p "require(process.argv[1]).version" "$manifest")"
  fi
  if [[ "$have" != "$version" ]]; then
    missing+=("$spec")
  fi
done
if ((${#missing[@]})); then
  # No audit, no funding notice, no update check: the registry is the only host asked.
  if ! npm install --prefix "$prefix" --no-audit --no-fund --no-update-notifier --loglevel=error \
    "${missing[@]}" >&2; then
    echo "scripts/clients.sh: npm install ${missing[*]} failed (see above); the clients tier cannot run" >&2
    exit 1
  fi
fi
echo "$prefix/node_modules/.bin"
