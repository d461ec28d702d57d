#!/bin/sh
# SessionStart: tells the agent where the project's OKF bundle is, the
# vocabulary it may use and the root index (`okfit hook session-start`
# prints Claude Code's additionalContext answer). Off with OKFIT_HOOKS=off
# or OKFIT_SESSION_HOOK=off. Always exits 0.
[ "${OKFIT_HOOKS:-}" = off ] && exit 0
[ "${OKFIT_SESSION_HOOK:-}" = off ] && exit 0
okfit_hook="the session-start orientation was"
. "$(dirname "$0")/find-okfit.sh"
run_okfit hook session-start || true
exit 0
