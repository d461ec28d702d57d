#!/usr/bin/env bash
# Builds @okfit/wasm (npm/wasm) and the preview page's copy (wasm/preview/pkg):
# cargo build for wasm32-unknown-unknown, then wasm-bindgen at the pinned
# version (installed with cargo when missing; wasm-opt is not used).
set -euo pipefail
cd "$(dirname "$0")/.."

want=0.2.130
if command -v rustup >/dev/null 2>&1; then
  rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
fi
if ! command -v wasm-bindgen >/dev/null 2>&1 || [[ "$(wasm-bindgen --version)" != "wasm-bindgen $want" ]]; then
  echo "build-wasm: installing wasm-bindgen-cli $want (once; several minutes)" >&2
  # Not --locked: its lock file pins a webpki-roots that no longer resolves.
  cargo install wasm-bindgen-cli --version "$want" >&2
fi

cargo build -p okfit-wasm --target wasm32-unknown-unknown --profile wasm --locked
wasm=target/wasm32-unknown-unknown/wasm/okfit_wasm.wasm
rm -rf npm/wasm/web npm/wasm/node wasm/preview/pkg
wasm-bindgen --target web --remove-name-section --out-dir npm/wasm/web "$wasm"
wasm-bindgen --target nodejs --remove-name-section --out-dir npm/wasm/node "$wasm"
# The Node build is CommonJS inside an ESM package.
echo '{"type": "commonjs"}' > npm/wasm/node/package.json
mkdir -p wasm/preview/pkg
cp npm/wasm/web/okfit_wasm.js npm/wasm/web/okfit_wasm_bg.wasm wasm/preview/pkg/

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
node -e '
const fs = require("node:fs");
const f = "npm/wasm/package.json";
const pkg = JSON.parse(fs.readFileSync(f, "utf8"));
pkg.version = process.argv[1];
fs.writeFileSync(f, JSON.stringify(pkg, null, 2) + "\n");
' "$version"
raw=$(wc -c < npm/wasm/web/okfit_wasm_bg.wasm)
gz=$(gzip -9 -c npm/wasm/web/okfit_wasm_bg.wasm | wc -c)
echo "build-wasm: okfit_wasm_bg.wasm $raw bytes, $gz gzipped (budget 614400), version $version" >&2
if (( gz > 614400 )); then
  echo "build-wasm: the .wasm is over its 600 KB gzipped budget" >&2
  exit 1
fi
