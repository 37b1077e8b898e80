"""The tidy report: duplicate clusters and conflict pairs across MEMORY.md and the notes.

Read only. Entries come through the parsers, so private text is already gone; a file
private as a whole gives no entries and is never named. The JSON shape (`Report.to_dict`)
is documented in docs/cli.md ("memory tidy") and only ever grows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import NamedTuple

from miniclaw.entries.entry import Entry


class Cluster(NamedTuple):
    """Entries that say the same thing, in date order, and how sure (0..1, best first)."""

    entries: tuple[Entry, ...]
    score: float

    def to_dict(self) -> dict:
        return {"score": self.score, "entries": [e.to_dict() for e in self.entries]}


class Conflict(NamedTuple):
    """Two entries that look like one subject with two values: the older and the newer
    (a candidate for superseding the older; never changed by `--apply`)."""

    older: Entry
    newer: Entry
    score: float
    reason: str  # "values": same subject, other numbers, dates or names; "lead": same start

    def to_dict(self) -> dict:
        return {"score": self.score, "reason": self.reason, "older": self.older.to_dict(),
                "newer": self.newer.to_dict()}


class Report(NamedTuple):
    duplicates: tuple[Cluster, ...]
    conflicts: tuple[Conflict, ...]
    entries: int  # how many entries were compared
    files: int  # in how many files
    days: int | None  # the daily notes' window (None: all of them)

    def to_dict(self) -> dict:
        return {"scope": {"days": self.days, "files": self.files, "entries": self.entries},
                "duplicates": [c.to_dict() for c in self.duplicates],
                "conflicts": [c.to_dict() for c in self.conflicts]}


def when(entry: Entry) -> tuple:
    """An entry's place in time: its date, its time, then where it is (undated last)."""
    return (entry.date is None, entry.date or 0, entry.time or "", entry.path, entry.line_start)


async def entries_in_scope(store, days: int | None) -> tuple[list[Entry], int]:
    """MEMORY.md's entries and those of the daily notes of the last `days` days (all
    when None), but those marked superseded (`@superseded-by`: settled already, hidden
    from searches); and how many files held any."""
    from miniclaw.search.options import check_days
    from miniclaw.sources.base import DailyNoteSource, listing

    if days is not None:
        check_days(days)
    store.require_workspace()
    notes, _ = await asyncio.to_thread(listing, DailyNoteSource(), store.workspace)
    first = store.today() - timedelta(days=days - 1) if days is not None else None
    wanted = sorted(f.day for f in notes if f.day and (first is None or f.day >= first))
    found = await asyncio.gather(store.read_long_term(), *(store.read_day(d) for d in wanted))
    found = [[e for e in part if not e.meta.get("superseded_by")] for part in found]
    return [e for part in found for e in part], sum(1 for part in found if part)


async def build(store, *, days: int | None = None, limit: int | None = None,
                same: Callable[[str, str], bool] | None = None,
                score: Callable[[str, str], float] | None = None) -> Report:
    """The report for the store's workspace; `limit` caps each list (best first). `same`
    and `score` (of two texts) default to the door check's, on folds (`entries/similar.py`)."""
    from miniclaw.tidy.grouping import group

    if limit is not None and limit < 1:
        from miniclaw.errors import UsageError

        raise UsageError(f"--limit must be 1 or more, not {limit}")
    from miniclaw.entries import similar

    fold = similar.fold if same is None else str
    same = same or similar.same_fact_folds
    score = score or similar.similarity_of_folds
    entries, files = await entries_in_scope(store, days)
    groups, pairs = await asyncio.to_thread(group, [e.text for e in entries], same, score, fold)
    clusters = [Cluster(tuple(sorted((entries[i] for i in g.members), key=when)), g.score)
                for g in groups]
    conflicts = []
    for pair in pairs:
        older, newer = sorted((entries[pair.first], entries[pair.second]), key=when)
        conflicts.append(Conflict(older, newer, pair.score, pair.reason))
    return Report(tuple(clusters[:limit]), tuple(conflicts[:limit]), len(entries), files, days)
