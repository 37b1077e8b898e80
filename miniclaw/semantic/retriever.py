"""The vector retriever and the modes built on it: `vector` (the model alone) and `hybrid`
(BM25 and the vectors: BM25's score over its best plus the cosine, `fusion.py`), registered
as modes like any retriever. In a conversation a short turn's cosine takes context from the
turns around it, as BM25's score does, scaled down for a long turn (`neighbours.py`). A long
entry's own cosine is scaled down by its length (`_by_length`), as BM25's score is.

Vectors come from the configured embedder (`semantic/embedders.py`: the optional offline
model by default, or a server or library the user chose) and are kept per text in the
index's `derived` table (kind = the embedder's identity: kind, model and dimension; key = the
text's hash), so a moved entry keeps its vector and a deleted one loses it with the sync, and
a search only ever compares vectors of the model that embeds its query: another model's are
another kind, left alone (a change of model embeds again, `embed_missing`). They are
computed outside any index transaction: `prepare()` runs after the search's sync and
before its reads, embeds the query and up to `EMBED_PER_SEARCH` texts that have no vector yet
(a new entry is embedded by the next search that needs it; `miniclaw memory index` embeds the
rest with a progress bar, `embed_missing`), and says how far along the vectors are while they
are incomplete: the search ranks with the vectors it has.

Why brute force: an L workspace (16,000 entries) is a 16,000 x 384 float32 matrix (25 MB)
and one matrix-vector product (a few ms). The matrix is read from the index once per process
and kept (`_Vectors`), grown by what is added since; the best texts by cosine are then mapped
to the entries of the searched source that pass the filters, by one SQL statement.

A vector is stored as bfloat16 (a float32's upper half, rounded: 768 bytes, `STORED_BYTES`)
and computed with as float32. Why: a float32 vector (1,536 bytes) is too large for a row of
SQLite's page, so each took an overflow page of its own: 64 of L's 84 MB of index, and a
one-shot hybrid search's first read of the vectors touched all of it (67-82 ms, 109 MB of
RSS; half the size: 36-50 ms, 39 MB, and an index of 22 MB). bfloat16 rather than
float16: it is made float32 again by a shift (~5 ms on L; numpy's float16 cast took 18-23
ms). Rounding the entries' vectors to either left turn recall@5, R@10 and MRR the same to
the fourth decimal on both dev sets (benchmarks/hybrid_variants.py, `float32` against
`base`). An index of this format that holds float32 vectors (written before bfloat16) has them
converted as a process reads them (`_Vectors.catch_up`): nothing is embedded again. (An index
of an older format is rebuilt whole, its vectors with it: `database.index_format`.)

A text that only asks ("What inspired you?") is no answer, and its vector is close to a
question's by form as much as by topic: in hybrid, the cosine of an entry that only asks
does not count (`counts`, applied by the ranker to the results it is about to show).

When the model is not installed, `hybrid` and `vector` search by BM25 and say so
(`SearchMode.degraded`): never an error; so does a search whose embedder fails (a server
down, slow or answering garbage: `ModelUnavailable`, caught by the ranker). numpy and
onnxruntime are imported only here, when a semantic mode runs, so the other modes' start-up
pays nothing for them.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, ClassVar

from miniclaw.errors import SearchIndexError
from miniclaw.semantic import embedders
from miniclaw.semantic import model as embedding
from miniclaw.search.hints import SearchWarning
from miniclaw.search.scoring.base import Candidates, Request
from miniclaw.search.scoring.bm25 import BM25Scorer
from miniclaw.text import asks_only

if TYPE_CHECKING:
    from miniclaw.index.search_index import SearchIndex
    from miniclaw.search.query import Query
    from miniclaw.sources.base import MemorySource

STORED_BYTES = embedding.DIM * 2  # the bundled model's vector as stored: bfloat16 (above)
EMBED_PER_SEARCH = 32  # texts a search embeds before it ranks with what it has (~0.3 s)
EMBED_BATCH = 256  # texts embedded and stored at a time by `embed_missing`
# Entries per source the cosine brings to a fusion (BM25 brings the ranker's 50): turn
# recall@5 with 20, 30 and 50 within 0.0002 on both dev sets, and a warm hybrid search on L
# ~3 ms shorter with 30 than 50 and again with 20 than 30 (benchmarks/README.md, "Queries by
# int8 products" and "Reading each entry once"): fewer texts to map to entries, to give
# neighbour context and to score by BM25 too.
CANDIDATES = 20
WIDEN = 4  # texts looked at per candidate wanted, before the filters (more if too few pass)
# A cosine below this is not a match: MiniLM put unrelated sentences at about -0.1 to 0.15 in
# our tests, and without a floor every search would "find" every memory.
MIN_SIMILARITY = 0.2
# The cosine's weight in hybrid's fusion, BM25's score over its best being 1: chosen on the
# LoCoMo dev set and checked on LongMemEval's (benchmarks/README.md, "Hybrid search").
FUSION_WEIGHT = 1.0
# Index terms up to which a cosine counts in full; beyond, it is scaled by LONG_TERMS / length
# (`_by_length`). 40 terms is a long paragraph; dev-set curve in benchmarks/hybrid_variants.py.
LONG_TERMS = 40


class _Vectors:
    """Every vector of one model (`dim` numbers each) in one index in memory: a matrix, and
    each row's text hash. A text's vector never changes (same model, same text), so rows are
    only added; rows of texts no longer indexed are harmless (no entry maps to them) and
    dropped when they are many."""

    def __init__(self, dim: int = embedding.DIM) -> None:
        self.lock = threading.Lock()  # held by whoever reads or grows the matrix
        self.dim = dim
        self.clear()

    def clear(self) -> None:
        import numpy as np

        self.hashes: list[bytes] = []
        self.rows: dict[bytes, int] = {}
        self.matrix = np.zeros((0, self.dim), dtype=np.float32)
        self.stored = -1  # the derived table's count of this kind when last read

    def add(self, values: dict[bytes, bytes]) -> None:
        """Add these vectors (text hash -> stored bytes, `_unpacked`); a damaged one (wrong
        size) is left out: that text is then found by BM25 only."""
        import numpy as np

        known = self.rows
        vectors = {h: _unpacked(v, self.dim) for h, v in values.items() if h not in known}
        new = [h for h, vector in vectors.items() if vector is not None]
        if not new:
            return
        block = np.stack([vectors[h] for h in new])
        self.matrix = np.concatenate([self.matrix, block]) if self.hashes else block
        known.update(zip(new, range(len(self.hashes), len(self.hashes) + len(new))))
        self.hashes.extend(new)

    def start(self, hashes: list[bytes], values: bytearray) -> None:
        """Begin with these vectors (their stored bytes one after another, `joined`), made
        float32 in one step (read-only: searches share the matrix)."""
        matrix = _float32(values).reshape(len(hashes), self.dim)
        matrix.flags.writeable = False
        self.hashes, self.rows, self.matrix = hashes, dict(zip(hashes, range(len(hashes)))), matrix

    def catch_up(self, index: SearchIndex, kind: str, stored: int | None = None) -> int:
        """Read the vectors stored since the last look (by this or another process): all of
        them in one statement at the first look, then only the new texts' (their hashes come
        from the table's index, so a look that finds nothing new reads no vector). `stored`
        is the kind's count when the caller has just read it (counting L's takes ~1 ms
        warm); none is needed at the first look. Returns the kind's count as read."""
        from miniclaw.index.derived import DerivedData

        derived = DerivedData(index, kind)
        if self.hashes or self.stored >= 0:  # looked before (or rows added since: count)
            stored = derived.count() if stored is None else stored
            if stored == self.stored:
                return stored
            if len(self.hashes) > 2 * stored + 1000:  # mostly texts gone: start over
                self.clear()
        if not self.hashes:
            hashes, values, others = derived.joined(self.dim * 2)
            self.start(hashes, values)
            stored = len(hashes) + len(others)  # the values read are the count
        else:
            known = self.rows
            others = derived.get([h for h in derived.hashes() if h not in known])
        older = {h: _packed(_float32_value(v)) for h, v in others.items()
                 if len(v) == self.dim * 4}
        if older:  # stored by an older miniclaw: converted once, for every process
            try:
                derived.put(older)
            except SearchIndexError:  # an index it cannot write: converted here only
                pass
        self.add({**others, **older})
        self.stored = stored
        return stored


