"""BM25 over entries, tuned on the LoCoMo and LongMemEval development sets together (short
uniform turns, and short user turns among long assistant essays; benchmarks/README.md).

On top of textbook BM25 (k1, b, Lucene's always-positive idf):
- lengths are normalized against the median entry length, not the mean (`index.corpus`);
- stop words are left out (the index does not hold them either: measured, counting them
  made ranking worse), so a query of only stop words finds nothing;
- in sequence sources (daily notes) a matching entry gains a share of its neighbours' scores
  for the query terms it lacks: a question often matches the turn before or after the one
  holding the answer (`neighbours.py`, a stage run by the ranker with these shares);
- a matching entry dated on a day the query names gains `date_weight` of its score.

Each constant's worth is in benchmarks/README.md ("The ranking's constants"); a term in over
a quarter of the entries is no longer weighted down further: that moved recall within noise.
"""

from __future__ import annotations

import math

from miniclaw.search.scoring.base import CorpusStats, TermRetriever
from miniclaw.entries.tokenizer import is_stop_word


# Share of a neighbour's score an entry gains, by the neighbour's offset in the note: the
# text just before an entry (often the question it answers) counts more than the text after.
NEIGHBOR_WEIGHTS = ((-2, 0.175), (-1, 0.42), (1, 0.28), (2, 0.105))
# Share of its score a matching entry gains when dated on a day the question names.
DATE_WEIGHT = 0.3


class BM25Scorer(TermRetriever):
    """The bm25 retriever (its stages: neighbour context and the date cue)."""

    name = "bm25"
    summary = "BM25 relevance with shared corpus statistics (default)"

    def __init__(self, k1: float = 1.2, b: float = 0.6,
                 neighbor_weights: tuple[tuple[int, float], ...] = NEIGHBOR_WEIGHTS,
                 date_weight: float = DATE_WEIGHT) -> None:
        self.k1, self.b = float(k1), float(b)
        self.neighbor_weights = tuple(neighbor_weights)
        self.date_weight = float(date_weight)
        self.term_score_sql = (
            f"(p.tf * {self.k1 + 1.0!r}) / (p.tf + {self.k1!r} * "
            f"(1.0 - {self.b!r} + {self.b!r} * e.length / :avgdl))"
        )

    def idf(self, df: int, entries: int) -> float:
        # max(): never negative, even if df and the total were read at different moments
        return math.log(1.0 + (max(entries - df, 0) + 0.5) / (df + 0.5))

    def scored_terms(self, terms: list[str]) -> list[str]:
        content = [t for t in terms if not is_stop_word(t)]
        return content or terms

    def weights(self, terms: list[str], stats: CorpusStats) -> dict[str, float]:
        return {term: self.idf(stats.df.get(term, 0), max(stats.entries, 1))
                for term in dict.fromkeys(terms)}
