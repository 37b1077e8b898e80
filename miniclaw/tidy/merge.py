"""Folding a duplicate cluster into one entry (`memory tidy --apply`).

The merged entry keeps the earliest date (and time), every tag, the keeper's category
(another category of the cluster becomes a tag: an entry has one), and a last line
`~ merged from PATH:LINE, ...` naming where the others were (docs/configuration.md).

Where it lives: in MEMORY.md when the cluster has an entry there (under the section of the
earliest date, the MEMORY.md entries removed), else in place of the earliest entry in its
daily note. The others are removed by forget's remover (`store/forget.py: without`).

Safety: one cluster at a time under the memory lock. Every file is read again under the
lock and every entry of the cluster must still be there as reported (its text, category,
tags, and as many copies in its file), else the cluster is refused, nothing written; so is
a cluster with a private part in an entry's lines (the merge would lose it). Each
file is replaced atomically (`files.rewrite_bytes`: temp, fsync, rename), the file that
receives the merged entry first: a crash between two files leaves a duplicate, never a loss.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime, time as Time
from typing import NamedTuple

from miniclaw.entries.entry import Entry
from miniclaw.errors import MemoryFileError, UsageError
from miniclaw.fs import files
from miniclaw.tidy.report import Cluster, when

MERGED_FROM = "~ merged from "


def _key(entry: Entry) -> tuple:
    return (entry.text, entry.category, entry.tags)


def keeper_of(cluster: Cluster, long_term: str) -> Entry:
    """The entry whose text the merge keeps: the cluster's first MEMORY.md entry (the
    user chose to keep it long), else its earliest."""
    kept = [e for e in cluster.entries if e.path == long_term]
    return min(kept or cluster.entries, key=when)


def merged_fields(cluster: Cluster, keeper: Entry) -> tuple[str, str | None, tuple[str, ...]]:
    """(text, category, tags) of the merged entry."""
    others = [e for e in cluster.entries if e is not keeper]
    lines = keeper.text.split("\n")
    earlier = lines.pop()[len(MERGED_FROM):].split(", ") if lines[-1].startswith(MERGED_FROM) \
        and len(lines) > 1 else []
    places = list(dict.fromkeys(earlier + [e.citation for e in others]))
    text = "\n".join(lines + [MERGED_FROM + ", ".join(places)])
    ordered = [keeper] + sorted(others, key=when)
    categories = [e.category for e in ordered if e.category]
    category = categories[0] if categories else None
    tags = tuple(dict.fromkeys([t for e in ordered for t in e.tags]
                               + [c for c in categories[1:] if c != category]))
    return text, category, tags[:32]


def _located(store, path: str, raw: bytes, reported: list[Entry]) -> list[Entry]:
    """The reported entries as the file holds them now (they may have moved), or
    UsageError when any changed: each must be there with the same text, category and tags,
    as many times as reported."""
    from miniclaw.store.forget import entries_of

    now: dict[tuple, list[Entry]] = defaultdict(list)
    for entry in entries_of(store, path, raw):
        now[_key(entry)].append(entry)
    wanted: dict[tuple, list[Entry]] = defaultdict(list)
    for entry in reported:
        wanted[_key(entry)].append(entry)
    found = []
    for key, entries in wanted.items():
        if len(now.get(key, ())) != len(entries):
            raise UsageError(f"{entries[0].citation} changed since the report (edited, moved "
                             "or copied again): run memory tidy again; nothing was merged")
        found += now[key]
    return found


def _refuse_private(raw: bytes, path: str, entries: list[Entry]) -> None:
    """MemoryFileError when an entry's lines hold a private part: the merged entry is
    written from visible text, so the part would be lost (the user merges it by hand)."""
    from miniclaw.entries.parsing import split_lines
    from miniclaw.entries.privacy import redact_lines

    decoded = split_lines(files.decode(raw, path)[0])
    visible = redact_lines(decoded)
    for entry in entries:
        lines = slice(entry.line_start - 1, entry.line_end)
        if decoded[lines] != visible[lines]:
            raise MemoryFileError(f"{entry.citation} holds a private part, which a merge "
                                  "would lose: merge it by hand (miniclaw memory edit); "
                                  "nothing was merged")


def _stamp(store, entry: Entry) -> datetime:
    """When the merged entry says it was added: the earliest entry's date and time."""
    day = entry.date or store.today()
    clock = Time.fromisoformat(entry.time) if entry.time else Time(0, 0, 0)
    return datetime.combine(day, clock, tzinfo=store.zone)


def _into_long_term(store, path: str, raw: bytes, here: list[Entry], merged: list[str],
                    day, shifted: list[Entry]) -> bytes:
    from miniclaw.entries.writing import insert_long_term
    from miniclaw.store.forget import without

    kept = without(store, path, raw, here, shifted)
    new, _ = insert_long_term(kept, day, merged)
    return new


