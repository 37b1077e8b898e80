"""The search index: an SQLite cache of the entries of a workspace, with an inverted index.

Storage model (one file per workspace, under the user's cache directory):

    files     one row per memory file: path, source, the (size, mtime_ns, inode) it had when
              parsed, whether that was too close to its last write to trust ("racy"), and its
              entry and term counts (the corpus statistics are sums over this table)
    entries   one row per entry: its identity (the hash of its text and which occurrence of
              that text in its file, `sync`), the parser's record, its position in the file
              (`ordinal`, for neighbours; data, updated in place when the entry moves) and
              its length in terms
    derived   (kind, text hash) -> a value computed from the text alone, such as a model's
              vector (`derived`): kept while some entry has that text
    terms     one row per distinct indexed term: its number
    blocks    the inverted index the scorers sum over, packed: a term's postings (entry,
              term frequency) in one file among the entries one write added, as a JSON
              array (`sync._packed`); read through the view `term_postings` (term,
              entry_id, tf, file_id), which unpacks them with SQLite's json_each

It is a cache: files are the truth, deleting the index loses nothing, and a damaged or
older-version index is rebuilt with a warning (see `database`: connections, schema,
recovery; this class holds one, and the database never calls back). `refresh()` runs once at
the start of each operation (a search, `memory index`): it stats the memory files (or, in a
process that watches the folder, the ones the kernel reports changed) and hands those whose
signature changed, or that are gone, to `sync` (which re-parses and diffs them). Reads never
refresh: a read of a file other than the one the operation synced raises `IndexReplaced`,
and the operation starts again from its refresh (`retrying`). `status()` only reads.

Concurrency: WAL mode and a busy timeout; every update runs in a `BEGIN IMMEDIATE`
transaction that re-reads the files table, so processes refreshing at once wait for each
other instead of failing, and readers always see a consistent snapshot. One connection per
thread (a connection belongs to the thread that opened it). `secure_delete` zeroes deleted
rows, so text that later became private does not linger in free pages.

Only what the parser lets through is stored: never private text.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date as Date
from pathlib import Path
from typing import NamedTuple

from miniclaw.errors import UsageError
from miniclaw.index.database import IndexDatabase, IndexReplaced, IndexRowError, rollback
from miniclaw.entries.entry import NO_META, Entry, Meta
from miniclaw.sources.base import (SOURCES, MemorySource, SourceFile, in_unlisted, is_alias,
                                   listing, read_once, read_twice_warnings)
from miniclaw.index.sync import RefreshReport, drop_orphan_derived, sync_files

log = logging.getLogger("miniclaw")

# `note_shifted`'s rows in the meta table: `shifted:PATH:FIRST:LAST:HASH`, the newest kept.
_SHIFTED = "shifted:"
_SHIFTED_KEPT = 10_000
_ENTRY_COLUMNS = ("id, source, path, line_start, line_end, date, time, category, tags, content,"
                  " meta")


#: A source of more files than this is read from the query terms' postings (`top`).
SMALL_SOURCE_FILES = 64
# Tags, required and excluded words and metadata values of one search, at most: each is a
# clause of its SQL, whose expressions SQLite nests 1,000 deep at most (a usage error, not
# an index problem), and a search that finds nothing looks each tag up again (`unheld`).
MAX_FILTERS = 200


class Filters(NamedTuple):
    """Which entries a search may return. Dates are inclusive; None means no bound."""

    sources: tuple[str, ...]
    window_start: Date | None = None  # the `--days` window, for windowed sources only
    since: Date | None = None  # every dated entry; undated ones are then left out
    until: Date | None = None
    category: str | None = None
    tags: tuple[str, ...] = ()
    required: tuple[str, ...] = ()  # terms every result must hold
    excluded: tuple[str, ...] = ()  # terms no result may hold
    meta: tuple[tuple[str, str], ...] = ()  # (key, value): the source's metadata must match
    current: bool = False  # leave out entries marked superseded (`meta.superseded_by`)


class IndexStatus(NamedTuple):
    path: str
    exists: bool
    size_bytes: int
    files: int
    entries: int
    terms: int
    updated_at: str | None
    stale_files: tuple[str, ...]  # on disk but new or changed since indexed
    missing_files: tuple[str, ...]  # indexed but no longer on disk
    files_on_disk: int
    #: Per source, in the workspace's order: (name, files on disk, files indexed, entries).
    by_source: tuple[tuple[str, int, int, int], ...] = ()
    #: (folder, warning) of each folder that could not be listed (`sources.listing`): what
    #: it holds is not known, so the index is not known to be up to date either.
    unreadable: tuple[tuple[str, str], ...] = ()

    @property
    def up_to_date(self) -> bool:
        return not self.stale_files and not self.missing_files and not self.unreadable


def _id_list(entry_ids: Iterable[int]) -> str:
    """Entry ids inlined into SQL: integers only, so nothing user-written reaches the SQL."""
    return ", ".join(map(str, map(int, entry_ids)))


def _files_of(ids: str) -> str:
    """The files of some entries (`_id_list`), in SQL: their blocks are the ones to read."""
    return f"(SELECT file_id FROM entries WHERE id IN ({ids}))"


_MAX_LINE = 2**31
_CLOCK = re.compile(r"[0-9]{2}:[0-9]{2}:[0-9]{2}")




def _clock(value: object) -> str | None:
    """An entry's time as stored (`HH:MM:SS` or NULL); anything else is damage."""
    if value is None or (type(value) is str and _CLOCK.fullmatch(value)):
        return value
    raise IndexRowError(f"an index row holds the time {value!r}")


