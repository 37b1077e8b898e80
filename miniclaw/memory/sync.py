"""Bringing the index's rows in line with changed memory files (inside the caller's
write transaction).

Each changed file is read, parsed and tokenized, then diffed against its indexed entries by
(position, lines, date, time, annotations, text): only entries that changed are deleted and
inserted, so an append to a large MEMORY.md writes one entry, not thousands. A file written
within `RACY_NS` of being read is marked racy and re-checked next time, since a same-size
edit in the same clock tick keeps its mtime. (Parsing in a second thread while this one
writes was tried: the GIL made it 25% slower on a 2-core machine.)
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple

from miniclaw.memory.entry import Entry
from miniclaw.memory.files import decode, read_bytes
from miniclaw.memory.sources import MemorySource, SourceFile
from miniclaw.memory.tokenizer import index_terms

RACY_NS = 2_000_000_000
# Larger files are not indexed (a warning names them on every search): a 50 MB note would
# take half a minute and a gigabyte of memory to index. MEMORY.md with 100,000 entries is 9 MB.
MAX_FILE_BYTES = 16 * 1024 * 1024


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
    entries: list[Entry] | None  # None: the file vanished after the scan
    terms: list[Counter]  # term counts of each entry
    warning: str | None
    racy: bool


def _entry_key(ordinal: int, entry: Entry) -> tuple:
    return (ordinal, entry.line_start, entry.line_end,
            entry.date.isoformat() if entry.date else None, entry.time, entry.category,
            " ".join(entry.tags), entry.text)


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
    racy = 0 <= age < RACY_NS  # a future mtime (clock skew, touch -d) is not "just written"
    return _Parsed(source_file, entries, [Counter(index_terms(e.text)) for e in entries],
                   warning, racy)


def sync_files(conn, sources: Sequence[MemorySource], known: dict[str, tuple],
               stale: Sequence[SourceFile], gone: Sequence[str],
               progress: Callable[[int, int], None] | None = None) -> RefreshReport:
    """Re-index `stale` files and drop `gone` ones; `known` maps path -> (file id, ...)."""
    report = RefreshReport()
    for path in gone:
        report.entries_removed += _drop_file(conn, known[path][0])
        report.files_removed += 1
    by_name = {source.name: source for source in sources}
    next_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM entries").fetchone()[0]
    for done, source_file in enumerate(stale, 1):
        parsed = _parse(by_name[source_file.source], source_file)
        file_id = known[parsed.file.path][0] if parsed.file.path in known else None
        next_id = _store(conn, parsed, file_id, next_id, report)
        if progress is not None:
            progress(done, len(stale))
    return report


def _drop_file(conn, file_id: int) -> int:
    rows = conn.execute("SELECT id, content FROM entries WHERE file_id = ?", (file_id,)).fetchall()
    _delete_entries(conn, rows)
    conn.execute("DELETE FROM files WHERE id = ?", (file_id,))
    return len(rows)


def _delete_entries(conn, rows) -> None:
    """Delete entries and their postings (found again by tokenizing the stored text)."""
    postings, ids = [], []
    for entry_id, content in rows:
        ids.append((entry_id,))
        postings.extend((term, entry_id) for term in set(index_terms(content)))
    conn.executemany("DELETE FROM postings WHERE term = ? AND entry_id = ?", postings)
    conn.executemany("DELETE FROM entries WHERE id = ?", ids)


def _store(conn, parsed: _Parsed, file_id: int | None, next_id: int,
           report: RefreshReport) -> int:
    """Write one parsed file's changes; returns the next free entry id."""
    source_file = parsed.file
    if parsed.entries is None:  # deleted since the scan
        if file_id is not None:
            report.entries_removed += _drop_file(conn, file_id)
            report.files_removed += 1
        return next_id
    if parsed.warning:
        report.warnings.append(parsed.warning)
    old: dict[tuple, int] = {}
    if file_id is None:
        file_id = conn.execute(
            "INSERT INTO files (path, source, size, mtime_ns, inode, racy, day, entry_count,"
            " term_count, warning) VALUES (?, ?, 0, 0, 0, 0, ?, 0, 0, NULL)",
            (source_file.path, source_file.source,
             source_file.day.isoformat() if source_file.day else None)).lastrowid
    else:
        for row in conn.execute(
                "SELECT id, ordinal, line_start, line_end, date, time, category, tags, content"
                " FROM entries WHERE file_id = ?", (file_id,)):
            old[row[1:]] = row[0]

    new = {_entry_key(i, e): (e, terms) for i, (e, terms) in enumerate(zip(parsed.entries, parsed.terms))}
    removed = [(entry_id, key[-1]) for key, entry_id in old.items() if key not in new]
    _delete_entries(conn, removed)
    entry_rows, posting_rows = [], []
    for key, (entry, terms) in new.items():
        if key in old:
            continue
        entry_rows.append((next_id, file_id, key[0], entry.source, entry.path,
                           entry.line_start, entry.line_end, key[3], entry.time,
                           entry.category, key[6], entry.text, sum(terms.values())))
        posting_rows.extend((term, next_id, tf) for term, tf in terms.items())
        next_id += 1
    if entry_rows:
        conn.executemany(
            "INSERT INTO entries (id, file_id, ordinal, source, path, line_start, line_end,"
            " date, time, category, tags, content, length) VALUES"
            " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", entry_rows)
        conn.executemany("INSERT INTO postings VALUES (?, ?, ?)", posting_rows)
    lengths = [sum(terms.values()) for terms in parsed.terms]
    conn.execute(
        "UPDATE files SET size = ?, mtime_ns = ?, inode = ?, racy = ?, entry_count = ?,"
        " term_count = ?, warning = ? WHERE id = ?",
        (*source_file.signature, int(parsed.racy), len(lengths), sum(lengths),
         parsed.warning, file_id))
    report.files_parsed += 1
    report.entries_added += len(entry_rows)
    report.entries_removed += len(removed)
    return next_id
