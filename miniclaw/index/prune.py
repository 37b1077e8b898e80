"""Pruning the index cache: index files whose workspace is gone.

Each workspace's index is a file in miniclaw's cache folder (`config.cache_dir()`), and it
records the workspace it serves. When that folder is deleted or moved, its index stays
behind as dead weight; `prune` finds those (read-only, never touching a file that is not
provably a miniclaw index) and removes them with their WAL and shared-memory files.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from pathlib import Path
from typing import NamedTuple

from miniclaw import config


class Orphan(NamedTuple):
    path: Path  # the index file
    workspace: str  # the workspace it served, which no longer exists
    size_bytes: int  # with its -wal and -shm files


def _sidecars(path: Path) -> list[Path]:
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def _workspace_of(path: Path) -> str | None:
    """The workspace a miniclaw index file records, or None (not ours, unreadable)."""
    from miniclaw.fs.files import NotMemoryFileError, open_regular
    from miniclaw.index.index_file import APPLICATION_ID

    # A FIFO, a device or a link named *.sqlite3 (or -wal, -shm, which SQLite would open) is
    # not opened: reading a FIFO waits for a writer, for ever.
    try:
        if any(not stat.S_ISREG(os.lstat(p).st_mode) for p in _sidecars(path)[1:]
               if os.path.lexists(p)):
            return None
        fd, _ = open_regular(path)
    except (OSError, NotMemoryFileError):
        return None
    try:
        header = os.pread(fd, 72, 0)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(header) < 72 or int.from_bytes(header[68:72], "big") != APPLICATION_ID:
        return None  # the application id in the SQLite header: not a miniclaw index
    # Without a -wal file the database is all in the main file: `immutable` reads it without
    # creating -wal and -shm files next to it.
    wal = path.with_name(path.name + "-wal").exists()
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro"
                               + ("" if wal else "&immutable=1"), uri=True)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'workspace'").fetchone()
        return row[0] if row and isinstance(row[0], str) else None
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def orphans(folder: Path | None = None) -> list[Orphan]:
    """The index files in the cache folder whose recorded workspace no longer exists."""
    folder = folder or config.cache_dir()
    found = []
    for path in sorted(folder.glob("*.sqlite3")) if folder.is_dir() else []:
        workspace = _workspace_of(path)
        if workspace is None or os.path.isdir(workspace):
            continue
        size = sum(p.lstat().st_size for p in _sidecars(path) if os.path.lexists(p))
        found.append(Orphan(path, workspace, size))
    return found


def remove(orphan: Orphan) -> None:
    """Delete an orphaned index file and its -wal and -shm files."""
    for path in _sidecars(orphan.path):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
