"""Forgetting: removing cited entries from their memory file, as safely as adding them.

A citation (`memory/2026-02-14.md:5`, `memory/MEMORY.md:3-4`) names an entry by its lines;
a ref (`memory/2026-02-14.md:5#3fa9c2`, what search prints) adds a short hash of its text
(`entry.mark`). `find` reads the entry a citation names now, and never one that only took
its place: a ref's entry is the one at its lines with that hash, or the one entry of the
file with that hash when the file shifted; a bare citation's entry must hold the one text
those lines were shown as (by the index as it last saw the file, by this process: `shown.Shown`,
and before a write moved them: `note_shifted`), else it is refused, naming where that text
is now. `forget` removes entries under the workspace's memory lock, through the same
atomic rewrite as the writers (temp file, fsync, rename, owner and mode kept). It refuses,
writing nothing, when a cited entry is no longer at its lines with the same text (the file
changed since it was found), and when removing the lines would change any other entry: a
`<private>` block that runs past the entry would otherwise come into view. The index sees
the change on the next search.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from datetime import date as Date
from typing import NamedTuple

from miniclaw.errors import MemoryFileError, MiniclawError, UsageError
from miniclaw.fs import files
from miniclaw.entries.entry import Entry, mark

log = logging.getLogger("miniclaw")

_CITATION = re.compile(r"^(?P<path>.+?):(?P<start>\d+)(?:-(?P<end>\d+))?"
                       r"(?:#(?P<mark>[0-9a-fA-F]{6}))?$")
_DAY_FILE = re.compile(r"^memory/(\d{4}-\d{2}-\d{2})\.md$")


class Citation(NamedTuple):
    """A parsed citation: the file, the first and (maybe) last line, and the ref's mark."""

    path: str
    start: int
    end: int | None
    mark: str | None

    def __str__(self) -> str:
        lines = f"{self.start}" + (f"-{self.end}" if self.end is not None else "")
        return f"{self.path}:{lines}" + (f"#{self.mark}" if self.mark else "")


def parse_citation(text: str) -> Citation:
    """`path:N`, `path:N-M`, either with `#mark` (a ref, as search prints it); UsageError else."""
    match = _CITATION.match(text.strip())
    if not match:
        raise UsageError(f"{text!r} is not a citation: give PATH:LINE, as search prints it "
                         "(e.g. memory/2026-02-14.md:5#3fa9c2)")
    start, end = int(match["start"]), int(match["end"]) if match["end"] else None
    if start < 1 or (end is not None and end < start):
        raise UsageError(f"{text!r} names no lines: lines count from 1, start before end")
    mark = match["mark"].lower() if match["mark"] else None
    return Citation(match["path"].removeprefix("./"), start, end, mark)


def _parser(store, path: str):
    """The parse function for a memory file path relative to the workspace."""
    from miniclaw.entries.parsing import parse_daily_note, parse_long_term

    if path == store._relative(store.long_term_path):
        return parse_long_term
    day = _DAY_FILE.match(path)
    if day:
        try:
            when = Date.fromisoformat(day.group(1))
        except ValueError:
            when = None
        if when is not None:
            return lambda text, rel: parse_daily_note(text, rel, when)
    raise UsageError(f"{path} is not a memory file miniclaw writes: cite memory/MEMORY.md or "
                     "a daily note memory/YYYY-MM-DD.md")


def _entries_now(store, path: str, raw: bytes | None) -> list[Entry]:
    if raw is None:
        raise UsageError(f"{path} does not exist (was it renamed or deleted?)")
    text, _ = files.decode(raw, path)
    return _parser(store, path)(text, path)


def _cited(entries: list[Entry], path: str, start: int, end: int | None) -> Entry:
    for entry in entries:
        if entry.line_start == start and (end is None or entry.line_end == end):
            return entry
    where = f"{path}:{start}" + (f"-{end}" if end is not None else "")
    raise UsageError(f"no memory starts at {where} now (the file changed since it was "
                     "cited?): search again for its citation")


