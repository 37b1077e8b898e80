"""MemoryRanker: find the entries that best match a query, across every memory source.

The design card's shape: parse the query, bring the index up to date and plan the terms
(prefixes, spelling, corpus statistics), then search each source (MEMORY.md and the daily
notes in the window) concurrently with `asyncio.gather`, each in a worker thread since
SQLite blocks. In a source, each retriever of the mode (`scoring/`) returns its candidates,
and in a sequence source the neighbour stage adds context; the sources' candidates merge,
several retrievers' scores are fused (`scoring/fusion.py`), the date-cue stage lifts entries
dated when the query says, and the order is score, then date (newest first). Scores use
corpus statistics shared by all sources, so a MEMORY.md bullet and a note compare fairly.
Ties beyond the date are broken by path and line, so the same files and query always give
the same order (docs/ARCHITECTURE.md, "Searching").
"""

from __future__ import annotations

import asyncio
import heapq
import re
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import date as Date
from datetime import timedelta
from typing import NamedTuple

from miniclaw.errors import ModelUnavailable, UsageError
from miniclaw.date_cue import DateSpan, date_phrases
from miniclaw.entries.entry import Entry
from miniclaw.search.excerpt import make_excerpt
from miniclaw.index.database import IndexReplaced
from miniclaw.index.search_index import Filters, Place, SearchIndex
from miniclaw.search.neighbours import Lookups, add_neighbour_scores
from miniclaw.search.options import (DEFAULT_DAYS, DEFAULT_LIMIT, MAX_DAYS,  # noqa: F401
                                     MAX_LIMIT, SearchOptions, check_days, check_limit)
from miniclaw.search.results import RankedMemory, SearchResults
from miniclaw.search.hints import Hint, SearchWarning
from miniclaw.search.query import Query, parse_query, phrase_matches
from miniclaw.search.spelling import may_be_typo, suggest
from miniclaw.entries.tokenizer import is_stop_word, token_spans, tokenize
from miniclaw.text import asks_only
from miniclaw.search.scoring import (AUTO_MODE, CorpusStats, Request, Retriever, SearchMode,
                                     check_mode, get_mode)
from miniclaw.search import scoring
from miniclaw.search.scoring.fusion import score_fusion


# entries per source a retriever brings when more than the results are ranked (neighbour
# context, dates, fusion), unless it says otherwise (`candidates`, scoring/base.py)
_CANDIDATES = 50
PHRASE_CANDIDATES = 500  # entries per source checked for a phrase


class _Found(NamedTuple):
    """What one source's search found, by each retriever of the mode (in its order)."""

    scores: tuple[dict[int, float], ...]
    totals: tuple[int, ...]  # entries that matched
    places: dict[int, Place]


class _Plan(NamedTuple):
    """The query as it will run: terms after prefix expansion and spelling corrections."""

    terms: list[str]
    stats: CorpusStats
    replaced: dict[str, str]  # term that matched nothing -> the indexed term used instead
    missing: list[str]  # terms that matched nothing and had no close spelling
    warnings: tuple[SearchWarning, ...] = ()  # files indexed with a problem
    empty: frozenset[str] = frozenset()  # sources with no entries: nothing to search there


# A stored time is `HH:MM:SS`: with its digits mapped 0->9, 1->8, ..., ascending order of the
# mapped text is descending order of the time (and no time, "", comes first), in C.
_LATER_FIRST = str.maketrans("0123456789", "9876543210")


def _order_key(score: float, place: Place) -> tuple:
    day = place.date.toordinal() if place.date else 0
    return (-round(score, 9), -day, (place.time or "").translate(_LATER_FIRST), place.path,
            place.line_start)


