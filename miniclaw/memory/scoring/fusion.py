"""Fusion: one ranking from several retrievers' rankings, by reciprocal rank (RRF).

Why reciprocal rank and not normalized scores: the retrievers' scores are on unrelated
scales (BM25 is unbounded and grows with the query's length and rare words; a cosine lies
in [-1, 1] and is rarely far from its own typical value), and min-max normalization of each
list makes a fused score hinge on the weakest candidate each retriever happened to return.
A rank needs no calibration: an entry gains `1 / (RRF_K + rank)` from every list it is in
(Cormack, Clarke and Büttcher, SIGIR 2009; k = 60 as there), so an entry that two
retrievers both place high beats one that only one of them likes.

With one retriever there is nothing to fuse: the ranker keeps its scores as they are, so a
single-retriever mode (`bm25`, `keyword`) ranks and scores exactly as it did before fusion.
"""

from __future__ import annotations

from collections.abc import Sequence

RRF_K = 60


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int]], k: int = RRF_K,
                           weights: Sequence[float] | None = None
                           ) -> dict[int, tuple[float, ...]]:
    """Each entry's share of its fused score from each ranking (best first, entry ids), in
    the rankings' order; an entry missing from a ranking gets 0.0 from it. The fused score
    is the sum of the shares. `weights` scale each ranking's shares (a retriever's
    `fusion_weight`: a weaker list counts less), 1.0 each by default."""
    weights = weights or [1.0] * len(rankings)
    shares: dict[int, list[float]] = {}
    for position, ranking in enumerate(rankings):
        for rank, entry_id in enumerate(ranking, 1):
            shares.setdefault(entry_id, [0.0] * len(rankings))[position] = \
                weights[position] / (k + rank)
    return {entry_id: tuple(parts) for entry_id, parts in shares.items()}
