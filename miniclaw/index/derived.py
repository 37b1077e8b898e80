"""Data derived from an entry's text alone (a model's vector: `scoring/semantic.py`): computed once per
distinct text and kept in the index's `derived` table by (kind, text hash).

A value outlives a move of its entry (an entry's identity is its text: `sync.content_hash`),
is deleted by the sync as soon as no entry has that text any more (so nothing derived from
text since made private stays), and is never computed again while the text is indexed. A
retriever asks `missing()` for the texts without a value, computes those, `put()`s them and
reads them with `get()` / `for_entries()`. Call these outside a read snapshot (`put`
writes), after the operation's sync.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence

from miniclaw.index.database import IndexRowError, rollback
from miniclaw.index.search_index import SearchIndex, _id_list

_CHUNK = 500  # hashes per statement (SQLite caps a statement's parameters)
# `progress` as last counted, per (connection, kind): (connection, its data_version and
# total_changes then, the counts). Connections cannot be weakly referenced, so the entry holds
# its own (an id is then never reused while its entry is kept) and the cache is emptied when
# it grows past a few (threads come and go).
_PROGRESS: dict[tuple[int, str], tuple] = {}
_PROGRESS_KEPT = 64
_PROGRESS_LOCK = threading.Lock()


def _checked(rows) -> dict:
    out = {}
    for key, value in rows:
        if type(value) is not bytes or type(key) not in (bytes, int):
            raise IndexRowError("a derived value in the index is damaged")
        out[key] = value
    return out


def _count_progress(conn, kind: str, done: int | None = None) -> tuple[int, int]:
    if done is None:
        done = conn.execute("SELECT COUNT(*) FROM derived WHERE kind = ?",
                            (kind,)).fetchone()[0]
    entries = conn.execute("SELECT value FROM meta WHERE key = 'entries'").fetchone()
    if entries is not None and entries[0] == str(done):
        return done, done
    return done, conn.execute("SELECT COUNT(DISTINCT hash) FROM entries").fetchone()[0]


class DerivedData:
    """The values of one `kind` (e.g. a model's name) in one index."""

    def __init__(self, index: SearchIndex, kind: str) -> None:
        if not isinstance(kind, str) or not kind:
            raise ValueError("a kind of derived data is a non-empty name")
        self.index, self.kind = index, kind

    def missing(self, limit: int | None = None) -> list[tuple[bytes, str]]:
        """(hash, text) of indexed texts with no value of this kind yet, each text once."""
        sql = ("SELECT e.hash, MIN(e.content) FROM entries e WHERE NOT EXISTS (SELECT 1 FROM"
               " derived d WHERE d.kind = ? AND d.hash = e.hash) GROUP BY e.hash ORDER BY e.hash")
        params: list = [self.kind]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        rows = self.index.db.run(lambda c: c.execute(sql, params).fetchall())
        if any(type(h) is not bytes or type(text) is not str for h, text in rows):
            raise IndexRowError("an entry's text hash in the index is damaged")
        return rows

    def progress(self, done: int | None = None) -> tuple[int, int]:
        """(texts with a value of this kind, distinct texts indexed): how far along it is.
        Asked by every hybrid search, so cheap when complete: values are only ever kept for
        indexed texts, so as many values as entries (the sync's count) means one per text,
        and the distinct texts (3 ms on 16,000 entries) need not be counted. Counted again
        only when the index changed since this connection last counted (~0.7 ms on L, a
        warm search's): another connection's commit changes SQLite's `data_version`, this
        one's own writes its `total_changes`. `done` is the kind's count when the caller
        has just read every value (`joined`): not counted again (that count walked the
        kind's index for 15-20 ms of a one-shot hybrid search on L, beside the model's
        load), and not kept (it was read by an earlier statement, so another process may
        have added values since)."""
        def work(conn):
            if done is not None:
                return _count_progress(conn, self.kind, done)
            key = (id(conn), self.kind)
            seen = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
            with _PROGRESS_LOCK:
                cached = _PROGRESS.get(key)
            if cached is not None and cached[0] is conn and cached[1] == seen:
                return cached[2]
            counted = _count_progress(conn, self.kind)
            with _PROGRESS_LOCK:
                if len(_PROGRESS) >= _PROGRESS_KEPT:
                    _PROGRESS.clear()
                _PROGRESS[key] = (conn, seen, counted)
            return counted

        return self.index.db.run(work)

    def count(self) -> int:
        """How many texts have a value of this kind (read from an index, not the values)."""
        return self.index.db.run(lambda c: c.execute(
            "SELECT COUNT(*) FROM derived WHERE kind = ?", (self.kind,)).fetchone()[0])

    def hashes(self) -> list[bytes]:
        """The text hashes that have a value of this kind (read from an index, not the values)."""
        return [h for (h,) in self.index.db.run(lambda c: c.execute(
            "SELECT hash FROM derived WHERE kind = ?", (self.kind,)).fetchall())]

    def all(self) -> dict[bytes, bytes]:
        """Every value of this kind, in one statement (a process's first look)."""
        return self.index.db.run(lambda c: _checked(c.execute(
            "SELECT hash, value FROM derived WHERE kind = ?", (self.kind,))))

    def joined(self, size: int) -> tuple[list[bytes], bytearray, dict[bytes, bytes]]:
        """(text hashes, their values one after another, the others by hash) of every value
        of this kind: those `size` bytes long joined, the rest (another format, or damaged)
        apart, in one statement: a process's first look at fixed-size values (a model's
        vectors). Each value is appended to one buffer as it is read, so L's vectors are
        held once, not as 16,000 values and then their join (20 ms of CPU and 25 MB of peak
        memory less in a one-shot hybrid search, when they were float32)."""
        def work(conn):
            hashes, values, others = [], bytearray(), {}
            for key, value in conn.execute("SELECT hash, value FROM derived WHERE kind = ?",
                                           (self.kind,)):
                if type(value) is not bytes or type(key) not in (bytes, int):
                    raise IndexRowError("a derived value in the index is damaged")
                if len(value) == size:
                    hashes.append(key)
                    values += value
                else:
                    others[key] = value
            return hashes, values, others

        return self.index.db.run(work)

    def get(self, hashes: Iterable[bytes]) -> dict[bytes, bytes]:
        """The stored values of these texts (those without one are left out)."""
        wanted = list(dict.fromkeys(hashes))

        def work(conn):
            out = {}
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start:start + _CHUNK]
                out.update(_checked(conn.execute(
                    f"SELECT hash, value FROM derived WHERE kind = ? AND hash IN"
                    f" ({', '.join('?' * len(chunk))})", [self.kind, *chunk])))
            return out

        return self.index.db.run(work)

    def for_entries(self, entry_ids: Sequence[int]) -> dict[int, bytes]:
        """Entry id -> the value of its text, for the given entries that have one. CROSS JOIN
        fixes the order (each entry, then its value by the primary key): with a join, from
        ~20 ids on SQLite chose to read every value of the kind first (on L, 25 MB: 0.2-0.4 s
        a hybrid search)."""
        if not entry_ids:
            return {}
        sql = ("SELECT e.id, d.value FROM entries e CROSS JOIN derived d ON d.kind = ? AND"
               f" d.hash = e.hash WHERE e.id IN ({_id_list(entry_ids)})")
        return _checked(self.index.db.run(lambda c: c.execute(sql, (self.kind,)).fetchall()))

    def put(self, values: Mapping[bytes, bytes]) -> int:
        """Store values (replacing older ones of this kind); a value of a text no entry has
        (any more) is not stored, so no value outlives its text. Returns how many were."""
        rows = [(bytes(h), self.kind, bytes(v), bytes(h)) for h, v in values.items()]

        def work(conn):
            self.index.db.write_settings(conn)
            conn.execute("BEGIN IMMEDIATE")
            try:
                before = conn.total_changes
                conn.executemany("INSERT OR REPLACE INTO derived (hash, kind, value) SELECT"
                                 " ?, ?, ? WHERE EXISTS (SELECT 1 FROM entries WHERE hash = ?)",
                                 rows)
                stored = conn.total_changes - before
                conn.execute("COMMIT")
            except BaseException:
                rollback(conn)
                raise
            return stored

        return self.index.db.run(work) if rows else 0