_TABLES: dict[tuple[str, str], _Vectors] = {}  # (index file, embedder) -> its vectors, kept
_TABLES_LOCK = threading.Lock()


def _vectors(index: SearchIndex, kind: str = embedding.NAME,
             dim: int = embedding.DIM) -> _Vectors:
    """The vectors of the embedder `kind` (its identity) in this index: one matrix per model,
    so two models' vectors are never compared."""
    with _TABLES_LOCK:
        return _TABLES.setdefault((str(index.db.path), kind), _Vectors(dim))


def embed_missing(index: SearchIndex, model, limit: int | None = None,
                  progress: Callable[[int, int], None] | None = None) -> tuple[int, int]:
    """Embed texts of the index that have no vector of `model` (an embedder) yet (at most
    `limit`; all with None), storing each batch as it is done (outside any other
    transaction): a failure (`ModelUnavailable`) loses none stored before it. Returns
    (texts with a vector, texts in all) afterwards; `progress(done, total)` before the
    first batch and after each. A model not used before has none: all are embedded."""
    from miniclaw.index.derived import DerivedData

    kind = model.identity
    derived = DerivedData(index, kind)
    done, total = derived.progress()
    todo = derived.missing(limit) if done < total else []
    table = _vectors(index, kind, model.dim)
    if todo and progress is not None:
        progress(done, total)  # the start: a rate is then measured from here
    step = getattr(model, "batch", EMBED_BATCH)
    for start in range(0, len(todo), step):
        batch = todo[start:start + step]
        vectors = model.embed([text for _, text in batch])
        values = {h: _packed(vectors[row]) for row, (h, _) in enumerate(batch)}
        done += derived.put(values)
        with table.lock:
            table.add(values)
        if progress is not None:
            progress(min(done, total), total)
    return min(done, total), total