def _first(ids: list[int], scores: dict[int, float], places: dict[int, Place],
           n: int) -> list[int]:
    """The first `n` of `ids` by `_order_key` (or more): only entries scored within 1e-9 of
    the n-th best can be among them, so only those are sorted. A hybrid search on L has
    ~800 candidates and shows 5: sorting them all was a millisecond of every search."""
    if len(ids) > n:
        floor = heapq.nlargest(n, [scores[i] for i in ids])[-1] - 1e-9
        ids = [i for i in ids if scores[i] >= floor]
    return sorted(ids, key=lambda i: _order_key(scores[i], places[i]))


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
                       tuple(options.tags), meta=options.meta, current=not options.all_versions)

    async def search(self, text: str, options: SearchOptions = SearchOptions()) -> SearchResults:
        """One operation: a sync, then reads; again from the sync if the index file was
        replaced meanwhile (`SearchIndex.retrying`, here for a coroutine)."""
        try:
            try:
                return await self._search(text, options)
            except IndexReplaced:
                return await self._search(text, options)
        except ModelUnavailable as exc:  # installed, but it failed to load or run (memory):
            without_model = scoring.plugin("retriever").without_model  # BM25, said so
            requested = check_mode(options.mode).replace(AUTO_MODE, "hybrid")
            return await self._search(text, options, without_model(requested, str(exc),
                                                                    installed=True))

    async def _search(self, text: str, options: SearchOptions,
                      mode: SearchMode | None = None) -> SearchResults:
        query = parse_query(text, require=options.require, exclude=options.exclude,
                            phrase=options.phrase)
        mode = mode or get_mode(options.mode)
        filters = self.filters(options)
        said = date_phrases(query.text, self.today())
        if said and filters.window_start:  # a date the query names is searched, window or not
            named = min(span.first for _, _, span in said) - timedelta(days=DATE_SLACK_DAYS)
            filters = filters._replace(window_start=min(filters.window_start, named))

        selected = [s for s in self.index.sources if s.name in filters.sources]
        plan = await asyncio.to_thread(self._prepare, query, mode, options.correct, selected)
        if said and _only_dates(query, said):
            return await self._by_dates(query, mode, options, filters, selected, plan,
                                        [span for _, _, span in said])
        fix = lambda terms: tuple(plan.replaced.get(t, t) for t in terms)  # noqa: E731
        filters = filters._replace(required=fix(query.required), excluded=query.excluded)
        request = Request(query, tuple(plan.terms), plan.stats, filters)
        phrases = tuple(fix(phrase) for phrase in query.phrases)
        spans = [span for _, _, span in said] if mode.date_weight else []
        wide = mode.neighbor_weights or spans or len(mode.retrievers) > 1
        ks = tuple(max(options.limit, getattr(r, "candidates", _CANDIDATES)) if wide
                   else options.limit for r in mode.retrievers)
        found = await asyncio.gather(*(
            asyncio.to_thread(self._search_source, source, mode, request, ks, phrases)
            for source in selected if source.name not in plan.empty))
        places = {i: place for part in found for i, place in part.places.items()}
        own, shares = _fuse(mode, found)
        asked = [part for source, part in zip(
            [s for s in selected if s.name not in plan.empty], found)
            if _is_chat(source)] if options.asked_below else []  # chats: asked < said
        weighed = await asyncio.to_thread(self._weigh_chat, asked, own, shares,
                                          _about_user(query.text)) if asked else {}
        total = max(sum(part.totals[n] for part in found) for n in range(len(mode.retrievers)))
        dated = _date_bonus(own, places, spans, mode.date_weight)
        own = {i: score + dated.get(i, 0.0) for i, score in own.items()}
        ties = any(_has_priority(s) for s in selected)
        wanted = options.limit + _MAX_TIES if ties else options.limit
        # The sources were read in separate snapshots: keep only entries that have a score.
        candidates = [i for i in places if i in own]
        judged = [n for n, r in enumerate(mode.retrievers) if hasattr(r, "counts")] \
            if shares is not None else []

        def first() -> tuple[list[int], dict[int, Entry], dict[int, dict[str, float]]]:
            read: dict[int, Entry | None] = {}
            if judged:  # reads the entries it ranks: one worker thread for both
                ranked, read = self._counted_first(mode, judged, candidates, own, shares,
                                                   dated, places, wanted)
            else:
                ranked = _first(candidates, own, places, wanted)
            ranked = ranked[: _with_ties(ranked, own, options.limit) if ties else options.limit]
            return ranked, *self._finish(ranked, options.explain, mode, request, shares, read)

        ranked, entries, explained = await asyncio.to_thread(first)
        # Read in another snapshot: an entry changed or gone since is left out.
        ranked = [i for i in ranked if i in entries and _place(entries[i]) == places[i]]
        ranked = _by_priority(ranked, own, entries, selected)[: options.limit]
        shown = frozenset(plan.terms) if options.excerpts else frozenset()
        results = [self._result(entries[i], own[i], shown, explained.get(i), dated.get(i, 0.0))
                   for i in ranked]
        if len(results) < options.limit:  # all there were: candidates the ranking left out
            total = len(results)  # (texts that only ask, by meaning) were counted, not shown
        corrections = _corrections(query.text, plan.replaced, results)
        windowed = [s for s in selected if s.windowed and s.name not in plan.empty] \
            if filters.window_start else []
        if windowed:  # only where older notes exist
            windowed = await asyncio.to_thread(lambda: [s for s in windowed if self.index.has_older(
                s, filters.window_start)])
        older = await self._older(mode, request, ks, phrases, windowed, found, places, results,
                                  options.limit, weighed) if windowed else 0
        unheld = await asyncio.to_thread(self.index.unheld, filters) \
            if not results and (filters.category is not None or filters.tags) else []
        hints = search_hints(query, results, options.limit,
                             window=options.days if windowed and len(results) < options.limit
                             else None,
                             missing_words=_typed_words(query.text, plan.missing)
                             if _by_words(mode) else (), unheld=unheld,
                             meaning=not results and not unheld and _by_words(mode)
                             and _meaning_runs())
        return SearchResults(query=query.text, mode=mode.name, total=total, results=results,
                             corrections=corrections, hints=hints, warnings=plan.warnings,
                             degraded=mode.degraded, auto=mode.auto, older=older,
                             days=options.days if older else None)

    def _weigh_chat(self, asked: list[_Found], own: dict[int, float],
                    shares: dict[int, tuple[float, ...]] | None,
                    about_user: bool = False) -> dict[int, float]:
        """A question the user asked in a chat ("what is my job?") is not a memory: its
        score (and shares) scaled by `ASKED_WEIGHT`, so what was stated ranks above it. When
        the query is about the user (`about_user`), what the user said gains `OWN_WEIGHT`.
        Only the candidates of chat transcripts (`asked`) are read. Returns the factor of
        each entry scaled."""
        ids = [i for part in asked for i in part.places if i in own]
        weighed = {}
        for i, entry in self.index.entries(ids).items() if ids else ():
            if entry.meta.get("role") != "user":
                continue
            factor = ASKED_WEIGHT if asks_only(entry.text) else \
                1.0 + OWN_WEIGHT if about_user else 1.0
            if factor != 1.0:
                weighed[i] = factor
                own[i] *= factor
                if shares is not None:
                    shares[i] = tuple(v * factor for v in shares[i])
        return weighed

    async def _older(self, mode: SearchMode, request: Request, ks: tuple[int, ...],
                     phrases: tuple[tuple[str, ...], ...], windowed: list, found: list[_Found],
                     places: dict[int, Place], results: list[RankedMemory], limit: int,
                     weighed: dict[int, float] | None = None) -> int:
        """How many entries of the notes before the window would be among the `limit` best
        without it: the window hid them, and the output says so (issue 39: older notes were
        hidden without a word). Their candidates are ranked with the window's (one fusion
        of both, so scores compare); the results shown are not changed."""
        start = request.filters.window_start
        before = request._replace(filters=request.filters._replace(
            window_start=None, until=start - timedelta(days=1)))
        old = await asyncio.gather(*(
            asyncio.to_thread(self._search_source, source, mode, before, ks, phrases)
            for source in windowed))
        old_places = {i: place for part in old for i, place in part.places.items()}
        if not old_places:
            return 0
        scores, _ = _fuse(mode, [*found, *old])
        scores.update((i, scores[i] * f) for i, f in (weighed or {}).items() if i in scores)
        both = {**places, **old_places}
        # the weakest result shown is the bar (entries since read out are not counted)
        shown = {(r.path, r.line_start) for r in results}
        ids = [i for i in scores if i in old_places or (both[i].path, both[i].line_start) in shown]
        best = _first(ids, scores, both, limit)[:limit]
        return sum(1 for i in best if i in old_places)

    async def _by_dates(self, query: Query, mode: SearchMode, options: SearchOptions,
                        filters: Filters, selected: list, plan: _Plan,
                        spans: list[DateSpan]) -> SearchResults:
        """A question that names only dates ("what did I do yesterday?", "last week"): the
        entries dated then, newest first, all of equal score (1). Ranking them by the date
        words would find "coffee next week" for "last week", and nothing for "yesterday"."""
        first, last = min(s.first for s in spans), max(s.last for s in spans)
        filters = filters._replace(
            window_start=None, excluded=query.excluded,
            since=max(filters.since or first, first), until=min(filters.until or last, last))

        def read() -> tuple[list[int], int, dict[int, Entry]]:
            with self.index.snapshot():
                places = self.index.dated(filters)
                ids = [i for i, place in places.items() if place.date is not None
                       and any(span.distance(place.date) == 0 for span in spans)]
                ranked = _first(ids, dict.fromkeys(ids, 1.0), places, options.limit)
                ranked = ranked[: options.limit]
                return ranked, len(ids), self.index.entries(ranked)

        ranked, total, entries = await asyncio.to_thread(read)
        results = [self._result(entries[i], 1.0, frozenset(), {} if options.explain else None,
                                0.0) for i in ranked if i in entries]
        hints = () if results else (Hint("other_dates", first=first.isoformat(),
                                         last=last.isoformat()),)
        return SearchResults(query=query.text, mode=mode.name, total=total, results=results,
                             hints=hints, warnings=plan.warnings, degraded=mode.degraded,
                             auto=mode.auto)

    def _prepare(self, query: Query, mode: SearchMode, correct: bool = True,
                 selected: list | tuple = ()) -> _Plan:
        """Refresh the index, let retrievers that compute (embed) do it outside any
        transaction (`prepare`, e.g. scoring/semantic.py), note damaged files, expand
        prefixes, correct spellings, read the corpus statistics, and which `selected`
        sources hold no entries (one worker thread)."""
        self.index.refresh()
        said = tuple(warning for retriever in mode.retrievers if hasattr(retriever, "prepare")
                     for warning in retriever.prepare(self.index, query))
        with self.index.snapshot():
            plan = self._plan(query, mode.retrievers[0], correct)
            empty = frozenset(s.name for s in selected if not self.index.has_entries(s))
        plan = plan._replace(empty=empty)
        return plan._replace(warnings=plan.warnings + said) if said else plan

    def _plan(self, query: Query, planner: Retriever, correct: bool = True) -> _Plan:
        warnings = tuple(SearchWarning("file", path=path, message=message)
                         for path, message in self.index.warnings())
        terms = planner.scored_terms(list(query.terms))
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
                candidate = suggest(term, self.index.vocabulary(term[0]),
                                    typed=typed[0].casefold())
            if candidate is None:
                missing.append(term)
            else:
                replaced[term] = candidate
        if replaced:
            df.update(self.index.corpus(list(replaced.values()))[2])
        used = list(dict.fromkeys([replaced.get(t, t) for t in terms] + expanded))
        return _Plan(used, CorpusStats(count, avgdl, df), replaced, missing, warnings)

    def _search_source(self, source, mode: SearchMode, request: Request, ks: tuple[int, ...],
                       phrases: tuple[tuple[str, ...], ...] = ()) -> _Found:
        """One source's best entries by each retriever of the mode, with neighbour context
        in a sequence source (runs in a worker thread). Phrases are checked here, on the
        entries' text, among up to `PHRASE_CANDIDATES` entries holding all their words:
        inside the ranking, so `-n 5` still gives five results when five match."""
        lookups = Lookups(self.index, request, source, mode.neighbor_weights)
        with self.index.snapshot():
            found = [self._retrieve(source, mode, retriever, request, k, phrases, lookups)
                     for retriever, k in zip(mode.retrievers, ks)]
            if len(found) > 1:
                found = self._score_all(mode, found, lookups)
            # one read for every retriever's candidates (they share most of them)
            places = self.index.places(sorted({i for scores, _ in found for i in scores}))
        return _Found(tuple(scores for scores, _ in found),
                      tuple(total for _, total in found), places)

    def _retrieve(self, source, mode: SearchMode, retriever: Retriever, request: Request, k: int,
                  phrases: tuple[tuple[str, ...], ...], lookups: Lookups
                  ) -> tuple[dict[int, float], int]:
        """(scores, entries matched) of one retriever in one source, with neighbour context
        where it applies (`lookups.context`: a sequence source). Texts are read only to
        check phrases; results read theirs at the end."""
        fetch = max(k, PHRASE_CANDIDATES) if phrases else k
        found = retriever.retrieve(self.index, source, request, fetch)
        scores, total = found.scores, found.total
        if phrases:
            entries = self.index.entries(list(scores))
            kept = [i for i in scores if self._has_phrases(entries[i], phrases)]
            total = len(kept)
            scores = {i: scores[i] for i in kept[:k]}
        if lookups.context and scores and getattr(retriever, "neighbours", True):
            before = scores
            scores = add_neighbour_scores(
                lookups, scores, retriever,
                bounded=getattr(retriever, "bounded", False),
                floor=getattr(retriever, "min_similarity", 0.0))
            if phrases:  # neighbours that join must hold the phrases too
                joined = self.index.entries([i for i in scores if i not in before])
                scores = {i: score for i, score in scores.items()
                          if i in before or self._has_phrases(joined[i], phrases)}
        return scores, total

    def _score_all(self, mode: SearchMode, found: list, lookups: Lookups) -> list:
        """Each retriever's scores completed with the candidates only the others found, by
        its `parts()`: fusion compares an entry's scores, and being left out of a list cut
        at its best `k` is not a score of 0 (`scoring/fusion.py`). In a sequence source, an
        unbounded (BM25) score gets its neighbour context as the retriever's own candidates
        did: a score must not depend on which list found the entry (LongMemEval turn R@5
        0.799 -> 0.806, LoCoMo unchanged: benchmarks/hybrid_variants.py, bmctx)."""
        everyone = set().union(*(scores for scores, _ in found))
        out = []
        for retriever, (scores, total) in zip(mode.retrievers, found):
            missing = sorted(everyone - scores.keys())
            if missing:
                parts = lookups.parts(retriever, missing)
                added = {i: sum(parts[i].values()) for i in missing}
                matched = {i: score for i, score in added.items() if score > 0}
                if matched and lookups.context and not getattr(retriever, "bounded", False):
                    lifted = add_neighbour_scores(lookups, matched, retriever)
                    added.update((i, lifted[i]) for i in matched if i in lifted)
                scores = {**scores, **added}
            out.append((scores, total))
        return out

    def _counted_first(self, mode: SearchMode, judged: list[int], candidates: list[int],
                       own: dict[int, float], shares: dict[int, tuple[float, ...]],
                       dated: dict[int, float], places: dict[int, Place], n: int
                       ) -> tuple[list[int], dict[int, Entry | None]]:
        """The first `n` candidates (`_first`) once the retrievers at positions `judged`
        (those with a `counts(text)` method: the vector's) have had their share taken out
        of the entries whose text they do not count, and the entries read to know (None:
        changed or gone since, left out by `_finish`). Only the entries about to be shown
        are read, again until the first `n` are all known: taking a share out only lowers
        a score, so an entry below them cannot rise above them. `own`, `shares` and `dated`
        are updated in place (the date cue is a share of the fused score); an entry left
        with no share is no longer a candidate. One worker thread, a few texts read."""
        read: dict[int, Entry | None] = {}
        while True:
            ranked = _first(candidates, own, places, n)
            todo = [i for i in ranked[:n] if i not in read]
            if not todo:
                return ranked, read
            found = self.index.entries(todo)
            emptied = set()
            for i in todo:
                entry = read[i] = found.get(i)
                drop = [p for p in judged if entry is not None and shares[i][p]
                        and not mode.retrievers[p].counts(entry.text)]
                if not drop:
                    continue
                shares[i] = tuple(0.0 if p in drop else v for p, v in enumerate(shares[i]))
                fused = sum(shares[i])
                if fused <= 0:
                    emptied.add(i)
                    del own[i]
                    dated.pop(i, None)
                    continue
                if i in dated:
                    dated[i] = mode.date_weight * fused
                own[i] = fused + dated.get(i, 0.0)
            if emptied:
                candidates = [i for i in candidates if i not in emptied]

    def _finish(self, ranked: list[int], explain: bool, mode: SearchMode, request: Request,
                shares: dict[int, tuple[float, ...]] | None,
                read: dict[int, Entry | None] | None = None
                ) -> tuple[dict[int, Entry], dict[int, dict[str, float]]]:
        """The results' entries (read only now: a long turn's text is large; those `read`
        already are not read again), and with `explain` each one's score by part (one
        worker thread)."""
        read = read or {}
        entries = {i: read[i] for i in ranked if read.get(i) is not None}
        entries.update(self.index.entries([i for i in ranked if i not in read]))
        return entries, self._explain(mode, ranked, request, shares) if explain else {}

    def _explain(self, mode: SearchMode, ranked: list[int], request: Request,
                 shares: dict[int, tuple[float, ...]] | None) -> dict[int, dict[str, float]]:
        """Each result's score by part: by query term for one retriever (what it lacks is
        neighbour context), by retriever when several were fused."""
        if shares is None:
            return mode.retrievers[0].parts(self.index, ranked, request)
        names = [retriever.name for retriever in mode.retrievers]
        return {i: dict(zip(names, shares[i])) for i in ranked}

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
                            highlights=spans, explanation=explanation, meta=entry.meta)


