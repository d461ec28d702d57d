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
# The server speaks TLS with a certificate for 127.0.0.1 (only) issued by a
# throwaway CA, DIR/tls/ca.pem; the role okfit_tls may connect over TLS
# only, so a test can tell TLS was spoken.
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

# Installs a Debian package when a command is missing (root only).
need() {
  command -v "$1" >/dev/null 2>&1 && return 0
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    say "apt-get install $2"
    apt-get install -y --no-install-recommends "$2" >/dev/null 2>&1 \
      || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends "$2" >/dev/null 2>&1; } \
      || die "could not install Debian's $2 package"
  else
    die "$1 is not installed: install Debian's $2 package (or run this as root)"
  fi
}

# A CA and a server certificate for 127.0.0.1 in $1/tls.
certificates() {
  need openssl openssl
  local t="$1/tls"
  mkdir -p "$t"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
    -subj "/CN=okfit test CA" -keyout "$t/ca.key" -out "$t/ca.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    >/dev/null 2>&1 || die "openssl could not make the test CA"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/CN=127.0.0.1" -keyout "$t/server.key" -out "$t/server.csr" >/dev/null 2>&1 \
    || die "openssl could not make the server key"
  printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n' >"$t/server.ext"
  openssl x509 -req -in "$t/server.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" -CAcreateserial \
    -days 30 -extfile "$t/server.ext" -out "$t/server.pem" >/dev/null 2>&1 \
    || die "openssl could not sign the server certificate"
  chmod 600 "$t/server.key"
  if [ "$(id -u)" = 0 ]; then chown -R postgres: "$t"; fi
  chmod 644 "$t/ca.pem"
}

# The server's options: loopback only, TLS, room for many connections.
options() {
  printf '%s' "-c listen_addresses=127.0.0.1 -p $2 -k $1 -c fsync=off -c max_connections=400"
  printf '%s' " -c ssl=on -c ssl_cert_file=$1/tls/server.pem -c ssl_key_file=$1/tls/server.key"
}

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
  certificates "$dir"
  # okfit_tls connects over TLS or not at all.
  { echo "hostnossl all okfit_tls all reject"; cat "$dir/data/pg_hba.conf"; } >"$dir/pg_hba.new"
  cat "$dir/pg_hba.new" >"$dir/data/pg_hba.conf" && rm -f "$dir/pg_hba.new"
  "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -o "$(options "$dir" "$port")" \
    start >/dev/null || die "the server did not start: $(tail -3 "$dir/log" 2>/dev/null)"
  "$bin/psql" -q -h 127.0.0.1 -p "$port" -U okfit -d postgres \
    -c "CREATE ROLE okfit_tls LOGIN SUPERUSER" >/dev/null || die "could not create the role okfit_tls"
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
  "${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -o "$(options "$dir" "$port")" \
    start >/dev/null || die "the server did not start again: $(tail -3 "$dir/log" 2>/dev/null)"
  ;;
*)
  die "usage: scripts/pg.sh start|stop|crash|restart DIR"
  ;;
esac
