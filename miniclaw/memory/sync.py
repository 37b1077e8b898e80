"""Bringing the index's rows in line with changed memory files (inside the caller's
write transaction).

Each changed file is read, parsed and tokenized, then diffed against its indexed entries by
(position, lines, date, time, annotations, text): only entries that changed are deleted and
inserted, so an append to a large MEMORY.md writes one entry, not thousands. A file written
within `RACY_NS` of being read (or dated up to `FUTURE_RACY_NS` in the future) is marked
racy and re-checked next time, since a same-size edit in the same clock tick keeps its mtime.

Speed (a full build is ~half SQLite, ~half Python): rows are inserted in multi-row
statements (`_Rows`), during which SQLite runs without the GIL; when many files changed, a
second thread reads, parses and tokenizes the next files meanwhile (`_parse_ahead`). With one
insert per row the two threads handed the GIL back and forth on every row and a build was 25%
slower than with one thread; with batches it is 10-15% faster on two cores.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, repeat
from typing import NamedTuple

from miniclaw.memory.entry import Entry
from miniclaw.memory.files import MAX_FILE_BYTES, decode, read_bytes
from miniclaw.memory.sources import MemorySource, SourceFile
from miniclaw.memory.tokenizer import index_terms

RACY_NS = 2_000_000_000
FUTURE_RACY_NS = 600 * 1_000_000_000  # clock skew between synced machines, at most
PARSE_AHEAD_MIN_FILES = 8  # fewer changed files are parsed in the writing thread
PARSE_AHEAD_DEPTH = 32  # files parsed but not yet written, at most
PARSE_AHEAD_BYTES = 32 * 1024 * 1024  # and at most this much of their Markdown
MAX_BATCH_PARAMS = 9000  # values in one multi-row INSERT (~3,000 postings)


class RefreshReport:
    """What one refresh did."""

    __slots__ = ("files_parsed", "files_removed", "entries_added", "entries_removed", "warnings")

    def __init__(self) -> None:
        self.files_parsed = self.files_removed = 0
        self.entries_added = self.entries_removed = 0
        self.warnings: list[str] = []

    @property
    def changed(self) -> bool:
        return bool(self.files_parsed or self.files_removed)


class _Parsed(NamedTuple):
    file: SourceFile
    keys: list[tuple] | None  # each entry's identity (`_entry_keys`); None: the file vanished
    terms: list[list[str]]  # the index terms of each entry, repeats kept
    warning: str | None
    racy: bool


def _entry_keys(entries: list[Entry]) -> list[tuple]:
    """What identifies each entry in the index, in the `entries` table's column order
    (ordinal, line_start, line_end, date, time, category, tags, content)."""
    days: dict = {None: None}  # a note's entries share one date: format it once
    keys = []
    for ordinal, entry in enumerate(entries):
        try:
            day = days[entry.date]
        except KeyError:
            day = days[entry.date] = entry.date.isoformat()
        keys.append((ordinal, entry.line_start, entry.line_end, day, entry.time,
                     entry.category, " ".join(entry.tags), entry.text))
    return keys


def _postings(terms: list[str], entry_id: int,
              term_ids: dict[str, int]) -> Iterable[tuple[int, int, int]]:
    """(term id, entry id, frequency) rows; most entries repeat no term, and are counted in C."""
    unique = set(terms)
    if len(unique) == len(terms):
        return zip(map(term_ids.__getitem__, unique), repeat(entry_id), repeat(1))
    counts = Counter(terms)
    return zip(map(term_ids.__getitem__, counts), repeat(entry_id), counts.values())


def _parse(source: MemorySource, source_file: SourceFile) -> _Parsed:
    if source_file.size > MAX_FILE_BYTES:
        warning = (f"{source_file.path} is {source_file.size / 1048576:.0f} MB: memory files "
                   f"over {MAX_FILE_BYTES // 1048576} MB are not searched; split it into "
                   "smaller notes")
        return _Parsed(source_file, [], [], warning, False)
    raw = read_bytes(source_file.absolute)
    if raw is None:
        return _Parsed(source_file, None, [], None, False)
    text, warning = decode(raw, source_file.path)
    entries = source.parse(text, source_file.path)
    age = time.time_ns() - source_file.mtime_ns
    # A little in the future (a synced file from a machine whose clock is ahead) is racy
    # too: that writer may write again within the same tick. Further ahead (`touch -d 2030`)
    # is not, or every search would re-read the file until then; a later edit made here
    # sets the mtime to now, which is seen.
    racy = -FUTURE_RACY_NS < age < RACY_NS
    return _Parsed(source_file, _entry_keys(entries), [index_terms(e.text) for e in entries],
                   warning, racy)


def sync_files(conn, sources: Sequence[MemorySource], known: dict[str, tuple],
               stale: Sequence[SourceFile], gone: Sequence[str],
               progress: Callable[[int, int], None] | None = None) -> RefreshReport:
    """Re-index `stale` files and drop `gone` ones; `known` maps path -> (file id, ...)."""
    report = RefreshReport()
    rows = _Rows(conn)
    for path in gone:
        report.entries_removed += _drop_file(conn, known[path][0], rows.terms)
        report.files_removed += 1
    by_name = {source.name: source for source in sources}

    def parse(source_file: SourceFile) -> _Parsed:
        return _parse(by_name[source_file.source], source_file)

    next_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM entries").fetchone()[0]
    with _parsed_files(parse, stale) as parsed_files:
        for done, parsed in enumerate(parsed_files, 1):
            file_id = known[parsed.file.path][0] if parsed.file.path in known else None
            next_id = _store(conn, parsed, file_id, next_id, report, rows)
            if progress is not None:
                progress(done, len(stale))
    rows.flush(final=True)
    rows.terms.drop_unused()
    return report


@contextlib.contextmanager
def _parsed_files(parse: Callable[[SourceFile], _Parsed],
                  files: Sequence[SourceFile]) -> Iterator[Iterator[_Parsed]]:
    """`map(parse, files)`; for many files, computed ahead in a second thread, which is
    stopped when the block ends, even by an error (queued files are then not parsed)."""
    if len(files) < PARSE_AHEAD_MIN_FILES:
        yield map(parse, files)
        return
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(1, thread_name_prefix="miniclaw-parse")
    try:
        yield _parse_ahead(pool, parse, files)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _parse_ahead(pool, parse: Callable[[SourceFile], _Parsed],
                 files: Sequence[SourceFile]) -> Iterator[_Parsed]:
    """Parse results in order, the pool working up to `PARSE_AHEAD_DEPTH` files and
    `PARSE_AHEAD_BYTES` of Markdown ahead of the caller (a parsed file holds ~2.5x its size)."""
    todo, pending, queued = deque(files), deque(), 0
    while todo or pending:
        while todo and (not pending or (len(pending) < PARSE_AHEAD_DEPTH
                                        and queued + todo[0].size <= PARSE_AHEAD_BYTES)):
            source_file = todo.popleft()
            pending.append((pool.submit(parse, source_file), source_file.size))
            queued += source_file.size
        future, size = pending.popleft()
        queued -= size
        yield future.result()


class _Rows:
    """New file, entry, term and posting rows waiting to be inserted, written thousands to a
    statement: SQLite then works for milliseconds at a time without the GIL (see the module
    doc). Ids are given here, so nothing needs to be read back."""

    _FILES = ("INSERT INTO files (id, path, source, size, mtime_ns, inode, racy, day,"
              " entry_count, term_count, warning) VALUES ")
    _ENTRIES = ("INSERT INTO entries (id, file_id, source, path, ordinal, line_start, line_end,"
                " date, time, category, tags, content, length) VALUES ")
    _TERMS = "INSERT INTO terms (id, term) VALUES "
    _POSTINGS = "INSERT INTO postings (term_id, entry_id, tf) VALUES "

    def __init__(self, conn) -> None:
        self.conn = conn
        # SQLite caps the parameters of one statement (999 before 3.32, 32766 since).
        self.max_params = min(conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER),
                              MAX_BATCH_PARAMS)
        self.next_file_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM files").fetchone()[0]
        self.terms = _TermIds(conn, self.max_params)
        self.files: list[tuple] = []
        self.entries: list[tuple] = []
        self.postings: list[tuple] = []

    def flush(self, final: bool = False) -> None:
        """Write full batches (and with `final`, everything)."""
        for table, rows in ((self._FILES, self.files), (self._ENTRIES, self.entries),
                            (self._TERMS, self.terms.new), (self._POSTINGS, self.postings)):
            if not rows:
                continue
            width = len(rows[0])
            batch = max(1, self.max_params // width)
            full = len(rows) - len(rows) % batch
            if full:
                sql = table + ", ".join(["(" + ", ".join("?" * width) + ")"] * batch)
                self.conn.executemany(sql, (list(chain.from_iterable(rows[start:start + batch]))
                                            for start in range(0, full, batch)))
            if final and full < len(rows):
                self.conn.executemany(table + "(" + ", ".join("?" * width) + ")", rows[full:])
                full = len(rows)
            del rows[:full]


class _TermIds:
    """The number of each term, during one refresh: read from the `terms` table, or given
    here to a new term (whose row `_Rows` then writes). Terms whose postings were deleted are
    kept until the end, when those left without any are deleted (`drop_unused`): a term of
    text that has since become private must not stay in the index."""

    def __init__(self, conn, max_params: int) -> None:
        self.conn = conn
        self.max_params = max_params
        self.ids: dict[str, int] = {}
        self.next_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM terms").fetchone()[0]
        self.table_empty = self.next_id == 1  # a rebuild: nothing to look up
        self.new: list[tuple[int, str]] = []  # rows for the terms table
        self.touched: set[int] = set()  # terms that lost postings

    def of(self, terms: Iterable[str], *, add: bool = True) -> dict[str, int]:
        """Term -> id for `terms` (and others already known); unknown ones are numbered when
        `add`, else left out."""
        missing = [term for term in set(terms) if term not in self.ids]
        if missing and not self.table_empty:
            for start in range(0, len(missing), self.max_params):
                chunk = missing[start:start + self.max_params]
                self.ids.update(self.conn.execute(
                    f"SELECT term, id FROM terms WHERE term IN ({', '.join('?' * len(chunk))})",
                    chunk))
            missing = [term for term in missing if term not in self.ids]
        if add:
            for term in missing:
                self.ids[term] = self.next_id
                self.new.append((self.next_id, term))
                self.next_id += 1
        return self.ids

    def drop_unused(self) -> None:
        """Delete the touched terms that have no posting left (after every row is written)."""
        self.conn.executemany(
            "DELETE FROM terms WHERE id = ? AND NOT EXISTS"
            " (SELECT 1 FROM postings WHERE term_id = ?)", ((i, i) for i in self.touched))


def _drop_file(conn, file_id: int, term_ids: _TermIds) -> int:
    rows = conn.execute("SELECT id, content FROM entries WHERE file_id = ?", (file_id,)).fetchall()
    _delete_entries(conn, rows, term_ids)
    conn.execute("DELETE FROM files WHERE id = ?", (file_id,))
    return len(rows)


def _delete_entries(conn, rows, term_ids: _TermIds) -> None:
    """Delete entries and their postings (found again by tokenizing the stored text)."""
    terms_of = [(entry_id, set(index_terms(content))) for entry_id, content in rows]
    ids = term_ids.of(chain.from_iterable(terms for _, terms in terms_of), add=False)
    postings = [(ids[term], entry_id) for entry_id, terms in terms_of for term in terms
                if term in ids]
    conn.executemany("DELETE FROM postings WHERE term_id = ? AND entry_id = ?", postings)
    conn.executemany("DELETE FROM entries WHERE id = ?", ((entry_id,) for entry_id, _ in rows))
    term_ids.touched.update(term_id for term_id, _ in postings)


def _store(conn, parsed: _Parsed, file_id: int | None, next_id: int,
           report: RefreshReport, rows: _Rows) -> int:
    """Write one parsed file's changes (new rows through `rows`); returns the next free
    entry id."""
    source_file = parsed.file
    if parsed.keys is None:  # deleted since the scan
        if file_id is not None:
            report.entries_removed += _drop_file(conn, file_id, rows.terms)
            report.files_removed += 1
        return next_id
    if parsed.warning:
        report.warnings.append(parsed.warning)
    old: dict[tuple, int] = {}
    new_file = file_id is None
    if new_file:
        file_id = rows.next_file_id
        rows.next_file_id += 1
    else:
        for row in conn.execute(
                "SELECT id, ordinal, line_start, line_end, date, time, category, tags, content"
                " FROM entries WHERE file_id = ?", (file_id,)):
            old[row[1:]] = row[0]

    removed = []
    if old:
        kept = set(parsed.keys)
        removed = [(entry_id, key[-1]) for key, entry_id in old.items() if key not in kept]
        _delete_entries(conn, removed, rows.terms)
    added = 0
    term_ids = rows.terms.of(chain.from_iterable(
        terms for key, terms in zip(parsed.keys, parsed.terms) if key not in old))
    for key, terms in zip(parsed.keys, parsed.terms):
        if old and key in old:
            continue
        rows.entries.append((next_id, file_id, source_file.source, source_file.path, *key,
                             len(terms)))
        rows.postings.extend(_postings(terms, next_id, term_ids))
        next_id += 1
        added += 1
    lengths = [len(terms) for terms in parsed.terms]
    if new_file:
        rows.files.append((file_id, source_file.path, source_file.source, *source_file.signature,
                           int(parsed.racy), source_file.day.isoformat() if source_file.day else None,
                           len(lengths), sum(lengths), parsed.warning))
    else:
        conn.execute(
            "UPDATE files SET size = ?, mtime_ns = ?, inode = ?, racy = ?, entry_count = ?,"
            " term_count = ?, warning = ? WHERE id = ?",
            (*source_file.signature, int(parsed.racy), len(lengths), sum(lengths),
             parsed.warning, file_id))
    rows.flush()
    report.files_parsed += 1
    report.entries_added += added
    report.entries_removed += len(removed)
    return next_id
