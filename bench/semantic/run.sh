#!/usr/bin/env bash
# Re-runs the semantic-ranking experiment from the repository root:
# okfit's rankings, embeddings, evaluation, tables, query latency.
# Everything it writes goes to bench/out/semantic/ (git-ignored).
#
#   bash bench/semantic/run.sh
#
# Needs target/release/okfit-bench-search (build it first:
# cargo build --release -p okfit-bench --bin okfit-bench-search), python3 >= 3.11
# (or PYTHON=...), and the corpora in $OKFIT_CORPORA or ../shared/corpora.
# The first run creates a venv in bench/out/semantic/venv and installs
# requirements.txt into it (about 1 GB, mostly torch and its CUDA libraries).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="$repo/bench/out/semantic"
venv="$out/venv"
corpora="${OKFIT_CORPORA:-$repo/../shared/corpora}"
bin="$repo/target/release/okfit-bench-search"

if [ ! -d "$corpora" ]; then
    echo "run.sh: the corpora directory $corpora is absent (set OKFIT_CORPORA): nothing measured" >&2
    exit 1
fi
if [ ! -x "$bin" ]; then
    echo "run.sh: $bin is missing; build it first:" >&2
    echo "  cargo build --release -p okfit-bench --bin okfit-bench-search" >&2
    exit 1
fi

mkdir -p "$out"
if [ ! -x "$venv/bin/python" ]; then
    python="${PYTHON:-python3}"
    if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        echo "run.sh: $python is older than Python 3.11, which torch 2.15 needs (set PYTHON)" >&2
        exit 1
    fi
    echo "== creating $venv"
    "$python" -m venv "$venv"
fi
echo "== installing requirements.txt into $venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"

cd "$repo"
export PYTHONDONTWRITEBYTECODE=1
py="$venv/bin/python"

echo "== okfit-bench-search --rankings"
"$bin" --rankings "$out/okfit_rankings.jsonl" | tee "$out/okfit_table.md"

echo "== embed.py (cached in $out/cache; delete it to embed again)"
"$py" "$here/embed.py" 2>&1 | tee "$out/embed.log"

echo "== exp.py"
"$py" "$here/exp.py" 2>&1 | tee "$out/exp.log"

echo "== report.py -> $out/tables.md"
"$py" "$here/report.py" > "$out/tables.md"

echo "== latency.py -> $out/latency.txt"
"$py" "$here/latency.py" | tee "$out/latency.txt"

echo "== done: tables in $out/tables.md"
