"""The index's SQLite file: one connection per thread, its schema, and its recovery.

Invariants: a connection belongs to the thread that opened it, and is opened again when the
file at the index path is no longer the one it has open (deleted or replaced by another
process); the file is held open (`_pin`) so its inode number cannot pass to a new file; a
damaged or older-version file is emptied and rebuilt with a warning, while a read-only,
full or locked one is reported and never deleted; the file is 0600 in a 0700 folder.
`run` runs a unit of work with all of that; a row whose values cannot be decoded is damage
too. This layer knows nothing of what the rows mean and never calls up: when the file was
replaced under a unit of work (or emptied here, as damaged) it raises `IndexReplaced`, and
the caller starts its whole operation again, from its sync (`index`).

Only a file miniclaw can prove is its own is ever opened for writing, emptied or deleted,
and an index serves the one workspace it records (`index_file`). `close()` waits for the threads still using a connection: closing one under a running
statement crashes the process.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from miniclaw.errors import MemoryFileError, SearchIndexError
from miniclaw.index import index_file
from miniclaw.fs import platform
from miniclaw.fs.files import FILE_MODE, ensure_dir
from miniclaw.entries.tokenizer import TOKENIZER_VERSION

log = logging.getLogger("miniclaw")

SCHEMA_VERSION = 507  # bump it and old indexes are rebuilt (see `index_format`)
BUSY_TIMEOUT_S = 120.0
WIPE_TIMEOUT_MS = 200  # how long emptying the WAL waits for readers before trying next time


@functools.lru_cache(maxsize=1)
def index_format() -> int:
    """The `user_version` of the indexes this miniclaw reads: the schema and everything that
    decides which terms a text gives (the tokenizer's rules, PyStemmer's version, Unicode's
    data), so that upgrading any of them rebuilds the index instead of leaving terms the new
    tokenizer would never produce again. Computed on first open: PyStemmer loads then."""
    import unicodedata
    import zlib

    import Stemmer

    key = f"{SCHEMA_VERSION}/{TOKENIZER_VERSION}/{Stemmer.version()}/{unicodedata.unidata_version}"
    return zlib.crc32(key.encode()) & 0x7FFFFFFF or 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    racy INTEGER NOT NULL,
    day TEXT,  -- the date a windowed source's file stands for (daily notes), else NULL
    entry_count INTEGER NOT NULL,
    term_count INTEGER NOT NULL,
    warning TEXT
);
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL,
    -- Identity (`sync`): the file row (source, path), the hash of the text and which
    -- occurrence of that text in the file. The rest is data, updated in place on a move.
    hash BLOB NOT NULL,
    occurrence INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    source TEXT NOT NULL,
    path TEXT NOT NULL,
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL,
    date TEXT,
    time TEXT,
    category TEXT,
    tags TEXT NOT NULL,  -- space-separated (tags never hold spaces)
    content TEXT NOT NULL,
    meta TEXT,  -- the source's own metadata (`Entry.meta`) as a JSON object, NULL when empty
    length INTEGER NOT NULL,
    -- The numbers of its distinct terms (uint32, this machine's byte order): its postings are
    -- deleted by these, never by tokenizing its text again (the tokenizer may have changed).
    term_ids BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_by_file ON entries (file_id, ordinal);
-- The median length (BM25's pivot) is read by OFFSET in length order: 0.1 ms with this index,
-- 8 ms on 16,000 entries without, paid by every one-shot CLI search.
CREATE INDEX IF NOT EXISTS entries_by_length ON entries (length);
CREATE INDEX IF NOT EXISTS entries_by_hash ON entries (hash);
-- Data derived from an entry's text alone (a model's vector), by text hash and kind (the
-- model's name): kept while any entry has that text, whatever its place (`derived`).
CREATE TABLE IF NOT EXISTS derived (
    hash BLOB NOT NULL,
    kind TEXT NOT NULL,
    value BLOB NOT NULL,
    PRIMARY KEY (kind, hash)
) WITHOUT ROWID;
-- A kind's count and text hashes without reading its values (a vector spills to an overflow
-- page): every hybrid search asks how many there are, 70 ms on 16,000 vectors without this.
CREATE INDEX IF NOT EXISTS derived_by_kind ON derived (kind);
CREATE INDEX IF NOT EXISTS files_with_warning ON files (path) WHERE warning IS NOT NULL;
-- A source's files and entry count without reading every file's row: a search asks it of
-- each source (`has_entries`, `SearchIndex._small_source`), a small store beside L too.
CREATE INDEX IF NOT EXISTS files_by_source ON files (source, entry_count);
-- Terms are stored once, and postings refer to them by number (smaller rows and keys: 28% less
-- time to insert the postings of a large workspace). A term without postings is deleted.
CREATE TABLE IF NOT EXISTS terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);
-- The inverted index, packed: one row holds a term's postings in one file among the entries
-- one write added (a whole file when it is first indexed, an append's new entries), as a
-- JSON array of (entry id - base) * 1024 + tf (tf above 1,023 stored as 1,023: BM25 has long
-- saturated there). One row per posting made a build of 100 MB of transcripts insert 5.7
-- million rows (most of its time), blocks ~0.6 million. `n` is the array's length (a
-- term's document frequency is the sum of its blocks'). SQLite's json_each reads them back.
CREATE TABLE IF NOT EXISTS blocks (
    term_id INTEGER NOT NULL,
    file_id INTEGER NOT NULL,
    base INTEGER NOT NULL,
    n INTEGER NOT NULL,
    postings TEXT NOT NULL,
    PRIMARY KEY (term_id, file_id, base)
) WITHOUT ROWID;
-- What the queries read: postings by term text (SQLite finds the term's id, then its blocks).
CREATE VIEW IF NOT EXISTS term_postings AS
    SELECT t.term AS term, b.base + (j.value >> 10) AS entry_id, j.value & 1023 AS tf,
           b.file_id AS file_id
    FROM terms t JOIN blocks b ON b.term_id = t.id JOIN json_each(b.postings) j;
"""


