"""Pseudo-relevance feedback (RM3-style) tried in the benchmark's process only (issue 35):
each question is searched once, the `PRF_TERMS` terms that weigh most in its top `PRF_DOCS`
results (each result's term shares, tf / length, weighted by its share of the top scores,
times idf; stop words and the query's own terms left out) are added to the query as words
seen in those results, and the search runs again with their weights scaled by `PRF_WEIGHT`.

  MC_BENCH_PATCH=benchmarks/prf_ab.py PRF_WEIGHT=0.2 .venv/bin/python benchmarks/locomo.py ...
"""

import math
import os
from collections import Counter

from miniclaw.entries.tokenizer import is_stop_word, token_spans, tokenize
from miniclaw.memory import MemoryStore
from miniclaw.search.scoring.bm25 import BM25Scorer

WEIGHT = float(os.environ.get("PRF_WEIGHT", "0.2"))
DOCS = int(os.environ.get("PRF_DOCS", "5"))
TERMS = int(os.environ.get("PRF_TERMS", "10"))
_expansion: set = set()

_weights = BM25Scorer.weights


def weights(self, terms, stats):
    out = _weights(self, terms, stats)
    return {t: w * WEIGHT if t in _expansion else w for t, w in out.items()}


BM25Scorer.weights = weights
_search = MemoryStore.search_memories


async def search_memories(self, query, *args, **kwargs):
    _expansion.clear()
    first = await _search(self, query, *args, **kwargs)
    top = first[:DOCS]
    if not top:
        return first
    asked = set(tokenize(query))
    total = sum(max(r.score, 0.0) for r in top) or 1.0
    share, word_of, df = Counter(), {}, Counter()
    for r in top:
        spans = list(token_spans(r.content))
        terms = [t for _, _, found in spans for t in found]
        for t in set(terms):
            df[t] += 1
        counts = Counter(terms)
        for start, end, found in spans:
            for t in found:
                word_of.setdefault(t, r.content[start:end].lower())
        for t, n in counts.items():
            share[t] += max(r.score, 0.0) / total * n / max(len(terms), 1)
    ranked = sorted((t for t in share if t not in asked and not is_stop_word(t)
                     and len(t) > 2 and not t.isdigit() and df[t] > 1),
                    key=lambda t: -share[t] * math.log(1 + DOCS / df[t]))
    chosen = ranked[:TERMS]
    if not chosen:
        return first
    _expansion.update(chosen)
    try:
        return await _search(self, query + " " + " ".join(word_of[t] for t in chosen),
                             *args, **kwargs)
    finally:
        _expansion.clear()


MemoryStore.search_memories = search_memories
