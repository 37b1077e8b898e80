"""The shape of a scoring mode, and the corpus statistics every mode may use.

A mode is one small class: `scored_terms()` picks the query terms it uses, `weights()` gives each query term a weight from the corpus
statistics (pure Python, no I/O), and `term_score_sql` is the SQL expression of one term's
contribution to an entry, over `p.tf` (the term's count in the entry), `e.length` (the
entry's length in terms) and `:avgdl` (the typical length: the median, see `index.corpus`). An entry's score is the sum over the
query terms it contains of weight × term score, computed inside SQLite. `neighbor_weights`
are (offset, share) pairs: the share of the score of the entry `offset` places away in the
same daily note that is added to an entry's score (offset -1 is the entry right before).
`date_weight` is the share of its score a matching entry gains when it is dated on a day the
query names ("last week", "in May": `date_cue.py`).
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple, Protocol


class CorpusStats(NamedTuple):
    """Statistics shared by all sources, so scores compare across MEMORY.md and notes."""

    entries: int
    avg_length: float
    df: dict[str, int]  # entries containing each term


class Scorer(Protocol):
    name: ClassVar[str]
    summary: ClassVar[str]
    neighbor_weights: tuple[tuple[int, float], ...]
    date_weight: float  # share of its score a match dated when the query names gains
    term_score_sql: str

    def scored_terms(self, terms: list[str]) -> list[str]:
        """The query terms this mode scores (it may leave out stop words)."""

    def weights(self, terms: list[str], stats: CorpusStats) -> dict[str, float]: ...
