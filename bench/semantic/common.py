"""Shared paths, data loading, tokenisation, BM25 and metrics for the semantic-ranking experiment.

Paths (all relative to this file, so the scripts run from any directory):
  question sets  <repo>/bench/search/*.json
  corpora        $OKFIT_CORPORA, else <repo>/../shared/corpora (as okfit-bench-search)
  outputs        <repo>/bench/out/semantic/ (git-ignored); embeddings in its cache/
  okfit rankings <repo>/bench/out/semantic/okfit_rankings.jsonl, written by
                 target/release/okfit-bench-search --rankings bench/out/semantic/okfit_rankings.jsonl
"""
import glob
import json
import math
import os
import re
import sys

import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BENCH = os.path.join(REPO, "bench", "search")
CORPORA = os.environ.get("OKFIT_CORPORA") or os.path.join(os.path.dirname(REPO), "shared", "corpora")
OUT = os.path.join(REPO, "bench", "out", "semantic")
CACHE = os.path.join(OUT, "cache")
OKFIT = os.path.join(OUT, "okfit_rankings.jsonl")
TOK = re.compile(r"[a-z0-9]+")
CUTOFF = 8


def tokens(text):
    return TOK.findall(text.lower())


def split_frontmatter(raw):
    fm, body = {}, raw
    if raw.startswith("---"):
        m = re.match(r"^---\s*\n(.*?)\n---\s*\n?(.*)$", raw, re.S)
        if m:
            try:
                fm = yaml.safe_load(m.group(1)) or {}
                if not isinstance(fm, dict):
                    fm = {}
            except Exception:
                fm = {}
                for key in ("title", "description"):
                    mm = re.search(rf"^{key}:\s*(.*)$", m.group(1), re.M)
                    if mm:
                        fm[key] = mm.group(1).strip().strip("'\"")
            body = m.group(2)
    return fm, body


def fail(msg):
    """Say what is missing and stop with a non-zero status."""
    print(f"{os.path.basename(sys.argv[0])}: {msg}", file=sys.stderr)
    sys.exit(1)


def require_corpora():
    if not os.path.isdir(CORPORA):
        fail(f"the corpora directory {CORPORA} is absent (set OKFIT_CORPORA): nothing measured")


def require_file(path, how):
    if not os.path.exists(path):
        fail(f"{path} is missing: {how}")


def load_all():
    """Return list of corpus dicts: name, root, docs (list of dicts), questions."""
    require_corpora()
    out = []
    for f in sorted(glob.glob(os.path.join(BENCH, "*.json"))):
        d = json.load(open(f))
        root = os.path.join(CORPORA, d["path"])
        if not os.path.isdir(root):
            fail(f"the corpus folder {root} is absent (set OKFIT_CORPORA): nothing measured")
        paths = []
        for p in glob.glob(os.path.join(root, "**", "*.md"), recursive=True):
            if os.path.basename(p) in ("index.md", "log.md"):
                continue
            paths.append(os.path.relpath(p, root))
        paths.sort()
        docs = []
        for rel in paths:
            raw = open(os.path.join(root, rel), encoding="utf-8", errors="replace").read()
            fm, body = split_frontmatter(raw)
            title = str(fm.get("title") or "").strip()
            desc = str(fm.get("description") or "").strip()
            docs.append(dict(path=rel, raw=raw, title=title, desc=desc, body=body.strip()))
        pset = set(paths)
        for q in d["questions"]:
            for a in q["answers"]:
                assert a in pset, (d["corpus"], a)
        out.append(dict(name=d["corpus"], root=root, docs=docs, questions=d["questions"]))
    return out


def doc_text(doc):
    """title + description + body (what the semantic systems see)."""
    return "\n".join(x for x in (doc["title"], doc["desc"], doc["body"]) if x)


class BM25:
    def __init__(self, doc_token_lists, k1=1.2, b=0.75):
        self.k1, self.b = k1, b
        self.N = len(doc_token_lists)
        self.tf = []
        self.dl = np.array([len(t) for t in doc_token_lists], dtype=float)
        self.avgdl = self.dl.mean()
        df = {}
        for toks in doc_token_lists:
            c = {}
            for t in toks:
                c[t] = c.get(t, 0) + 1
            self.tf.append(c)
            for t in c:
                df[t] = df.get(t, 0) + 1
        self.df = df
        self.idf = {t: math.log(1 + (self.N - n + 0.5) / (n + 0.5)) for t, n in df.items()}

    def scores(self, qtoks):
        s = np.zeros(self.N)
        norm = self.k1 * (1 - self.b + self.b * self.dl / self.avgdl)
        for t in set(qtoks):  # query terms counted once
            if t not in self.idf:
                continue
            idf = self.idf[t]
            for i, c in enumerate(self.tf):
                f = c.get(t)
                if f:
                    s[i] += idf * f * (self.k1 + 1) / (f + norm[i])
        return s


def rank_from_scores(scores, paths):
    """Descending score, ties broken by path (deterministic)."""
    order = sorted(range(len(paths)), key=lambda i: (-scores[i], paths[i]))
    return order


def metrics(ranking_paths, answers, k=CUTOFF):
    ans = set(answers)
    rr = 0.0
    for i, p in enumerate(ranking_paths[:k]):
        if p in ans:
            rr = 1.0 / (i + 1)
            break
    return dict(rr=rr, hit1=1.0 if ranking_paths and ranking_paths[0] in ans else 0.0, hit8=1.0 if rr > 0 else 0.0)