#: Scores within this share of each other are equal relevance: a source's own order
#: (`priority(meta)`, EF Memory's Hard S1 first) decides among its entries there.
EQUAL_RELEVANCE = 0.005
_MAX_TIES = 50  # entries beyond the limit read to settle a tie at its edge


def _has_priority(source) -> bool:
    return callable(getattr(source, "priority", None))


def _equal(best: float, score: float) -> bool:
    return score >= best - abs(best) * EQUAL_RELEVANCE


def _with_ties(ranked: list[int], scores: dict[int, float], limit: int) -> int:
    """How many of the ranked ids to read: the limit, and those tied with the last one."""
    end = min(limit, len(ranked))
    while (end < len(ranked) and end < limit + _MAX_TIES and end
           and _equal(scores[ranked[end - 1]], scores[ranked[end]])):
        end += 1
    return end


def _by_priority(ranked: list[int], scores: dict[int, float], entries: dict[int, Entry],
                 sources) -> list[int]:
    """In each run of equal relevance, the entries of a source with a `priority` reordered
    among the places they hold (others keep theirs; a score never changes)."""
    order = {s.name: s.priority for s in sources if _has_priority(s)}
    if not order or len(ranked) < 2:
        return ranked
    out, start = list(ranked), 0
    while start < len(out):
        end = start + 1
        while end < len(out) and _equal(scores[out[start]], scores[out[end]]):
            end += 1
        slots = [n for n in range(start, end) if entries[out[n]].source in order]
        own = sorted((out[n] for n in slots),  # stable: the order key breaks further ties
                     key=lambda i: order[entries[i].source](entries[i].meta))
        for n, i in zip(slots, own):
            out[n] = i
        start = end
    return out


