"""Scoring modes by name. A new mode is one module here plus one line in `_MODES`."""

from __future__ import annotations

from miniclaw.errors import UsageError
from miniclaw.memory.scoring.base import CorpusStats, Scorer
from miniclaw.memory.scoring.bm25 import BM25Scorer
from miniclaw.memory.scoring.keyword import KeywordScorer

DEFAULT_MODE = "bm25"

_MODES: dict[str, type] = {
    KeywordScorer.name: KeywordScorer,
    BM25Scorer.name: BM25Scorer,
}
MODE_NAMES = tuple(_MODES)


def get_scorer(mode: str | None) -> Scorer:
    """The scorer for a mode name (None: the best available)."""
    name = DEFAULT_MODE if mode is None else mode.strip().lower()
    try:
        return _MODES[name]()
    except KeyError:
        raise UsageError(
            f"unknown ranking mode {mode!r}; choose one of: {', '.join(MODE_NAMES)}"
        ) from None


__all__ = ["CorpusStats", "Scorer", "get_scorer", "DEFAULT_MODE", "MODE_NAMES"]
