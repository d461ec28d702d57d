"""Summarise results.csv / results.pkl into tables (markdown on stdout).

Reads <repo>/bench/out/semantic/results.csv, results.pkl (from exp.py) and cache/ (from embed.py).
"""
import collections
import csv
import json
import os
import pickle
import re
import sys

sys.dont_write_bytecode = True  # keep bench/semantic free of __pycache__
import numpy as np

from common import CACHE, OUT, load_all, require_corpora, require_file, tokens

require_corpora()
for f in ("results.csv", "results.pkl"):
    require_file(os.path.join(OUT, f), "run exp.py first")
for f in ("timings.json", "words.json", "wp.npy"):
    require_file(os.path.join(CACHE, f), "run embed.py first")

C = ["acme_retail", "crypto_bitcoin", "databricks", "ga4", "stackoverflow"]
R = collections.defaultdict(dict)
for r in csv.DictReader(open(os.path.join(OUT, "results.csv"))):
    R[r["system"]][(r["corpus"], r["kind"])] = (float(r["MRR@8"]), float(r["hit@8"]), float(r["hit@1"]))
rows = pickle.load(open(os.path.join(OUT, "results.pkl"), "rb"))
T = json.load(open(os.path.join(CACHE, "timings.json")))

FAM = [
    ("plain BM25", r"^bm25$"),
    ("okfit (product)", r"^okfit$"),
    ("dense MiniLM alone", r"^dense_[^|+]*(\+\w+)?$"),
    ("static vectors alone", r"^static_[^|]*$"),
    ("BM25 + dense, RRF", r"^bm25\+dense.*\|rrf$"),
    ("BM25 + dense, convex", r"^bm25\+dense.*\|cvx[\d.]+$"),
    ("BM25 top30 reranked by BM25+dense", r"^bm25\+dense.*\|top30$"),
    ("BM25 + static (RRF or convex)", r"^bm25\+static.*\|(rrf|cvx[\d.]+)$"),
    ("BM25 top30 reranked by BM25+static", r"^bm25\+static.*\|top30$"),
    ("okfit + dense (RRF or convex)", r"^okfit\+dense.*\|(rrf|cvx[\d.]+)$"),
    ("okfit top30 reranked by okfit+dense", r"^okfit\+dense.*\|top30$"),
    ("okfit + static (RRF or convex)", r"^okfit\+static.*\|(rrf|cvx[\d.]+)$"),
    ("okfit top30 reranked by okfit+static", r"^okfit\+static.*\|top30$"),
]


def fam_members(rx):
    return [s for s in R if re.search(rx, s)]


def dd(s, c):
    return R[s][(c, "described")][0] - R["bm25"][(c, "described")][0]


def crit(s):
    """target criterion: worst per-corpus described MRR@8 gain over BM25, then pooled all-question MRR@8"""
    return (min(dd(s, c) for c in C), R[s][("every corpus", "all")][0])


def fmt_cell(s, c, i):
    return "/".join(f"{R[s][(c, k)][i]:.2f}" for k in ("named", "described", "all"))


best = []
for fam, rx in FAM:
    m = fam_members(rx)
    b = max(m, key=crit)
    bp = max(m, key=lambda s: R[s][("every corpus", "all")][0])
    best.append((fam, b, bp, len(m)))

print("## MRR@8 (named / described / all) — best member of each family by the target criterion\n")
print("| family | system | " + " | ".join(C + ["every corpus"]) + " |")
print("|---|---|" + "---|" * 6)
for fam, b, _, n in best:
    print(f"| {fam} ({n}) | `{b}` | " + " | ".join(fmt_cell(b, c, 0) for c in C + ["every corpus"]) + " |")
print("\n## hit@8 (named / described / all), same systems\n")
print("| family | " + " | ".join(C + ["every corpus"]) + " |")
print("|---|" + "---|" * 6)
for fam, b, _, n in best:
    print(f"| {fam} | " + " | ".join(fmt_cell(b, c, 1) for c in C + ["every corpus"]) + " |")
print("\n## Described-question MRR@8 minus plain BM25 (target: >= +0.12 on every corpus); min hit@8 over corpora (all questions, target >= 0.98)\n")
print("| system | " + " | ".join(C) + " | every corpus | worst | min hit@8 (all q) |")
print("|---|" + "---|" * 8)
for fam, b, _, n in best:
    d = [dd(b, c) for c in C]
    print(f"| `{b}` | " + " | ".join(f"{x:+.3f}" for x in d) + f" | {dd(b, 'every corpus'):+.3f} | {min(d):+.3f} | "
          f"{min(R[b][(c, 'all')][1] for c in C):.3f} |")
print("\n## Best of each family by pooled all-question MRR@8 instead\n")
print("| family | system | every corpus all MRR@8 | named | described | worst described Δ |")
print("|---|---|---|---|---|---|")
for fam, _, bp, n in best:
    e = R[bp]
    print(f"| {fam} | `{bp}` | {e[('every corpus', 'all')][0]:.3f} | {e[('every corpus', 'named')][0]:.3f} | "
          f"{e[('every corpus', 'described')][0]:.3f} | {min(dd(bp, c) for c in C):+.3f} |")

