#!/usr/bin/env bash
# Compares the knowledge-store and project-mode figures of this checkout
# with those of another commit, on the same machine, in alternating rounds:
# a shared machine's speed moves between runs, so only figures measured
# side by side show whether a change made okfit slower.
#
#   scripts/bench-against.sh BASE [ROUNDS]
#
# BASE (a commit) is checked out once, detached, in bench/out/against/<sha>
# and built there (`okfit-bench` and okfit's binaries, release); then, for
# ROUNDS rounds (default 3), `okfit-bench` (validation of the standard
# shape), `okfit-bench-kb --writes`, `okfit-bench-mcp` and
# `okfit-bench-serve`, each at 500 and 5,000 concepts, run from BASE's tree
# and from this one, each writing its own data under its own bench/out.
# Each run's table goes to stdout, labelled `base` or `this`; compare
# medians across rounds.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $# -lt 1 || $# -gt 2 || ! ${2:-3} =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/bench-against.sh BASE [ROUNDS]" >&2
  exit 2
fi
sha=$(git rev-parse --verify --quiet "$1^{commit}") || {
  echo "bench-against: $1 is not a commit of this repository" >&2
  exit 2
}
rounds=${2:-3}
here=$(pwd)
base="$here/bench/out/against/$sha"

say() { printf '==> %s\n' "$*" >&2; }
export CARGO_INCREMENTAL=0

if [[ ! -d $base/.git && ! -f $base/.git ]]; then
  say "checking out ${sha:0:12} in bench/out/against/"
  mkdir -p "$(dirname "$base")"
  git clone --quiet --no-checkout "$here" "$base"
  git -C "$base" checkout --quiet --detach "$sha"
fi
for tree in "$base" "$here"; do
  say "building the benchmarks in $tree"
  (cd "$tree" && cargo build --release --quiet -p okfit-bench -p okfit --bins)
done

run() {
  local label=$1 tree=$2
  echo "== $label (${tree#"$here"/})"
  (cd "$tree" && target/release/okfit-bench --no-build --sizes 500,5000 --runs 11 2>&1 |
    grep -E '^okfit ')
  (cd "$tree" && target/release/okfit-bench-kb --sizes 500,5000 --writes 2>&1 | grep concepts)
  (cd "$tree" && target/release/okfit-bench-mcp --sizes 500,5000 2>&1 |
    grep -E 'spawn|list_concepts|get_concept|RSS')
  (cd "$tree" && target/release/okfit-bench-serve --sizes 500,5000 2>&1 | grep concepts)
}
for ((r = 1; r <= rounds; r++)); do
  echo "# round $r of $rounds"
  run base "$base"
  run this "$here"
done
