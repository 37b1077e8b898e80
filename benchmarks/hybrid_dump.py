"""Dump, per question of a dev set, every entry's scores by part (BM25 by term, cosine), its
neighbours, dates, length, turn and vector, and the hybrid search's candidates: fusion
variants are then tried offline in seconds (hybrid_variants.py's offline table; the analysis
of where hybrid's misses are). Not part of the product. The dump is large (LoCoMo's ~1 GB:
each question holds its conversation's vectors).

Run (from the repo root): nice .venv/bin/python benchmarks/hybrid_dump.py locomo \
    ../shared/data/locomo/locomo-dev.json /tmp/my-vectors.sqlite3 /tmp/locomo.pkl [N]
"""

from __future__ import annotations

import asyncio
import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

OUT: list = []
SPANS: dict = {}


def patch() -> None:
    import numpy as np

    import retrieval
    from miniclaw.search import ranker
    from miniclaw.date_cue import named_dates
    from miniclaw.index.derived import DerivedData
    from miniclaw.semantic import model as embedding
    from miniclaw.search.neighbours import MAX_GAP_S
    from miniclaw.semantic import retriever as semantic  # stored vectors are bfloat16: `_unpacked`

    write = retrieval.write_conversation

    async def spans_kept(store, conversation):
        out = await write(store, conversation)
        SPANS.clear()
        SPANS.update(out)
        return out

    retrieval.write_conversation = spans_kept
    search_source = ranker.MemoryRanker._search_source
    score_all = ranker.MemoryRanker._score_all
    OWN: list = []

    def own_lists(self, mode, found, lookups):
        OWN[:] = [dict(scores) for scores, _ in found]  # each retriever's, before completion
        return score_all(self, mode, found, lookups)

    ranker.MemoryRanker._score_all = own_lists

    def kept(self, source, mode, request, ks, phrases=()):
        found = search_source(self, source, mode, request, ks, phrases)
        ids = self.index.matching(source, request.filters)
        bm25, vec = mode.retrievers
        with self.index.snapshot():
            parts = bm25.parts(self.index, ids, request)
            cos = {i: p["vector"] for i, p in vec.parts(self.index, ids, request).items()}
            places = self.index.places(ids)
            around = self.index.neighbours(ids, 2, MAX_GAP_S)
            texts = self.index.entries(ids)
            raw = DerivedData(self.index, embedding.NAME).for_entries(ids)
        spans = named_dates(request.query.text, self.today())
        dated = {i for i, p in places.items() if p.date and spans
                 and min(s.distance(p.date) for s in spans) <= ranker.DATE_SLACK_DAYS}
        turn = {}
        for i, p in places.items():
            for start, end, t in SPANS.get(str(p.path), ()):
                if start <= texts[i].line_end and texts[i].line_start <= end:
                    turn[i] = t
        OUT.append(dict(
            query=request.query.text, terms=list(request.terms), ids=ids, parts=parts, cos=cos,
            places={i: (p.date, p.time, p.path, p.line_start) for i, p in places.items()},
            around=around, dated=dated, turn=turn,
            length={i: len(texts[i].text) for i in ids},
            terms_length=self.index.lengths(ids), own=list(OWN),
            text={i: texts[i].text[:300] for i in ids},
            vec={i: semantic._unpacked(raw[i]) for i in ids if i in raw},
            qvec=np.array(vec._query),
            found=[dict(s) for s in found.scores]))
        return found

    ranker.MemoryRanker._search_source = kept


def main() -> None:
    import locomo
    import longmemeval
    import retrieval
    from vector_cache import install

    name, path, cache, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
    limit = int(sys.argv[5]) if len(sys.argv) > 5 else None
    install(cache)
    patch()
    load = locomo.load if name == "locomo" else longmemeval.load
    conversations = load(path)[:limit]
    questions = [q for c in conversations for q in c.questions]
    report = asyncio.run(retrieval.run(conversations, ["hybrid"]))
    print(report["modes"]["hybrid"]["all"])
    assert len(OUT) == len(questions), (len(OUT), len(questions))
    for row, q in zip(OUT, questions):
        row["evidence"] = q.evidence
        row["group"] = q.group
    out.write_bytes(pickle.dumps(OUT))


if __name__ == "__main__":
    main()
