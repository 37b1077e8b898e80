"""Neighbour context: a stage over any retriever's candidates, for sources whose entries
are a sequence (`sequence = True`: daily notes, not MEMORY.md). An entry gains a share of
the scores of the entries around it, when they were written close together in time.

Why: in a conversation or a stream of notes, a question often matches the entry before or
after the one that answers it. An entry gains a share of its neighbours' scores for the
query terms it does not hold itself. The shares come from the mode (`neighbor_weights`, by
offset); entries written more than `MAX_GAP_S` apart are not each other's context.
Only an entry that holds a query word itself is lifted: people add unrelated notes in bursts,
and an entry written next to a match is not a result for that alone (issue 13).

A bounded score (a cosine: one number, no terms to be missing) takes its context the same
way: an entry gains a share of each neighbour's cosine above its own, scaled by how little
the entry says alone, full up to `SHORT_TERMS` index terms (a sentence or two) and
`SHORT_TERMS / length` beyond. A short turn ("Yes, at the agency") means what the turns
around it say; a long one carries its own meaning, and lifting it by its neighbours put
LongMemEval's long assistant replies above the user turns that held the answer. Measured
on both dev sets (benchmarks/hybrid_variants.py): context for the cosine unscaled, LoCoMo
+0.013 and LongMemEval -0.009 turn recall@5; scaled by length, both gain (0.675 -> 0.689
and 0.767 -> 0.768). As a BM25 newcomer must hold a query word, a cosine's must reach
the floor (0.2): a turn that is no match is not brought in by a close one.
"""

from __future__ import annotations

MAX_GAP_S = 30 * 60
SHORT_TERMS = 20  # index terms (~200 characters) up to which a cosine takes full context


class Lookups:
    """What one search of one source reads about its entries, read once: each entry's
    neighbours, whether it passes the filters, its length, and each retriever's parts of its
    score. In a fusion the stages ask about many of the same entries (BM25's candidates and
    the cosine's are each other's neighbours, and each retriever scores the other's
    candidates): asked again, an entry is not read again. Within one search's snapshot an
    entry's answers cannot change. `shares` are the mode's (offset, share of that
    neighbour's score); `context` says whether neighbour context applies (shares, in a
    sequence source)."""

    def __init__(self, index, request, source, shares: tuple[tuple[int, float], ...]) -> None:
        self.index, self.request, self.source, self.shares = index, request, source, shares
        self.context = bool(shares) and source.sequence
        self.reach = max((abs(offset) for offset, _ in shares), default=0)
        self._around: dict[int, list[tuple[int, int]]] = {}
        self._passes: dict[int, bool] = {}
        self._lengths: dict[int, int | None] = {}
        self._parts: dict[int, dict[int, dict[str, float]]] = {}  # id(retriever) -> by entry

    @staticmethod
    def _read(known: dict, entry_ids, read) -> None:
        """Add to `known` what `read(ids)` says of the entries it does not hold yet."""
        todo = [i for i in dict.fromkeys(entry_ids) if i not in known]
        if todo:
            known.update(read(todo))

    def around(self, entry_ids) -> dict[int, list[tuple[int, int]]]:
        """(entry id, offset) of each entry's neighbours within `reach` (`index.neighbours`)."""
        self._read(self._around, entry_ids,
                   lambda ids: self.index.neighbours(ids, self.reach, MAX_GAP_S))
        return {i: self._around.get(i, []) for i in entry_ids}

    def passing(self, entry_ids) -> list[int]:
        """The entries that pass the search's filters, in the order given."""
        def read(ids):
            kept = set(self.index.filter_ids(ids, self.request.filters, self.source))
            return {i: i in kept for i in ids}
        self._read(self._passes, entry_ids, read)
        return [i for i in entry_ids if self._passes[i]]

    def lengths(self, entry_ids) -> dict[int, int]:
        def read(ids):
            found = self.index.lengths(ids)
            return {i: found.get(i) for i in ids}
        self._read(self._lengths, entry_ids, read)
        return {i: self._lengths[i] for i in entry_ids if self._lengths[i] is not None}

    def parts(self, retriever, entry_ids) -> dict[int, dict[str, float]]:
        """The retriever's score of each entry by part (`Retriever.parts`), asked once. (The
        retrievers are the search's mode's: alive, so their ids are theirs alone.)"""
        known = self._parts.setdefault(id(retriever), {})
        self._read(known, entry_ids,
                   lambda ids: retriever.parts(self.index, sorted(ids), self.request))
        return {i: known.get(i, {}) for i in entry_ids}


def add_neighbour_scores(lookups: Lookups, own: dict[int, float], retriever,
                         bounded: bool = False, floor: float = 0.0) -> dict[int, float]:
    """The candidates' scores with neighbour shares added, and the neighbours that joined:
    the neighbour stage over any retriever's candidates of one sequence source.

    `own` holds the candidates' own scores; their neighbours that pass the filters and hold
    a query word join the candidates. `lookups` reads the index for this search of the
    source and holds the mode's shares (`Lookups`); the retriever's `parts` scores entries
    by part; `bounded` scores (a cosine) lend what is above the entry's own, by its length; a
    neighbour joins only when its own score reaches `floor` (below, a cosine is no match).
    Runs in a worker thread (it queries the index). Only a neighbour that holds a query
    word can join, so only such newcomers have their own neighbours looked up (on long
    conversations, looking up every neighbour's neighbours was most of a search's time).
    """
    weight = dict(lookups.shares)
    candidates = list(own)
    around = lookups.around(candidates)
    extra = {n for found in around.values() for n, _ in found} - own.keys()
    parts = lookups.parts(retriever, sorted(extra | own.keys()))
    newcomers = [i for i in lookups.passing(sorted(extra))
                 if 0 < sum(parts[i].values()) >= floor]
    around.update(lookups.around(newcomers))
    further = {n for i in newcomers for n, _ in around[i]} - parts.keys()
    parts.update(lookups.parts(retriever, sorted(further)))
    boosted = dict(own)
    shortness = _shortness(lookups, candidates + newcomers) if bounded else {}
    for entry_id in candidates + newcomers:
        mine = parts[entry_id]
        base = own[entry_id] if entry_id in own else sum(mine.values())
        share = 0.0
        for n, offset in around[entry_id]:
            if not parts[n]:  # a neighbour holding no query term lends nothing
                continue
            if bounded:
                share += weight.get(offset, 0.0) * max(0.0, sum(parts[n].values()) - base)
            else:
                share += weight.get(offset, 0.0) * _missing_part(parts[n], mine)
        boosted[entry_id] = base + share * shortness.get(entry_id, 1.0)
    boosted = {i: score for i, score in boosted.items()
               if (own[i] if i in own else sum(parts[i].values())) > 0}
    return boosted


def _missing_part(theirs: dict[str, float], mine: dict[str, float]) -> float:
    """A neighbour's score from the query terms the entry lacks: context fills in what the
    entry does not say, and a long reply that repeats the question's words gains nothing
    from it (on LongMemEval, lifting by the whole score put assistant essays first)."""
    return sum(value for term, value in theirs.items() if term not in mine)


def _shortness(lookups: Lookups, entry_ids: list[int]) -> dict[int, float]:
    """How much of its meaning each entry takes from its neighbours: 1 up to `SHORT_TERMS`
    index terms, less the longer it is (a bounded score's context, above)."""
    return {i: min(1.0, SHORT_TERMS / max(length, 1))
            for i, length in lookups.lengths(entry_ids).items()}