def _served(store, cited: Citation) -> set[bytes]:
    """The text hashes (`sync.content_hash`) the cited lines were shown as: by this process
    (`store.shown`), by the index as it last saw the file (no sync: what a search served),
    and before a forget moved them (`SearchIndex.note_shifted`). Empty when none knows the
    place (no index yet, another place, an index it cannot read): the citation is then
    taken as the file has it, as before refs existed."""
    import sqlite3

    from miniclaw.index.sync import content_hash

    shown = store.shown.texts(cited.path, cited.start, cited.end) if store.shown else []
    served = {content_hash(text) for text in shown}
    try:
        if not store.index.path.exists():
            return served
        rows = store.index.hashes_at(cited.path, cited.start)
    except (MiniclawError, sqlite3.Error, OSError, ValueError) as exc:
        log.debug("cannot read the index to check %s: %s", cited, exc)
        return served
    return served | {digest for end, digest in rows if cited.end is None or end == cited.end}


def _resolve(entries: list[Entry], cited: Citation, served: set[bytes]) -> Entry:
    """The entry the citation named when it was given, wherever it is now, or UsageError.
    A ref's mark names its text: an entry that moved is followed when it is the only one
    with that mark. A bare citation is taken only when everything that showed those lines
    showed the text they hold now: else it may have been given before the file shifted
    (refused, naming where the memory it was shown as is now, when that is one place)."""
    here = next((e for e in entries if e.line_start == cited.start
                 and (cited.end is None or e.line_end == cited.end)), None)
    if cited.mark is None:
        from miniclaw.index.sync import content_hash

        if not served or (here is not None and served == {content_hash(here.text)}):
            if here is None:
                _cited(entries, cited.path, cited.start, cited.end)  # raises, saying so
            return here
        elsewhere = [e for e in entries if content_hash(e.text) in served]
        now = "holds another memory now" if here is not None else "is no memory's place now"
        if len(served) > 1:
            why = "it has named more than one memory since the file changed"
        else:
            why = "the file changed since that place was shown"
        moved = (f"; the memory shown there is now at {elsewhere[0].ref}"
                 if len(served) == 1 and len(elsewhere) == 1 else "")
        raise UsageError(f"{cited} {now}: {why}{moved}; search again, and quote the citation "
                         "with its #mark as search prints it; nothing was changed")
    if here is not None and mark(here.text) == cited.mark:
        return here
    elsewhere = [e for e in entries if mark(e.text) == cited.mark]
    if len(elsewhere) == 1:
        return elsewhere[0]  # the file shifted: the entry the ref named, at its new lines
    now = "holds another memory now" if here is not None else "is no memory's place now"
    why = ("its memory is in the file more than once" if elsewhere
           else "its memory is no longer in the file")
    raise UsageError(f"{cited} {now} and {why} (the file changed since it was cited): "
                     "search again for its citation; nothing was changed")


async def find(store, citation: str, *, to_forget: bool = False) -> Entry:
    """The entry a citation names, as the file is now (UsageError when there is none, or
    when the entry at its lines is not the one it named: `_resolve`).
    `to_forget`: refuse now, before anyone is asked, a file `forget` would refuse to write
    (not UTF-8: `files.check_appendable`); `memory edit` opens any file, to fix it."""
    cited = parse_citation(citation)
    _parser(store, cited.path)  # a bad path is a usage error before the disk is touched
    store.require_workspace()

    def read() -> Entry:
        # One thread call, not aiofiles: the read goes with the index look-up (`_served`,
        # SQLite, which must run in the worker) and the parse, one hop instead of five.
        raw = files.read_bytes(store.workspace / cited.path, store.workspace, cited.path)
        entries = _entries_now(store, cited.path, raw)
        served = _served(store, cited) if cited.mark is None else set()
        entry = _resolve(entries, cited, served)
        if to_forget:
            files.check_appendable(raw, cited.path)
        return entry

    return await asyncio.to_thread(read)