def _cosines(matrix, query):
    """Each row's cosine with the query (unit rows): once per search, not once per source.
    By einsum, not BLAS: OpenBLAS's threads spin after each product, and on L that cost a
    warm hybrid search ~14 ms of CPU (38 -> 24 ms) for a 3 ms product (benchmarks/README.md)."""
    import numpy as np

    return np.einsum("ij,j->i", matrix, query)


_BACKGROUND: list[ThreadPoolExecutor] = []  # one thread embedding queries, made on first use


def _background() -> ThreadPoolExecutor:
    with _TABLES_LOCK:
        if not _BACKGROUND:
            _BACKGROUND.append(ThreadPoolExecutor(1, thread_name_prefix="miniclaw-embed"))
        return _BACKGROUND[0]


class _Awaited:
    """An attribute that `prepare` sets to a value or to the Future of one (work it started
    in the background), read as the value: the first read waits for it."""

    def __set_name__(self, owner, name: str) -> None:
        self.key = f"_awaited{name}"

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__.get(self.key)
        if isinstance(value, Future):
            value = obj.__dict__[self.key] = value.result()
        return value

    def __set__(self, obj, value) -> None:
        obj.__dict__[self.key] = value


@functools.lru_cache(maxsize=256)
def _query_vector(text: str, embedder=None):
    """A query's vector by `embedder` (None: the configured one): embedding it is most of a
    warm hybrid search, and a chat or an agent asks the same question again."""
    vector = (embedder or embedders.current()).embed_query(text)
    vector.flags.writeable = False
    return vector


