"""Bringing the index's rows in line with changed memory files (inside the caller's
write transaction).

Each changed file is read, parsed and tokenized, then diffed against its indexed entries by
identity: the hash of the entry's text (`content_hash`) and, for text repeated in one file,
its occurrence number; the file row stands for the source and path. Only entries whose text
is new are inserted (with their postings) and only those whose text is gone are deleted; an
entry that merely moved (a line inserted above it, a new heading date or tags) is updated in
place, its postings and derived data (`derived`) untouched. So an append to, or a line
inserted at the top of, a large MEMORY.md writes one entry's postings, not thousands. A file written
within `RACY_NS` of being read (or dated up to `FUTURE_RACY_NS` in the future) is marked
racy and re-checked next time, since a same-size edit in the same clock tick keeps its mtime.
A file is read through a descriptor opened without following links and checked to be a
regular file (`_read`), and indexed with the signature of that descriptor, not the scan's:
a note swapped for a link, a FIFO or a folder between the scan and the read is skipped like
a deleted one, and a note changed in between is indexed as what was read.

Postings are packed: one `blocks` row holds a term's postings in one file among the entries
one write added (`_packed`), so a build of 100 MB of transcripts writes ~0.6 million rows
where one row per posting made 5.7 million (the writer's CPU: 29 -> ~8 s). An entry's
postings are deleted by its stored term ids (`_delete_entries`).

Speed: rows are inserted in multi-row statements (`_Rows`), during which SQLite runs without
the GIL; when many files changed, a second thread reads, parses and tokenizes the next files
meanwhile (`_parse_ahead`). With one insert per row the two threads handed the GIL back and
forth on every row and a build was 25% slower than with one thread; with batches it is
10-15% faster on two cores. A build of `PARSE_PROCESS_BYTES` or more gives that work to
child processes instead (`parse_worker`), which run Python on the other cores while this one
writes, and pack the blocks too. Blocks are written sorted by term, the order of their table
(`SORTED_BLOCKS`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import time
from pathlib import Path
from array import array
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, repeat
from operator import itemgetter, or_
from typing import NamedTuple

from miniclaw.entries.entry import Entry
from miniclaw.index.database import IndexRowError
from miniclaw.fs.files import (MAX_FILE_BYTES, NotMemoryFileError, OutsideWorkspaceError,
                               decode, open_in_workspace, read_fd)
from miniclaw.sources.base import MemorySource, SourceFile, read_entries, source_warning
from miniclaw.entries.tokenizer import counted_index_terms

RACY_NS = 2_000_000_000
FUTURE_RACY_NS = 600 * 1_000_000_000  # clock skew between synced machines, at most
PARSE_AHEAD_MIN_FILES = 8  # fewer changed files are parsed in the writing thread
PARSE_AHEAD_DEPTH = 32  # files parsed but not yet written, at most
PARSE_AHEAD_BYTES = 32 * 1024 * 1024  # and at most this much of their Markdown
PARSE_PROCESS_BYTES = 8 * 1024 * 1024  # changed files of this much are parsed in a process
MAX_BATCH_PARAMS = 9000  # values in one multi-row INSERT (~3,000 postings)
SORTED_BLOCKS = 50_000  # blocks gathered and sorted by term before they are written


class RefreshReport:
    """What one refresh did."""

    __slots__ = ("files_parsed", "files_removed", "files_left_out", "entries_added",
                 "entries_removed", "entries_moved", "postings_added", "warnings")

    def __init__(self) -> None:
        self.files_parsed = self.files_removed = 0
        #: Of `files_removed`, those not deleted but in a folder that cannot be listed now
        #: (their entries are dropped all the same: `sources.listing`).
        self.files_left_out = 0
        self.entries_added = self.entries_removed = 0
        self.entries_moved = 0  # kept, with their position or annotations updated in place
        self.postings_added = 0
        self.warnings: list[str] = []

    @property
    def changed(self) -> bool:
        return bool(self.files_parsed or self.files_removed)


class _Parsed(NamedTuple):
    file: SourceFile
    keys: list[tuple] | None  # each entry's (identity, data) (`_entry_keys`); None: vanished
    terms: list[tuple]  # each entry's terms: (local numbers, frequencies, length) (`_parsed`)
    warning: str | None
    racy: bool
    append: bool = False  # entries appended to the file's (an append-only file's new part)
    tail: object = None  # `appends.Tail` to remember once stored (append-only files)
    vocabulary: list[str] | tuple = ()  # the entries' distinct terms; local number = place
    blocks: Blocks | None = None  # `_packed(terms)`, made ahead by a parse worker


def content_hash(text: str) -> bytes:
    """The key of an entry's text: its identity in its file (with an occurrence number) and
    the key of data derived from the text alone (`derived`), so a moved entry keeps both."""
    return _blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _blake2b(data: bytes, digest_size: int):
    """hashlib's blake2b, imported on the first hash: a search of an up-to-date index hashes
    nothing, and hashlib loads OpenSSL (~1.5 ms of every CLI start)."""
    global _blake2b
    from hashlib import blake2b as _blake2b

    return _blake2b(data, digest_size=digest_size)


def _entry_keys(entries: list[Entry]) -> list[tuple[tuple, tuple]]:
    """Each entry's identity (text hash, occurrence of that text so far in the file) and
    its data, in the `entries` table's column order (ordinal, line_start, line_end, date,
    time, category, tags, meta, content)."""
    days: dict = {None: None}  # a note's entries share one date: format it once
    seen: dict[bytes, int] = {}  # a dict, not a Counter: its misses are Python calls
    keys = []
    for ordinal, (text, _, _, line_start, line_end, date, time, category, tags,
                  meta) in enumerate(entries):
        try:
            day = days[date]
        except KeyError:
            day = days[date] = date.isoformat()
        digest = content_hash(text)
        occurrence = seen.get(digest, 0)
        seen[digest] = occurrence + 1
        keys.append(((digest, occurrence), (ordinal, line_start, line_end, day, time, category,
                                            " ".join(tags), _meta_json(meta) if meta else None,
                                            text)))
    return keys


def _meta_json(meta) -> str:
    """A source's metadata as stored: one JSON object, keys sorted so equal maps compare equal.
    One encoder for every entry (`json.dumps` with options makes one per call: a fifth of
    the time of each transcript message's)."""
    global _meta_encoder
    if _meta_encoder is None:
        import json

        _meta_encoder = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)
    return _meta_encoder.encode(dict(meta))


