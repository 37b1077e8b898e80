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
from datetime import date as Date
from pathlib import Path
from typing import NamedTuple, Protocol

from miniclaw.config import LONG_TERM_FILE, MEMORY_DIR
from miniclaw.memory.entry import DAILY_NOTE, LONG_TERM, Entry

DAILY_NOTE_NAME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\.md$")


def daily_note_date(filename: str) -> Date | None:
    """The date a daily note's file name gives, or None when it is not `YYYY-MM-DD.md`."""
    match = DAILY_NOTE_NAME.match(filename)
    if not match:
        return None
    try:
        return Date(*(int(part) for part in match.groups()))
    except ValueError:
        return None


class SourceFile(NamedTuple):
    """A file a source found: its workspace-relative path and what `os.stat` said of it."""

    source: str
    path: str  # relative to the workspace, forward slashes
    absolute: Path
    size: int
    mtime_ns: int
    inode: int

    @property
    def signature(self) -> tuple[int, int, int]:
        """What must stay the same for the file's entries to be unchanged."""
        return (self.size, self.mtime_ns, self.inode)


class MemorySource(Protocol):
    name: str
    #: True when `--days` limits it (daily notes); MEMORY.md is always searched.
    windowed: bool

    def files(self, workspace: Path) -> list[SourceFile]: ...

    def parse(self, text: str, path: str) -> list[Entry]: ...


def _safe_stat(entry: os.DirEntry[str], root: str) -> os.stat_result | None:
    """Stat of a regular file, or None; symlinks only when they stay inside `root`."""
    try:
        if entry.is_symlink():
            target = os.path.realpath(entry.path)
            if os.path.commonpath([target, root]) != root:
                return None
        if not entry.is_file():
            return None
        return entry.stat()
    except (OSError, ValueError):
        return None


def _scan(workspace: Path, source: str, accept) -> list[SourceFile]:
    folder = workspace / MEMORY_DIR
    root = os.path.realpath(workspace)
    found = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if not accept(entry.name):
                    continue
                st = _safe_stat(entry, root)
                if st is not None:
                    found.append(SourceFile(source, f"{MEMORY_DIR}/{entry.name}",
                                            Path(entry.path), st.st_size, st.st_mtime_ns,
                                            st.st_ino))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(found, key=lambda f: f.path)


class LongTermSource:
    """`memory/MEMORY.md`: curated facts, bullets under `## YYYY-MM-DD` headers."""

    name = LONG_TERM
    windowed = False

    def files(self, workspace: Path) -> list[SourceFile]:
        return _scan(workspace, self.name, lambda name: name == LONG_TERM_FILE)

    def parse(self, text: str, path: str) -> list[Entry]:
        from miniclaw.memory.parsing import parse_long_term  # only when a file changed

        return parse_long_term(text, path)


class DailyNoteSource:
    """`memory/YYYY-MM-DD.md`: one note per UTC day, one entry per `## HH:MM:SS UTC` section."""

    name = DAILY_NOTE
    windowed = True

    def files(self, workspace: Path) -> list[SourceFile]:
        return _scan(workspace, self.name,
                     lambda name: daily_note_date(name) is not None)

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
