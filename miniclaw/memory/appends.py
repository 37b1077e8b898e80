"""Files that only grow (chat transcripts): read from where the last read stopped.

A source that declares `append_only = True` promises that its files are only ever appended
to, a whole line at a time. The index then remembers, per file, where its last read stopped
(`Tail`: the offset after the last complete line, how many lines came before it, a hash of
the bytes just before it and of the file's start, and whether a `<private>` block was still
open there). The next change is read from that offset only; a file whose start or whose
bytes before the offset changed, that shrank or that is another file now (inode) was
rewritten, and is read whole again.

Either way a file is read in parts of about `PART_BYTES`, cut at line ends, so a transcript
of any size is indexed with bounded memory (no 16 MB ceiling as for memory files). A line
not yet ended by a newline (a write in flight) is left for the next read. Privacy holds
across parts: a part that starts inside an open `<private>` block is read as if the tag
opened it (`reopened`), so what a whole-file read hides stays hidden.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from typing import NamedTuple

PART_BYTES = 8 * 1024 * 1024
MARK_BYTES = 64 * 1024  # hashed before the offset, and at the file's start
HEAD_BYTES = 64 * 1024  # the first line, as the source sees it (a fork's marker), at most
_KEY = "tail:"


class Tail(NamedTuple):
    """Where the last read of a file stopped, and what the file was then."""

    offset: int
    lines: int  # complete lines before the offset
    mark: str  # `mark(fd, offset)`
    private_depth: int  # `<private>` blocks still open at the offset (-1: a private file)
    signature: tuple[int, int, int]  # (size, mtime_ns, inode) indexed with it


def key(path: str) -> str:
    return _KEY + path


def load(conn, paths: list[str]) -> dict[str, Tail]:
    """The tails remembered for these display paths (in the index's `meta` table)."""
    found = {}
    for start in range(0, len(paths), 500):
        chunk = [key(path) for path in paths[start:start + 500]]
        for name, value in conn.execute(
                f"SELECT key, value FROM meta WHERE key IN ({', '.join('?' * len(chunk))})", chunk):
            try:
                offset, lines, mark_, private_depth, signature = json.loads(value)
                found[name[len(_KEY):]] = Tail(int(offset), int(lines), str(mark_),
                                               int(private_depth), tuple(signature))
            except (ValueError, TypeError):
                continue  # damaged: the file is read whole
    return found


def save(conn, path: str, tail: Tail) -> None:
    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key(path), json.dumps(list(tail))))


def forget(conn, path: str) -> None:
    conn.execute("DELETE FROM meta WHERE key = ?", (key(path),))


def mark(fd: int, offset: int) -> str:
    """What must not change for an append to be read alone: the file's first bytes and the
    bytes just before the offset (hashing all of them would cost a read of the whole file)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(os.pread(fd, min(offset, MARK_BYTES), 0))
    before = max(0, offset - MARK_BYTES)
    digest.update(os.pread(fd, offset - before, before))
    return digest.hexdigest()


def head(fd: int) -> bytes:
    """The file's first line (at most `HEAD_BYTES`)."""
    return os.pread(fd, HEAD_BYTES, 0).split(b"\n", 1)[0]


def resume(fd: int, st: os.stat_result, tail: Tail | None) -> Tail | None:
    """`tail` when the file on `fd` is the one it describes, grown or not; else None."""
    if tail is None or st.st_ino != tail.signature[2] or st.st_size < tail.offset:
        return None
    return tail if mark(fd, tail.offset) == tail.mark else None


def parts(fd: int, size: int, start: Tail | None) -> Iterator[tuple[bytes, int, int]]:
    """(bytes of complete lines, lines before them, offset after them) from the tail's
    offset (or the start) up to `size`, in parts of about `PART_BYTES`."""
    offset, lines = (start.offset, start.lines) if start else (0, 0)
    while offset < size:
        raw = os.pread(fd, min(PART_BYTES, size - offset), offset)
        if not raw:
            return
        cut = raw.rfind(b"\n")
        while cut < 0 and offset + len(raw) < size:  # one line longer than a part
            more = os.pread(fd, min(PART_BYTES, size - offset - len(raw)), offset + len(raw))
            if not more:
                break
            raw += more
            cut = raw.rfind(b"\n")
        if cut < 0:
            return  # a line still being written: read when it ends
        raw = raw[:cut + 1]
        yield raw, lines, offset + len(raw)
        offset += len(raw)
        lines += raw.count(b"\n")


def reopened(text: str, depth: int) -> str:
    """A part's text as read after an earlier part left `depth` private blocks open: one
    line of that many opening tags first (so the caller shifts line numbers by one)."""
    return "<private>" * depth + "\n" + text