def search_hints(query: Query, results: Sequence[RankedMemory], limit: int, *,
                 window: int | None, missing_words: Sequence[str],
                 unheld: Sequence[tuple[str, str]] = (),
                 meaning: bool = False) -> tuple[Hint, ...]:
    """Suggestions when fewer than `limit` results came back (none otherwise). `window` is
    the number of days of daily notes searched, None when it was not limited;
    `missing_words`: the words no memory holds, given only when words decide what matches
    (never for a search by meaning, which finds memories without them); `unheld`: the
    (filter, value) of a category or tag no memory has (`SearchIndex.unheld`); `meaning`:
    the search matched by words only and a mode that finds by meaning could run."""
    if len(results) >= limit:
        return ()
    hints: list[Hint] = []
    if not query.has_words:
        hints.append(Hint("rarer_words"))
    if window is not None:
        hints.append(Hint("widen_days", days=window))
    for word in missing_words if not results else ():  # with results, it is not why few
        hints.append(Hint("drop_word", word=word))
    for name, value in unheld if not results else ():
        hints.append(Hint("drop_filter", filter=name, value=value))
    if meaning and not results and query.has_words:
        hints.append(Hint("by_meaning"))
    if query.required or query.phrases:
        hints.append(Hint("drop_requirement"))
    if sum(not is_stop_word(term) for term in query.terms) > 2:  # "where do I live?": 1
        hints.append(Hint("fewer_words"))
    if not results or not hints:
        hints.append(Hint("other_words"))
    categories = Counter(hit.category for hit in results if hit.category)
    tags = Counter(tag for hit in results for tag in hit.tags)
    for category, _ in categories.most_common(2):
        hints.append(Hint("narrow_category", category=category))
    for tag, _ in tags.most_common(3):
        hints.append(Hint("narrow_tag", tag=tag))
    return tuple(hints)


