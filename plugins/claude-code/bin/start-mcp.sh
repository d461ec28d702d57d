#!/bin/sh
# Starts the okfit MCP server for Claude Code, for the project it runs in:
# the project's own install (node_modules/.bin/okfit-mcp), else okfit-mcp
# on PATH, else `npx --yes @okfit/mcp` after saying on stderr how to
# install it with the project's package manager. POSIX sh; no jq.
set -eu

ROOT=${CLAUDE_PROJECT_DIR:-$(pwd)}
OKFIT_PROJECT_DIR=$ROOT
export OKFIT_PROJECT_DIR

if [ -x "$ROOT/node_modules/.bin/okfit-mcp" ]; then
  exec "$ROOT/node_modules/.bin/okfit-mcp" "$@"
fi
if command -v okfit-mcp >/dev/null 2>&1; then
  exec okfit-mcp "$@"
fi

# The package manager: package.json's "packageManager" field wins, then
# the first lockfile found, else npm.
pm=
if [ -f "$ROOT/package.json" ]; then
  pm=$(sed -n 's/.*"packageManager"[[:space:]]*:[[:space:]]*"\([a-z]*\)@.*/\1/p' "$ROOT/package.json" | head -n 1)
  case $pm in npm|pnpm|yarn|bun) ;; *) pm= ;; esac
fi
if [ -z "$pm" ]; then
  if [ -f "$ROOT/pnpm-lock.yaml" ]; then pm=pnpm
  elif [ -f "$ROOT/bun.lock" ] || [ -f "$ROOT/bun.lockb" ]; then pm=bun
  elif [ -f "$ROOT/yarn.lock" ]; then pm=yarn
  else pm=npm
  fi
fi
case $pm in
  pnpm) install="pnpm add -D @okfit/plugin" ;;
  yarn) install="yarn add -D @okfit/plugin" ;;
  bun) install="bun add -d @okfit/plugin" ;;
  *) install="npm install --save-dev @okfit/plugin" ;;
esac

{
  echo "okfit plugin: okfit-mcp is not installed in this project."
  echo
  echo "Detected package manager: $pm"
  echo "Project directory: $ROOT"
  echo
  echo "Install it with:"
  echo "  $install"
  echo
  echo "Falling back to \`npx --yes @okfit/mcp\`, which will download it."
} >&2
exec npx --yes @okfit/mcp "$@"