_meta_encoder = None


def _parsed(source_file: SourceFile, entries: list[Entry], warning: str | None, racy: bool,
            append: bool = False) -> _Parsed:
    """A file's (or part's) entries with their terms counted where the file is parsed (in a
    parse worker for a large build: `parse_worker`), so the writer only numbers them: each
    entry's terms are numbers into the part's vocabulary (uint32 bytes, with frequencies
    when some repeat), which the writer maps to the index's term ids in C."""
    counted = [_counted(e) for e in entries]
    vocabulary = list(dict.fromkeys(chain.from_iterable(c[0] for c in counted)))
    local = {term: number for number, term in enumerate(vocabulary)}.__getitem__
    terms = [(array("I", map(local, distinct)).tobytes(),
              array("I", frequencies).tobytes() if frequencies else None, length)
             for distinct, frequencies, length in counted]
    return _Parsed(source_file, _entry_keys(entries), terms, warning, racy, append,
                   vocabulary=vocabulary)


def _counted(entry: Entry) -> tuple[list[str], list[int] | None, int]:
    """An entry's terms as the index stores them (`counted_index_terms`): its text's, and
    its tags as words, so that a query word equal to a tag finds it (a `coffee` tag is about
    coffee). Its length stays its text's: a tag changes no other word's score, and an
    untagged entry is indexed as before."""
    counted = counted_index_terms(entry.text)
    if not entry.tags:
        return counted
    distinct, frequencies, _ = counted_index_terms(f"{entry.text}\n{' '.join(entry.tags)}")
    return distinct, frequencies, counted[2]


#: A posting in a block: (entry id - the block's base) << TF_BITS | tf, tf capped at TF_MAX.
TF_BITS = 10
TF_MAX = (1 << TF_BITS) - 1


class Blocks(NamedTuple):
    """Packed postings of some entries (`_packed`), one block per term, as columns."""

    numbers: list[int]  # each block's term, as its local number (its place in the vocabulary)
    sizes: list[int]  # postings in each block
    postings: list[str]  # each block's JSON array (`blocks.postings`)


def _packed(terms: Sequence[tuple]) -> Blocks:
    """The postings of these entries (`_Parsed.terms`) as blocks, in term number order; an
    entry's place in `terms` is its id less the blocks' base. Every posting is appended to
    its term's list by `map` in C (`_append_all`), never by a loop of Python: a build packs
    millions."""
    size = 1 + max((max(array("I", numbers)) for numbers, _, _ in terms if numbers), default=-1)
    lists: list[list[int]] = [[] for _ in range(size)]
    for place, (numbers, frequencies, _) in enumerate(terms):
        ids = array("I")
        ids.frombytes(numbers)
        targets = map(lists.__getitem__, ids)
        if frequencies is None:
            _append_all(targets, repeat(place << TF_BITS | 1))
        else:
            counts = array("I")
            counts.frombytes(frequencies)
            _append_all(targets, map(or_, repeat(place << TF_BITS),
                                     map(min, counts, repeat(TF_MAX))))
    numbers = [number for number, values in enumerate(lists) if values]
    values = list(map(lists.__getitem__, numbers))
    return Blocks(numbers, list(map(len, values)),
                  ["[" + ",".join(map(str, each)) + "]" for each in values])


