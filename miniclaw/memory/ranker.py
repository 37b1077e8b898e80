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
from miniclaw.memory.date_cue import DateSpan, named_dates
from miniclaw.memory.entry import Entry
from miniclaw.memory.excerpt import make_excerpt
from miniclaw.memory.index import Filters, SearchIndex
from miniclaw.memory.neighbours import add_neighbour_scores
from miniclaw.memory.options import (DEFAULT_DAYS, DEFAULT_LIMIT, MAX_DAYS,  # noqa: F401
                                     MAX_LIMIT, SearchOptions, check_days, check_limit)
from miniclaw.memory.results import RankedMemory, SearchResults
from miniclaw.memory.hints import SearchWarning, search_hints
from miniclaw.memory.query import Query, parse_query, phrase_matches
from miniclaw.memory.spelling import may_be_typo, suggest
from miniclaw.memory.tokenizer import is_stop_word, token_spans, tokenize
from miniclaw.memory.scoring import CorpusStats, Scorer, get_scorer

log = logging.getLogger("miniclaw")

_CANDIDATES = 50  # entries per source considered before neighbours are added
PHRASE_CANDIDATES = 500  # entries per source checked for a phrase


class _Found(NamedTuple):
    """What one source's search found."""

    scores: dict[int, float]
    entries: dict[int, Entry]
    total: int  # entries that matched


class _Plan(NamedTuple):
    """The query as it will run: terms after prefix expansion and spelling corrections."""

    terms: list[str]
    stats: CorpusStats
    replaced: dict[str, str]  # term that matched nothing -> the indexed term used instead
    missing: list[str]  # terms that matched nothing and had no close spelling
    warnings: tuple[SearchWarning, ...] = ()  # files indexed with a problem


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
        query = parse_query(text, require=options.require, exclude=options.exclude)
        scorer = get_scorer(options.mode)
        filters = self.filters(options)

        plan = await asyncio.to_thread(self._prepare, query, scorer, options.correct)
        weights = scorer.weights(plan.terms, plan.stats)
        fix = lambda terms: tuple(plan.replaced.get(t, t) for t in terms)  # noqa: E731
        filters = filters._replace(required=fix(query.required), excluded=query.excluded)
        phrases = tuple(fix(phrase) for phrase in query.phrases)
        spans = named_dates(query.text, self.today()) if scorer.date_weight else []
        wide = scorer.neighbor_weights or spans
        k = max(options.limit, _CANDIDATES) if wide else options.limit
        selected = [s for s in self.index.sources if s.name in filters.sources]
        found = await asyncio.gather(*(
            asyncio.to_thread(self._search_source, source, filters, weights, scorer,
                              plan.stats.avg_length, k, phrases)
            for source in selected))
        own = {i: score for part in found for i, score in part.scores.items()}
        entries = {i: entry for part in found for i, entry in part.entries.items()}
        total = sum(part.total for part in found)
        dated = _date_bonus(own, entries, spans, scorer.date_weight)
        own = {i: score + dated.get(i, 0.0) for i, score in own.items()}
        # The sources were read in separate snapshots: keep only entries that have a score.
        ranked = sorted((i for i in entries if i in own),
                        key=lambda i: _order_key(own[i], entries[i]))[: options.limit]
        explained = {}
        if options.explain:
            explained = await asyncio.to_thread(self.index.contributions, ranked, weights,
                                                scorer.term_score_sql, plan.stats.avg_length)
        shown = frozenset(plan.terms) if options.excerpts else frozenset()
        results = [self._result(entries[i], own[i], shown, explained.get(i), dated.get(i, 0.0))
                   for i in ranked]
        corrections = _corrections(query.text, plan.replaced, results)
        hints = search_hints(query, results, options.limit,
                             window=options.days if filters.window_start is not None and any(
                                 s.windowed for s in selected) else None,
                             missing_words=_typed_words(query.text, plan.missing))
        return SearchResults(query=query.text, mode=scorer.name, total=total, results=results,
                             corrections=corrections, hints=hints, warnings=plan.warnings)

    def _prepare(self, query: Query, scorer: Scorer, correct: bool = True) -> _Plan:
        """Refresh the index, note damaged files, expand prefixes, correct spellings, and
        read the corpus statistics (one worker thread)."""
        self.index.refresh()
        with self.index.snapshot():
            return self._plan(query, scorer, correct)

    def _plan(self, query: Query, scorer: Scorer, correct: bool = True) -> _Plan:
        warnings = tuple(SearchWarning("file", path=path, message=message)
                         for path, message in self.index.warnings())
        terms = scorer.scored_terms(list(query.terms))
        expanded = [t for prefix in query.prefixes for t in self.index.terms_starting(prefix)]
        count, avgdl, df = self.index.corpus(terms + expanded)
        prefixed = {t for prefix in query.prefixes for t in tokenize(prefix)}
        replaced, missing = {}, []
        for term in terms:
            if df.get(term) or is_stop_word(term) or term in prefixed:
                continue
            typed = _typed_words(query.text, [term]) or [term]
            candidate = None
            if correct and all(may_be_typo(word) for word in typed):
                candidate = suggest(term, self.index.vocabulary(term[0]))
            if candidate is None:
                missing.append(term)
            else:
                replaced[term] = candidate
        if replaced:
            df.update(self.index.corpus(list(replaced.values()))[2])
        used = list(dict.fromkeys([replaced.get(t, t) for t in terms] + expanded))
        return _Plan(used, CorpusStats(count, avgdl, df), replaced, missing, warnings)

    def _search_source(self, source, filters: Filters, weights: dict[str, float],
                       scorer: Scorer, avgdl: float, k: int,
                       phrases: tuple[tuple[str, ...], ...] = ()) -> _Found:
        """One source's best entries, with neighbour context where the mode has it
        (runs in a worker thread). Phrases are checked here, on the entries' text, among
        up to `PHRASE_CANDIDATES` entries holding all their words: inside the ranking, so
        `-n 5` still gives five results when five match."""
        with self.index.snapshot():
            return self._search_in_snapshot(source, filters, weights, scorer, avgdl, k, phrases)

    def _search_in_snapshot(self, source, filters: Filters, weights: dict[str, float],
                            scorer: Scorer, avgdl: float, k: int,
                            phrases: tuple[tuple[str, ...], ...]) -> _Found:
        fetch = max(k, PHRASE_CANDIDATES) if phrases else k
        rows = self.index.top(source, filters, weights, scorer.term_score_sql, avgdl, fetch)
        entries = self.index.entries([row[0] for row in rows])
        total = rows[0][2] if rows else 0
        if phrases:
            rows = [row for row in rows if self._has_phrases(entries[row[0]], phrases)]
            total = len(rows)
            rows = rows[:k]
            entries = {row[0]: entries[row[0]] for row in rows}
        scores = {entry_id: score for entry_id, score, _ in rows}
        if scorer.neighbor_weights and scores:
            before = set(scores)
            scores, entries = add_neighbour_scores(
                self.index, scores, entries, filters, weights, scorer, avgdl)
            if phrases:  # neighbours that join must hold the phrases too
                scores = {i: score for i, score in scores.items()
                          if i in before or self._has_phrases(entries[i], phrases)}
                entries = {i: entries[i] for i in scores}
        return _Found(scores, entries, total)

    @staticmethod
    def _has_phrases(entry: Entry, phrases: tuple[tuple[str, ...], ...]) -> bool:
        terms = tokenize(entry.text)
        return all(phrase_matches(phrase, terms) for phrase in phrases)

    @staticmethod
    def _result(entry: Entry, score: float, terms: frozenset[str],
                parts: dict[str, float] | None, dated: float = 0.0) -> RankedMemory:
        excerpt, spans = make_excerpt(entry.text, terms)
        explanation: tuple[tuple[str, float], ...] = ()
        if parts is not None:
            rest = score - sum(parts.values()) - dated
            explanation = tuple(sorted(parts.items(), key=lambda kv: -kv[1]))
            if abs(rest) > 1e-9:
                explanation += (("neighbours", rest),)
            if dated:
                explanation += (("date", dated),)
        return RankedMemory(content=entry.text, excerpt=excerpt, score=score,
                            source=entry.source, date=entry.date, path=entry.path,
                            line_start=entry.line_start, line_end=entry.line_end,
                            category=entry.category, tags=entry.tags, time=entry.time,
                            highlights=spans, explanation=explanation)


