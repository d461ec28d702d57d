#!/usr/bin/env bash
# Builds the @okfit/mcp native addon with @napi-rs/cli (pinned in
# npm/mcp/package-lock.json; installed there with npm ci when missing or
# stale). `napi build` also writes the package's loader and types,
# npm/mcp/index.js and npm/mcp/index.d.ts, generated from the #[napi] items
# of napi/src/lib.rs. `napi create-npm-dirs` lays out the platform packages
# (npm/mcp/npm/<platform>/, one per target of package.json's "napi" field),
# and this machine's addon is copied into its own.
#
# The version of every npm package is stamped from the workspace
# Cargo.toml, the one place it is kept: into npm/mcp/package.json, from
# which create-npm-dirs writes the platform packages' package.json, and
# into npm/plugin/package.json (with its @okfit/mcp dependency).
#
# Only linux-x64-gnu is built here; .github/workflows/release.yml builds
# every target on a runner of its own and publishes.
#   scripts/build-node.sh             debug build (what the tests use), debug info stripped
#   scripts/build-node.sh --release   optimised build (what gets published and benchmarked)
#   scripts/build-node.sh --npm-dirs  versions and platform packages only, no build
set -euo pipefail
cd "$(dirname "$0")/.."

mode=debug
build=(--platform --manifest-path ../../napi/Cargo.toml --output-dir .)
case "${1:-}" in
  "") ;;
  --release) mode=release; build+=(--release) ;;
  --npm-dirs) mode=npm-dirs ;;
  *) echo "usage: scripts/build-node.sh [--release | --npm-dirs]" >&2; exit 64 ;;
esac

pkg=npm/mcp
if [[ ! -x "$pkg/node_modules/.bin/napi" || "$pkg/package-lock.json" -nt "$pkg/node_modules/.package-lock.json" ]]; then
  echo "build-node: npm ci ($pkg: @napi-rs/cli)" >&2
  (cd "$pkg" && npm ci --no-audit --no-fund --loglevel=error)
fi
napi() { (cd "$pkg" && node_modules/.bin/napi "$@"); }

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
node - "$version" "$pkg/package.json" npm/plugin/package.json <<'JS'
const fs = require('node:fs');
const [version, ...files] = process.argv.slice(2);
for (const file of files) {
  const before = fs.readFileSync(file, 'utf8');
  const pkg = JSON.parse(before);
  pkg.version = version;
  // napi prepublish adds one per platform package at release; @okfit/plugin
  // depends on the @okfit/mcp of the same release.
  for (const k of Object.keys(pkg.optionalDependencies || {})) pkg.optionalDependencies[k] = version;
  if (pkg.dependencies && pkg.dependencies['@okfit/mcp']) pkg.dependencies['@okfit/mcp'] = version;
  const after = JSON.stringify(pkg, null, 2) + '\n';
  if (after !== before) fs.writeFileSync(file, after);
}
JS
napi create-npm-dirs >/dev/null
if [[ "$mode" == npm-dirs ]]; then
  echo "build-node: platform packages in $pkg/npm, version $version" >&2
  exit 0
fi

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) target=linux-x64-gnu ;;
  *) echo "build-node: this script builds linux-x64-gnu only (got $(uname -s)-$(uname -m)); the release workflow builds the others" >&2; exit 1 ;;
esac

napi build "${build[@]}" -- --locked
out="$pkg/okfit.${target}.node"
if command -v strip >/dev/null 2>&1; then
  strip --strip-debug "$out"
fi
cp "$out" "$pkg/npm/${target}/"
echo "build-node: $out ($(du -h "$out" | cut -f1)), $pkg/npm/${target}, version $version ($mode)" >&2