def _append_all(lists: Iterable[list], values: Iterable[int]) -> None:
    """`lists[i].append(values[i])` for each i, in C."""
    deque(map(list.append, lists, values), maxlen=0)


def _with_blocks(parsed: _Parsed) -> _Parsed:
    """`parsed` with its blocks made (by a parse worker, ahead of the writer): used when
    every entry of it is new (a new file, an append), as in a build."""
    if parsed.keys is None or not parsed.terms:
        return parsed
    return parsed._replace(blocks=_packed(parsed.terms))


def _term_ids(blob: bytes) -> array:
    """An entry's stored term ids; anything but a whole array of them is damage."""
    if type(blob) is not bytes or len(blob) % 4:
        raise IndexRowError("an entry's term ids are damaged")
    ids = array("I")
    ids.frombytes(blob)
    return ids


def _global(ids: list[int], terms: Sequence[tuple]) -> list[bytes]:
    """The entries' term ids as stored (`entries.term_ids`), from their local term numbers
    (`_Parsed.terms`): mapped all at once, in C, then cut per entry."""
    local = array("I")
    local.frombytes(b"".join([numbers for numbers, _, _ in terms]))
    mapped = array("I", map(ids.__getitem__, local)).tobytes()
    out, start = [], 0
    for numbers, _, _ in terms:
        end = start + len(numbers)
        out.append(mapped[start:end])
        start = end
    return out


# What opening a note that is gone, or not a regular file (any more), fails with.
_NOT_A_NOTE = {errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EINVAL, errno.ENXIO}


def _open(source_file: SourceFile, workspace: str) -> tuple[int, os.stat_result] | None:
    """A descriptor of the note and its fstat, or None when it is not a regular file in the
    workspace (or its source's root) now. A symlink (the scan allows those that stay there)
    is resolved, checked and its target opened, again without following links
    (`files.open_in_workspace`). A file that cannot be opened (permissions) raises
    `_Unreadable`."""
    try:
        fd, st, _ = open_in_workspace(Path(source_file.absolute), source_file.root or workspace,
                                      name=source_file.path)
        return fd, st
    except (NotMemoryFileError, OutsideWorkspaceError):
        return None
    except OSError as exc:
        if exc.errno in _NOT_A_NOTE:
            return None
        raise _Unreadable(f"cannot read {source_file.path}: {exc.strerror or exc}; "
                          "it is not searched until it can be read") from exc


class _Unreadable(Exception):
    """A memory file that is there but cannot be read: a warning, never a failed search."""


def _read(source_file: SourceFile, workspace: str) -> tuple[SourceFile, bytes | None] | None:
    """(the file with the signature of what was opened, its bytes: None when it is too large
    to index), or None when it is not there to read (`_open`). A file that grows while it is
    read has a newer size than its signature says: the next refresh reads it again."""
    opened = _open(source_file, workspace)
    if opened is None:
        return None
    fd, st = opened
    source_file = source_file._replace(size=st.st_size, mtime_ns=st.st_mtime_ns, inode=st.st_ino)
    try:
        return source_file, read_fd(fd, st, source_file.path)
    except NotMemoryFileError:  # over the limit, or grew past it while read
        return source_file, None
    except OSError as exc:
        raise _Unreadable(f"cannot read {source_file.path}: {exc.strerror or exc}; "
                          "it is not searched until it can be read") from exc
    finally:
        os.close(fd)


def _parse(source: MemorySource, source_file: SourceFile, workspace: str) -> _Parsed:
    try:
        found = _read(source_file, workspace)
    except _Unreadable as exc:
        # No entries, and racy: checked again next time (a chmod does not change the mtime).
        return _Parsed(source_file, [], [], str(exc), True)
    if found is None:
        return _Parsed(source_file, None, [], None, False)
    source_file, raw = found
    if raw is None:
        warning = (f"{source_file.path} is {source_file.size / 1048576:.0f} MB: memory files "
                   f"over {MAX_FILE_BYTES // 1048576} MB are not searched; split it into "
                   "smaller notes")
        return _Parsed(source_file, [], [], warning, False)
    # A source that reads its front matter needs no warning that front matter is not searched.
    text, warning = decode(raw, source_file.path,
                           memory_file=not getattr(source, "reads_front_matter", False))
    entries = read_entries(source, text, source_file.path)
    warning = warning or source_warning(source, text, source_file.path)
    age = time.time_ns() - source_file.mtime_ns
    # A little in the future (a synced file from a machine whose clock is ahead) is racy
    # too: that writer may write again within the same tick. Further ahead (`touch -d 2030`)
    # is not, or every search would re-read the file until then; a later edit made here
    # sets the mtime to now, which is seen.
    racy = -FUTURE_RACY_NS < age < RACY_NS
    return _parsed(source_file, entries, warning, racy)


