"""Retrievers: what finds and scores candidates for a query (docs/ARCHITECTURE.md,
"Adding a retriever").

A retriever receives a `Request` (the parsed query, the plan it runs with: terms after
prefix expansion and spelling corrections, the corpus statistics, and the filters) and,
for one source at a time, returns `Candidates`: entry id -> score for its best `k` entries
that pass the filters, and how many matched in all. `parts()` breaks given entries' scores
down (by query term for the term retrievers), for `--explain` and for neighbour context.
Retrievers run in worker threads, one per source, inside one index snapshot; they may read
the index (`SearchIndex` query methods) but never write.

`TermRetriever` is the shape of today's modes (bm25, keyword): a retriever over the
postings whose score is the sum over the query terms an entry holds of weight x term score,
computed inside SQLite. A subclass gives `weights()` (pure Python, from the corpus
statistics) and `term_score_sql`, the SQL expression of one term's contribution, over `p.tf`
(the term's count in the entry), `e.length` (the entry's length in terms) and `:avgdl` (the
typical length: the median, see `index.corpus`).

A retriever may say how many entries per source it brings to a search that ranks more
than its results (`candidates`; the ranker's 50 without it): the vector retriever brings
20, as deep a list as 30 or 50 on both dev sets and less to read and give context to.

A mode may also set the stages' parameters: `neighbor_weights`, (offset, share) pairs for
neighbour context in sequence sources (`neighbours.py`; offset -1 is the entry right
before), and `date_weight`, the share of its score a matching entry gains when it is dated
on a day the query names ("last week", "in May": `date_cue.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, NamedTuple, Protocol

if TYPE_CHECKING:
    from miniclaw.index.search_index import Filters, SearchIndex
    from miniclaw.search.query import Query
    from miniclaw.sources.base import MemorySource


class CorpusStats(NamedTuple):
    """Statistics shared by all sources, so scores compare across MEMORY.md and notes."""

    entries: int
    avg_length: float
    df: dict[str, int]  # entries containing each term


class Request(NamedTuple):
    """A query as every retriever receives it."""

    query: Query
    terms: tuple[str, ...]  # after prefix expansion and spelling corrections
    stats: CorpusStats
    filters: Filters


class Candidates(NamedTuple):
    """One retriever's best entries of one source."""

    scores: dict[int, float]  # entry id -> score, higher is better
    total: int = 0  # entries that matched in all (may exceed len(scores))


class Retriever(Protocol):
    name: ClassVar[str]
    summary: ClassVar[str]

    def scored_terms(self, terms: list[str]) -> list[str]:
        """The query terms the search is planned with (it may leave out stop words)."""

    def retrieve(self, index: SearchIndex, source: MemorySource, request: Request,
                 k: int) -> Candidates:
        """The best `k` entries of `source` that pass `request.filters`."""

    def parts(self, index: SearchIndex, entry_ids: Sequence[int],
              request: Request) -> dict[int, dict[str, float]]:
        """Each given entry's score by part (query term, or one part named after the
        retriever): their sum is the entry's score. Every given id is a key."""


class TermRetriever:
    """A retriever over the postings: weight x term score summed inside SQLite."""

    name: ClassVar[str]
    summary: ClassVar[str]
    neighbor_weights: tuple[tuple[int, float], ...] = ()
    date_weight: float = 0.0
    term_score_sql: str = "1.0"

    def scored_terms(self, terms: list[str]) -> list[str]:
        return terms

    def weights(self, terms: Sequence[str], stats: CorpusStats) -> dict[str, float]:
        raise NotImplementedError

    def retrieve(self, index: SearchIndex, source: MemorySource, request: Request,
                 k: int) -> Candidates:
        weights = self.weights(request.terms, request.stats)
        rows = index.top(source, request.filters, weights, self.term_score_sql,
                         request.stats.avg_length, k)
        return Candidates({entry_id: score for entry_id, score, _ in rows},
                          rows[0][2] if rows else 0)

    def parts(self, index: SearchIndex, entry_ids: Sequence[int],
              request: Request) -> dict[int, dict[str, float]]:
        return index.contributions(entry_ids, self.weights(request.terms, request.stats),
                                   self.term_score_sql, request.stats.avg_length)


Scorer = TermRetriever  # the name before retrievers (issue 12)
