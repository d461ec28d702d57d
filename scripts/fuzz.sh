#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS each (default 60) and prints,
# per target, how many inputs it executed and whether it crashed. Exits 1
# when any target crashed (the input is under fuzz/artifacts/<target>/).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Needs the nightly toolchain; installs cargo-fuzz when it is missing.
# Builds into fuzz/target, apart from the workspace's target directory.
# The working corpus is fuzz/corpus/<target> (seeded from the committed
# fuzz/seeds/<target>); logs are under fuzz/target/fuzz-logs/.
# NICE=10 runs the fuzzers at a lower priority.
set -uo pipefail

cd "$(dirname "$0")/.."

SECONDS_EACH=${1:-60}
case $SECONDS_EACH in
'' | *[!0-9]*)
	echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2
	exit 2
	;;
esac
shift $(($# > 0 ? 1 : 0))

ALL=(concept config dsn mcp_args transact daemon_route yaml_fast markdown_plain)
if [ $# -gt 0 ]; then
	TARGETS=("$@")
else
	TARGETS=("${ALL[@]}")
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
	echo "installing cargo-fuzz" >&2
	cargo install cargo-fuzz --locked || exit 1
fi

RUN=()
if [ -n "${NICE:-}" ]; then
	RUN=(nice -n "$NICE")
fi

TARGET_DIR=fuzz/target
LOGS=$TARGET_DIR/fuzz-logs
mkdir -p "$LOGS"

echo "building the fuzz targets" >&2
if ! "${RUN[@]}" cargo +nightly fuzz build --target-dir "$TARGET_DIR" >"$LOGS/build.log" 2>&1; then
	tail -n 40 "$LOGS/build.log" >&2
	echo "fuzz build failed (full log: $LOGS/build.log)" >&2
	exit 1
fi

failed=0
summary=()
for t in "${TARGETS[@]}"; do
	if [ ! -f "fuzz/fuzz_targets/$t.rs" ]; then
		echo "no fuzz target $t (expected one of: ${ALL[*]})" >&2
		exit 2
	fi
	corpus=fuzz/corpus/$t
	seeds=fuzz/seeds/$t
	mkdir -p "$corpus" "fuzz/artifacts/$t"
	if [ -d "$seeds" ]; then
		cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true
	else
		seeds=
	fi
	dict=()
	if [ -f "fuzz/dicts/$t.dict" ]; then
		dict=("-dict=fuzz/dicts/$t.dict")
	fi
	marker=$(mktemp)
	log=$LOGS/$t.log
	echo "fuzzing $t for ${SECONDS_EACH}s (log: $log)" >&2
	"${RUN[@]}" cargo +nightly fuzz run --target-dir "$TARGET_DIR" "$t" "$corpus" ${seeds:+"$seeds"} -- \
		-max_total_time="$SECONDS_EACH" -rss_limit_mb=4096 -timeout=60 \
		-print_final_stats=1 "${dict[@]}" >"$log" 2>&1
	rc=$?
	execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+$')
	if [ -z "$execs" ]; then
		execs=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')
	fi
	new=$(find "fuzz/artifacts/$t" -type f -newer "$marker" 2>/dev/null | sort | tr '\n' ' ')
	rm -f "$marker"
	if [ "$rc" -eq 0 ]; then
		status=ok
	else
		status="CRASHED (exit $rc) ${new:-see $log}"
		failed=1
	fi
	line=$(printf '%-13s %12s executions  %s' "$t" "${execs:-?}" "$status")
	echo "$line" >&2
	summary+=("$line")
done

echo
printf '%s\n' "${summary[@]}"
exit "$failed"