def _parse_growing(source: MemorySource, source_file: SourceFile, workspace: str,
                   tail) -> Iterator[_Parsed]:
    """An append-only file's parts (`sources/appends.py`): from the remembered tail when
    the file only grew since, else the whole file; each part of bounded size, the last one
    carrying the new tail. The source parses a part with `parse_part(text, path, head)`,
    `head` being the file's first line."""
    from miniclaw.sources import appends
    from miniclaw.entries.privacy import open_depth
    from miniclaw.entries.parsing import redacted_entries
    from miniclaw.sources.base import source_warning

    try:
        opened = _open(source_file, workspace)
    except _Unreadable as exc:
        yield _Parsed(source_file, [], [], str(exc), True)
        return
    if opened is None:
        yield _Parsed(source_file, None, [], None, False)
        return
    fd, st = opened
    try:
        source_file = source_file._replace(size=st.st_size, mtime_ns=st.st_mtime_ns,
                                           inode=st.st_ino)
        age = time.time_ns() - source_file.mtime_ns
        racy = -FUTURE_RACY_NS < age < RACY_NS
        start, crc = appends.resume(fd, st, tail)
        head, _ = decode(appends.head(fd), source_file.path)
        end, lines = (start.offset, start.lines) if start else (0, 0)
        # One record per line: a tag never spans two, so no part starts inside a block.
        per_line = getattr(source, "line_records", False)
        depth = start.private_depth if start and not per_line else 0
        damaged = start.damaged if start else False
        append = start is not None
        warning = None
        for part in appends.parts(fd, st.st_size, start, crc):
            end, crc, damaged = part.end, part.checksum, False
            lines = part.lines + part.raw.count(b"\n")
            if part.skipped is not None:
                warning, damaged = _skipped(part.skipped, source_file.path), not part.skipped.ended
                if part.skipped.tagged and depth >= 0 and not per_line:
                    depth = max(depth, 1)  # it may open a block: fail closed
                entries = []
            else:
                text, warning = decode(part.raw, source_file.path)
                shift = part.lines
                if depth:  # the part starts inside a private block: it stays hidden
                    text, shift = appends.reopened(text, max(depth, 0)), part.lines - 1
                entries = [] if depth < 0 else redacted_entries(
                    source.name, lambda visible: source.parse_part(visible, source_file.path, head),
                    text, per_line=per_line)
                warning = warning or source_warning(source, text, source_file.path)
                if shift:
                    entries = [e._replace(line_start=e.line_start + shift,
                                          line_end=e.line_end + shift) for e in entries]
                depth = depth if depth < 0 or per_line else open_depth(text)
            # Where this part ends, stored with it: a read cut short (a parse worker that
            # died) goes on from there.
            here = appends.Tail(end, lines, appends.mark(fd, end, crc), depth,
                                source_file.signature, damaged)
            yield _parsed(source_file, entries, warning, racy, append)._replace(tail=here)
            append = True
        new_tail = appends.Tail(end, lines, appends.mark(fd, end, crc), depth,
                                source_file.signature, damaged)
        yield _Parsed(source_file, [], [], warning, racy, append, new_tail)
    except OSError as exc:
        yield _Parsed(source_file, [], [], f"cannot read {source_file.path}: "
                      f"{exc.strerror or exc}; it is not searched until it can be read", True)
    finally:
        os.close(fd)


def _skipped(skipped, path: str) -> str:
    """The warning for a transcript line too long to index (`appends.Skipped`)."""
    from miniclaw.sources.appends import MAX_LINE_BYTES

    return (f"{path}: line {skipped.line} is over {MAX_LINE_BYTES // 1048576} MB, longer than "
            "any message: it is skipped as damaged and not searched")