async def forget(store, targets: Sequence[Entry]) -> list[Entry]:
    """Remove these entries (as `find` or a search returned them) from their files; returns
    them. All or nothing per file; each file is checked again under the lock. The places
    whose memory moved or went are then noted in the index (`SearchIndex.note_shifted`)."""
    store.require_workspace()
    by_path: dict[str, list[Entry]] = {}
    for entry in targets:
        _parser(store, entry.path)
        by_path.setdefault(entry.path, []).append(entry)
    shifted: list[Entry] = []

    def write() -> None:
        with files.locked(store.memory_dir):
            for path, entries in by_path.items():
                files.rewrite_bytes(store.workspace / path, store.workspace, path,
                                    lambda raw, p=path, e=entries: _without(store, p, raw, e,
                                                                            shifted))
        note_shifted(store, shifted)

    await asyncio.to_thread(write)
    return list(targets)


def note_shifted(store, shifted: list[Entry]) -> None:
    """Note the places (lines as they were) of entries a write moved or removed, in the
    index (`SearchIndex.note_shifted`). Best effort: the file is already written; without
    the note a bare citation is still checked against what the index and this process saw."""
    import sqlite3

    from miniclaw.index.sync import content_hash

    try:
        # Noted even before any search made the index: a citation `memory add` printed
        # names lines too, and a second forget of one would take the memory that moved in.
        if not shifted:
            return
        store.index.note_shifted([(e.path, e.line_start, e.line_end, content_hash(e.text))
                                  for e in shifted])
    except (MiniclawError, sqlite3.Error, OSError) as exc:
        log.warning("could not note in the index which memories moved: %s", exc)


def entries_of(store, path: str, raw: bytes) -> list[Entry]:
    """The entries of a memory file's bytes as read now (`memory tidy --apply` checks what
    it merges against them, under the lock)."""
    return _entries_now(store, path, raw)


def without(store, path: str, raw: bytes, targets: list[Entry],
            shifted: list[Entry]) -> bytes:
    """The file's bytes with the targets removed, as `forget` writes them, for another
    writer holding the lock (tidy's merge): one remover, one set of refusals."""
    return _without(store, path, raw, targets, shifted)


def span(raw: bytes, path: str, entry: Entry) -> tuple[int, int]:
    """0-based first and last physical line of an entry and the annotations after it (its
    text, not a daily note's heading): what a merge replaces in place."""
    from miniclaw.entries.parsing import split_lines
    from miniclaw.entries.privacy import front_matter_end, redact_lines

    decoded = split_lines(files.decode(raw, path)[0])
    visible = redact_lines(decoded)
    for i in range(front_matter_end(decoded)):
        visible[i] = ""
    return _span(decoded, visible, entry, daily=False)


def _same(a: Entry, b: Entry) -> bool:
    return (a.text, a.line_start, a.line_end, a.category, a.tags) == \
        (b.text, b.line_start, b.line_end, b.category, b.tags)