# Seconds of each stored time seen (at most one per second of a day), so that `neighbours`
# checks and reads a time with one lookup: hundreds of neighbours a search.
_SECONDS: dict[object, int | None] = {None: None}


def _seconds(value: object) -> int | None:
    """An entry's time as seconds since midnight (None: no time); damage raises as `_clock`."""
    try:
        return _SECONDS[value]
    except (KeyError, TypeError):
        pass
    clock = _clock(value)
    seconds = int(clock[:2]) * 3600 + int(clock[3:5]) * 60 + int(clock[6:])
    _SECONDS[clock] = seconds
    return seconds


def row_to_entry(row: Sequence) -> Entry:
    """An `Entry` from a row selected with `_ENTRY_COLUMNS` (the id first). A value of the
    wrong type or out of range raises IndexRowError: the index is damaged."""
    _, source, path, line_start, line_end, day, clock, category, tags, content, meta = row
    if not (type(source) is str and type(path) is str and type(tags) is str
            and type(content) is str
            and type(line_start) is int and type(line_end) is int
            and 0 < line_start <= line_end < _MAX_LINE
            and all(value is None or type(value) is str for value in (day, category))):
        raise IndexRowError(f"an index row of {path!r} holds values of the wrong type")
    _clock(clock)
    day = _day(day, path)
    return Entry(content, source, path, line_start, line_end, day, clock, category,
                 tuple(tags.split()), _meta(meta, path) if meta is not None else NO_META)


def _day(day: str | None, path: str) -> Date | None:
    """A row's date as stored (ISO), or IndexRowError naming the file."""
    try:
        return Date.fromisoformat(day) if day else None
    except ValueError as exc:
        raise IndexRowError(f"an index row of {path!r} holds the date {day!r}") from exc


def _meta(value: object, path: str) -> Mapping[str, object]:
    """A source's metadata as stored (a JSON object); anything else is damage."""
    import json

    try:
        meta = json.loads(value) if type(value) is str else None
    except ValueError:
        meta = None
    if type(meta) is not dict:
        raise IndexRowError(f"an index row of {path!r} holds damaged metadata")
    return Meta(meta)


class Place(NamedTuple):
    """Where an entry sits, all a ranking needs to order candidates: reading it leaves the
    text (thousands of characters in a long turn) in the index until a result shows it."""

    date: Date | None
    time: str | None
    path: str
    line_start: int


def row_to_place(row: Sequence) -> Place:
    """A `Place` from (id, date, time, path, line_start); a damaged value raises
    IndexRowError, as in `row_to_entry`."""
    _, day, clock, path, line_start = row
    if not (type(path) is str and type(line_start) is int and 0 < line_start < _MAX_LINE
            and (day is None or type(day) is str)):
        raise IndexRowError(f"an index row of {path!r} holds values of the wrong type")
    _clock(clock)
    day = _day(day, path)
    return Place(day, clock, path, line_start)


EXACT_MEDIAN_UP_TO = 5_000


def _median_stale(cached: tuple[int, int, float], count: int, length: int) -> bool:
    """Whether the cached (entries, terms, median length) must be read again."""
    old_count, old_length, _ = cached
    if (old_count, old_length) == (count, length):
        return False
    if count <= EXACT_MEDIAN_UP_TO or old_count <= 0:
        return True
    return abs(count - old_count) > count // 100 or abs(length - old_length) > length // 100