def _store_appended(conn, parsed: _Parsed, file_id: int, next_id: int,
                    report: RefreshReport, rows: _Rows) -> int:
    """Add a part's entries after the file's indexed ones: nothing is diffed or deleted,
    occurrences and ordinals go on from those already there; the warning of an earlier part
    (bad bytes, a line skipped) stays until the file is read whole again."""
    counts = Counter()
    digests = list({key[0] for key, _ in parsed.keys})
    for start in range(0, len(digests), 500):
        chunk = digests[start:start + 500]
        counts.update(dict(conn.execute(
            "SELECT hash, COUNT(*) FROM entries WHERE file_id = ? AND hash IN"
            f" ({', '.join('?' * len(chunk))}) GROUP BY hash", (file_id, *chunk))))
    base = conn.execute("SELECT COUNT(*) FROM entries WHERE file_id = ?", (file_id,)).fetchone()[0]
    source_file = parsed.file
    ids = rows.terms.numbered(parsed.vocabulary)
    for ((digest, occurrence), data), terms, term_ids in zip(parsed.keys, parsed.terms,
                                                            _global(ids, parsed.terms)):
        rows.entries.append((next_id, file_id, source_file.source, source_file.path, digest,
                             counts[digest] + occurrence, base + data[0], *data[1:],
                             terms[2], term_ids))
        next_id += 1
    report.postings_added += rows.add_blocks(parsed.blocks or _packed(parsed.terms), ids,
                                             file_id, next_id - len(parsed.keys))
    conn.execute(
        "UPDATE files SET size = ?, mtime_ns = ?, inode = ?, racy = ?,"
        " warning = COALESCE(?, warning),"
        " entry_count = entry_count + ?, term_count = term_count + ? WHERE id = ?",
        (*source_file.signature, int(parsed.racy), parsed.warning, len(parsed.keys),
         sum(terms[2] for terms in parsed.terms), file_id))
    rows.flush()
    report.entries_added += len(parsed.keys)
    return next_id


def sync_files(conn, sources: Sequence[MemorySource], known: dict[str, tuple],
               stale: Sequence[SourceFile], gone: Sequence[str],
               progress: Callable[[int, int], None] | None = None,
               workspace: str | os.PathLike[str] = ".") -> RefreshReport:
    """Re-index `stale` files of `workspace` and drop `gone` ones; `known` maps path ->
    (file id, ...)."""
    from miniclaw.sources import appends

    report = RefreshReport()
    rows = _Rows(conn)
    for path in gone:
        report.entries_removed += _drop_file(conn, known[path][0], rows)
        report.files_removed += 1
        appends.forget(conn, path)
    if gone:  # a file dropped and read again (another source's now) is stored as new
        dropped = set(gone)
        known = {path: row for path, row in known.items() if path not in dropped}
    by_name = {source.name: source for source in sources}
    growing = [f.path for f in stale if getattr(by_name[f.source], "append_only", False)]
    # A remembered tail counts only for the file row it was saved with (not after a rebuild).
    tails = {path: tail for path, tail in appends.load(conn, growing).items()
             if path in known and tuple(known[path][1:4]) == tail.signature}

    def task(source_file: SourceFile) -> tuple:
        """`_parse_one`'s arguments for a file."""
        return (by_name[source_file.source], source_file, os.fspath(workspace),
                tails.get(source_file.path))

    next_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM entries").fetchone()[0]
    done, whole = 0, set()  # files done; those stored whole (`_store` counted them)
    seen: set[str] = set()  # files a part of which is stored (or queued) in this sync
    with _parsed_files(task, stale) as parsed_parts:
        for part, last in parsed_parts:
            path = part.file.path
            file_id = known[path][0] if path in known else None
            if part.append or path in seen:
                # Added to, or compared with, the file as stored now: its row and earlier
                # parts written first. (A file read again whole after a part: its worker
                # died and the file changed since; compared with the rows of before the
                # sync, that part was stored twice, or outlived the file.)
                rows.flush(final=True)
                stored = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
                file_id = stored[0] if stored else None
            seen.add(path)
            if part.append:
                next_id = _store_appended(conn, part, file_id, next_id, report, rows)
            else:
                next_id = _store(conn, part, file_id, next_id, report, rows)
                whole.add(path)
            if part.tail is not None:
                appends.save(conn, path, part.tail)
            if last:
                report.files_parsed += path not in whole  # only appended to: counted here
                done += 1
                if progress is not None:
                    progress(done, len(stale))
    rows.flush(final=True)
    rows.terms.drop_unused()
    drop_orphan_derived(conn, rows.gone_hashes)
    return report


def drop_orphan_derived(conn, hashes: Iterable[bytes] | None) -> None:
    """Delete derived data of texts no entry has any more (`hashes`: those that may be
    gone; None: check every row), after every row is written: a vector of text that has
    since become private must not stay in the index either."""
    if hashes is None:
        conn.execute("DELETE FROM derived WHERE hash NOT IN (SELECT hash FROM entries)")
        return
    conn.executemany("DELETE FROM derived WHERE hash = ? AND NOT EXISTS"
                     " (SELECT 1 FROM entries WHERE hash = ?)", ((h, h) for h in hashes))


