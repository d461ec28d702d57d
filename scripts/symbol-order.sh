#!/usr/bin/env bash
# Regenerates native/okfit.order, the order in which the release okfit and
# okfit-mcp binaries lay out their functions (see native/build.rs): the
# functions that run on a typical load, hottest first. It runs, under
# valgrind's callgrind, `okfit serve` answering searches, gets, snapshots,
# manifests, history and a write over its socket; `okfit-mcp` in project
# mode answering every bundle tool; and `okfit validate`, each on a
# generated 500-concept bundle.
#
# Run it after a dependency or toolchain update (function names carry a
# hash of their crate's version and features, so an old file matches fewer
# of them; the build still succeeds, with the memory gain lost). Needs
# valgrind (apt-get install valgrind) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "symbol-order: valgrind is not installed" >&2; exit 2; }
# Built on their own, as users build them: built beside another package,
# shared crates may get more features and with them other function names.
cargo build --release --locked -p okfit-bench --bin okfit-gen
cargo build --release --locked -p okfit --bins
bin=$PWD/target/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# A command, not a function: run in the background, `$!` is valgrind itself.
grind=(valgrind --tool=callgrind --demangle=no)

"$bin/okfit-gen" --concepts 500 --out "$work/p" >/dev/null

# okfit-mcp in project mode: every bundle tool, then validation.
ids=$(cd "$work/p/okf" && ls area-000 | head -5 | sed 's/\.md$//')
{
  echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"order","version":"1"}}}'
  echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  echo '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
  n=3
  for id in $ids; do
    for call in \
      '{"name":"list_concepts","arguments":{}}' \
      "{\"name\":\"get_concept\",\"arguments\":{\"id\":\"area-000/$id\"}}" \
      "{\"name\":\"get_neighbors\",\"arguments\":{\"id\":\"area-000/$id\"}}" \
      '{"name":"stale_report","arguments":{}}' \
      '{"name":"validate_bundle","arguments":{}}'; do
      echo "{\"jsonrpc\":\"2.0\",\"id\":$n,\"method\":\"tools/call\",\"params\":$call}"
      n=$((n + 1))
    done
  done
  echo '{"jsonrpc":"2.0","id":99,"method":"resources/list"}'
  sleep 2
} | OKFIT_PROJECT_DIR="$work/p" "${grind[@]}" --callgrind-out-file="$work/cg.mcp" "$bin/okfit-mcp" >/dev/null 2>&1

"${grind[@]}" --callgrind-out-file="$work/cg.validate" "$bin/okfit" validate "$work/p" >/dev/null 2>&1 || true

# okfit serve on a store tenant, driven over its socket by the CLI.
"$bin/okfit" put --data "$work/data" --tenant t --bundle b "$work/p/okf" >/dev/null
sock=$work/s.sock
"${grind[@]}" --callgrind-out-file="$work/cg.serve" "$bin/okfit" serve --data "$work/data" --socket "$sock" >/dev/null 2>&1 &
serve=$!
for _ in $(seq 600); do [ -S "$sock" ] && break; sleep 0.1; done
c="okf+unix://$sock?tenant=t"
until "$bin/okfit" snapshot -c "$c" >/dev/null 2>&1; do sleep 0.2; done
for q in "cache index" "how are concepts linked" "store write conflict" "validation error in frontmatter"; do
  "$bin/okfit" search -c "$c" "$q" >/dev/null
done
for id in $ids; do "$bin/okfit" get -c "$c" "$id" >/dev/null || true; done
"$bin/okfit" manifest -c "$c" >/dev/null 2>&1
"$bin/okfit" history -c "$c" >/dev/null
"$bin/okfit" write -c "$c" --create b notes/order.md < "$work/p/okf/area-000/$(echo "$ids" | head -1).md" >/dev/null 2>&1
"$bin/okfit" search -c "$c" "note" >/dev/null
kill -INT "$serve"
wait "$serve" || true

python3 - "$work" > native/okfit.order <<'EOF'
import collections, pathlib, re, sys
# Per load (the daemon first, then project mode, then validation), the
# functions of the okfit executables that it ran and no earlier load did,
# by their own instruction count, hottest first: each load's code is one
# contiguous run.
seen = set()
for load in ("serve", "mcp", "validate"):
    cost = collections.Counter()
    names, objs, fn, ob, skip = {}, {}, None, None, False
    for line in (pathlib.Path(sys.argv[1]) / f"cg.{load}").read_text(errors="replace").splitlines():
        m = re.match(r"^(c?)(fn|ob)=\((\d+)\)(?: (.*))?", line)
        if m:
            table = names if m[2] == "fn" else objs
            if m[4]:
                table[m[3]] = m[4].strip()
            if not m[1]:
                if m[2] == "fn":
                    fn = table[m[3]]
                else:
                    ob = table[m[3]]
            continue
        if line.startswith("calls="):
            skip = True
            continue
        if line[:1] in "0123456789+-*" and fn and ob and re.search(r"/okfit(-mcp)?$", ob):
            if skip:
                skip = False
                continue
            parts = line.split()
            if len(parts) >= 2:
                cost[fn] += int(parts[1])
    for name, _ in cost.most_common():
        if name not in seen:
            seen.add(name)
            print(name)
EOF
found=$(nm "$bin/okfit" | awk '{print $NF}' | sort -u | comm -12 - <(sort -u native/okfit.order) | wc -l)
echo "symbol-order: native/okfit.order lists $(wc -l < native/okfit.order) functions ($found in this okfit)" >&2
