#!/usr/bin/env bash
# Runs every check and test of the repository on a fresh machine: installs
# what it needs (the Rust components), then formatting, lints and tests.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '==> %s\n' "$*" >&2; }

if command -v rustup >/dev/null 2>&1; then
  say "rust components (rustfmt, clippy)"
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi

say "cargo fmt --check"
cargo fmt --all -- --check

say "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

say "cargo test"
cargo test --workspace --locked
