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

from collections.abc import Callable

MAX_GAP_S = 30 * 60
SHORT_TERMS = 20  # index terms (~200 characters) up to which a cosine takes full context


def add_neighbour_scores(index, own: dict[int, float], filters,
                         shares: tuple[tuple[int, float], ...],
                         parts_of: Callable[[list[int]], dict[int, dict[str, float]]],
                         source=None, bounded: bool = False,
                         floor: float = 0.0) -> dict[int, float]:
    """The candidates' scores with neighbour shares added, and the neighbours that joined:
    the neighbour stage over any retriever's candidates of one sequence source.

    `own` holds the candidates' own scores; their neighbours that pass the filters and hold
    a query word join the candidates. `shares` are (offset, share of that neighbour's
    score); `parts_of` is the retriever's score of entries by part (`Retriever.parts`);
    `source`, when given, is the candidates' source (neighbours share an entry's file);
    `bounded` scores (a cosine) lend what is above the entry's own, by its length; a
    neighbour joins only when its own score reaches `floor` (below, a cosine is no match).
    Runs in a worker thread (it queries the index). Only a neighbour that holds a query
    word can join, so only such newcomers have their own neighbours looked up (on long
    conversations, looking up every neighbour's neighbours was most of a search's time).
    """
    weight = dict(shares)
    reach = max(abs(offset) for offset in weight)
    candidates = list(own)
    around = index.neighbours(candidates, reach, MAX_GAP_S)
    extra = {n for found in around.values() for n, _ in found} - own.keys()
    parts = parts_of(sorted(extra | own.keys()))
    newcomers = [i for i in index.filter_ids(sorted(extra), filters, source)
                 if 0 < sum(parts[i].values()) >= floor]
    around.update(index.neighbours(newcomers, reach, MAX_GAP_S))
    further = {n for i in newcomers for n, _ in around[i]} - parts.keys()
    parts.update(parts_of(sorted(further)))
    boosted = dict(own)
    shortness = _shortness(index, candidates + newcomers) if bounded else {}
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


def _shortness(index, entry_ids: list[int]) -> dict[int, float]:
    """How much of its meaning each entry takes from its neighbours: 1 up to `SHORT_TERMS`
    index terms, less the longer it is (a bounded score's context, above)."""
    return {i: min(1.0, SHORT_TERMS / max(length, 1))
            for i, length in index.lengths(entry_ids).items()}