def _in_place(store, path: str, raw: bytes, here: list[Entry], keeper: Entry,
              merged: list[str], shifted: list[Entry]) -> bytes:
    """The daily note with the others removed and the keeper's text and annotations
    replaced by the merged entry's lines (its heading, so its time, stays)."""
    from miniclaw.store.forget import entries_of, span, without

    others = [e for e in here if e != keeper]
    kept = without(store, path, raw, others, shifted) if others else raw
    now = [e for e in entries_of(store, path, kept) if _key(e) == _key(keeper)]
    if len(now) != 1:
        raise UsageError(f"{keeper.citation} changed since the report: run memory tidy "
                         "again; nothing was merged")
    first, last = span(kept, path, now[0])
    physical = kept.split(b"\n")
    newline = b"\r\n" if physical[first].endswith(b"\r") else b""
    body = [line.encode("utf-8") + newline for line in merged]
    return b"\n".join(physical[:first] + body + physical[last + 1:])


async def merge(store, cluster: Cluster) -> Entry:
    """Merge one duplicate cluster; returns the merged entry as written (UsageError when
    the files changed since the report, MemoryFileError when a file cannot take it)."""
    from miniclaw.entries.writing import daily_entry, long_term_item
    from miniclaw.store.forget import entries_of, note_shifted

    store.require_workspace()
    if len(cluster.entries) < 2:
        raise UsageError("a cluster to merge needs two entries or more")
    long_term = store._relative(store.long_term_path)
    by_path: dict[str, list[Entry]] = defaultdict(list)
    for entry in cluster.entries:
        by_path[entry.path].append(entry)
    shifted: list[Entry] = []

    def plan(now: Cluster):
        """(the file receiving the merged entry, its lines, its fields, the keeper) for
        the cluster as the files hold it now (an earlier merge may have moved it)."""
        keeper = keeper_of(now, long_term)
        earliest = min(now.entries, key=when)
        text, category, tags = merged_fields(now, keeper)
        stamp = _stamp(store, earliest)
        if keeper.path == long_term:
            lines = long_term_item(text, stamp, category, tags)
        else:
            lines = daily_entry(text, stamp, category, tags)[2:]  # the heading stays
        return keeper, lines, (text, category, tags), stamp

    def new_bytes(path: str, raw: bytes, here: list[Entry], keeper: Entry, lines: list[str],
                  stamp: datetime) -> bytes:
        from miniclaw.store.forget import without

        if path != keeper.path:
            return without(store, path, raw, here, shifted)
        if path == long_term:
            return _into_long_term(store, path, raw, here, lines, stamp.date(), shifted)
        kept = next(e for e in here if _key(e) == _key(keeper))
        return _in_place(store, path, raw, here, kept, lines, shifted)

    def write() -> Entry:
        with files.locked(store.memory_dir):
            read, found = {}, []
            for path in by_path:  # every file checked before any is written
                raw = files.read_bytes(store.workspace / path, store.workspace, path) or b""
                here = _located(store, path, raw, by_path[path])
                _refuse_private(raw, path, here)
                read[path] = (raw, here)
                found += here
            keeper, lines, fields, stamp = plan(Cluster(tuple(sorted(found, key=when)),
                                                        cluster.score))
            order = [keeper.path] + sorted(p for p in by_path if p != keeper.path)
            planned = {path: new_bytes(path, *read[path], keeper, lines, stamp) for path in order}
            made = [e for e in entries_of(store, keeper.path, planned[keeper.path])
                    if (e.text, e.category, e.tags) == fields]
            if len(made) != 1 or made[0].date != stamp.date():
                raise MemoryFileError(f"{keeper.path} would not read the merged entry back "
                                      "as written; nothing was merged")
            shifted.clear()
            for path in order:  # the file receiving the merged entry first
                raw, here = read[path]

                def make(current: bytes, path=path, raw=raw, here=here) -> bytes:
                    if current != raw:
                        raise UsageError(f"{path} changed while merging: run memory tidy "
                                         "again; nothing more was merged")
                    return new_bytes(path, current, here, keeper, lines, stamp)

                files.rewrite_bytes(store.workspace / path, store.workspace, path, make)
        note_shifted(store, shifted)
        return made[0]

    return await asyncio.to_thread(write)


class Outcome(NamedTuple):
    """What `--apply` did with one cluster: merged (the new entry), declined, or refused
    (why: the files changed since the report, or a file cannot take the change)."""

    cluster: Cluster
    merged: Entry | None = None
    refused: str | None = None

    def to_dict(self) -> dict:
        return {"entries": [e.ref for e in self.cluster.entries],
                "merged": self.merged.to_dict() if self.merged else None,
                **({"refused": self.refused} if self.refused else {})}


async def apply(store, clusters: Sequence[Cluster],
                ask: Callable[[Cluster], str] | None = None) -> list[Outcome]:
    """Merge the clusters one by one, each after `ask(cluster)` says "y" ("n" skips it, "q"
    stops; no `ask`: all). A cluster that cannot be merged is refused and the next one
    tried: each merge stands alone."""
    from miniclaw.errors import MiniclawError

    done = []
    for cluster in clusters:
        answer = ask(cluster) if ask else "y"
        if answer == "q":
            break
        if answer != "y":
            done.append(Outcome(cluster))
            continue
        try:
            done.append(Outcome(cluster, await merge(store, cluster)))
        except MiniclawError as exc:
            done.append(Outcome(cluster, refused=str(exc)))
    return done
