#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests and benchmarks.
#
#   scripts/pg.sh start DIR   installs Debian's postgresql when it is missing
#                             (as root, with apt-get), creates a cluster in DIR
#                             on a free loopback port and prints its URL
#   scripts/pg.sh stop DIR    stops it (the files stay until DIR is removed)
#   scripts/pg.sh crash DIR   stops it at once, as a crash would (no checkpoint)
#   scripts/pg.sh restart DIR starts it again on its port
#
# As root the server runs as the postgres user (initdb refuses root).
set -euo pipefail

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'scripts/pg.sh: %s\n' "$*" >&2; exit 1; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: scripts/pg.sh start|stop DIR"

pgbin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }

as_pg=()
if [ "$(id -u)" = 0 ]; then as_pg=(runuser -u postgres --); fi

case "$cmd" in
start)
  if [ -z "$(pgbin)" ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      say "apt-get install postgresql"
      apt-get install -y --no-install-recommends postgresql >/dev/null 2>&1 \
        || { apt-get update >/dev/null 2>&1 \
             && apt-get install -y --no-install-recommends postgresql >/dev/null 2>&1; } \
        || die "could not install Debian's postgresql package"
    else
      die "PostgreSQL is not installed: install Debian's postgresql package (or run this as root)"
    fi
  fi
  bin=$(pgbin)
  [ -x "$bin/initdb" ] || die "no initdb under $bin"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "${as_pg[@]}" "$bin/initdb" -D "$dir/data" -U okfit --auth=trust -E UTF8 --locale=C.UTF-8 \
    >"$dir/initdb.log" 2>&1 || die "initdb failed: $(tail -3 "$dir/initdb.log")"
  "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=400" \
    start >/dev/null || die "the server did not start: $(tail -3 "$dir/log" 2>/dev/null)"
  echo "$port" >"$dir/port"
  echo "postgres://okfit@127.0.0.1:$port/postgres"
  ;;
stop)
  bin=$(pgbin)
  [ -n "$bin" ] && [ -d "$dir/data" ] || exit 0
  "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  ;;
crash)
  bin=$(pgbin)
  "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null \
    || die "pg_ctl stop -m immediate failed"
  ;;
restart)
  bin=$(pgbin)
  port=$(cat "$dir/port")
  "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=400" \
    start >/dev/null || die "the server did not start again: $(tail -3 "$dir/log" 2>/dev/null)"
  ;;
*)
  die "usage: scripts/pg.sh start|stop|crash|restart DIR"
  ;;
esac