def _meaning_runs() -> bool:
    """Whether a mode that finds by meaning could run here: the model is installed, and
    did not fail to load in this process (`scoring.best_available`)."""
    return scoring.plugin("model").installed() and scoring._unloadable is None


def _by_words(mode: SearchMode) -> bool:
    """Whether the mode finds entries by the words they hold, only (bm25, keyword): then a
    word no memory holds can be why a search found nothing. One that matches by meaning
    (vector, hybrid) finds memories without the word: it must never say to drop it."""
    from miniclaw.search.scoring import TermRetriever

    return all(isinstance(retriever, TermRetriever) for retriever in mode.retrievers)


def _place(entry: Entry) -> Place:
    return Place(entry.date, entry.time, entry.path, entry.line_start)


def _fuse(mode: SearchMode, found: list[_Found]
          ) -> tuple[dict[int, float], dict[int, tuple[float, ...]] | None]:
    """(score of each candidate, each one's shares by retriever or None): one retriever's
    scores as they are; several retrievers' scores fused (`scoring/fusion.py`)."""
    lists = [{i: score for part in found for i, score in part.scores[n].items()}
             for n in range(len(mode.retrievers))]
    if len(lists) == 1:
        return lists[0], None
    shares = score_fusion(
        lists, weights=[getattr(r, "fusion_weight", 1.0) for r in mode.retrievers],
        bounded=[getattr(r, "bounded", False) for r in mode.retrievers])
    return {i: sum(parts) for i, parts in shares.items()}, shares


