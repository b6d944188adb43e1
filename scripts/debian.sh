#!/usr/bin/env bash
# Install the Debian packages the tests use, when missing: headless Chromium and its driver
# (the audit's HTML report is tested by rendering it there) and nginx-light (the router the
# affinity benchmark runs; its config is tested with `nginx -t`). Idempotent; needs root
# (CI) or sudo. When neither works it warns and exits 0, and those tests skip saying why.
set -euo pipefail
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  run=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  run=(sudo -n)
else
  echo "scripts/debian.sh: not root and no sudo: install ${missing[*]} yourself, or the" \
    "tests that need them are skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! { "${run[@]}" apt-get update -qq &&
  "${run[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; }; then
  echo "scripts/debian.sh: apt-get could not install ${missing[*]}; the tests that need" \
    "them are skipped" >&2
fi
