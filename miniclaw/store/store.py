"""MemoryStore: the facade over a workspace's three memories and their search.

- short-term: `store.short_term`, the conversation in process (bounded, never persisted);
- long-term: `memory/MEMORY.md`, entries under `## YYYY-MM-DD` headers;
- daily notes: `memory/YYYY-MM-DD.md`, one `## HH:MM:SS UTC` section per entry.

Days and times are those of the workspace's zone (`config.time_zone()`, UTC by default):
it decides which note is today's, and a header's time carries its offset when not UTC.

Writes hold the workspace's memory lock, append or replace atomically (`files`), and refuse
to add text where an unclosed `<private>` block would swallow it. Reads go through the
parser, so private text never comes out. Searches go through `MemoryRanker`, which keeps the
index (a cache under the user's cache directory) up to date before every query.
Every method that touches disk is a coroutine; blocking work runs in worker threads.
A whole memory file read from a coroutine goes through aiofiles (`files.read_bytes_async`:
the same no-follow, capped, non-blocking open; ~0.13 ms more a file than one thread call,
its open, reads and close each a hop). An add stays one `asyncio.to_thread` call: its lock,
open, check, write, fsync and rename or truncate-back are one critical section under a
cross-process `flock`, and split into awaited aiofiles steps it would hold that lock across
nine hops to the worker thread and back, keeping other writers waiting. Measured side by
side (benchmarks/aiofiles_ab.py, 200 appends, 2026-11-29): median 254-328 us an add as one
call, 633-891 us split into aiofiles steps (2.5-2.7x).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from datetime import date as Date
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

from miniclaw import config
from miniclaw.dates import ZONE_LEAD_DAYS, utc_now
from miniclaw.errors import UsageError, WorkspaceNotFoundError
from miniclaw.fs import files
from miniclaw.entries.entry import Entry, clean_category, clean_tags
from miniclaw.index.search_index import IndexStatus, RefreshReport, SearchIndex
from miniclaw.search.options import SearchOptions, check_days
from miniclaw.search.ranker import MemoryRanker
from miniclaw.search.results import RankedMemory, SearchResults
from miniclaw.store.short_term import ShortTermMemory
from miniclaw.sources.base import DailyNoteSource, MemorySource, SourceFile, check_roots

# Parsing and writing are imported inside the methods that need them: a search through an
# up-to-date index parses nothing, and start-up time is part of the product.

if TYPE_CHECKING:
    from miniclaw.store.door import Added  # imported by the writers: a search needs none

log = logging.getLogger("miniclaw")

MAX_ENTRY_CHARS = 100_000
# A MEMORY.md this large has its parsed entries kept for the next daily add's door.
_KEEP_PARSED_BYTES = 256 * 1024
def _check_characters(value: str, what: str) -> None:
    """UsageError naming the first character that must not be written (never the text):
    control characters but tab, newline and CR (normalized to a newline), and lone
    surrogates. A NUL makes a whole file unreadable, escapes reach the terminal, and a
    surrogate cannot be written as UTF-8."""
    from miniclaw.text import first_unwritable

    bad = first_unwritable(value, allow="\t\n\r") if isinstance(value, str) else None
    if bad:
        char = ord(bad.group())
        kind = "a lone surrogate" if 0xD800 <= char <= 0xDFFF else "a control character"
        raise UsageError(f"the {what} holds {kind} (U+{char:04X}) at character {bad.start() + 1}: "
                         "remove it; only tab and newline are allowed, nothing was written")


class MemoryStore:
    """A workspace's memory. `MemoryStore(path)`; use `async with` or call `close()`."""

    def __init__(self, workspace: str | os.PathLike[str], *,
                 index_path: str | os.PathLike[str] | None = None,
                 now: Callable[[], datetime] = utc_now,
                 sources: Sequence[MemorySource] | None = None,
                 roots: Iterable[str | os.PathLike[str]] = (),
                 zone: tzinfo | None = None) -> None:
        """`sources`: what is searched (default: the workspace's list in config.json, else
        MEMORY.md and the daily notes); `roots`: the folders outside the workspace that
        sources may read (an explicit allow-list; config.json's `"roots"` by default); `zone`:
        the time zone that decides which day's note is today (default: the configured one)."""
        self.workspace = Path(workspace).expanduser().absolute()
        self.memory_dir = self.workspace / config.MEMORY_DIR
        self.long_term_path = self.memory_dir / config.LONG_TERM_FILE
        self.short_term = ShortTermMemory()
        self._now = now
        self._zone = zone  # None: the `timezone` setting, read on first use
        self._index_path = Path(index_path) if index_path else None
        self._shown = None  # shown.Shown: what the citations handed out stood for
        self._index: SearchIndex | None = None
        self._sources = tuple(sources) if sources is not None else None
        self._kept = None  # MEMORY.md's entries for the door (`_known_entries`)
        self._roots = tuple(roots)

    # -- plumbing ------------------------------------------------------------------------

    @property
    def zone(self) -> tzinfo:
        """The zone whose days name the daily notes (a bad setting is a UsageError)."""
        if self._zone is None:
            self._zone = config.time_zone()
        return self._zone

    def now(self) -> datetime:
        """The current time in the workspace's zone (the clock is injectable for tests)."""
        return self._in_zone(self._now())

    def _in_zone(self, moment: datetime) -> datetime:
        """`moment` in the workspace's zone; a naive one is taken as UTC."""
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        return moment.astimezone(self.zone)

    def today(self) -> Date:
        return self.now().date()

    @property
    def sources(self) -> tuple[MemorySource, ...]:
        """The memory sources searched, their roots checked against the allow-list."""
        if self._sources is None:
            from miniclaw.sources.base import configured_sources

            self._sources, self._roots = configured_sources(self.workspace)
            check_roots(self._sources, self.workspace, self._roots)
        elif self._roots is not None:
            check_roots(self._sources, self.workspace, self._roots)
        self._roots = None  # checked
        return self._sources

    @property
    def shown(self):
        """What the citations this store handed out (searches, reads) stood for, or None
        before the first: `forget.find` checks a bare citation against it."""
        return self._shown

    def showing(self, items: Iterable) -> None:
        """Record entries or search results as shown (`shown.Shown`)."""
        if self._shown is None:
            from miniclaw.store.shown import Shown

            self._shown = Shown()
        self._shown.note(items)

    @property
    def index(self) -> SearchIndex:
        if self._index is None:
            path = self._index_path or config.index_path(self.workspace)
            self._index = SearchIndex(path, self.workspace, self.sources)
        return self._index

    def close(self) -> None:
        if self._index is not None:
            self._index.close()

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(self, *exc_info) -> None:
        self.close()

    def require_workspace(self) -> None:
        """A workspace is a folder holding memory/ (as `miniclaw init` makes it): any other
        folder is refused, so a mistyped or empty --workspace never scatters notes."""
        if not self.workspace.is_dir():
            raise WorkspaceNotFoundError(
                f"no workspace at {self.workspace}: run `miniclaw init` to create one "
                "(or pass --workspace / set MINICLAW_WORKSPACE)")
        if not self.memory_dir.is_dir():
            raise WorkspaceNotFoundError(
                f"{self.workspace} is not a miniclaw workspace (it has no memory/ folder): "
                "run `miniclaw init` there, or pass the right --workspace")

    def _relative(self, path: Path) -> str:
        return path.relative_to(self.workspace).as_posix()

    def _day_path(self, day: Date) -> Path:
        return self.memory_dir / f"{day.isoformat()}.md"

    # -- writing -------------------------------------------------------------------------

    @staticmethod
    def _clean(text: str, category: str | None, tags: Iterable[str]) -> tuple[str, str | None, tuple[str, ...]]:
        from miniclaw.entries.parsing import split_lines
        from miniclaw.entries.privacy import open_at_end
        from miniclaw.entries.writing import normalize_text

        if not isinstance(text, str):
            raise UsageError("memory text must be a string")
        _check_characters(text, "memory text")
        tags = tuple(tags)
        if category is not None:
            _check_characters(category, "category")
        for tag in tags:
            _check_characters(tag, "tag")
        body = normalize_text(text)
        if not body:
            raise UsageError("the memory text is empty: give the text to remember")
        if len(body) > MAX_ENTRY_CHARS:
            raise UsageError(f"the memory text is {len(body)} characters; the limit is {MAX_ENTRY_CHARS}")
        if open_at_end(split_lines(body)):
            raise UsageError("the text opens a private tag without closing it: add the closing "
                             "private tag where the private part ends")
        category = clean_category(category) if category is not None else None
        return body, category, clean_tags(tags)

    async def add(self, text: str, *, long: bool = False, when: datetime | None = None,
                  category: str | None = None, tags: Sequence[str] = (),
                  force: bool = False, supersedes: str | None = None) -> Added:
        """Add a memory to today's daily note (or `when`'s), or with `long` to MEMORY.md,
        unless the same fact is there already (`store/door.py`): then nothing is written
        and the answer names the entry that holds it. `force` writes it anyway.
        `supersedes`: the citation of the entry this fact replaces, marked superseded in its
        file (kept, hidden from searches; `door.mark_superseded`)."""
        if long and when is not None:
            raise UsageError("a long-term memory is added now: `when` is for daily notes")
        old = None
        if supersedes is not None:
            from miniclaw.store import door

            self._clean(text, category, tags)  # bad text is refused before the citation
            old = await door.superseded_target(self, supersedes)
            door.check_not_itself(old, door.check_text(text))
        if long:
            return await self._add_long_term(text, category, tags, force, old)
        return await self._add_daily_note(text, when, category, tags, force, old)

    async def add_long_term(self, text: str, *, category: str | None = None,
                            tags: Sequence[str] = (), force: bool = False,
                            supersedes: str | None = None) -> Entry | None:
        """Add an entry to MEMORY.md under today's header; returns it as the reader sees it
        (None when all of its text was private), or the entry that holds the same fact
        already, writing nothing (`add` tells the two apart; `force` writes anyway)."""
        return (await self.add(text, long=True, category=category, tags=tags, force=force,
                               supersedes=supersedes)).entry

    async def _add_long_term(self, text: str, category: str | None, tags: Sequence[str],
                             force: bool, old: Entry | None = None) -> Added:
        from miniclaw.entries.parsing import parse_long_term, split_lines
        from miniclaw.entries.privacy import open_at_end
        from miniclaw.entries.writing import insert_long_term, long_term_item
        from miniclaw.store import door

        body, category, tags = self._clean(text, category, tags)
        self.require_workspace()
        now = self.now()
        lines = long_term_item(body, now, category, tags)
        path, rel = self.long_term_path, self._relative(self.long_term_path)
        checked = "" if force else door.check_text(body)

        written: list[tuple[list[Entry], int]] = []  # (the file's entries after, the item's line)

        def make(raw: bytes) -> bytes:
            files.check_appendable(raw, rel)
            new, line = insert_long_term(raw, now.date(), lines)
            text_after, _ = files.decode(new, rel)
            before = split_lines(text_after)[: line - 1]
            if open_at_end(before):
                raise files.MemoryFileError(
                    f"{rel} has a private block that is never closed before line {line}; "
                    "close it with the closing private tag so new memories stay visible", path=rel)
            # One parse of the file as it will be, for the door and for the answer: the
            # entries but the new one are the file's as it is, those below it one item down.
            entries = parse_long_term(text_after, rel)
            if checked and door.may_hold(checked, files.decode(raw, rel)[0]):
                down = len(lines)
                known = [e if e.line_start < line else
                         e._replace(line_start=e.line_start - down, line_end=e.line_end - down)
                         for e in entries if e.line_start != line]
                found = door.same_among(checked, known, old)
                if found is not None:
                    raise door.Found(found)
            written.append((entries, line))
            return new

        def write() -> Added:
            files.ensure_dir(self.memory_dir)
            with files.locked(self.memory_dir):
                try:
                    files.rewrite_bytes(path, self.workspace, rel, make)
                except door.Found as found:
                    return door.superseded_by_known(self, found.entry, old)
                entries, line = written[0]
                # Inserted above other entries (today's section is not the last): they
                # moved down, and a bare citation of their old lines must not name the new one.
                below = [e._replace(line_start=e.line_start - len(lines),
                                    line_end=e.line_end - len(lines))
                         for e in entries if e.line_start >= line + len(lines)]
                if below:
                    from miniclaw.store.forget import note_shifted

                    note_shifted(self, below)
                new = next((e for e in entries if e.line_start == line), None)
                if old is not None and new is not None:
                    shift = len(lines) if old.path == rel and old.line_start >= line else 0
                    was, new = door.mark_superseded(self, old, new, shift)
                    return door.Added(new, True, superseded=was)
            return door.Added(new, True)

        return await asyncio.to_thread(write)

    async def add_daily_note(self, text: str, *, when: datetime | None = None,
                             category: str | None = None, tags: Sequence[str] = (),
                             force: bool = False, supersedes: str | None = None) -> Entry | None:
        """Append an entry to the daily note of `when` (default now; naive means UTC), on
        its day in the workspace's zone; or, when that note or MEMORY.md holds the same
        fact already, return its entry, writing nothing (`force` writes anyway)."""
        return (await self.add(text, when=when, category=category, tags=tags, force=force,
                               supersedes=supersedes)).entry

    async def _add_daily_note(self, text: str, when: datetime | None, category: str | None,
                              tags: Sequence[str], force: bool, old: Entry | None = None) -> Added:
        from miniclaw.entries.parsing import parse_daily_note, parse_long_term, split_lines
        from miniclaw.entries.privacy import open_at_end
        from miniclaw.entries.writing import append_daily, daily_entry
        from miniclaw.store import door

        body, category, tags = self._clean(text, category, tags)
        checked = "" if force else door.check_text(body)
        long_rel = self._relative(self.long_term_path)
        self.require_workspace()
        when = self.now() if when is None else self._in_zone(when)
        day = when.date()
        path = self._day_path(day)
        rel = self._relative(path)
        lines = daily_entry(body, when, category, tags)
        written: list[tuple[bytes, bytes]] = []  # (content before, bytes appended)

        def make(current: bytes) -> bytes:
            files.check_appendable(current, rel)
            existing, _ = files.decode(current, rel)
            if current and open_at_end(split_lines(existing)):
                raise files.MemoryFileError(
                    f"{rel} ends inside a private block that is never closed; close it with "
                    "the closing private tag so new notes stay visible", path=rel)
            if checked:
                found = door.same_in(checked, existing,
                                     lambda text: parse_daily_note(text, rel, day), old)
                if found is not None:
                    raise door.Found(found)
            written.append((current, append_daily(current, day, lines)))
            return written[0][1]

        def known() -> Entry | None:
            """The entry of MEMORY.md holding the fact (a file that cannot be read as
            text is not searched for it: the add is not refused for it). Its entries are
            kept while its stat is unchanged (`_known_entries`): a chat or MCP session
            adding many notes reads and parses a large MEMORY.md once."""
            kept = self._known_entries(long_rel)
            if kept is not None:
                return door.same_among(checked, kept, old)
            try:
                raw = files.read_bytes(self.long_term_path, self.workspace, long_rel)
            except (files.MemoryFileError, files.OutsideWorkspaceError) as exc:
                log.debug("not looked for in %s: %s", long_rel, exc)  # searches say why
                return None
            if not raw:
                return None
            text, warning = files.decode(raw, long_rel)
            if warning:
                return None
            if len(raw) < _KEEP_PARSED_BYTES:
                return door.same_in(checked, text, lambda text: parse_long_term(text, long_rel),
                                    old)
            entries = parse_long_term(text, long_rel)
            self._keep_entries(raw, entries)
            return door.same_among(checked, entries, old)

        def write() -> door.Added:
            files.ensure_dir(self.memory_dir)
            with files.locked(self.memory_dir):
                found = known() if checked else None
                if found is not None:
                    return door.superseded_by_known(self, found, old)
                try:
                    files.append_bytes(path, self.workspace, rel, make)
                except door.Found as found:
                    return door.superseded_by_known(self, found.entry, old)
                before, appended = written[0]
                old_lines = before.count(b"\n") + 1
                entries = parse_daily_note(files.decode(before + appended, rel)[0], rel, day)
                new = entries[-1] if entries and entries[-1].line_start > old_lines else None
                if old is not None and new is not None:
                    was, new = door.mark_superseded(self, old, new)
                    return door.Added(new, True, superseded=was)
            return door.Added(new, True)

        return await asyncio.to_thread(write)

    def _known_entries(self, rel: str) -> list[Entry] | None:
        """MEMORY.md's entries as last parsed by this store's door, if the file is the same
        (device, inode, size, mtime) and was not changed within two seconds of that read
        (a write in the same clock tick: as the index's sync, it is read again)."""
        kept = self._kept
        if kept is None:
            return None
        try:
            st = os.stat(self.long_term_path)
        except OSError:
            return None
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        return kept[1] if kept[0] == key else None

    def _keep_entries(self, raw: bytes, entries: list[Entry]) -> None:
        import time

        try:
            st = os.stat(self.long_term_path)
        except OSError:
            return
        if st.st_size != len(raw) or time.time() - st.st_mtime < 2:
            self._kept = None
            return
        self._kept = ((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns), entries)

    # -- reading -------------------------------------------------------------------------

    async def _read(self, path: Path, parse: Callable[[str, str], list[Entry]]) -> list[Entry]:
        rel = self._relative(path)

        try:
            # capped=False: `memory read` of a 50 MB note reads it
            raw = await files.read_bytes_async(path, self.workspace, rel, capped=False)
        except files.OutsideWorkspaceError as exc:
            log.warning("%s", exc)
            raw = None
        except files.NotMemoryFileError as exc:  # a FIFO would block, /dev/zero never end
            log.warning("%s; not read", exc)
            raw = None
        if raw is None:
            return []
        text, warning = files.decode(raw, rel)
        if warning:
            log.warning("%s", warning)
        entries = parse(text, rel)
        self.showing(entries)
        return entries

    async def read_long_term(self) -> list[Entry]:
        """Every entry of MEMORY.md, in file order."""
        self.require_workspace()
        from miniclaw.entries.parsing import parse_long_term

        return await self._read(self.long_term_path, parse_long_term)

    def has_note(self, day: Date) -> bool:
        """Whether `day` has a daily note file (one dated after today may: `check_not_future`);
        True when that cannot be told (an unreadable folder): reading it then says why."""
        try:
            return self._day_path(day).is_file()
        except OSError:
            return True

    async def read_day(self, day: Date) -> list[Entry]:
        """The entries of one day's note, in file order (empty when there is none)."""
        self.require_workspace()
        from miniclaw.entries.parsing import parse_daily_note

        path = self._day_path(day)
        return await self._read(path, lambda text, rel: parse_daily_note(text, rel, day))

    async def source_files(self) -> list[tuple[MemorySource, SourceFile]]:
        """Every file of the searched sources, each source's in order (dated files newest
        first): what a caller may name to `read_file`."""
        self.require_workspace()

        def listed():
            out, said = [], set()
            for source in self.sources:
                found = self._listing(source, said)
                out += [(source, f) for f in sorted(found, reverse=source.windowed,
                                                    key=lambda f: (f.day or Date.min, f.path))]
            return out

        return await asyncio.to_thread(listed)

    async def files_with_entries(self) -> list[tuple[MemorySource, SourceFile]]:
        """The files of `source_files` that hold a visible entry, as the index has them
        once brought up to date: a file private as a whole, or all of whose text is
        private, is not named (its name may say what it hides: a memory's slugged title)."""
        await self.refresh_index()
        held = await asyncio.to_thread(self.index.paths_with_entries)
        return [(source, f) for source, f in await self.source_files() if f.path in held]

    def _listing(self, source: MemorySource, said: set[str]) -> list[SourceFile]:
        """A source's files; a folder of it that could not be listed (or its root, gone) is
        a warning, once per operation (`said`: two sources read memory/), never a silent
        gap."""
        from miniclaw.sources.base import listing

        found, unlisted = listing(source, self.workspace)
        for _, message in unlisted:
            if message not in said:
                said.add(message)
                log.warning("%s", message)
        return found

    async def read_file(self, path: str) -> list[Entry] | None:
        """The entries of one file of the searched sources by its display path, in file
        order, read as the index reads it; None when no source lists a file there (a path
        from a caller is never opened as such)."""
        from miniclaw.sources.base import read_entries

        found = [(source, f) for source, f in await self.source_files() if f.path == path]
        if not found:
            return None
        source, file = found[0]
        raw = await files.read_bytes_async(file.absolute, file.root or self.workspace, file.path,
                                           capped=False)
        text, warning = files.decode(raw or b"", file.path)
        if warning:
            log.warning("%s", warning)
        entries = read_entries(source, text, file.path)
        self.showing(entries)
        return entries

    async def read_recent(self, days: int = 7) -> list[tuple[Date, list[Entry]]]:
        """The daily notes of the last `days` days (today included), newest day first;
        days without a note are left out. Notes dated up to `ZONE_LEAD_DAYS` after today are
        included: one written where the zone was ahead (travel, a second machine syncing the
        workspace) is recent, not invisible."""
        check_days(days)
        self.require_workspace()
        today = self.today()
        first = today - timedelta(days=days - 1)
        notes = await asyncio.to_thread(self._listing, DailyNoteSource(), set())
        last = today + timedelta(days=ZONE_LEAD_DAYS)
        wanted = sorted((f.day for f in notes if first <= f.day <= last), reverse=True)
        found = await asyncio.gather(*(self.read_day(day) for day in wanted))
        return [(day, entries) for day, entries in zip(wanted, found) if entries]

    # -- searching -----------------------------------------------------------------------

    def ranker(self) -> MemoryRanker:
        return MemoryRanker(self.index, self.today)

    async def search(self, query: str, options: SearchOptions | None = None,
                     **arguments: object) -> SearchResults:
        """Search with the full answer: results, total matches, the mode used, spelling
        corrections, hints and warnings (hints.py).

        `query` may use the query language (`"phrase"`, `+word`, `-word`, `word*`). The
        arguments are `SearchOptions`' fields (search/options.py: limit, days, since, until,
        category, tags, sources, mode, require, exclude, explain, correct), as values callers
        naturally have (`since="yesterday"`, `tags="work"`), or one `SearchOptions`; a value
        that cannot be read is a `UsageError` naming its argument.
        """
        if options is None:
            options = SearchOptions.build(self.today(), **arguments)
        elif arguments:
            raise UsageError("give the search options or arguments, not both")
        ranker = self.ranker()
        ranker.filters(options)  # bad options are usage errors, before the disk is touched
        self.require_workspace()
        found = await ranker.search(query, options)
        if options.all_versions and any(hit.meta.get("superseded_by") for hit in found.results):
            from miniclaw.store.door import with_successors

            found = await with_successors(self, found)
        self.showing(found.results)
        return found

    async def search_memories(self, query: str, options: SearchOptions | None = None,
                              **arguments: object) -> list[RankedMemory]:
        """The best `limit` memories for `query`, best first (docs/ARCHITECTURE.md's contract);
        the arguments are `search`'s."""
        found = await self.search(query, options, **arguments)
        return found.results

    async def refresh_index(self, *, rebuild: bool = False,
                            progress: Callable[[int, int], None] | None = None) -> RefreshReport:
        """Bring the index up to date (every search does this too); `rebuild` starts over."""
        self.require_workspace()
        index = self.index
        report, warnings = await asyncio.to_thread(index.retrying, lambda: (
            index.refresh(rebuild=rebuild, progress=progress), index.warnings()))
        for _, warning in warnings:
            log.warning("%s", warning)
        return report

    async def embed_index(self, progress: Callable[[int, int], None] | None = None
                          ) -> tuple[int, int] | None:
        """Compute the vector of every indexed text that has none yet by the configured
        embedder, for the semantic modes (semantic/retriever.py): (texts with a vector,
        texts); None without the model. After a change of model, that is every text. An
        embedder that fails part way (a server down) keeps the vectors stored so far: one
        warning, and the count as it stands."""
        from miniclaw.semantic import embedders

        if not embedders.available()[0]:
            return None
        from miniclaw.index.derived import DerivedData
        from miniclaw.semantic.retriever import embed_missing

        index = self.index

        def work() -> tuple[int, int] | None:
            index.refresh()  # an operation syncs first: the texts of now
            embedder = embedders.current()
            try:
                return embed_missing(index, embedders.load(), None, progress)
            except embedders.ModelUnavailable as exc:
                log.warning("vectors not computed: %s", exc)
                if embedder.dim is None or embedder.kind == "bundled":
                    return None
                return DerivedData(index, embedder.identity).progress()

        return await asyncio.to_thread(index.retrying, work)

    async def rebuild_index(self, progress: Callable[[int, int], None] | None = None) -> RefreshReport:
        return await self.refresh_index(rebuild=True, progress=progress)

    async def index_status(self) -> IndexStatus:
        self.require_workspace()
        return await asyncio.to_thread(self.index.status)