DATE_SLACK_DAYS = 1  # a note written the day after still tells of the day named


def _date_bonus(scores: dict[int, float], entries: dict[int, Entry], spans: list[DateSpan],
                weight: float) -> dict[int, float]:
    """What each matching entry dated in (or next to) a span the query names gains: a share
    `weight` of its score. Only entries that already match are candidates."""
    if not spans or not weight:
        return {}
    return {i: weight * score for i, score in scores.items()
            if (day := entries[i].date) is not None
            and min(span.distance(day) for span in spans) <= DATE_SLACK_DAYS}


def _typed_words(query_text: str, terms: list[str]) -> list[str]:
    """The words of the query, as typed, that gave these terms."""
    wanted = set(terms)
    return list(dict.fromkeys(query_text[start:end] for start, end, found in token_spans(query_text)
                              if wanted & set(found)))


def _corrections(query_text: str, replaced: dict[str, str],
                 results: list[RankedMemory]) -> tuple[tuple[str, str], ...]:
    """(word as typed, word searched instead): the latter as it is written in a result when
    one holds it (index terms are stems: `bicycl`), else the indexed term."""
    out = []
    for term, used in replaced.items():
        typed = _typed_words(query_text, [term])
        written = next((hit.content[start:end].lower() for hit in results
                        for start, end, found in token_spans(hit.content) if used in found), used)
        out.append((typed[0] if typed else term, written))
    return tuple(out)