class VectorRetriever:
    """Entries by the cosine of their text's vector with the query's."""

    name: ClassVar[str] = "vector"
    summary: ClassVar[str] = "meaning: cosine of the offline model's vectors"
    # a short turn's cosine takes context from its neighbours' (`neighbours.py`, by length)
    neighbours: ClassVar[bool] = True
    bounded: ClassVar[bool] = True  # a cosine means the same for every query: fused as it is
    candidates: ClassVar[int] = CANDIDATES
    _query = _Awaited()
    _similar = _Awaited()

    def __init__(self, embed_per_search: int | None = None,
                 fusion_weight: float = FUSION_WEIGHT,
                 min_similarity: float = MIN_SIMILARITY) -> None:
        self.embed_per_search = EMBED_PER_SEARCH if embed_per_search is None else embed_per_search
        self.fusion_weight = float(fusion_weight)
        self.min_similarity = float(min_similarity)
        self._query = None  # the query's unit vector, set by prepare()
        self._table: _Vectors | None = None
        self._kind = embedding.NAME  # the identity of the embedder that made the vectors
        self._similar = None  # (text hashes, their cosines with the query), set by prepare()

    def scored_terms(self, terms: list[str]) -> list[str]:
        return terms

    def counts(self, text: str) -> bool:
        """Whether this retriever's share of an entry with this text counts in a fusion: not
        for a text that only asks. A question holds no answer, and a dense model puts a
        question close to the question asked by their shared form: hybrid's top 5 held
        question-only turns 1.15x (LoCoMo) and 2.7x (LongMemEval) as often as BM25's, and
        they are under 1% of the evidence turns in both sets (6% of all turns). Without
        their cosine, turn recall@5 0.689 -> 0.695 and 0.806 -> 0.806, MRR 0.538 -> 0.553
        and 0.725 -> 0.734 (benchmarks/hybrid_variants.py, `qonly`). The entry keeps its
        BM25 share, and lends its neighbours its cosine as before (the answer that follows
        a question takes context from it)."""
        return not asks_only(text)

    def prepare(self, index: SearchIndex, query: Query) -> tuple[SearchWarning, ...]:
        """After the sync, before the reads (no transaction open): embed the query and up to
        `embed_per_search` new texts, and read vectors stored since. A warning says how far
        along the vectors are while some texts have none.

        The query is embedded (the model loaded, the first time) and the cosines computed by
        a background thread: onnxruntime and SQLite run without the GIL, so that overlaps
        the vectors' reading here and BM25's retrieval after; `retrieve` and `parts` wait
        for it (`_Awaited`). Same work, same results, less waiting on two cores."""
        from miniclaw.index.derived import DerivedData

        embedding.import_numpy()  # here, first: how numpy starts BLAS is set by its import
        embedder = embedders.current()
        vector = _background().submit(_query_vector, query.text, embedder)
        if embedder.dim is None:  # a server's first answer says how long its vectors are
            vector.result()
        self._kind = kind = embedder.identity
        self._table = table = _vectors(index, kind, embedder.dim)
        with table.lock:  # a process's first look reads every vector, and so counts them
            read = None if table.stored >= 0 else table.catch_up(index, kind)
        done, total = DerivedData(index, kind).progress(read)
        if done < total:
            vector.result()  # the query's first: the model that embedded it embeds texts
            done, total = embed_missing(index, embedder, self.embed_per_search)
        with table.lock:
            # complete, `done` is the kind's count just read: no second count
            table.catch_up(index, kind, done if done == total else None)
            hashes, matrix = list(table.hashes), table.matrix
        self._query = vector
        # queued behind the query's vector on the one thread: it is there when this runs
        self._similar = _background().submit(lambda: (hashes, _cosines(matrix, vector.result())))
        if done < total:
            return (SearchWarning("vectors", embedded=done, total=total),)
        return ()

    def retrieve(self, index: SearchIndex, source: MemorySource, request: Request,
                 k: int) -> Candidates:
        import numpy as np

        if self._similar is None or not k or not self._similar[0]:
            return Candidates({}, 0)
        hashes, similar = self._similar
        close = int((similar >= self.min_similarity).sum())
        want = max(k * WIDEN, 64)
        while True:
            top = min(want, close)
            best = np.argpartition(-similar, top - 1)[:top] if 0 < top < len(hashes) \
                else np.flatnonzero(similar >= self.min_similarity)
            score = {hashes[i]: float(similar[i]) for i in best}
            found = index.with_texts(source, request.filters, [hashes[i] for i in best])
            if len(found) >= k or top == close:
                break
            want *= 4
        kept = sorted(found, key=lambda row: (-score[row[1]], row[0]))[:k]
        return Candidates({entry_id: _by_length(score[h], length)
                           for entry_id, h, length in kept},
                          len(found))

    def parts(self, index: SearchIndex, entry_ids: Sequence[int],
              request: Request) -> dict[int, dict[str, float]]:
        """The entries' cosines, looked up in the search's (`prepare`) by their text's hash:
        the neighbour stage asks for a few hundred a search, and reading their vectors cost
        more than the rest of it. A text whose vector came since is computed here."""
        from miniclaw.index.derived import DerivedData

        cosine: dict[int, float] = {}
        texts = index.texts_of(entry_ids) if entry_ids else {}
        if self._similar is not None and self._table is not None:
            hashes, similar = self._similar
            rows = self._table.rows
            for entry_id, (text_hash, _) in texts.items():
                row = rows.get(text_hash)
                if row is not None and row < len(hashes) and hashes[row] == text_hash:
                    cosine[entry_id] = float(similar[row])
        rest = [i for i in entry_ids if i not in cosine]
        values = DerivedData(index, self._kind).for_entries(rest) if rest else {}
        dim = self._table.dim if self._table is not None else embedding.DIM
        for i in rest:  # a damaged value (wrong size) counts as no vector
            vector = _unpacked(values[i], dim) if i in values else None
            cosine[i] = 0.0 if vector is None else float(vector @ self._query)
        return {i: {self.name: _by_length(cosine[i], texts[i][1] if i in texts else 0)}
                for i in entry_ids}


