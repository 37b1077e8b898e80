"""The shape of a scoring mode, and the corpus statistics every mode may use.

A mode is one small class: `weights()` gives each query term a weight from the corpus
statistics (pure Python, no I/O), and `term_score_sql` is the SQL expression of one term's
contribution to an entry, over `p.tf` (the term's count in the entry), `e.length` (the
entry's length in terms) and `:avgdl` (the mean length). An entry's score is the sum over the
query terms it contains of weight × term score, computed inside SQLite. `neighbor_weight` is
the share of the adjacent entries' scores (same daily note) added to an entry's score.
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
    neighbor_weight: float
    term_score_sql: str

    def weights(self, terms: list[str], stats: CorpusStats) -> dict[str, float]: ...