def _parse_one(source: MemorySource, source_file: SourceFile, workspace: str,
               tail) -> _Parsed | list[_Parsed] | Iterator[_Parsed]:
    """One file's parse: a `_Parsed`, or an append-only file's parts from its remembered
    `tail` (a list when it fits one part, as most transcripts do: parsed where this runs;
    else read part by part as the caller goes on)."""
    if getattr(source, "append_only", False):
        from miniclaw.sources import appends

        parts = _parse_growing(source, source_file, workspace, tail)
        return list(parts) if source_file.size <= appends.PART_BYTES else parts
    return _parse(source, source_file, workspace)


def _with_last(found: _Parsed | Iterable[_Parsed]) -> Iterator[tuple[_Parsed, bool]]:
    """A file's parse as (part, whether it is the file's last) pairs: a whole `_Parsed`
    alone, or an append-only file's parts."""
    if isinstance(found, _Parsed):
        yield found, True
        return
    held = None
    for part in found:
        if held is not None:
            yield held, False
        held = part
    if held is not None:
        yield held, True


@contextlib.contextmanager
def _parsed_files(task: Callable[[SourceFile], tuple],
                  files: Sequence[SourceFile]) -> Iterator[Iterator[tuple[_Parsed, bool]]]:
    """The parts of `_parse_one(*task(file))` for each file, each with whether it is the
    file's last (`_with_last`). For a build of many megabytes they are computed by other
    processes (`_in_process`), files in the order they finish (a file's parts in order); for
    many files by a second thread, in order; else here. Workers are stopped when the block
    ends, even by an error (queued files are then not parsed)."""
    tasks = [task(source_file) for source_file in files]
    if _in_process(tasks):
        from miniclaw.index.parse_worker import ParsePool, worker_count

        pool = ParsePool(worker_count())
        try:
            yield _parse_elsewhere(pool, tasks)
        finally:
            pool.close()
        return
    if len(files) < PARSE_AHEAD_MIN_FILES:
        yield (pair for args in tasks for pair in _with_last(_parse_one(*args)))
        return
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(1, thread_name_prefix="miniclaw-parse")
    try:
        yield (pair for found in _parse_ahead(pool, tasks) for pair in _with_last(found))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _in_process(tasks: list[tuple]) -> bool:
    """Parse in other processes (`parse_worker`): for at least `PARSE_PROCESS_BYTES` of
    files, on a machine of several cores, when every source is one of miniclaw's (a class
    of a user's module may not import in a fresh interpreter). Starting one costs ~0.2 s."""
    return (sum(args[1].size for args in tasks) >= PARSE_PROCESS_BYTES
            and (os.cpu_count() or 1) > 1
            and all(type(args[0]).__module__.startswith("miniclaw.") for args in tasks))


def _parse_elsewhere(pool, tasks: list[tuple]) -> Iterator[tuple[_Parsed, bool]]:
    """`_parsed_files`' pairs from the workers, files as they finish. A transcript of many
    parts comes part by part (each held until the next says whether it was the last). The
    files of a worker that stopped answering are parsed here, a transcript from where its
    last part stored ended (`_Parsed.tail`), so nothing is stored twice."""
    from miniclaw.index.parse_worker import _GONE

    held: dict[int, _Parsed] = {}  # task -> its latest part, not yet passed on
    for index, found, finished in pool.results(tasks):
        before = held.pop(index, None)
        if found is _GONE:
            if before is not None:
                yield before, False
            source, source_file, workspace, tail = tasks[index]
            if before is not None and before.tail is not None:
                tail = before.tail
            yield from _with_last(_parse_one(source, source_file, workspace, tail))
        elif not finished:  # a part of a transcript
            if before is not None:
                yield before, False
            held[index] = found
        elif found is None:  # the end of a transcript's parts
            if before is not None:
                yield before, True
        else:
            yield found, True


def _parse_ahead(pool, tasks: list[tuple]) -> Iterator[_Parsed]:
    """Parse results in order, the pool working up to `PARSE_AHEAD_DEPTH` files and
    `PARSE_AHEAD_BYTES` of Markdown ahead of the caller (a parsed file holds ~2.5x its size)."""
    todo, pending, queued = deque(tasks), deque(), 0
    while todo or pending:
        while todo and (not pending or (len(pending) < PARSE_AHEAD_DEPTH
                                        and queued + todo[0][1].size <= PARSE_AHEAD_BYTES)):
            args = todo.popleft()
            pending.append((pool.submit(_parse_one, *args), args[1].size))
            queued += args[1].size
        future, size = pending.popleft()
        queued -= size
        yield future.result()


