#!/usr/bin/env bash
# Start (installing if needed) a throwaway PostgreSQL server for the session store tests and
# print its URL on stdout. Idempotent and quick when the server already runs: the tests
# create and drop their own databases in it. Installs the Debian package `postgresql` with
# apt-get when no server binaries are found (CI runs as root). Exits non-zero when no server
# can be started; the PostgreSQL tests then skip and say why.
set -euo pipefail
root="${WARMLOOP_PG_ROOT:-/tmp/warmloop-postgres}"
port="${WARMLOOP_PG_PORT:-55432}"
data="$root/data"
url="postgresql://postgres@/postgres?host=$root&port=$port"

# The newest installed server: a directory with pg_ctl (the client package alone has none).
find_bin() {
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/pg_ctl" ]; then echo "$dir"; return; fi
  done
}
bin="$(find_bin)"
if [ -z "$bin" ] && command -v pg_ctl >/dev/null; then bin="$(dirname "$(command -v pg_ctl)")"; fi
if [ -z "$bin" ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "postgres.sh: no PostgreSQL server binaries and cannot install them (needs root and apt-get)" >&2
    exit 1
  fi
  echo "postgres.sh: installing the Debian package postgresql" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
  bin="$(find_bin)"
fi

# The server refuses to run as root: run it as the package's `postgres` user then.
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if as_owner "$bin/pg_ctl" status -D "$data" >/dev/null 2>&1; then
  echo "$url"
  exit 0
fi
mkdir -p "$root"
if [ "$(id -u)" = 0 ]; then chown postgres: "$root"; fi
chmod 755 "$root"
if [ ! -f "$data/PG_VERSION" ]; then
  as_owner "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --no-sync >/dev/null
fi
as_owner "$bin/pg_ctl" start -w -t 60 -D "$data" -l "$root/server.log" \
  -o "-c listen_addresses='' -c unix_socket_directories='$root' -p $port -c max_connections=200" \
  >/dev/null || { tail -n 20 "$root/server.log" >&2; exit 1; }
echo "$url"
