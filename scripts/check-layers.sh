#!/usr/bin/env bash
# Checks that no module of a native crate imports one that imports it back
# (cargo-modules' --acyclic). Cycles between crates are refused by Cargo
# itself. Needs cargo-modules: cargo install cargo-modules --version 0.27.0 --locked
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo modules --version >/dev/null 2>&1; then
  echo "check-layers: cargo-modules is not installed (cargo install cargo-modules --version 0.27.0 --locked)" >&2
  exit 2
fi
status=0
for crate in okfit-core okfit-store okfit-knowledge okfit-tools okfit-mcp okfit-daemon okfit; do
  if cargo modules dependencies --package "$crate" --lib --acyclic >/dev/null 2>/tmp/check-layers.$$; then
    echo "check-layers: $crate: no module cycle" >&2
  else
    echo "check-layers: $crate: module cycle" >&2
    sed -n '1,40p' /tmp/check-layers.$$ >&2
    status=1
  fi
done
rm -f /tmp/check-layers.$$
exit "$status"
