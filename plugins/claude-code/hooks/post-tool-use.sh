#!/bin/sh
# PostToolUse (Write|Edit): validates the concept just written; a file
# with conformance errors blocks with each error, a clean file gets no
# answer (`okfit hook post-tool-use` reads Claude Code's JSON on stdin).
# Off with OKFIT_HOOKS=off or OKFIT_VALIDATE_HOOK=off. Always exits 0.
[ "${OKFIT_HOOKS:-}" = off ] && exit 0
[ "${OKFIT_VALIDATE_HOOK:-}" = off ] && exit 0
okfit_hook="checking the written file was"
. "$(dirname "$0")/find-okfit.sh"
run_okfit hook post-tool-use || true
exit 0
