"""What a search returns: ranked memories and the search's own account of itself.

`RankedMemory` is one result (the entry's text and place, its score, the excerpt that
matched); `SearchResults` is the whole answer, with how many entries matched, the spelling
corrections made, hints for a better search and warnings about files (data: hints.py).
Their `to_dict` is the JSON contract of docs/ARCHITECTURE.md, which scripts rely on: fields
are only ever added. Records that grow are dataclasses (frozen, slots), built by keyword.
"""

from __future__ import annotations

from datetime import date as Date
from collections.abc import Mapping
from dataclasses import dataclass

from miniclaw.entries.entry import NO_META, citation, ref
from miniclaw.search.hints import Hint, SearchWarning, describe, older


def describe_corrections(corrections: tuple[tuple[str, str], ...]) -> str:
    """`bugdet → budget, atlsa → atlas`: how every output (CLI, chat, context) says which
    words were searched instead of the ones typed."""
    return ", ".join(f"{typed} → {used}" for typed, used in corrections)


@dataclass(frozen=True, slots=True, kw_only=True)
class RankedMemory:
    """One search result: the entry, its score and the excerpt that matched."""

    content: str
    excerpt: str
    score: float
    source: str
    date: Date | None
    path: str
    line_start: int
    line_end: int
    category: str | None
    tags: tuple[str, ...]
    time: str | None = None
    highlights: tuple[tuple[int, int], ...] = ()  # spans of matched words in `excerpt`
    # Always true since issue 13 (a result holds a query word; neighbours only lift scores);
    # kept in the JSON, whose fields are only ever added.
    matched: bool = True
    explanation: tuple[tuple[str, float], ...] = ()  # (term or "neighbours", part of score)
    meta: Mapping[str, object] = NO_META  # the source's own metadata (Entry.meta)

    @property
    def citation(self) -> str:
        return citation(self.path, self.line_start, self.line_end)

    @property
    def ref(self) -> str:
        """The citation with a short hash of the text: what to quote to forget or edit it."""
        return ref(self.path, self.line_start, self.line_end, self.content)

    def to_dict(self, rank: int) -> dict:
        """The JSON object of docs/ARCHITECTURE.md (plus `citation`, `matched`, and `explain`
        when asked for)."""
        out = {
            "rank": rank, "score": round(self.score, 4), "source": self.source,
            "path": self.path, "line_start": self.line_start, "line_end": self.line_end,
            "citation": self.citation, "ref": self.ref,
            "date": self.date.isoformat() if self.date else None,
            "category": self.category, "tags": list(self.tags),
            "content": self.content, "excerpt": self.excerpt, "matched": self.matched,
        }
        if self.meta:
            out["meta"] = dict(self.meta)
        if self.explanation:
            out["explain"] = {part: round(value, 4) for part, value in self.explanation}
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchResults:
    """What a search found: the top results, how many matched in all, and how."""

    query: str
    mode: str
    total: int
    results: list[RankedMemory]
    corrections: tuple[tuple[str, str], ...] = ()  # (word as typed, word searched instead)
    hints: tuple[Hint, ...] = ()  # what to try when results are few (hints.py)
    warnings: tuple[SearchWarning, ...] = ()  # files the search could not use as it should
    degraded: SearchWarning | None = None  # the mode asked for could not run (hints.py)
    auto: bool = False  # `mode` was chosen as the best available (mode `auto`)
    # Entries of notes older than the `days` window that would be among the results without
    # it: said, never hidden without a word (0 and None when the window hid none).
    older: int = 0
    days: int | None = None

    def older_line(self, wording: Mapping[str, str] | None = None) -> str | None:
        """"3 older matches beyond 30 days: ..." in the caller's `wording` (hints.py), when
        the window hid some; else None."""
        if not self.older:
            return None
        return describe(older(self.older, self.days), wording)

    @property
    def suggestions(self) -> tuple[str, ...]:
        """The hints in plain words (no CLI flags), for people."""
        return tuple(describe(hint) for hint in self.hints)

    def to_dict(self, wording: Mapping[str, str] | None = None) -> dict:
        """The JSON object of docs/ARCHITECTURE.md: `suggestions` are the hints in words
        (the caller's `wording` for their kinds, see hints.py), `hints` and `warnings` the
        same as data."""
        out = {
            "query": self.query, "mode": self.mode, "total": self.total,
            "corrections": [{"from": typed, "to": used} for typed, used in self.corrections],
            "suggestions": [describe(hint, wording) for hint in self.hints],
            "hints": [hint.to_dict() for hint in self.hints],
            "warnings": [warning.to_dict() for warning in self.warnings],
            "results": [hit.to_dict(rank) for rank, hit in enumerate(self.results, 1)],
        }
        if self.degraded is not None:  # only then: the mode asked for could not run
            out["degraded"] = self.degraded.to_dict()
        if self.auto:  # only then: `mode` is what `auto` chose here
            out["auto"] = True
        if self.older:  # only then: matches the window hid (`older` of them, before `days`)
            out["older"] = {"count": self.older, "days": self.days}
        return out
