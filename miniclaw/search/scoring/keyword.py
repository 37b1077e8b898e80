"""The story's ranker: an entry scores one point per distinct query term it contains."""

from __future__ import annotations

from miniclaw.search.scoring.base import CorpusStats, TermRetriever


class KeywordScorer(TermRetriever):
    name = "keyword"
    summary = "count of query words found in the entry (the original simple ranker)"
    neighbor_weights = ()
    date_weight = 0.0
    term_score_sql = "1.0"

    def scored_terms(self, terms: list[str]) -> list[str]:
        return terms  # every query word counts (stop words find nothing: not indexed)

    def weights(self, terms: list[str], stats: CorpusStats) -> dict[str, float]:
        return dict.fromkeys(terms, 1.0)