class IndexReplaced(SearchIndexError):
    """The index file is not the one this operation synced (deleted, replaced by another
    process, or emptied as damaged): the operation starts again, once, from its sync."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"the search index {path} was replaced by another process during "
                         "this operation, twice; try again")


class IndexRowError(ValueError):
    """A row holds a value the code cannot decode (a wrong type, out of range, unparsable):
    the file is damaged, like one SQLite reports corrupt. Raised by the code reading rows."""


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back if a transaction is still open (SQLite may have ended it on an error)."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass


_BUSY = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED
_DAMAGED = {10, 11, 26}  # SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_NOTADB


def _is_busy(exc: Exception) -> bool:
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF in _BUSY


def _is_damage(exc: Exception) -> bool:
    """A damaged file (or a schema torn away, or a row that cannot be decoded): emptying the
    cache is the cure. Other errors (read-only, disk full, no permission) are reported, never
    "repaired" by deleting it."""
    if isinstance(exc, IndexRowError):
        return True
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    return (code in _DAMAGED or (code == 1 and ("no such table" in str(exc)
                                                 or "malformed JSON" in str(exc)))  # a block
            or _not_utf8(exc))


def _not_utf8(exc: Exception) -> bool:
    """A row's text is not UTF-8 (an error without a code of its own, quoting the text)."""
    return isinstance(exc, sqlite3.OperationalError) and "decode" in str(exc)


def _unusable(path: Path, exc: Exception) -> SearchIndexError:
    if _is_busy(exc):
        return SearchIndexError(f"the search index {path} stayed locked for "
                                f"{BUSY_TIMEOUT_S:.0f} s by another process")
    return SearchIndexError(f"cannot use the search index {path}: {exc}; fix its folder's "
                            "permissions or set MINICLAW_INDEX to a writable file")


