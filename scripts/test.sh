#!/usr/bin/env bash
# Runs every check and test of the repository on a fresh machine: installs
# what it needs (the Rust components), then formatting, lints and tests.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '==> %s\n' "$*" >&2; }

# One build from scratch: incremental state would only double the size of
# target/, and line tables are all a failing test's backtrace needs.
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
export CARGO_PROFILE_TEST_DEBUG=line-tables-only
# Large folders' search caches (see README) go to a folder of this run's
# own, not the user's cache.
OKFIT_CACHE=$(mktemp -d "${TMPDIR:-/tmp}/okfit-test-cache.XXXXXX")
export OKFIT_CACHE

if command -v rustup >/dev/null 2>&1; then
  say "rust components (rustfmt, clippy)"
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
  say "rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
fi

say "cargo fmt --check"
cargo fmt --all -- --check

say "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

if rustc --print target-libdir --target wasm32-unknown-unknown >/dev/null 2>&1 \
  && [ -d "$(rustc --print target-libdir --target wasm32-unknown-unknown)" ]; then
  say "okfit-core builds for wasm32 (no I/O, no threads)"
  cargo build -p okfit-core --target wasm32-unknown-unknown --locked
else
  say "wasm32-unknown-unknown is not installed and could not be added; skipping the wasm32 build check"
fi

# The fuzz targets (fuzz/, a crate of its own) must keep compiling against
# the crates they drive; scripts/fuzz.sh runs them.
if rustup run nightly cargo --version >/dev/null 2>&1; then
  say "fuzz targets compile (cargo +nightly check, fuzz/)"
  cargo +nightly check --manifest-path fuzz/Cargo.toml --locked --bins
else
  say "the nightly toolchain is not installed: not checking that the fuzz targets compile (rustup toolchain install nightly)"
fi

# A throwaway PostgreSQL cluster for the PostgreSQL store's tests (Debian's
# postgresql package is installed when missing); stopped on exit.
pgdir=$(mktemp -d)
log=$(mktemp)
trap 'scripts/pg.sh stop "$pgdir"; rm -rf "$pgdir" "$log" "$OKFIT_CACHE"' EXIT
say "start PostgreSQL (scripts/pg.sh)"
OKFIT_TEST_POSTGRES=$(scripts/pg.sh start "$pgdir") \
  || { say "PostgreSQL could not be started: the PostgreSQL tests cannot run"; exit 1; }
# The fault tests crash and restart this cluster (scripts/pg.sh crash|restart).
OKFIT_TEST_PGDIR=$pgdir
export OKFIT_TEST_POSTGRES OKFIT_TEST_PGDIR
say "PostgreSQL at $OKFIT_TEST_POSTGRES"

say "cargo test"
status=0
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$log" || status=$?

# This repository's own bundle: every concept's generated stamp is current
# (`okfit sync` would write nothing), as `okfit validate` also requires.
say "okf/ is stamped (okfit sync --dry-run --only generated)"
stamps=$(target/debug/okfit sync --dry-run --only generated --format json) || status=1
if ! printf '%s' "$stamps" | grep -q '"generated":{"selected":true,"written":\[\]'; then
  say "okf/ has concepts whose generated stamp is stale; run okfit sync --only generated: $stamps"
  status=1
fi

# The official MCP TypeScript SDK client against the okfit-mcp that cargo
# test just built (node and npm come with this kind of machine).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  say "node and npm are needed for tests/node; install Node.js 20 or later" && exit 1
fi
say "npm ci (tests/node)"
(cd tests/node && npm ci --no-audit --no-fund --loglevel=error)
say "build @okfit/wasm (scripts/build-wasm.sh)"
scripts/build-wasm.sh 2>&1 | tee -a "$log" || status=$?
# The browser test drives Debian's Chromium with playwright-core.
if ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    say "apt-get install chromium (browser test)"
    apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 \
      || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; } \
      || { say "could not install chromium"; status=1; }
  else
    say "chromium is needed for the browser test: install Debian's chromium package" && status=1
  fi
fi
say "build the Node addon (scripts/build-node.sh)"
scripts/build-node.sh 2>&1 | tee -a "$log" || status=$?
say "node --test (tests/node)"
(cd tests/node && OKFIT_MCP_BIN="$PWD/../../target/debug/okfit-mcp" node --test 2>&1) | tee -a "$log" || status=$?

# One closing line over every test binary: "<passed> passed, <failed> failed".
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     /^# pass / { p += $3 } /^# fail / { f += $3 }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