class _Rows:
    """New file, entry, term and block rows waiting to be inserted, written thousands to a
    statement: SQLite then works for milliseconds at a time without the GIL (see the module
    doc). Ids are given here, so nothing needs to be read back. Blocks are gathered
    (`SORTED_BLOCKS`) and sorted by term first: the table is kept in term order, and rows in
    file order land all over it (inserting them sorted takes half the time)."""

    _FILES = ("INSERT INTO files (id, path, source, size, mtime_ns, inode, racy, day,"
              " entry_count, term_count, warning) VALUES ")
    _ENTRIES = ("INSERT INTO entries (id, file_id, source, path, hash, occurrence, ordinal,"
                " line_start, line_end, date, time, category, tags, meta, content, length,"
                " term_ids)"
                " VALUES ")
    _TERMS = "INSERT INTO terms (id, term) VALUES "
    _BLOCKS = "INSERT INTO blocks (term_id, file_id, base, n, postings) VALUES "

    def __init__(self, conn) -> None:
        self.conn = conn
        # SQLite caps the parameters of one statement (999 before 3.32, 32766 since).
        self.max_params = min(conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER),
                              MAX_BATCH_PARAMS)
        self.next_file_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM files").fetchone()[0]
        self.terms = _TermIds(conn, self.max_params)
        self.files: list[tuple] = []
        self.entries: list[tuple] = []
        self.blocks: list[tuple] = []
        self.gone_hashes: set[bytes] = set()  # texts of deleted entries (`drop_orphan_derived`)

    def add_blocks(self, blocks: Blocks, ids: list[int], file_id: int, base: int) -> int:
        """Queue `_packed` blocks of a file's entries numbered from `base`; returns how many
        postings they hold."""
        self.blocks.extend(zip(map(ids.__getitem__, blocks.numbers), repeat(file_id),
                               repeat(base), blocks.sizes, blocks.postings))
        return sum(blocks.sizes)

    def flush(self, final: bool = False) -> None:
        """Write full batches (and with `final`, everything)."""
        for table, rows in ((self._FILES, self.files), (self._ENTRIES, self.entries),
                            (self._TERMS, self.terms.new), (self._BLOCKS, self.blocks)):
            if not rows:
                continue
            if rows is self.blocks:
                if len(rows) < SORTED_BLOCKS and not final:
                    continue
                rows.sort(key=itemgetter(0))  # stable: files and bases stay in order
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

    def numbered(self, vocabulary: list[str], used: list[bytes] | None = None) -> list[int]:
        """The term id of each term of a part's vocabulary (distinct terms), new ones
        numbered; with `used` (some entries' local term numbers), only of the terms those
        entries hold (the others' places hold 0)."""
        if used is None:
            self.of(vocabulary)
            return list(map(self.ids.__getitem__, vocabulary))
        wanted = set()
        for numbers in used:
            local = array("I")
            local.frombytes(numbers)
            wanted.update(local)
        self.of([vocabulary[number] for number in wanted])
        return [self.ids[term] if number in wanted else 0
                for number, term in enumerate(vocabulary)]

    def of(self, terms: Iterable[str], *, add: bool = True) -> dict[str, int]:
        """Term -> id for `terms` (and others already known); unknown ones are numbered when
        `add`, else left out."""
        missing = list(set(terms).difference(self.ids))
        if missing and not self.table_empty:
            for start in range(0, len(missing), self.max_params):
                chunk = missing[start:start + self.max_params]
                self.ids.update(self.conn.execute(
                    f"SELECT term, id FROM terms WHERE term IN ({', '.join('?' * len(chunk))})",
                    chunk))
            missing = [term for term in missing if term not in self.ids]
        if add and missing:  # numbered in C: a build meets hundreds of thousands
            numbers = range(self.next_id, self.next_id + len(missing))
            self.ids.update(zip(missing, numbers))
            self.new.extend(zip(numbers, missing))
            self.next_id += len(missing)
        return self.ids

    def drop_unused(self) -> None:
        """Delete the touched terms that have no posting left (after every row is written)."""
        self.conn.executemany(
            "DELETE FROM terms WHERE id = ? AND NOT EXISTS"
            " (SELECT 1 FROM blocks WHERE term_id = ?)", ((i, i) for i in self.touched))


def _drop_file(conn, file_id: int, pending: _Rows) -> int:
    rows = conn.execute("SELECT id, term_ids, hash FROM entries WHERE file_id = ?",
                        (file_id,)).fetchall()
    _delete_entries(conn, file_id, rows, pending, whole_file=True)
    conn.execute("DELETE FROM files WHERE id = ?", (file_id,))
    return len(rows)


