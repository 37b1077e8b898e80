"""Files that only grow (chat transcripts): read from where the last read stopped.

A source that declares `append_only = True` promises that its files are only ever appended
to, a whole line at a time. The index then remembers, per file, where its last read stopped
(`Tail`: the offset after the last complete line, how many lines came before it, a mark of
every byte before it, and whether a `<private>` block was still open there). The next
change is read from that offset only, if the bytes before it are still those that were
indexed; a file edited anywhere before the offset (a password overwritten with asterisks, a
phrase wrapped in `<private>` while as many other characters were deleted: same size, same
inode), that shrank or that is another file now (inode) was rewritten, and is read whole
again. Nothing but the bytes tells an append from an edit in place (both move the mtime),
so the mark is a CRC-32 of the whole prefix, with a hash of its first and last
`MARK_BYTES`: checking it reads the file once (~0.4 ms per MB from the page cache, a few
hundred times less than parsing it again), only when the file changed.

Either way a file is read in parts of about `PART_BYTES`, cut at line ends, so a transcript
of any size is indexed with bounded memory (no 16 MB ceiling as for memory files). A line
not yet ended by a newline (a write in flight) is left for the next read. A line longer
than `MAX_LINE_BYTES` (a damaged file, a runaway writer) is skipped, its end found without
holding it (`Part.skipped`), and a read that stops inside it goes on from there next time
(`Tail.damaged`): it is never held whole, nor read again to be parsed. Privacy holds across
parts: a part that starts inside an open `<private>` block is read as if the tag opened it
(`reopened`), so what a whole-file read hides stays hidden; a skipped line that may hold a
tag leaves a block open (fail closed: `Skipped.tagged`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zlib
from collections.abc import Iterator
from typing import NamedTuple

from miniclaw.entries.privacy import _LESS_THAN as _LESS_THAN_CHARS

PART_BYTES = 8 * 1024 * 1024
MAX_LINE_BYTES = 8 * 1024 * 1024  # a longer line is damage, not a message: skipped
MARK_BYTES = 64 * 1024  # hashed before the offset, and at the file's start
HEAD_BYTES = 64 * 1024  # the first line, as the source sees it (a fork's marker), at most
_READ_BYTES = 1024 * 1024  # checksummed (or skipped) per read
_KEY = "tail:"
# What a `<private>` tag may start with, as a line's bytes show it (UTF-8 of each character
# whose compatibility form holds a `<`: `privacy._LESS_THAN`).
_LESS_THAN = re.compile(b"|".join(re.escape(c.encode()) for c in _LESS_THAN_CHARS))


class Tail(NamedTuple):
    """Where the last read of a file stopped, and what the file was then."""

    offset: int
    lines: int  # complete lines before the offset
    mark: str  # `mark(fd, offset, checksum of the bytes before it)`
    private_depth: int  # `<private>` blocks still open at the offset (-1: a private file)
    signature: tuple[int, int, int]  # (size, mtime_ns, inode) indexed with it
    damaged: bool = False  # the offset is inside a line over `MAX_LINE_BYTES`, not its start


class Skipped(NamedTuple):
    """A line over `MAX_LINE_BYTES`, passed over (`parts`)."""

    line: int  # its number (from 1)
    ended: bool  # False: the file ends inside it (the rest is skipped when it comes)
    tagged: bool  # it holds a character a `<private>` tag may start with


class Part(NamedTuple):
    """Complete lines of a file (`raw`, after `lines` lines), or a line skipped; `end`: the
    offset after them, `checksum`: the CRC-32 of every byte before `end`."""

    raw: bytes
    lines: int
    end: int
    checksum: int
    skipped: Skipped | None = None


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
                offset, lines, mark_, private_depth, signature, damaged = json.loads(value)
                found[name[len(_KEY):]] = Tail(int(offset), int(lines), str(mark_),
                                               int(private_depth), tuple(signature),
                                               bool(damaged))
            except (ValueError, TypeError):
                continue  # damaged, or of an older version: the file is read whole
    return found


def save(conn, path: str, tail: Tail) -> None:
    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key(path), json.dumps(list(tail))))


def forget(conn, path: str) -> None:
    conn.execute("DELETE FROM meta WHERE key = ?", (key(path),))


def checksum(fd: int, end: int) -> int:
    """The CRC-32 of the file's bytes before `end`, read in bounded parts."""
    crc, offset = 0, 0
    while offset < end:
        raw = os.pread(fd, min(_READ_BYTES, end - offset), offset)
        if not raw:
            break
        crc = zlib.crc32(raw, crc)
        offset += len(raw)
    return crc


