#!/usr/bin/env bash
# Builds the @okfit/mcp native addon and puts it into the platform package
# (npm/mcp-linux-x64-gnu). The version of every npm package is stamped from
# the workspace Cargo.toml, the one place it is kept.
#   scripts/build-node.sh            debug build (what the tests use), debug info stripped
#   scripts/build-node.sh --release  optimised build (what gets published and benchmarked)
set -euo pipefail
cd "$(dirname "$0")/.."

profile=debug
args=()
if [[ "${1:-}" == "--release" ]]; then
  profile=release
  args=(--release)
fi

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) target=linux-x64-gnu ;;
  *) echo "build-node: this script packages linux-x64-gnu only (got $(uname -s)-$(uname -m))" >&2; exit 1 ;;
esac

cargo build -p okfit-napi --locked "${args[@]}"
out="npm/mcp-${target}/okfit.${target}.node"
cp "target/${profile}/libokfit_napi.so" "$out"
if command -v strip >/dev/null 2>&1; then
  strip --strip-debug "$out"
fi

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
node - "$version" "$target" <<'JS'
const fs = require('node:fs');
const [version, target] = process.argv.slice(2);
for (const file of ['npm/mcp/package.json', `npm/mcp-${target}/package.json`]) {
  const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
  pkg.version = version;
  if (pkg.optionalDependencies) {
    for (const k of Object.keys(pkg.optionalDependencies)) pkg.optionalDependencies[k] = version;
  }
  fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + '\n');
}
JS
echo "build-node: $out ($(du -h "$out" | cut -f1)), version $version" >&2