def _without(store, path: str, raw: bytes, targets: list[Entry],
             shifted: list[Entry]) -> bytes:
    """The file's bytes with the targets' lines removed, or an error changing nothing;
    `shifted` gets the entries whose lines no longer hold them after."""
    from miniclaw.entries.parsing import split_lines
    from miniclaw.entries.privacy import front_matter_end, redact_lines

    if not raw:
        raise UsageError(f"{path} does not exist (was it renamed or deleted?)")
    files.check_appendable(raw, path)  # UTF-16 lines are not split on b"\n"
    before = _entries_now(store, path, raw)
    for target in targets:
        now = _cited(before, path, target.line_start, target.line_end)
        if not _same(now, target):
            raise UsageError(f"{target.citation} holds another memory now (the file changed "
                             "since it was cited): search again; nothing was removed")
    decoded = split_lines(files.decode(raw, path)[0])
    visible = redact_lines(decoded)
    for i in range(front_matter_end(decoded)):
        visible[i] = ""
    doomed: set[int] = set()  # 0-based line indexes to remove
    for target in targets:
        first, last = _span(decoded, visible, target,
                            daily=path != store._relative(store.long_term_path))
        doomed.update(range(first, last + 1))
    _refuse_hidden_headings(decoded, visible, doomed, targets[0])
    physical = raw.split(b"\n")
    kept = b"\n".join(line for i, line in enumerate(physical) if i not in doomed)
    if raw.endswith(b"\n") and kept and not kept.endswith(b"\n"):
        kept += b"\n"  # the file's last line keeps its line end
    after = _entries_now(store, path, kept)
    left = [e for e in before if not any(_same(e, t) for t in targets)]
    if [_key(e) for e in after] != [_key(e) for e in left]:
        raise MemoryFileError(f"cannot remove {targets[0].citation} alone: a private block or "
                              "an annotation runs past it; edit the file by hand (miniclaw memory "
                              "edit); nothing was removed")
    places = {(e.line_start, e.line_end, e.text) for e in after}
    shifted.extend(e for e in before if (e.line_start, e.line_end, e.text) not in places)
    return kept


def _refuse_hidden_headings(decoded: list[str], visible: list[str], doomed: set[int],
                            target: Entry) -> None:
    """A `##` heading inside a private block of the lines to remove starts a note of its
    own that the user was never shown (a timestamped note made private whole): it is not
    removed along with the entry whose lines hide it."""
    from miniclaw.entries.parsing import HEADING

    for i in sorted(doomed):
        heading = None if visible[i].strip() else HEADING.match(decoded[i].strip())
        if heading and len(heading.group(1)) == 2:
            raise MemoryFileError(
                f"cannot remove {target.citation} alone: a private block in its lines holds "
                f"another note (the heading on line {i + 1}); edit the file by hand (miniclaw "
                "memory edit); nothing was removed")


def _key(entry: Entry) -> tuple:
    return (entry.text, entry.date, entry.time, entry.category, entry.tags)


def _span(decoded: list[str], visible: list[str], entry: Entry, *, daily: bool) -> tuple[int, int]:
    """0-based first and last line to remove for an entry: its lines, the annotations after
    it, and in a daily note its `## HH:MM:SS` section and one `---` separator with the blank
    lines around it. `visible` (private and front matter lines blanked) finds the structure;
    past the entry's own section only lines blank in `decoded` too are taken, so a private
    block ending the entry before (or starting the one after) stays."""
    from miniclaw.entries.parsing import HEADING, parse_annotation

    first, last = entry.line_start - 1, entry.line_end - 1
    i = last + 1
    while i < len(visible) and (not visible[i].strip() or parse_annotation(visible[i])):
        if visible[i].strip():
            last = i
        i += 1
    if not daily or entry.time is None:
        return first, last
    i = first - 1
    while i >= 0 and not visible[i].strip():
        i -= 1
    heading = HEADING.match(visible[i]) if i >= 0 else None
    if not heading or len(heading.group(1)) != 2:
        return first, last
    first = i
    nxt = last + 1  # the section runs to the next separator or heading: all of it goes
    while nxt < len(visible) and not visible[nxt].strip():
        nxt += 1
    if nxt < len(visible) and _is_separator(visible[nxt]):
        end = nxt + 1  # the separator after, and the blank lines after it
        while end < len(decoded) and not decoded[end].strip():
            end += 1
        return first, end - 1
    if nxt < len(visible):  # another heading follows: up to it
        return first, nxt - 1
    prev = first - 1  # the last section: the separator before it goes too
    while prev >= 0 and not decoded[prev].strip():
        prev -= 1
    if prev >= 0 and _is_separator(visible[prev]):
        first = prev
        while first > 0 and not decoded[first - 1].strip():
            first -= 1
    return first, len(visible) - 1


def _is_separator(line: str) -> bool:
    return re.match(r"^ {0,3}(?:-[ \t]*){3,}$", line) is not None