# how many systems reach the target at all
allsys = list(R)
ok = [s for s in allsys if min(dd(s, c) for c in C) >= 0.12 - 1e-9]
print(f"\nSystems (of {len(allsys)}) with described Δ >= +0.12 on every corpus: {len(ok)} {ok[:5]}")
for c in C:
    mx = max(allsys, key=lambda s: dd(s, c))
    print(f"- max described Δ on {c} over all systems: {dd(mx, c):+.3f} ({mx})")

# leave-one-corpus-out selection: choose config on the other 4 corpora (macro mean described MRR@8, then macro all)
print("\n## Leave-one-corpus-out: config chosen on the other four corpora, described Δ vs BM25 on the held-out one\n")
print("| family | " + " | ".join(C) + " |")
print("|---|" + "---|" * 5)
for fam, rx in FAM[2:]:
    m = fam_members(rx)
    cells = []
    for h in C:
        tr = [c for c in C if c != h]
        s = max(m, key=lambda s: (np.mean([R[s][(c, "described")][0] for c in tr]),
                                  np.mean([R[s][(c, "all")][0] for c in tr])))
        cells.append(f"{dd(s, h):+.3f} `{s}`")
    print(f"| {fam} | " + " | ".join(cells) + " |")

# static table effects
print("\n## Static-vector ablations (BM25 + static, convex 0.5, full text): every-corpus all-q MRR@8 / worst described Δ\n")
for tab in ("wq", "wc", "wp"):
    line = []
    for dim in ("raw384", "c384", "pca128f", "pca128i8", "pca64f", "pca64i8"):
        for w in ("idf", "sif"):
            s = f"bm25+static_{tab}_{dim}_{w}_full|cvx0.5"
            line.append(f"{dim}/{w} {R[s][('every corpus', 'all')][0]:.3f}/{min(dd(s, c) for c in C):+.3f}")
    print(f"- {tab}: " + "; ".join(line))

# headline: plain BM25 against the best BM25 + dense form, pooled over every corpus
print("\n## Headline: every corpus pooled (MRR@8 all / named / described; hit@1 all; min hit@8 over corpora)\n")
for s in ("bm25", "okfit", "bm25+dense_doc|cvx0.5", "bm25+dense_doc|cvx0.7|top30"):
    e = R[s]
    print(f"- `{s}`: {e[('every corpus', 'all')][0]:.3f} / {e[('every corpus', 'named')][0]:.3f} / "
          f"{e[('every corpus', 'described')][0]:.3f}; hit@1 {e[('every corpus', 'all')][2]:.2f}; "
          f"min hit@8 {min(e[(c, 'all')][1] for c in C):.3f}")

# embedding costs, summed over corpora from embed.py's timings
print("\n## Embedding time (seconds, full model, from cache/timings.json)\n")
for what in ("docs", "chunks", "head", "q"):
    tot = sum(T.get(f"dense_{what}_{c}", 0.0) for c in C)
    print(f"- dense {what}: {tot:.1f} s in total (databricks {T.get(f'dense_{what}_databricks', 0.0):.1f} s)")
print(f"- chunks: {sum(T.get(f'n_chunks_{c}', 0) for c in C)}")
print(f"- static word table: {T.get('n_words')} words in {T.get('static_words', 0.0):.1f} s; "
      f"WordPiece table: {T.get('n_wp')} entries in {T.get('static_wp', 0.0):.1f} s")

# static table sizes: int8 rows, plus a float32 scale per row and (word table) the words, one per line
words = json.load(open(os.path.join(CACHE, "words.json")))
nwp = np.load(os.path.join(CACHE, "wp.npy"), mmap_mode="r").shape[0]
wbytes = sum(len(w.encode()) + 1 for w in words)
print("\n## Static table sizes at int8 (MB = 10^6 bytes)\n")
for d in (64, 128):
    print(f"- word table, {d} dims: {len(words) * d / 1e6:.2f} MB; "
          f"{(len(words) * (d + 4) + wbytes) / 1e6:.2f} MB with per-row f32 scales and the word strings")
for d in (64, 128):
    print(f"- WordPiece table, {d} dims: {nwp * d / 1e6:.2f} MB (+4 B/row for scales)")
corpus_words, db_words, q_words = set(), set(), set()
for c in load_all():
    for d in c["docs"]:
        t = tokens(d["raw"])
        corpus_words.update(t)
        if c["name"] == "databricks":
            db_words.update(t)
    for q in c["questions"]:
        q_words.update(tokens(q["q"]))
only_q = sorted(q_words - corpus_words)
print(f"- word table rows: {len(words)}; in the corpora {len(corpus_words)} (databricks {len(db_words)}); "
      f"only in the questions {len(only_q)} ({', '.join(only_q)})")
print(f"- corpus words that are pure numbers: {sum(w.isdigit() for w in corpus_words)}; "
      f"longer than 20 characters: {sum(len(w) > 20 for w in corpus_words)}")

print("\n## timings\n")
print(json.dumps(T))
