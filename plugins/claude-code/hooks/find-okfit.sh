# Sourced by the hook scripts: finds the okfit command line and defines
# run_okfit. OKFIT_CLI_CMD (a command line) wins, then the project's
# node_modules/.bin/okfit, then okfit on PATH. Never npx: a hook must
# answer within its timeout, not download.
okfit_root=${CLAUDE_PROJECT_DIR:-$(pwd)}
if [ -n "${OKFIT_CLI_CMD:-}" ]; then
  run_okfit() { eval "$OKFIT_CLI_CMD \"\$@\""; }
elif [ -x "$okfit_root/node_modules/.bin/okfit" ]; then
  okfit_bin=$okfit_root/node_modules/.bin/okfit
  run_okfit() { "$okfit_bin" "$@"; }
elif command -v okfit >/dev/null 2>&1; then
  run_okfit() { okfit "$@"; }
else
  run_okfit() {
    echo "okfit plugin: the okfit command line is not installed (npm install --save-dev @okfit/plugin, or put okfit on PATH); $okfit_hook skipped." >&2
    cat >/dev/null
    return 0
  }
fi