#: What a question the user asked in a chat is worth beside what was stated (`_weigh_chat`):
#: measured in tests/search/test_asked.py (bm25); low enough that in hybrid a question found
#: by its words (a fused share of 1 at most) stays below a statement found by meaning (a
#: cosine share of at least `MIN_SIMILARITY`, 0.2).
ASKED_WEIGHT = 0.1

#: What the user said about themself answers a question about them (issue 35): when the
#: query speaks in the first person, a chat message the user wrote (not a question) gains
#: this share of its score over the assistant's replies, which often repeat the user's words
#: around advice. LongMemEval dev written as transcripts, turn R@5 +0.037 [+0.017, +0.061]
#: (benchmarks/README.md); daily notes do not say who spoke, so they are not touched.
OWN_WEIGHT = 0.3
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself)\b", re.IGNORECASE)


def _about_user(text: str) -> bool:
    """Whether a query speaks in the first person ("what is my job?", "where did I go")."""
    return bool(_FIRST_PERSON.search(text))


def _is_chat(source) -> bool:
    from miniclaw.sources.transcripts import TranscriptSource  # loaded with the sources

    return isinstance(source, TranscriptSource)


DATE_SLACK_DAYS = 1  # a note written the day after still tells of the day named


def _only_dates(query: Query, said: list[tuple[int, int, DateSpan]]) -> bool:
    """Whether the query's words, once its date phrases are taken out, are only stop words
    ("what did I do" + "yesterday"): then it asks for what those dates hold."""
    if query.phrases or query.prefixes or query.required:
        return False
    rest, end = [], 0
    for start, stop, _ in said:
        rest.append(query.text[end:start])
        end = stop
    rest.append(query.text[end:])
    return all(is_stop_word(term) or term in _DIARY_WORDS for term in tokenize(" ".join(rest)))


# Words of a diary question that ask for everything ("what happened yesterday?"), not a topic.
_DIARY_WORDS = frozenset(("happen", "anyth", "everyth"))


def _date_bonus(scores: dict[int, float], places: dict[int, Place], spans: list[DateSpan],
                weight: float) -> dict[int, float]:
    """What each matching entry dated in (or next to) a span the query names gains: a share
    `weight` of its score. Only entries that already match are candidates."""
    if not spans or not weight:
        return {}
    return {i: weight * score for i, score in scores.items()
            if (day := places[i].date) is not None
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