class IndexDatabase:
    """Connections to one index file, per thread. Methods block: call them off the loop.
    `workspace`: the one workspace the file may serve (None: any)."""

    def __init__(self, path: Path, workspace: Path | None = None) -> None:
        self.path = Path(path)
        self._workspace = os.path.realpath(workspace) if workspace is not None else None
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._opening = threading.Lock()
        self._pins: dict[tuple[int, int], int] = {}  # identity -> a descriptor holding it
        self._spare_fds: list[int] = []  # other descriptors of pinned files, kept as long
        self._replaced: list[sqlite3.Connection] = []  # to files no longer there (`_discard`)
        self._users = 0  # units of work running now, in any thread (`_in_use`)
        self._idle = threading.Condition()
        self.wipe_pending = False  # the WAL may still hold deleted rows (`wipe_wal`)

    def connection(self) -> sqlite3.Connection:
        """This thread's connection, opened (and the schema checked) on first use, and
        opened again when the index file was deleted or replaced since."""
        current = getattr(self._local, "conn", None)
        if current is not None:
            conn, identity = current
            if identity == self._identity():
                return conn
            self._discard(conn, replaced=True)
        conn = self._open()
        identity = self._identity()
        self._local.conn = (conn, identity)
        with self._lock:
            self._all.append(conn)
            self._pin(identity)
        return conn

    def _pin(self, identity: tuple[int, int] | None) -> None:
        """Hold the index file open until `close()`: while a file is open its inode number
        cannot be given to a new file, so a replaced index is never mistaken for the one this
        process knows. (Closed only after every connection: closing a descriptor of a file
        drops the process's SQLite locks on it.)"""
        if identity is None or identity in self._pins:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY | platform.NONBLOCK | platform.CLOEXEC)
        except OSError:
            return
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) == identity:
            self._pins[identity] = fd
        else:  # replaced again meanwhile: pinning the newer file comes with its connection
            self._pins[(st.st_dev, st.st_ino)] = fd

    def _identity(self) -> tuple[int, int] | None:
        """Which file is at the index path now (None: none). An open connection keeps its
        file's inode alive, so a changed identity always means a different file."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def _discard(self, conn: sqlite3.Connection, *, replaced: bool = False) -> None:
        """Drop this thread's connection (never another thread's: it may be in use).

        One to a file that is no longer at the index path, or is about to be replaced
        (`replaced`), is kept open until `close()`: the last connection to a file to close
        deletes its `-wal` and `-shm` by name, and those names may already be the new
        file's (a "disk I/O error" for it)."""
        self._local.conn = None
        with self._lock:
            if conn in self._all:
                self._all.remove(conn)
            if replaced:
                self._replaced.append(conn)
                return
        try:
            conn.close()
        except sqlite3.Error:
            pass

    @contextlib.contextmanager
    def _in_use(self):
        """Mark a unit of work on this thread's connection, so `close()` waits for it."""
        with self._idle:
            self._users += 1
        self._local.uses = getattr(self._local, "uses", 0) + 1
        try:
            yield
        finally:
            self._local.uses -= 1
            with self._idle:
                self._users -= 1
                self._idle.notify_all()

    @contextlib.contextmanager
    def _quiet(self):
        """Wait until no other thread runs a unit of work (this thread's own do not count
        meanwhile): a damaged file is replaced only while no thread is reading it, since a
        read of the old file while the new one is created breaks the new one (their -wal
        and -shm go by the same names). Threads waiting here do not hold each other up."""
        mine = getattr(self._local, "uses", 0)
        with self._idle:
            self._users -= mine
            self._idle.notify_all()
            self._idle.wait_for(lambda: self._users == 0)
            try:
                yield
            finally:
                self._users += mine

    def close(self) -> None:
        """Close every connection, once the work other threads are doing on them ends (a
        search cancelled by Ctrl-C, or whose other half failed, still runs in its thread:
        closing its connection under it would crash the process). Work started later opens
        new connections."""
        mine = getattr(self._local, "uses", 0)
        with self._idle:
            self._idle.wait_for(lambda: self._users == mine)
            with self._lock:
                # Those to replaced files last: by then the current file's -wal and -shm
                # are normally gone, so their deleting those names by closing is harmless.
                for conn in [*self._all, *self._replaced]:
                    try:
                        conn.close()
                    except sqlite3.Error:
                        pass
                self._all.clear()
                self._replaced.clear()
                for fd in [*self._pins.values(), *self._spare_fds]:
                    os.close(fd)
                self._pins.clear()
                self._spare_fds.clear()
            self._local = threading.local()

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect_checked()
        except OSError as exc:
            raise SearchIndexError(f"cannot open the search index {self.path}: "
                                   f"{exc.strerror or exc}") from exc
        except sqlite3.DatabaseError as exc:
            if not _is_damage(exc):
                raise _unusable(self.path, exc) from exc
            self._reset(exc, None)
            try:
                return self._connect_checked()
            except sqlite3.Error as again:
                raise SearchIndexError(f"cannot create the search index {self.path}: {again}") from again
        except sqlite3.Error as exc:
            raise SearchIndexError(f"cannot open the search index {self.path}: {exc}") from exc

    def _connect_checked(self) -> sqlite3.Connection:
        """A connection with the schema checked; kept to the minimum, since each search
        thread opens one (write settings are applied by `write_settings` before writing)."""
        with self._opening:  # threads of this process open (and create) one at a time
            unproven = self._check_file()
            new = not os.path.exists(self.path)
            if new:
                self._create_folder()
                # The -wal and -shm of a deleted index would be taken for the new one's
                # (they are found by name): two databases on one -shm is "disk I/O error".
                for suffix in ("-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(f"{self.path}{suffix}")
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                   check_same_thread=False)
            try:
                # Read through mmap: each search thread has its own connection, and copying
                # the same pages into each one's private cache would cost more than the query.
                conn.execute("PRAGMA mmap_size = 1073741824")
                if unproven:
                    index_file.claim(conn, self.path, _is_damage)
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if new or version != index_format():
                    self._make_private()
                if version != index_format():
                    self._create_schema(conn, version)
                if self._workspace is not None:
                    index_file.check_workspace(conn, self.path, self._workspace)
            except BaseException:
                conn.close()
                raise
        return conn

    def _check_file(self) -> bool:
        """`index_file`'s checks of the file at the index path, before each connection is
        opened; True when it is an SQLite file `index_file.claim` must then accept. A file
        checked once stays open (pinned) until `close()`, and is not checked again: closing
        a descriptor of it would drop this process's SQLite locks on it."""
        try:
            st = index_file.check_place(self.path, self._workspace)
            if st is None:
                return False
            with self._lock:
                if (st.st_dev, st.st_ino) in self._pins:
                    return False
            fd = os.open(self.path, os.O_RDONLY | platform.NONBLOCK | platform.CLOEXEC)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise SearchIndexError(f"cannot open the search index {self.path}: "
                                   f"{exc.strerror or exc}") from exc
        st = os.fstat(fd)
        with self._lock:
            if self._pins.setdefault((st.st_dev, st.st_ino), fd) != fd:
                self._spare_fds.append(fd)
        return index_file.check_header(self.path, fd)

    @contextlib.contextmanager
    def read_only(self):
        """A connection that changes nothing, for a report (`memory status`), or None when
        there is no index file or it is not this version's index (then it holds nothing
        usable). The file is checked as for any connection (refused if not miniclaw's), and
        never created, claimed, converted or repaired. With no `-wal` beside it (no writer
        at work, nothing pending), it is read as immutable, so SQLite creates no `-wal` or
        `-shm` either; a writer starting meanwhile may make the report approximate."""
        with self._opening:
            unproven = self._check_file()
        if not os.path.exists(self.path):
            yield None
            return
        mode = "mode=ro" if os.path.exists(f"{self.path}-wal") else "immutable=1"
        try:
            conn = sqlite3.connect(f"{Path(os.path.abspath(self.path)).as_uri()}?{mode}",
                                   uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error:
            yield None
            return
        try:
            try:
                if unproven:
                    index_file.claim(conn, self.path, _is_damage)
                usable = conn.execute("PRAGMA user_version").fetchone()[0] == index_format()
                if usable and self._workspace is not None:
                    index_file.check_workspace(conn, self.path, self._workspace)
            except sqlite3.DatabaseError:  # damaged, or locked: the next sync sees to it
                usable = False
            yield conn if usable else None
        finally:
            conn.close()

    def wipe_wal(self, conn: sqlite3.Connection) -> None:
        """Copy the WAL into the file and empty it, after rows were deleted: its older frames
        still hold them (text since made private), while `secure_delete` zeroes them in the
        file. Readers in other processes can hold it up: then it is tried again next time."""
        conn.execute(f"PRAGMA busy_timeout = {WIPE_TIMEOUT_MS}")
        try:
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise
            busy = 1
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        self.wipe_pending = bool(busy)

    @staticmethod
    def write_settings(conn: sqlite3.Connection) -> None:
        """Before writing: fsync only at checkpoints (safe in WAL; it is a cache), and zero
        deleted rows so text that later became private does not linger in free pages."""
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("PRAGMA cache_size = -65536")  # up to 64 MB while writing: builds ~8% faster

    def _create_folder(self) -> None:
        try:
            ensure_dir(self.path.parent)
        except MemoryFileError as exc:
            raise SearchIndexError(f"{exc}; set MINICLAW_INDEX to a writable path") from exc

    def _make_private(self) -> None:
        """Mode 0600 for the index (SQLite gives its -wal and -shm the same mode).

        chmod, never open+close: closing any descriptor of the file would drop every SQLite
        lock this process holds on it (POSIX locks are per process), and another process
        would then delete the -wal and -shm files still in use here.
        """
        try:
            if os.stat(self.path).st_mode & 0o777 != FILE_MODE:
                os.chmod(self.path, FILE_MODE)
        except OSError as exc:
            raise SearchIndexError(f"cannot secure the search index {self.path}: {exc}") from exc

    @staticmethod
    def _ensure_wal(conn: sqlite3.Connection) -> None:
        """Switch a new index to WAL. The switch takes an exclusive lock and SQLite does not
        wait for it (no busy handler), so wait here while another process holds the file."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
                    return
                conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _create_schema(self, conn: sqlite3.Connection, seen: int) -> None:
        self._ensure_wal(conn)
        self.write_settings(conn)
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version != index_format():  # another process may have just done it
                if version != 0:
                    log.warning("search index %s has format %s, this miniclaw uses %s; "
                                "rebuilding it", self.path, version, index_format())
                    # Everything, not just the tables this version knows: a table of
                    # another version left behind could hold text since made private.
                    for kind, name in conn.execute(
                            "SELECT type, name FROM sqlite_master WHERE type IN"
                            " ('view', 'table') AND name NOT LIKE 'sqlite_%'").fetchall():
                        quoted = name.replace('"', '""')
                        conn.execute(f'DROP {kind.upper()} IF EXISTS "{quoted}"')
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                if self._workspace is not None:
                    conn.execute("INSERT INTO meta VALUES ('workspace', ?)", (self._workspace,))
                conn.execute(f"PRAGMA application_id = {index_file.APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {index_format()}")
            conn.execute("COMMIT")
        except BaseException:
            rollback(conn)
            raise
        if seen:  # tables of the older format were dropped: their rows may be in the WAL
            self.wipe_wal(conn)

    def _reset(self, exc: Exception, seen: tuple[int, int] | None) -> None:
        """Replace a damaged index file with an empty one (it is only a cache).

        `seen` is the file the failing connection had open: when the path already holds
        another file, someone else reset it (or deleted it) and there is nothing to do.
        """
        with self._lock:
            now = self._identity()
            if seen is not None and now != seen:
                return
            log.warning("search index %s is damaged (%s); rebuilding it from the memory files",
                        self.path, "a row's text is not UTF-8" if _not_utf8(exc) else exc)
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.unlink(f"{self.path}{suffix}")
                except FileNotFoundError:
                    pass
                except OSError as err:
                    raise SearchIndexError(f"cannot remove the damaged index {self.path}: {err}") from err

    def file(self) -> tuple[int, int] | None:
        """Which file this thread's connection has open (None: none yet): an operation
        notes the one it synced, and passes it to `run` and `reading` as `expect`."""
        current = getattr(self._local, "conn", None)
        return current[1] if current is not None else None

    @contextlib.contextmanager
    def reading(self, expect: tuple[int, int] | None = None):
        """Read in one transaction on this thread's connection, so every statement sees the
        same index even while another process updates it. The file is looked at once, here
        (`IndexReplaced` when it is not `expect`); `run` inside reuses the connection."""
        with self._in_use():
            conn = self.connection()
            if expect is not None and self.file() != expect:
                raise IndexReplaced(self.path)
            conn.execute("BEGIN")
            self._local.reading = conn
            try:
                yield
            finally:
                self._local.reading = None
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("COMMIT")

    def run(self, work: Callable[[sqlite3.Connection], object], *,
            expect: tuple[int, int] | None = None):
        """Run `work` on this thread's connection (the one of `reading`, if inside one).
        Raises `IndexReplaced` when the file is not `expect` (the one the operation synced),
        was replaced meanwhile, or is damaged (then it is emptied first). `work` decodes
        the rows it reads (a value it cannot decode raises `IndexRowError`: damage)."""
        with self._in_use():
            conn = getattr(self._local, "reading", None)
            if conn is None:
                conn = self.connection()
            seen = self.file()
            if expect is not None and seen != expect:
                raise IndexReplaced(self.path)
            try:
                return work(conn)
            except (sqlite3.DatabaseError, IndexRowError) as exc:
                replaced = self._identity() != seen  # deleted or swapped under us
                if not replaced and not _is_damage(exc):
                    raise _unusable(self.path, exc) from exc
                # Kept open even when damaged: this file is about to be replaced, and
                # another thread may still have it open (then its close would not be last).
                self._discard(conn, replaced=True)
                self._local.reading = None
                if not replaced:  # the same file, and it is damaged
                    with self._quiet():
                        self._reset(exc, seen)
                raise IndexReplaced(self.path) from exc