class SearchIndex:
    """The index of one workspace, over its file (`db`: connections, schema, recovery).
    Methods are blocking: call them off the event loop.

    An operation (a search, a refresh) syncs once, at its start (`refresh`), and then only
    reads; reads never sync. When the file is replaced under it (`IndexReplaced`), the
    operation starts again from its sync (`retrying`)."""

    def __init__(self, path: Path, workspace: Path,
                 sources: Sequence[MemorySource] = SOURCES) -> None:
        self.db = IndexDatabase(path, workspace)
        self.path = self.db.path
        self.workspace = Path(workspace)
        self.sources = tuple(sources)
        self._synced: tuple[int, int] | None = None  # the file the last refresh brought up to date
        self._refreshing = threading.RLock()
        self._refreshes = 0
        self._median = (-1, -1, 0.0)  # (entries, terms, median entry length) last read
        self._watch = None  # a FolderWatch once this process has refreshed twice
        # MINICLAW_WATCH=0: never watch, stat every file before every search.
        self._watch_allowed = os.environ.get("MINICLAW_WATCH", "1") != "0"
        self._read_twice: list[tuple[SourceFile, str]] = []  # (file, its reader): last scan
        self._unlisted: list[tuple[str, str]] = []  # (folder, warning): the last scan's
        #: Sources with a file on disk at the last refresh: a search skips the others (an
        #: empty or missing sessions/ folder costs a search nothing). None: not known yet.

    def close(self) -> None:
        """Stop watching the folder and close every connection (no search may be running)."""
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        self.db.close()

    def _run(self, work: Callable[[sqlite3.Connection], object]):
        """A read of the file the last refresh synced (`IndexReplaced` if it is another)."""
        return self.db.run(work, expect=self._synced)

    def snapshot(self):
        """Read in one transaction (`IndexDatabase.reading`) of the file last synced."""
        return self.db.reading(expect=self._synced)

    @staticmethod
    def retrying(operation: Callable[[], object]):
        """Run an operation (its sync, then its reads) again, once, when the index file was
        replaced under it: a second replacement is reported (`IndexReplaced`)."""
        try:
            return operation()
        except IndexReplaced:
            return operation()

    # -- keeping up to date --------------------------------------------------------------

    def scan(self) -> list[SourceFile]:
        """The memory files on disk now, across every source; a file two sources find is
        the first's (`read_once`), and a folder that could not be listed (`listing`: its
        files are left out, so the index drops them) is named once, however many sources
        read it; `warnings` says both until a scan finds none."""
        every: list[SourceFile] = []
        unlisted: dict[str, str] = {}
        for source in self.sources:
            found, folders = listing(source, self.workspace)
            every += found
            for folder, warning in folders:
                unlisted.setdefault(folder, warning)
        every, self._read_twice = read_once(every)
        self._unlisted = list(unlisted.items())
        return every

    def refresh(self, *, rebuild: bool = False,
                progress: Callable[[int, int], None] | None = None) -> RefreshReport:
        """Bring the index up to date with every memory file; with `rebuild`, start over.

        Every file is checked, not only those a search can return, so that scores (which
        use statistics of the whole index) depend on the files alone, never on history.
        A process that refreshes more than once watches the memory folder (`watch`) and
        then re-checks only the files that changed.
        """
        def sync(conn: sqlite3.Connection) -> RefreshReport:
            return self._refresh(conn, rebuild, progress)

        with self._refreshing:  # from the very start, so that `status` waits for all of it
            return self.retrying(lambda: self.db.run(sync))

    def _changed_names(self, rebuild: bool) -> set[str] | None:
        """Paths (absolute) changed since the last refresh, or None: check every file."""
        if self._watch is not None and self._watch.active:
            if self._unlisted:
                # A folder the last look could not list (or a root that was gone) is not
                # watched: its return would go unseen. Look at everything until it is back.
                self._watch.close()
            else:
                names = self._watch.changes()
                if rebuild or self.db.file() != self._synced:
                    return None
                return names
        self._watch = None
        self._refreshes += 1
        if self._refreshes >= 2 and self._watch_allowed and not self._unlisted:
            from miniclaw.index.watch import FolderWatch

            folders = {folder for source in self.sources for folder in source.folders(self.workspace)}
            watch = FolderWatch(sorted(folders))
            if watch.start():
                self._watch = watch  # started before this full check: nothing is missed
            else:
                self._watch_allowed = False
        return None

    def _look(self, conn, names: set[str] | None) -> tuple[list, list, dict, str | None]:
        """(stale files, paths gone, indexed rows, fingerprint) for every file, or for
        `names` only (then no fingerprint).

        The fingerprint lists every file's signature; the index keeps the one of its last
        full refresh that left no racy file, and when the disk gives the same one, nothing
        changed and the indexed rows need not be read at all. A racy file (just written, or
        unreadable) is re-checked by every refresh until it is settled, watched or not: a
        watch reports changes, and a file that could not be read may not change at all.
        """
        if names is not None:  # display paths are workspace-relative, absolute or `~/...`
            names = names | {os.path.join(self.workspace, os.path.expanduser(path)) for (path,)
                             in conn.execute("SELECT path FROM files WHERE racy != 0")}
        if names is None:
            disk = self.scan()
            fingerprint = "\n".join(sorted(f"{f.path}\t{f.size}\t{f.mtime_ns}\t{f.inode}\t"
                                           f"{f.source}"
                                           for f in disk))
            stored = conn.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
            if stored is not None and stored[0] == fingerprint:
                return [], [], {}, fingerprint
            known = self._known(conn)
            return (*self._todo(disk, known), known, fingerprint)
        disk, paths, seen = [], [], set()
        for source in self.sources:
            for name in names:
                path = source.path_of(self.workspace, name)
                if path is not None:
                    paths.append(path)
                    # a file two sources find is the first's, as in `scan`
                    found = None if name in seen else source.file(self.workspace, name)
                    if found is not None:
                        disk.append(found)
                        seen.add(name)
        if any(is_alias(found.absolute) for found in disk):  # maybe a file known by another
            return self._look(conn, None)  # name: the whole listing keeps one (`listing`)
        known = self._known(conn, paths)
        return (*self._todo(disk, known), known, None)

    def _known(self, conn: sqlite3.Connection, paths: list[str] | None = None) -> dict[str, tuple]:
        """path -> (file id, size, mtime_ns, inode, racy, source) of the indexed files."""
        sql = "SELECT path, id, size, mtime_ns, inode, racy, source FROM files"
        if paths is None:
            rows = conn.execute(sql)
        else:
            rows = conn.execute(sql + f" WHERE path IN ({', '.join('?' * len(paths))})", paths)
        return {row[0]: row[1:] for row in rows}

    @staticmethod
    def _todo(disk: list[SourceFile], known: dict[str, tuple]) -> tuple[list, list]:
        """(files to read, indexed paths to drop). A file another source reads now (a
        source renamed: `sources remove` and `add`, or config.json edited) is both: its
        rows carried the old name, which no search asks for, and the index said it was
        up to date, so its memories were never found again."""
        stale = [f for f in disk if f.path not in known or known[f.path][4]
                 or known[f.path][1:4] != f.signature or known[f.path][5] != f.source]
        on_disk = {f.path: f.source for f in disk}
        gone = [path for path, row in known.items() if on_disk.get(path) != row[5]]
        return stale, gone

    def _refresh(self, conn, rebuild, progress) -> RefreshReport:
        with self._refreshing:  # one refresh at a time: a drained watch must be acted on
            names = self._changed_names(rebuild)
            try:
                report = self._apply(conn, names, rebuild, progress)
            except BaseException:
                rollback(conn)
                self._synced = None  # drained changes may not be applied: check all next
                raise
            self._synced = self.db.file()
            if rebuild or report.entries_removed or report.files_removed or self.db.wipe_pending:
                self.db.wipe_wal(conn)  # deleted rows (maybe text made private) out of the WAL
            return report

    def _apply(self, conn, names: set[str] | None, rebuild: bool, progress) -> RefreshReport:
        """Index what changed among `names` (None: every file), in one write transaction."""
        if not rebuild:
            stale, gone, known, fingerprint = self._look(conn, names)
            # Up to date; but when the fingerprint was not stored yet, store it below.
            if not stale and not gone and not (fingerprint and known):
                return RefreshReport()
        self.db.write_settings(conn)
        conn.execute("BEGIN IMMEDIATE")
        if rebuild:
            for table in ("blocks", "terms", "entries", "files"):
                conn.execute(f"DELETE FROM {table}")
            conn.execute("DELETE FROM meta WHERE key = 'fingerprint' OR key LIKE 'tail:%'")
        # Another process may have refreshed while we waited for the lock: look again.
        stale, gone, known, fingerprint = self._look(conn, names)
        report = sync_files(conn, self.sources, known, stale, gone, progress, self.workspace)
        report.files_left_out = sum(in_unlisted(path, self._unlisted) for path in gone)
        if rebuild:  # derived data outlives a rebuild, but only for texts still indexed
            drop_orphan_derived(conn, None)
        racy = conn.execute("SELECT 1 FROM files WHERE racy LIMIT 1").fetchone()
        if fingerprint is None or racy:
            conn.execute("DELETE FROM meta WHERE key = 'fingerprint'")
        else:
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('fingerprint', ?)", (fingerprint,))
        if report.changed or rebuild:
            # Corpus totals for every search, kept here rather than summed each time.
            conn.execute(
                "INSERT OR REPLACE INTO meta SELECT 'entries', COALESCE(SUM(entry_count), 0)"
                " FROM files UNION ALL SELECT 'terms', COALESCE(SUM(term_count), 0)"
                " FROM files UNION ALL SELECT 'updated_at', ?",
                (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),))
        conn.execute("COMMIT")
        return report

    # -- reading -------------------------------------------------------------------------

    def warnings(self) -> list[tuple[str, str]]:
        """(path, warning) of each folder the last scan could not list (`listing`: path
        ending in `/`, or a source's root that is gone), recorded for indexed files (bad
        bytes, unreadable), and for a file two sources read (the last scan's `read_twice`),
        returned by every search."""
        rows = self._run(lambda c: c.execute(
            "SELECT path, warning FROM files INDEXED BY files_with_warning"
            " WHERE warning IS NOT NULL ORDER BY path").fetchall())
        return list(self._unlisted) + [(path, warning) for path, warning in rows] + [
            (path, f"{said}: remove one from config.json (`miniclaw sources remove {second}`)")
            for path, _, second, said in read_twice_warnings(self._read_twice)]

    def corpus(self, terms: Iterable[str]) -> tuple[int, float, dict[str, int]]:
        """(entries, typical entry length, document frequency of each term) over all sources.

        The typical length is the median, not the mean: a few very long entries (an
        assistant's essay among short turns) would otherwise make every entry look short,
        and BM25 would stop telling long entries from short ones (benchmarks/README.md).
        Reading it sorts every entry's length: it is re-read when the entries or terms
        change, and in an index of over `EXACT_MEDIAN_UP_TO` entries only once they have
        changed by 1% (the median of a large index moves slowly; an append stays cheap)."""
        terms = list(dict.fromkeys(terms))

        def work(conn):
            totals = dict(conn.execute(
                "SELECT key, value FROM meta WHERE key IN ('entries', 'terms')").fetchall())
            try:
                count, length = int(totals.get("entries", 0)), int(totals.get("terms", 0))
            except ValueError as exc:
                raise IndexRowError(f"the index's totals are {totals}") from exc
            if count < 0 or length < 0:
                raise IndexRowError(f"the index's totals are negative ({count}, {length})")
            if _median_stale(self._median, count, length):
                middle = conn.execute("SELECT length FROM entries ORDER BY length LIMIT 1 OFFSET ?",
                                      (count // 2,)).fetchone()
                if middle is not None and type(middle[0]) is not int:
                    raise IndexRowError("an entry's length in the index is damaged")
                self._median = (count, length, float(max(middle[0], 1)) if middle else 0.0)
            df = dict.fromkeys(terms, 0)
            if terms:  # one statement for all the terms: a question has ten
                df.update(conn.execute(
                    "SELECT t.term, SUM(b.n) FROM terms t JOIN blocks b ON b.term_id = t.id"
                    f" WHERE t.term IN ({', '.join('?' * len(terms))}) GROUP BY t.term", terms))
            return count, self._median[2], df

        return self._run(work)

    def has_entries(self, source: MemorySource) -> bool:
        """Whether any file of `source` holds entries: a search skips an empty source, whose
        retrieval would still read every posting of the query's terms to find none of its
        own (a workspace without MEMORY.md, a configured source not filled yet)."""
        return self._run(lambda c: c.execute(
            "SELECT 1 FROM files WHERE source = ? AND entry_count > 0 LIMIT 1",
            (source.name,)).fetchone()) is not None

    def paths_with_entries(self) -> set[str]:
        """The display paths of the files that hold a visible entry (not one private as a
        whole, or all of whose text is private)."""
        return self._run(lambda c: {path for (path,) in c.execute(
            "SELECT path FROM files WHERE entry_count > 0")})

    def has_older(self, source: MemorySource, day: Date) -> bool:
        """Whether any file of a windowed `source` dated before `day` holds entries: only
        then may a wider window (`--all`) find more."""
        return self._run(lambda c: c.execute(
            "SELECT 1 FROM files WHERE source = ? AND day < ? AND entry_count > 0 LIMIT 1",
            (source.name, day.isoformat())).fetchone()) is not None

    def dated(self, filters: Filters, windowed: Sequence[str] = ()) -> dict[int, Place]:
        """The places of every entry the filters allow, by each source's `_where` (the
        window applies to the `windowed` sources): a question that names only dates ("what
        did I do yesterday?") is answered by the entries of those dates (ranker.py)."""
        def work(conn):
            out = {}
            for source in filters.sources:
                where, params = self._where(filters, source, source in windowed)
                out.update((row[0], row_to_place(row)) for row in conn.execute(
                    f"SELECT e.id, e.date, e.time, e.path, e.line_start FROM entries e"
                    f" WHERE {where}", params))
            return out

        return self._run(work)

    def unheld(self, filters: Filters) -> list[tuple[str, str]]:
        """("category" or "tag", value) of the filters' category and tags that no entry has
        in any source: a search they emptied says which to drop (a scan of the entries, so
        only for a search that found nothing)."""
        def work(conn):
            out = []
            if filters.category is not None and conn.execute(
                    "SELECT 1 FROM entries WHERE category = ? LIMIT 1",
                    (filters.category,)).fetchone() is None:
                out.append(("category", filters.category))
            for tag in filters.tags:
                if conn.execute("SELECT 1 FROM entries WHERE instr(' ' || tags || ' ', ?) > 0"
                                " LIMIT 1", (f" {tag} ",)).fetchone() is None:
                    out.append(("tag", tag))
            return out

        return self._run(work)

    @staticmethod
    def _where(filters: Filters, source: str, windowed: bool) -> tuple[str, list]:
        count = len(filters.tags) + len(filters.required) + len(filters.excluded) + len(filters.meta)
        if count > MAX_FILTERS:
            raise UsageError(f"a search takes at most {MAX_FILTERS} filters (tags, required and "
                             f"excluded words, metadata values together); this one has "
                             f"{count:,}: drop some")
        clauses, params = ["e.source = ?"], [source]
        if windowed and filters.window_start is not None:
            clauses.append("e.date >= ?")
            params.append(filters.window_start.isoformat())
        if filters.since is not None:
            clauses.append("e.date >= ?")
            params.append(filters.since.isoformat())
        if filters.until is not None:
            clauses.append("e.date <= ?")
            params.append(filters.until.isoformat())
        if filters.category is not None:
            clauses.append("e.category = ?")
            params.append(filters.category)
        for tag in filters.tags:
            clauses.append("instr(' ' || e.tags || ' ', ?) > 0")
            params.append(f" {tag} ")
        if filters.current:
            clauses.append("(e.meta IS NULL OR json_extract(e.meta, '$.superseded_by') IS NULL)")
        for key, value in filters.meta:  # a key is a plain name (SearchOptions.build)
            clauses.append("json_extract(e.meta, ?) = ?")
            params.extend((f"$.{key}", value))
        # The entries holding a term, listed once per statement (a block is read whole,
        # so a lookup per candidate entry would read its block again each time).
        for term in filters.required:
            clauses.append("e.id IN (SELECT entry_id FROM term_postings WHERE term = ?)")
            params.append(term)
        if filters.excluded:
            marks = ", ".join("?" * len(filters.excluded))
            clauses.append(f"e.id NOT IN (SELECT entry_id FROM term_postings WHERE term IN ({marks}))")
            params.extend(filters.excluded)
        return " AND ".join(clauses), params

    @staticmethod
    def _score_sql(weights: dict[str, float], term_score_sql: str,
                   avgdl: float) -> tuple[str, str, list]:
        """The query terms as a CTE with their weights, and an entry's score as a sum."""
        values = ", ".join(["(?, ?)"] * len(weights))
        expression = term_score_sql.replace(":avgdl", repr(float(avgdl or 1.0)))
        params = [x for pair in weights.items() for x in pair]
        return (f"WITH q(term, weight) AS (VALUES {values}) ",
                f"SUM(q.weight * {expression})", params)

    _FROM = "FROM q JOIN term_postings p ON p.term = q.term JOIN entries e ON e.id = p.entry_id "
    # The same rows, driven from the source's files (files by source): each file looks up
    # its blocks of the query's terms in the blocks' primary key (term, file). CROSS JOIN
    # fixes that order: SQLite, without statistics, would read every block of the terms.
    _FROM_SOURCE = ("FROM files f CROSS JOIN q CROSS JOIN term_postings p ON p.term = q.term"
                    " AND p.file_id = f.id CROSS JOIN entries e ON e.id = p.entry_id ")

    @staticmethod
    def _small_source(conn: sqlite3.Connection, source: str, terms: Sequence[str]) -> bool:
        """Whether looking up each of `source`'s entries' postings (entries x terms) reads
        fewer rows than the terms' postings in all sources: then a small store beside a large
        workspace no longer pays for the workspace's postings. Deciding reads at most
        `SMALL_SOURCE_FILES` + 1 of its files' rows and entries x terms + 1 postings' keys:
        its cost scales with the source too (a source of more files, daily notes, is large)."""
        marks = ", ".join("?" * len(terms))
        return bool(conn.execute(
            "WITH s(lookups, files) AS (SELECT COALESCE(SUM(entry_count), 0) * ?, COUNT(*) FROM"
            " (SELECT entry_count FROM files WHERE source = ? AND entry_count > 0 LIMIT ?)) "
            "SELECT files <= ? AND lookups < (SELECT COALESCE(SUM(n), 0) FROM (SELECT b.n FROM"
            f" terms t JOIN blocks b ON b.term_id = t.id WHERE t.term IN ({marks})"
            " LIMIT (SELECT lookups + 1 FROM s))) FROM s",
            [len(terms), source, SMALL_SOURCE_FILES + 1, SMALL_SOURCE_FILES, *terms]
        ).fetchone()[0])

    def top(self, source: MemorySource, filters: Filters, weights: dict[str, float],
            term_score_sql: str, avgdl: float, k: int) -> list[tuple[int, float, int]]:
        """The `k` best (entry id, score, number of entries matched) of one source, read
        from the terms' postings or from the source's entries, whichever is fewer rows."""
        if not weights:
            return []
        cte, score, params = self._score_sql(weights, term_score_sql, avgdl)
        where, where_params = self._where(filters, source.name, source.windowed)

        def work(conn):
            small = self._small_source(conn, source.name, list(weights))
            sql = (f"{cte}SELECT p.entry_id, {score} AS score, COUNT(*) OVER () "
                   f"{self._FROM_SOURCE if small else self._FROM}"
                   f"WHERE {'f.source = ? AND ' if small else ''}{where} GROUP BY p.entry_id "
                   "ORDER BY score DESC, e.date DESC, e.time DESC, e.path, e.line_start LIMIT ?")
            args = params + ([source.name] if small else []) + where_params + [k]
            return conn.execute(sql, args).fetchall()

        return self._run(work)

    def contributions(self, entry_ids: Sequence[int], weights: dict[str, float],
                      term_score_sql: str, avgdl: float) -> dict[int, dict[str, float]]:
        """For `--explain`: each query term's part of each given entry's score."""
        if not entry_ids or not weights:
            return {i: {} for i in entry_ids}
        cte, _, params = self._score_sql(weights, term_score_sql, avgdl)
        expression = term_score_sql.replace(":avgdl", repr(float(avgdl or 1.0)))
        ids = _id_list(entry_ids)
        sql = (f"{cte}SELECT p.entry_id, q.term, q.weight * {expression} FROM q JOIN"
               f" term_postings p ON p.term = q.term AND p.file_id IN {_files_of(ids)}"
               f" JOIN entries e ON e.id = p.entry_id WHERE p.entry_id IN ({ids})")
        out: dict[int, dict[str, float]] = {i: {} for i in entry_ids}
        for entry_id, term, value in self._run(lambda c: c.execute(sql, params).fetchall()):
            out[entry_id][term] = value
        return out

    def terms_starting(self, prefix: str, limit: int = 50) -> list[str]:
        """Indexed terms that start with `prefix` (for `word*`), at most `limit`."""
        rows = self._run(lambda c: c.execute(
            "SELECT term FROM terms WHERE term >= ? AND term < ? ORDER BY term LIMIT ?",
            (prefix, prefix + "\U0010ffff", limit)).fetchall())
        return [row[0] for row in rows]

    def vocabulary(self, first: str) -> dict[str, int]:
        """Indexed terms starting with the character `first`, with the number of entries
        holding each: the candidates of the spelling fallback."""
        return dict(self._run(lambda c: c.execute(
            "SELECT t.term, SUM(b.n) FROM terms t JOIN blocks b ON b.term_id = t.id"
            " WHERE t.term >= ? AND t.term < ? GROUP BY t.term",
            (first, first + "\U0010ffff")).fetchall()))

    def neighbours(self, entry_ids: Sequence[int], reach: int,
                   max_gap_s: int) -> dict[int, list[tuple[int, int]]]:
        """(entry id, offset) of the entries up to `reach` places before and after each given
        one in its file (offset -1 is the one right before), written at most `max_gap_s`
        seconds from it (an entry without a time is close to any).

        The times are compared in Python with `_seconds` (one lookup each): in SQL, checking
        and reading both times of each pair was half of the statement, and the statement
        most of the neighbour stage. A stored time that is not `HH:MM:SS` is damage, as in
        `row_to_entry`."""
        if not entry_ids:
            return {}
        ids = _id_list(entry_ids)
        sql = ("SELECT e.id, n.id, n.ordinal - e.ordinal, e.time, n.time"
               " FROM entries e JOIN entries n ON n.file_id = e.file_id"
               " AND n.ordinal BETWEEN e.ordinal - ? AND e.ordinal + ?"
               f" AND n.id != e.id WHERE e.id IN ({ids})")

        def work(conn):  # decodes inside `_run`, so damage is handled as damage
            out: dict[int, list[tuple[int, int]]] = {i: [] for i in entry_ids}
            for entry_id, other, offset, mine, theirs in conn.execute(sql, (reach, reach)):
                mine, theirs = _seconds(mine), _seconds(theirs)
                if mine is None or theirs is None or abs(mine - theirs) <= max_gap_s:
                    out[entry_id].append((other, offset))
            return out

        return self._run(work)

    def matching(self, source: MemorySource, filters: Filters) -> list[int]:
        """Every entry of `source` that passes the filters: for a retriever that scores
        each entry itself (a vector search by brute force) rather than through postings."""
        where, params = self._where(filters, source.name, source.windowed)
        sql = f"SELECT e.id FROM entries e WHERE {where} ORDER BY e.id"
        return [row[0] for row in self._run(lambda c: c.execute(sql, params).fetchall())]

    def with_texts(self, source: MemorySource, filters: Filters,
                   hashes: Sequence[bytes]) -> list[tuple[int, bytes, int]]:
        """(entry id, text hash, length) of the entries of `source` that pass the filters and
        hold one of these texts: for a retriever that finds texts first (by their vectors)."""
        if not hashes:
            return []
        where, params = self._where(filters, source.name, source.windowed)
        out: list[tuple[int, bytes, int]] = []
        for start in range(0, len(hashes), 500):  # SQLite caps a statement's parameters
            chunk = list(hashes[start:start + 500])
            sql = (f"SELECT e.id, e.hash, e.length FROM entries e WHERE e.hash IN"
                   f" ({', '.join('?' * len(chunk))}) AND {where}")
            out.extend(self._run(lambda c: c.execute(sql, [*chunk, *params]).fetchall()))
        return out

    def filter_ids(self, entry_ids: Sequence[int], filters: Filters,
                   source: MemorySource | None = None) -> list[int]:
        """The given entries that pass the filters (looked for in `source` alone when they
        are known to be its own: one query instead of one per source)."""
        if not entry_ids:
            return []
        ids = _id_list(entry_ids)
        keep = []
        for each in self.sources if source is None else (source,):
            if each.name not in filters.sources:
                continue
            where, params = self._where(filters, each.name, each.windowed)
            sql = f"SELECT e.id FROM entries e WHERE e.id IN ({ids}) AND {where}"
            keep.extend(row[0] for row in self._run(lambda c: c.execute(sql, params).fetchall()))
        return keep

    def entries(self, entry_ids: Sequence[int]) -> dict[int, Entry]:
        if not entry_ids:
            return {}
        ids = _id_list(entry_ids)
        return self._run(lambda c: {row[0]: row_to_entry(row) for row in c.execute(
            f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE id IN ({ids})")})

    def hashes_at(self, path: str, line_start: int) -> list[tuple[int, bytes]]:
        """(last line, text hash) of each memory the index last saw starting at this line
        of this file, and of each a forget moved or removed from there (`note_shifted`):
        read as the index is, never synced (`forget.find` checks a bare citation by it)."""
        prefix = f"{_SHIFTED}{path}:{line_start}:"

        def work(conn) -> list[tuple[int, bytes]]:
            rows = conn.execute("SELECT line_end, hash FROM entries WHERE path = ? AND "
                                "line_start = ?", (path, line_start)).fetchall()
            for (key,) in conn.execute("SELECT key FROM meta WHERE substr(key, 1, ?) = ?",
                                       (len(prefix), prefix)):
                end, _, digest = key[len(prefix):].partition(":")
                rows.append((int(end), bytes.fromhex(digest)))
            return rows

        return self._run(work)

    def note_shifted(self, places: Iterable[tuple[str, int, int, bytes]]) -> None:
        """Remember (path, first line, last line, text hash) of memories a forget moved or
        removed, the hash only (a forgotten text is kept nowhere): a bare citation given
        before is refused, even once a search re-synced the index. The newest
        `_SHIFTED_KEPT` are kept."""
        def work(conn) -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany("INSERT OR IGNORE INTO meta VALUES (?, '')", [
                    (f"{_SHIFTED}{path}:{start}:{end}:{digest.hex()}",)
                    for path, start, end, digest in places])
                conn.execute("DELETE FROM meta WHERE key IN (SELECT key FROM meta WHERE "
                             "substr(key, 1, ?) = ? ORDER BY rowid DESC LIMIT -1 OFFSET ?)",
                             (len(_SHIFTED), _SHIFTED, _SHIFTED_KEPT))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

        self._run(work)

    def places(self, entry_ids: Sequence[int]) -> dict[int, Place]:
        """Where each given entry sits (no text): what ordering candidates needs."""
        if not entry_ids:
            return {}
        ids = _id_list(entry_ids)
        return self._run(lambda c: {row[0]: row_to_place(row) for row in c.execute(
            f"SELECT id, date, time, path, line_start FROM entries WHERE id IN ({ids})")})

    def texts_of(self, entry_ids: Sequence[int]) -> dict[int, tuple[bytes, int]]:
        """The hash of each given entry's text (what derived data, a vector, is kept by) and
        its length in terms, in one read."""
        if not entry_ids:
            return {}
        ids = _id_list(entry_ids)
        rows = self._run(lambda c: c.execute(
            f"SELECT id, hash, length FROM entries WHERE id IN ({ids})").fetchall())
        if any(type(text_hash) is not bytes for _, text_hash, _ in rows):
            raise IndexRowError("an entry's text hash in the index is damaged")
        return {entry_id: (text_hash, length) for entry_id, text_hash, length in rows}

    def term_frequencies(self, entry_ids: Sequence[int], terms: Iterable[str]) -> dict[int, dict[str, int]]:
        """For `--explain`: how often each query term occurs in each given entry."""
        terms = list(dict.fromkeys(terms))
        if not entry_ids or not terms:
            return {i: {} for i in entry_ids}
        ids = _id_list(entry_ids)
        marks = ", ".join("?" * len(terms))
        rows = self._run(lambda c: c.execute(
            f"SELECT entry_id, term, tf FROM term_postings WHERE term IN ({marks})"
            f" AND file_id IN {_files_of(ids)} AND entry_id IN ({ids})", terms).fetchall())
        out: dict[int, dict[str, int]] = {i: {} for i in entry_ids}
        for entry_id, term, tf in rows:
            out[entry_id][term] = tf
        return out

    def lengths(self, entry_ids: Sequence[int]) -> dict[int, int]:
        if not entry_ids:
            return {}
        ids = _id_list(entry_ids)
        return dict(self._run(lambda c: c.execute(
            f"SELECT id, length FROM entries WHERE id IN ({ids})").fetchall()))

    def status(self) -> IndexStatus:
        """The index against the files on disk now, read-only: nothing is created, synced or
        repaired (`IndexDatabase.read_only`). An index that is missing, of another format or
        unreadable now holds nothing, so every file on disk is reported new. A sync this
        process is running (a long-lived server's first one) is waited for, not reported
        half done."""
        disk = self.scan()
        known, counts, updated, per_source = {}, (0, 0, 0), None, {}
        with self._refreshing, self.db.read_only() as conn:
            if conn is not None:
                try:
                    known = self._known(conn)
                    files, entries = conn.execute(
                        "SELECT COUNT(*), COALESCE(SUM(entry_count), 0) FROM files").fetchone()
                    terms = conn.execute("SELECT COUNT(*) FROM terms").fetchone()[0]
                    counts = (files, entries, terms)
                    row = conn.execute("SELECT value FROM meta WHERE key = 'updated_at'").fetchone()
                    updated = row[0] if row else None
                    per_source = {name: (files, entries) for name, files, entries in conn.execute(
                        "SELECT source, COUNT(*), COALESCE(SUM(entry_count), 0) FROM files "
                        "GROUP BY source")}
                except sqlite3.DatabaseError:  # damaged: the next search rebuilds it
                    known, counts, updated, per_source = {}, (0, 0, 0), None, {}
        stale, gone = self._todo(disk, known)
        unreadable = tuple(self._unlisted)
        # A racy file is only "maybe" stale: report it when its signature (or source) moved;
        # a file read by another source than before is stale, not missing.
        from miniclaw.fs import files  # a private file is never named (shown_name)

        stale = [files.shown_name(f.absolute, f.path) for f in stale if f.path not in known
                 or (*known[f.path][1:4], known[f.path][5]) != (*f.signature, f.source)]
        on_disk = {f.path for f in disk}
        # A file in a folder that cannot be listed is not known to be deleted: the folder
        # is reported instead (the next search drops its entries, and says why).
        gone = [path for path in gone
                if path not in on_disk and not in_unlisted(path, unreadable)]
        size = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                size += os.path.getsize(f"{self.path}{suffix}")
        by_source = tuple((source.name, sum(f.source == source.name for f in disk),
                           *per_source.get(source.name, (0, 0))) for source in self.sources)
        return IndexStatus(str(self.path), os.path.exists(self.path), size, *counts, updated,
                           tuple(stale), tuple(gone), len(disk), by_source, unreadable)
