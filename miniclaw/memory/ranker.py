"""MemoryRanker: find the entries that best match a query, across every memory source.

The design card's shape: tokenize the query, bring the index up to date, then search each
source (MEMORY.md and the daily notes in the window) concurrently with `asyncio.gather`,
each in a worker thread since SQLite blocks, and merge by score, then date (newest first).
Scores come from the chosen scoring mode and use corpus statistics shared by all sources,
so a MEMORY.md bullet and a note compare fairly. Ties beyond the date are broken by path
and line, so the same files and query always give the same order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import date as Date
from datetime import timedelta
from typing import NamedTuple

from miniclaw.errors import UsageError
from miniclaw.memory.entry import Entry, citation
from miniclaw.memory.excerpt import make_excerpt
from miniclaw.memory.index import Filters, SearchIndex
from miniclaw.memory.neighbours import add_neighbour_scores
from miniclaw.memory.query import parse_query
from miniclaw.memory.scoring import CorpusStats, Scorer, get_scorer

log = logging.getLogger("miniclaw")

DEFAULT_LIMIT = 5
MAX_LIMIT = 20
DEFAULT_DAYS = 30
_CANDIDATES = 50  # entries per source considered before neighbours are added


class RankedMemory(NamedTuple):
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
    matched: bool = True  # False: holds no query word, found as context of a neighbour

    @property
    def citation(self) -> str:
        return citation(self.path, self.line_start, self.line_end)

    def to_dict(self, rank: int) -> dict:
        """The JSON object of DESIGN.md."""
        return {
            "rank": rank, "score": round(self.score, 4), "source": self.source,
            "path": self.path, "line_start": self.line_start, "line_end": self.line_end,
            "date": self.date.isoformat() if self.date else None,
            "category": self.category, "tags": list(self.tags),
            "content": self.content, "excerpt": self.excerpt, "matched": self.matched,
        }


class SearchResults(NamedTuple):
    """What a search found: the top results, how many matched in all, and how."""

    query: str
    mode: str
    total: int
    results: list[RankedMemory]


class _Found(NamedTuple):
    """What one source's search found."""

    scores: dict[int, float]
    entries: dict[int, Entry]
    total: int  # entries that matched, or joined as context
    context: set[int]  # entries found only through their neighbours


class SearchOptions(NamedTuple):
    limit: int = DEFAULT_LIMIT
    days: int | None = DEFAULT_DAYS
    since: Date | None = None
    until: Date | None = None
    category: str | None = None
    tags: tuple[str, ...] = ()
    sources: tuple[str, ...] | None = None
    mode: str | None = None


def check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"the result limit must be between 1 and {MAX_LIMIT}, not {limit!r}")
    return limit


MAX_DAYS = 36_500  # a century: further back is "all history"


def check_days(days: int | None) -> int | None:
    if days is not None and (isinstance(days, bool) or not isinstance(days, int)
                             or not 1 <= days <= MAX_DAYS):
        raise UsageError(f"--days must be between 1 and {MAX_DAYS}, not {days!r} "
                         "(use --all for all history)")
    return days


def _order_key(score: float, entry: Entry) -> tuple:
    day = entry.date.toordinal() if entry.date else 0
    return (-round(score, 9), -day, _negated(entry.time or ""), entry.path, entry.line_start)


def _negated(text: str) -> tuple[int, ...]:
    return tuple(-ord(ch) for ch in text)


class MemoryRanker:
    """Ranks the entries of one workspace's index for a query."""

    def __init__(self, index: SearchIndex, today: Callable[[], Date]) -> None:
        self.index = index
        self.today = today

    def filters(self, options: SearchOptions) -> Filters:
        names = tuple(source.name for source in self.index.sources)
        if options.sources is not None:
            unknown = [s for s in options.sources if s not in names]
            if unknown:
                raise UsageError(f"unknown source {unknown[0]!r}; choose from: {', '.join(names)}")
            names = tuple(s for s in names if s in options.sources)
        if options.since and options.until and options.since > options.until:
            raise UsageError(f"--since {options.since} is after --until {options.until}")
        window = None
        days = check_days(options.days)
        if days is not None and options.since is None and options.until is None:
            window = self.today() - timedelta(days=days - 1)
        return Filters(names, window, options.since, options.until, options.category,
                       tuple(options.tags))

    async def search(self, text: str, options: SearchOptions = SearchOptions()) -> SearchResults:
        query = parse_query(text)
        check_limit(options.limit)
        scorer = get_scorer(options.mode)
        filters = self.filters(options)

        terms = scorer.scored_terms(list(query.terms))
        stats = await asyncio.to_thread(self._prepare, terms)
        weights = scorer.weights(terms, stats)
        k = max(options.limit, _CANDIDATES) if scorer.neighbor_weights else options.limit
        selected = [s for s in self.index.sources if s.name in filters.sources]
        found = await asyncio.gather(*(
            asyncio.to_thread(self._search_source, source, filters, weights, scorer,
                              stats.avg_length, k)
            for source in selected))
        own = {i: score for part in found for i, score in part.scores.items()}
        entries = {i: entry for part in found for i, entry in part.entries.items()}
        context = {i for part in found for i in part.context}
        total = sum(part.total for part in found)
        ranked = sorted(entries, key=lambda i: _order_key(own[i], entries[i]))
        terms = frozenset(query.terms)
        results = [self._result(entries[i], own[i], terms, i not in context)
                   for i in ranked[: options.limit]]
        return SearchResults(query.text, scorer.name, total, results)

    def _prepare(self, terms: list[str]) -> CorpusStats:
        """Refresh the index, report damaged files, and read the corpus statistics."""
        self.index.refresh()
        for warning in self.index.warnings():
            log.warning("%s", warning)
        count, avgdl, df = self.index.corpus(terms)
        return CorpusStats(count, avgdl, df)

    def _search_source(self, source, filters: Filters, weights: dict[str, float],
                       scorer: Scorer, avgdl: float, k: int) -> _Found:
        """One source's best entries, with neighbour context where the mode has it
        (runs in a worker thread)."""
        rows = self.index.top(source, filters, weights, scorer.term_score_sql, avgdl, k)
        scores = {entry_id: score for entry_id, score, _ in rows}
        entries = self.index.entries(list(scores))
        total = rows[0][2] if rows else 0
        context: set[int] = set()
        if scorer.neighbor_weights and scores:
            scores, entries, context = add_neighbour_scores(
                self.index, scores, entries, filters, weights, scorer, avgdl)
            total += len(context)  # entries that only their neighbours brought in
        return _Found(scores, entries, total, context)

    @staticmethod
    def _result(entry: Entry, score: float, terms: frozenset[str], matched: bool) -> RankedMemory:
        excerpt, spans = make_excerpt(entry.text, terms)
        return RankedMemory(entry.text, excerpt, score, entry.source, entry.date, entry.path,
                            entry.line_start, entry.line_end, entry.category, entry.tags,
                            entry.time, spans, matched)
