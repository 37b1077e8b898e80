"""A disk cache of the embedding model's vectors, for the retrieval benchmarks only.

Embedding a dev set takes minutes on a loaded 2-core machine, and a vector never changes for
the same model and text; so `--vector-cache FILE` (locomo.py, longmemeval.py) replaces
`embedding.load()` for the run with a model that looks each text up by its SHA-256 in an
SQLite file first and embeds (and stores) only the texts it has not seen. Hybrid variants then
cost seconds, not minutes. The product never uses this: it keeps vectors in the index.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path


class CachedEmbedder:
    """The real model behind a text-hash -> vector cache (loaded only on a miss)."""

    def __init__(self, path: Path) -> None:
        from miniclaw.semantic import model as embedding

        self._embedding = embedding
        self.name, self.dim = embedding.NAME, embedding.DIM
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS v (hash BLOB PRIMARY KEY, vec BLOB)")
        self._model = None
        self.hits = self.misses = 0

    def embed(self, texts: Sequence[str]):
        return self._cached(texts, [hashlib.sha256(t.encode("utf-8")).digest() for t in texts],
                            lambda model, todo: model.embed(todo))

    def embed_query(self, text: str):
        """A query's vector (the query graph's, `Embedder.embed_query`), cached apart from
        the same text's vector as a memory."""
        key = hashlib.sha256(b"query\0" + text.encode("utf-8")).digest()
        return self._cached([text], [key],
                            lambda model, todo: [model.embed_query(t) for t in todo])[0]

    def _cached(self, texts: Sequence[str], keys: list[bytes], compute):
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        known: dict[bytes, bytes] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            known.update(self._db.execute(
                f"SELECT hash, vec FROM v WHERE hash IN ({','.join('?' * len(chunk))})",
                chunk).fetchall())
        todo = [i for i, k in enumerate(keys) if k not in known]
        if todo:
            if self._model is None:
                self._model = self._real_load()
            vectors = compute(self._model, [texts[i] for i in todo])
            rows = [(keys[i], vectors[n].tobytes()) for n, i in enumerate(todo)]
            self._db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)", rows)
            self._db.commit()
            known.update(rows)
        for i, k in enumerate(keys):
            out[i] = np.frombuffer(known[k], dtype=np.float32)
        self.hits += len(keys) - len(todo)
        self.misses += len(todo)
        return out


def install(path: Path) -> CachedEmbedder:
    """Make `embedding.load()` return the cached model for the rest of this process."""
    from miniclaw.semantic import model as embedding

    real = embedding.load
    cached = CachedEmbedder(path)
    cached._real_load = real
    embedding.load = lambda: cached
    return cached