def _delete_entries(conn, file_id: int, rows, pending: _Rows, whole_file: bool = False) -> None:
    """Delete entries of one file, given as (entry id, stored term ids, text hash), and their
    postings: with the whole file, every block of its terms; else each block holding one
    of them is written again without it (deleted when nothing is left). Postings the
    entries' term ids name but no block holds are damage."""
    by_term: dict[int, set[int]] = {}
    for entry_id, blob, _ in rows:
        for term_id in _term_ids(blob):
            by_term.setdefault(term_id, set()).add(entry_id)
    expected = sum(map(len, by_term.values()))
    if whole_file:
        terms = "[" + ",".join(map(str, by_term)) + "]"
        found = sum(n for (n,) in conn.execute(
            "DELETE FROM blocks WHERE file_id = ? AND term_id IN (SELECT value FROM"
            " json_each(?)) RETURNING n", (file_id, terms)))
    else:
        found = sum(_drop_postings(conn, term_id, file_id, entry_ids)
                    for term_id, entry_ids in by_term.items())
    if found != expected:  # ids that name no posting, or postings no id names: damage
        raise IndexRowError("an entry's stored term ids do not match its postings")
    conn.executemany("DELETE FROM entries WHERE id = ?", ((row[0],) for row in rows))
    pending.terms.touched.update(by_term)
    pending.gone_hashes.update(row[2] for row in rows)


def _drop_postings(conn, term_id: int, file_id: int, entry_ids: set[int]) -> int:
    """Remove these entries from a term's blocks in a file; returns how many were there."""
    import json

    removed = 0
    for base, postings in conn.execute(
            "SELECT base, postings FROM blocks WHERE term_id = ? AND file_id = ?",
            (term_id, file_id)).fetchall():
        try:
            values = json.loads(postings)
            kept = [value for value in values if base + (value >> TF_BITS) not in entry_ids]
        except (TypeError, ValueError) as exc:
            raise IndexRowError("a block of postings in the index is damaged") from exc
        if len(kept) == len(values):
            continue
        removed += len(values) - len(kept)
        if kept:
            conn.execute("UPDATE blocks SET n = ?, postings = ? WHERE term_id = ? AND"
                         " file_id = ? AND base = ?", (len(kept), f"[{','.join(map(str, kept))}]",
                                                       term_id, file_id, base))
        else:
            conn.execute("DELETE FROM blocks WHERE term_id = ? AND file_id = ? AND base = ?",
                         (term_id, file_id, base))
    return removed


def _store(conn, parsed: _Parsed, file_id: int | None, next_id: int,
           report: RefreshReport, rows: _Rows) -> int:
    """Write one parsed file's changes (new rows through `rows`); returns the next free
    entry id."""
    source_file = parsed.file
    if parsed.keys is None:  # deleted since the scan
        if file_id is not None:
            report.entries_removed += _drop_file(conn, file_id, rows)
            report.files_removed += 1
        return next_id
    if parsed.warning:
        report.warnings.append(parsed.warning)
    old: dict[tuple, tuple] = {}  # identity -> (entry id, stored term ids, hash, data)
    new_file = file_id is None
    if new_file:
        file_id = rows.next_file_id
        rows.next_file_id += 1
    else:
        for row in conn.execute(
                "SELECT id, term_ids, hash, occurrence, ordinal, line_start, line_end, date,"
                " time, category, tags, meta FROM entries WHERE file_id = ?", (file_id,)):
            old[row[2], row[3]] = row[0], row[1], row[2], row[4:]

    removed = []
    if old:
        kept = {key for key, _ in parsed.keys}
        removed = [stored[:3] for key, stored in old.items() if key not in kept]
        _delete_entries(conn, file_id, removed, rows)
    moved = [(*data[:-1], old[key][0]) for key, data in parsed.keys
             if key in old and old[key][3] != data[:-1]]
    if moved:  # same text, new place or annotations: postings and derived data stay
        conn.executemany("UPDATE entries SET ordinal = ?, line_start = ?, line_end = ?,"
                         " date = ?, time = ?, category = ?, tags = ?, meta = ? WHERE id = ?", moved)
    added = [(key, data, terms) for (key, data), terms in zip(parsed.keys, parsed.terms)
             if key not in old]
    everything = len(added) == len(parsed.keys)
    ids = rows.terms.numbered(parsed.vocabulary, None if everything else
                              [terms[0] for *_, terms in added])
    for (key, data, terms), term_ids in zip(added, _global(ids, [t for *_, t in added])):
        rows.entries.append((next_id, file_id, source_file.source, source_file.path, *key,
                             *data, terms[2], term_ids))
        next_id += 1
    if added:  # a worker's blocks hold every entry: usable when all are new
        blocks = (parsed.blocks or _packed(parsed.terms)) if everything else \
            _packed([terms for *_, terms in added])
        report.postings_added += rows.add_blocks(blocks, ids, file_id, next_id - len(added))
    report.entries_moved += len(moved)
    lengths = [terms[2] for terms in parsed.terms]
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
    report.entries_added += len(added)
    report.entries_removed += len(removed)
    return next_id
