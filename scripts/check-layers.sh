#!/usr/bin/env bash
# Checks that no module of a crate imports one that imports it back.
# Cycles between crates are refused by Cargo itself; inside a crate,
# cargo-modules draws the "uses" edges between modules, and each module is
# counted with everything below it (a::b uses c counts as a uses c). Needs
# cargo-modules: cargo install cargo-modules --version 0.27.0 --locked
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo modules --version >/dev/null 2>&1; then
  echo "check-layers: cargo-modules is not installed (cargo install cargo-modules --version 0.27.0 --locked)" >&2
  exit 2
fi
status=0
for crate in okfit-core okfit-store okfit-knowledge okfit-tools okfit-mcp okfit-daemon okfit; do
  cargo modules dependencies --package "$crate" --lib \
    --no-externs --no-sysroot --no-owns --no-fns --no-traits --no-types 2>/dev/null \
    | python3 -c '
import re, sys
crate = sys.argv[1]
top = lambda n: "::".join(n.split("::")[:2])
edges = {}
for line in sys.stdin:
    m = re.match(r"\s*\"([^\"]+)\" -> \"([^\"]+)\" \[label=\"uses\"", line)
    if m:
        a, b = top(m.group(1)), top(m.group(2))
        # The crate root only declares modules and re-exports them.
        if a != b and "::" in a and "::" in b:
            edges.setdefault(a, set()).add(b)
cycles, seen = [], set()
def walk(n, path):
    for m in sorted(edges.get(n, ())):
        if m in path:
            cycles.append(path[path.index(m):] + [m])
        elif (n, m) not in seen:
            seen.add((n, m))
            walk(m, path + [m])
for n in sorted(edges):
    walk(n, [n])
if cycles:
    for c in sorted(set(" -> ".join(c) for c in cycles)):
        print(f"check-layers: {crate}: module cycle {c}", file=sys.stderr)
    sys.exit(1)
print(f"check-layers: {crate}: {sum(map(len, edges.values()))} module edges, no cycle", file=sys.stderr)
' "$crate" || status=1
done
exit "$status"
