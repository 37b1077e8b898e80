"""Memory sources: where a kind of memory file lives and how it parses into entries.

A source is one small class: `files()` finds its files in a workspace (cheaply: a listing
and a stat, no reads) and `parse()` turns one file's text into entries. The index, the
stores and the ranker only talk to sources through this shape, so a new memory format
(ConKeeper folders, `*.memory.md`, JSONL logs) is one new class added to `SOURCES`.

Symlinks are followed only when they resolve inside the workspace.
"""

from __future__ import annotations

import os
import re
import stat
from datetime import date as Date
from pathlib import Path
from typing import NamedTuple, Protocol

from miniclaw.config import LONG_TERM_FILE, MEMORY_DIR
from miniclaw.memory.entry import DAILY_NOTE, LONG_TERM, Entry

DAILY_NOTE_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")


def daily_note_date(filename: str) -> Date | None:
    """The date a daily note's file name gives, or None when it is not `YYYY-MM-DD.md`."""
    if not DAILY_NOTE_NAME.match(filename):
        return None
    try:
        return Date.fromisoformat(filename[:10])
    except ValueError:
        return None


class SourceFile(NamedTuple):
    """A file a source found: its workspace-relative path and what `os.stat` said of it."""

    source: str
    path: str  # relative to the workspace, forward slashes
    absolute: str
    size: int
    mtime_ns: int
    inode: int
    day: Date | None = None  # the date the file stands for, for windowed sources

    @property
    def signature(self) -> tuple[int, int, int]:
        """What must stay the same for the file's entries to be unchanged."""
        return (self.size, self.mtime_ns, self.inode)


class MemorySource(Protocol):
    name: str
    #: True when `--days` limits it (daily notes); MEMORY.md is always searched.
    windowed: bool
    #: The workspace folder its files live in (watched for changes by the index).
    folder: str

    def owns(self, filename: str) -> bool:
        """Whether a file of that name in `folder` is one of its files."""

    def files(self, workspace: Path) -> list[SourceFile]:
        """Its files, cheaply: a listing and a stat, no reads."""

    def file(self, workspace: Path, filename: str) -> SourceFile | None:
        """One of its files by name, or None when it is not there (or not its own)."""

    def parse(self, text: str, path: str) -> list[Entry]: ...


def inside_workspace(path: str | Path, workspace: str | Path) -> bool:
    """Whether `path`, symlinks resolved, stays inside the workspace."""
    root = os.path.realpath(workspace)
    return os.path.commonpath([os.path.realpath(path), root]) == root


def stat_in_workspace(path: str, workspace: Path) -> os.stat_result | None:
    """The stat of a regular file; a symlink is followed only when it stays in the workspace."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            if not inside_workspace(path, workspace):
                return None
            st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st if stat.S_ISREG(st.st_mode) else None


class LongTermSource:
    """`memory/MEMORY.md`: curated facts, bullets under `## YYYY-MM-DD` headers."""

    name = LONG_TERM
    windowed = False
    sequence = False  # facts, not a conversation: no neighbour context
    folder = MEMORY_DIR

    def owns(self, filename: str) -> bool:
        return filename == LONG_TERM_FILE

    def files(self, workspace: Path) -> list[SourceFile]:
        found = self.file(workspace, LONG_TERM_FILE)
        return [found] if found else []

    def file(self, workspace: Path, filename: str) -> SourceFile | None:
        path = os.path.join(workspace, MEMORY_DIR, filename)
        st = stat_in_workspace(path, workspace) if self.owns(filename) else None
        if st is None:
            return None
        return SourceFile(self.name, f"{MEMORY_DIR}/{filename}", path, st.st_size,
                          st.st_mtime_ns, st.st_ino)

    def parse(self, text: str, path: str) -> list[Entry]:
        from miniclaw.memory.parsing import parse_long_term  # only when a file changed

        return parse_long_term(text, path)


class DailyNoteSource:
    """`memory/YYYY-MM-DD.md`: one note per UTC day, one entry per `## HH:MM:SS UTC` section."""

    name = DAILY_NOTE
    windowed = True
    sequence = True  # entries in the order written: neighbour context applies
    folder = MEMORY_DIR

    def owns(self, filename: str) -> bool:
        return daily_note_date(filename) is not None

    def files(self, workspace: Path) -> list[SourceFile]:
        # The hot path of a search without a watch (a stat per note): kept to the bare loop,
        # stat relative to the folder's descriptor so the path is not walked again each time.
        folder = os.path.join(workspace, MEMORY_DIR)
        found = []
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return []
        try:
            for name in os.listdir(fd):
                if len(name) != 13 or not DAILY_NOTE_NAME.match(name):
                    continue
                try:
                    day = Date.fromisoformat(name[:10])
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except (ValueError, OSError):
                    continue
                if stat.S_ISLNK(st.st_mode):
                    found_link = self.file(workspace, name)
                    if found_link is not None:
                        found.append(found_link)
                elif stat.S_ISREG(st.st_mode):
                    found.append(SourceFile(self.name, f"{MEMORY_DIR}/{name}", f"{folder}/{name}",
                                            st.st_size, st.st_mtime_ns, st.st_ino, day))
        finally:
            os.close(fd)
        return found

    def file(self, workspace: Path, filename: str) -> SourceFile | None:
        day = daily_note_date(filename)
        path = os.path.join(workspace, MEMORY_DIR, filename)
        st = stat_in_workspace(path, workspace) if day else None
        if st is None:
            return None
        return SourceFile(self.name, f"{MEMORY_DIR}/{filename}", path, st.st_size,
                          st.st_mtime_ns, st.st_ino, day)

    def parse(self, text: str, path: str) -> list[Entry]:
        from miniclaw.memory.parsing import parse_daily_note  # only when a file changed

        return parse_daily_note(text, path, daily_note_date(path.rsplit("/", 1)[-1]))


SOURCES: tuple[MemorySource, ...] = (LongTermSource(), DailyNoteSource())
SOURCE_NAMES = tuple(source.name for source in SOURCES)


def source_named(name: str) -> MemorySource:
    for source in SOURCES:
        if source.name == name:
            return source
    raise KeyError(name)
