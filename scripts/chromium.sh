#!/usr/bin/env bash
# Install headless Chromium and its driver from Debian when they are missing: the audit's
# HTML report is tested by rendering it there. Idempotent; needs root (CI) or sudo. When
# neither works it warns and exits 0, and the page test skips saying why.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  run=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  run=(sudo -n)
else
  echo "scripts/chromium.sh: not root and no sudo: install chromium and chromium-driver" \
    "yourself, or the HTML report test is skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! { "${run[@]}" apt-get update -qq &&
  "${run[@]}" apt-get install -y -qq --no-install-recommends chromium chromium-driver; }; then
  echo "scripts/chromium.sh: apt-get could not install chromium; the HTML report test is" \
    "skipped" >&2
fi
