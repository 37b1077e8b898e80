"""Fusion: one score per candidate from several retrievers' scores, by a weighted sum of
scores brought to one scale (normalized score fusion).

Each retriever's score of an entry becomes a share: an unbounded score (BM25 grows with the
query's length and rare words, so only its ratios mean something) is divided by the best
score of that retriever in this search, so BM25's best hit gets 1 and the others keep their
margins to it; a bounded score (`bounded = True`: a cosine, which means the same for every
query) is kept as it is. A negative score counts as 0 (no evidence either way). A share is
then scaled by the retriever's `fusion_weight`, and the fused score is the sum of shares.

Why not reciprocal rank (RRF, k = 60), the fusion before (measured on the LoCoMo and
LongMemEval dev sets, benchmarks/README.md): a rank throws away BM25's margins (a turn that
holds every rare word of the question and one that holds a single common word end up 1/61
and 1/62 apart), so any entry the vectors liked moved past clear BM25 hits, and the date
cue's share of a score (all scores near 1/60) outweighed every rank difference. Turn
recall@5 on the dev sets, bm25 / hybrid by RRF / hybrid by score: LoCoMo 0.653 / 0.552 /
0.671, LongMemEval 0.752 / 0.678 / 0.767.

The ranker gives `score_fusion` every candidate scored by every retriever (it asks each
retriever's `parts()` for the candidates only the others found): a retriever's list is cut
at its best 50, and "not among my best 50" is not a score of 0.

With one retriever there is nothing to fuse: the ranker keeps its scores as they are, so a
single-retriever mode (`bm25`, `keyword`) ranks and scores exactly as it did before fusion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def score_fusion(lists: Sequence[Mapping[int, float]], weights: Sequence[float] | None = None,
                 bounded: Sequence[bool] | None = None) -> dict[int, tuple[float, ...]]:
    """Each entry's share of its fused score from each list (entry id -> score), in the
    lists' order; an entry missing from a list gets 0.0 from it. The fused score is the sum
    of the shares. `weights` scale each list's shares (1.0 each by default); a list marked
    `bounded` keeps its scores, any other is divided by its best (positive) score first."""
    weights = weights or [1.0] * len(lists)
    bounded = bounded or [False] * len(lists)
    shares: dict[int, list[float]] = {}
    for position, scores in enumerate(lists):
        best = max(scores.values(), default=0.0)
        scale = 1.0 if bounded[position] or best <= 0 else best
        for entry_id, score in scores.items():
            shares.setdefault(entry_id, [0.0] * len(lists))[position] = \
                weights[position] * max(score, 0.0) / scale
    return {entry_id: tuple(parts) for entry_id, parts in shares.items()}