def _packed(vector) -> bytes:
    """A vector as stored: bfloat16, each float32 rounded to its upper 16 bits (to nearest,
    ties to even; the components of a unit vector are far from overflowing)."""
    import numpy as np

    bits = np.ascontiguousarray(vector, dtype=np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2").tobytes()


def _float32(stored) -> object:
    """Stored bfloat16 bytes (one vector or many, one after another) as a float32 array."""
    import numpy as np

    # in one pass, into the one new array: a one-shot search's peak memory holds the matrix once
    return np.left_shift(np.frombuffer(stored, "<u2"), 16, dtype=np.uint32).view(np.float32)


def _unpacked(value: bytes, dim: int = embedding.DIM):
    """A stored vector of `dim` numbers as float32, or None for a damaged one (a wrong size;
    an older index's float32 values are converted as they are read, `_Vectors.catch_up`)."""
    return _float32(value) if len(value) == dim * 2 else None


def _float32_value(value: bytes):
    """A value as an older index stored it: float32 bytes."""
    import numpy as np

    return np.frombuffer(value, np.float32)


def _by_length(cosine: float, length: int) -> float:
    """The cosine of an entry longer than `LONG_TERMS` index terms scaled down by
    LONG_TERMS / length, as BM25 normalizes by length. Why: a long text's vector averages
    many topics, so it is close to many questions; on LongMemEval, long assistant replies
    (1,000-3,500 characters, cosine 0.5-0.9) pushed the user turns holding the answer out of
    the top 5 (turn recall@5 0.768 -> 0.799; LoCoMo's short turns: unchanged, 0.689)."""
    return cosine * LONG_TERMS / length if length > LONG_TERMS else cosine


def _degraded(requested: str):
    """BM25 in place of a semantic mode the embedder is not installed for, or could not load
    in this process, saying so (None when it is there)."""
    ok, why = embedders.available()
    if ok and embedders.failed() is None:
        return None
    if not ok:
        library = embedders.settings().kind != "bundled"  # its own install command
        return without_model(requested, why, install=why.partition(" (")[2].rstrip(")")
                             if library else None)
    return without_model(requested, embedders.failed(), installed=True)


def without_model(requested: str, why: str, *, installed: bool = False,
                  install: str | None = None):
    """BM25 in place of the semantic mode `requested`, with the notice that says why: the
    model is not installed (the notice gives the install command: the `semantic` extra's,
    or `install` for another embedder's library), or it is but failed to load or run
    (`embedding.ModelUnavailable`, e.g. out of memory, or a server down: no install
    command, `installed` in the warning)."""
    from miniclaw.search.scoring import SearchMode

    bm25 = BM25Scorer()
    reason = why if installed else why.split(" (")[0]
    extra = {"installed": True} if installed else {"install": install} if install else {}
    return SearchMode(bm25.name, (bm25,), bm25.neighbor_weights, bm25.date_weight,
                      degraded=SearchWarning("degraded", requested=requested, mode=bm25.name,
                                             reason=reason, **extra))


def vector_mode():
    from miniclaw.search.scoring import SearchMode

    return _degraded("vector") or SearchMode.of(VectorRetriever(), "vector")


def hybrid_mode():
    from miniclaw.search.scoring import SearchMode

    bm25 = BM25Scorer()
    vector = VectorRetriever(fusion_weight=FUSION_WEIGHT)  # read now: a benchmark may set it
    return _degraded("hybrid") or SearchMode("hybrid", (bm25, vector),
                                             bm25.neighbor_weights, bm25.date_weight)