def mark(fd: int, offset: int, crc: int) -> str:
    """What must not change for an append to be read alone: every byte before the offset
    (`crc`, their CRC-32), and a hash of the first and last `MARK_BYTES` of them."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(os.pread(fd, min(offset, MARK_BYTES), 0))
    before = max(0, offset - MARK_BYTES)
    digest.update(os.pread(fd, offset - before, before))
    return f"{crc:08x}:{digest.hexdigest()}"


def head(fd: int) -> bytes:
    """The file's first line (at most `HEAD_BYTES`)."""
    return os.pread(fd, HEAD_BYTES, 0).split(b"\n", 1)[0]


def resume(fd: int, st: os.stat_result, tail: Tail | None) -> tuple[Tail | None, int]:
    """(`tail`, the checksum of the bytes before its offset) when the file on `fd` is the
    one it describes, grown or not, every byte before the offset as it was; else (None, 0)."""
    if tail is None or st.st_ino != tail.signature[2] or st.st_size < tail.offset:
        return None, 0
    crc = checksum(fd, tail.offset)
    return (tail, crc) if mark(fd, tail.offset, crc) == tail.mark else (None, 0)


def parts(fd: int, size: int, start: Tail | None, crc: int = 0) -> Iterator[Part]:
    """The file's complete lines from the tail's offset (or the start; `crc`: the checksum
    before it) up to `size`, in parts of about `PART_BYTES`, and each line over
    `MAX_LINE_BYTES` as a `Part` of its own that skips it."""
    offset, lines = (start.offset, start.lines) if start else (0, 0)
    if start is not None and start.damaged and offset < size:  # stopped inside a long line
        offset, crc, skipped = _skip(fd, offset, size, crc, lines + 1)
        lines += skipped.ended
        yield Part(b"", lines, offset, crc, skipped)
    step = min(PART_BYTES, MAX_LINE_BYTES)  # a line found in a part is never too long
    while offset < size:
        raw = os.pread(fd, min(step, size - offset), offset)
        if not raw:
            return
        cut = raw.rfind(b"\n")
        while cut < 0 and len(raw) < MAX_LINE_BYTES and offset + len(raw) < size:
            # One line longer than a part: read on to its end (`MAX_LINE_BYTES` at most).
            more = os.pread(fd, min(step, MAX_LINE_BYTES - len(raw), size - offset - len(raw)),
                            offset + len(raw))
            if not more:
                break
            found = more.find(b"\n")
            cut = found if found < 0 else len(raw) + found
            raw += more
        if cut < 0:
            if len(raw) < MAX_LINE_BYTES:
                return  # a line still being written: read when it ends
            offset, crc, skipped = _skip(fd, offset, size, crc, lines + 1)  # too long
            lines += skipped.ended
            yield Part(b"", lines, offset, crc, skipped)
            continue
        raw = raw[:cut + 1]
        crc = zlib.crc32(raw, crc)
        yield Part(raw, lines, offset + len(raw), crc)
        offset += len(raw)
        lines += raw.count(b"\n")


def _skip(fd: int, offset: int, size: int, crc: int, line: int) -> tuple[int, int, Skipped]:
    """(offset after the line at `offset`, or `size`; the checksum there; what was skipped),
    reading it in bounded parts and keeping none of it."""
    tagged, carry = False, b""
    while offset < size:
        raw = os.pread(fd, min(_READ_BYTES, size - offset), offset)
        if not raw:
            break
        cut = raw.find(b"\n")
        raw = raw if cut < 0 else raw[:cut + 1]
        tagged = tagged or _LESS_THAN.search(carry + raw) is not None
        carry = raw[-2:]  # a character's UTF-8 split between two reads
        crc = zlib.crc32(raw, crc)
        offset += len(raw)
        if cut >= 0:
            return offset, crc, Skipped(line, True, tagged)
    return offset, crc, Skipped(line, False, tagged)


def reopened(text: str, depth: int) -> str:
    """A part's text as read after an earlier part left `depth` private blocks open: one
    line of that many opening tags first (so the caller shifts line numbers by one)."""
    return "<private>" * depth + "\n" + text
