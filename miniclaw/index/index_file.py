"""Which file the search index may be: miniclaw only ever writes, empties or deletes a file
it can prove is its own index.

Proof is one of: the file is in miniclaw's cache folder (miniclaw names those), its SQLite
header carries `APPLICATION_ID` (in the file, or, for a new index not yet checkpointed, in
its WAL), it is empty (nothing to lose), or it is an earlier miniclaw's index (an SQLite file
without an id whose `meta` table holds miniclaw's keys).
Anything else at the index path (a note, another program's database, a FIFO, a device, a
folder) is refused with a `UsageError`, and so is any path inside the workspace: the index
is a cache of the workspace, never part of it. Nothing is touched before the checks pass.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

from miniclaw import config
from miniclaw.errors import UsageError
from miniclaw.fs.files import inside_workspace

APPLICATION_ID = 0x6D636C77  # "mclw", in the file's header: this file is a miniclaw index
_SQLITE_MAGIC = b"SQLite format 3\x00"
_OLD_INDEX_META_KEYS = ("entries", "terms", "updated_at", "fingerprint")


def not_an_index(path: Path) -> UsageError:
    return UsageError(f"{path} is not a miniclaw search index (another file, or another "
                      "program's database): miniclaw leaves it alone; set MINICLAW_INDEX to "
                      "another file (or remove it if it is a damaged index)")


def check_place(path: Path, workspace: str | None) -> os.stat_result | None:
    """The stat of the file at the index path (None: there is none), after refusing a path
    inside the workspace and anything that is not a regular file."""
    if workspace is not None and inside_workspace(path, workspace):
        raise UsageError(f"the search index {path} is inside the workspace {workspace}: set "
                         "MINICLAW_INDEX to a file outside it")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    check_regular(path, st)
    return st


def check_regular(path: Path, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"the search index path {path} is not a regular file: set "
                         "MINICLAW_INDEX to a file")


def check_header(path: Path, fd: int) -> bool:
    """Refuse a file (open as `fd`) that is not an index; True when it is an SQLite file
    without miniclaw's id, whose tables `claim` must then check."""
    st = os.fstat(fd)
    check_regular(path, st)
    header = os.pread(fd, 100, 0) if st.st_size else b""
    if not header or path.parent == config.cache_dir():
        return False  # empty, or in miniclaw's own folder: miniclaw's to use
    if not header.startswith(_SQLITE_MAGIC):
        raise not_an_index(path)
    owner = int.from_bytes(header[68:72], "big")
    if owner == APPLICATION_ID:
        return False
    if owner:
        raise not_an_index(path)
    return True


def claim(conn: sqlite3.Connection, path: Path, is_damage) -> None:
    """Accept an SQLite file without miniclaw's id in the file when its database has the id
    (a new index's header is in the WAL until a checkpoint: its maker still has it open),
    has no table, or is an earlier miniclaw's index; it then becomes one. One whose tables
    cannot even be read is not proven to be an index: refused, never reset."""
    try:
        if conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID:
            return
        tables = {row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        ours = not tables or ("meta" in tables and conn.execute(
            f"SELECT 1 FROM meta WHERE key IN ({', '.join('?' * len(_OLD_INDEX_META_KEYS))})"
            " LIMIT 1", _OLD_INDEX_META_KEYS).fetchone() is not None)
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise
        raise not_an_index(path) from exc
    if not ours:
        raise not_an_index(path)


def check_workspace(conn: sqlite3.Connection, path: Path, workspace: str) -> None:
    """Refuse an index that serves another workspace (MINICLAW_INDEX shared or reused).
    Refused rather than rebuilt: two processes of two workspaces would rebuild it in turn,
    and one's search could read the other's rows between its refresh and its query."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'workspace'").fetchone()
    if row is not None and row[0] != workspace:
        raise UsageError(f"the search index {path} belongs to the workspace {row[0]}, not "
                         f"{workspace}: set MINICLAW_INDEX to another file (or delete that "
                         "one: it is only a cache)")
