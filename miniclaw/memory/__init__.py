"""miniclaw's memory: Markdown files the user owns, parsed into entries, searched fast.

    from miniclaw.memory import MemoryStore
    async with MemoryStore("~/.miniclaw/workspace") as store:
        await store.add_long_term("Prefers dark roast coffee", category="preference")
        for hit in await store.search_memories("coffee", limit=5):
            print(hit.score, hit.path, hit.line_start, hit.excerpt)

Names are imported on first use (PEP 562), so importing one submodule does not pay for all.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

_EXPORTS = {
    "DAILY_NOTE": "entry", "LONG_TERM": "entry", "Entry": "entry",
    "IndexStatus": "index", "RefreshReport": "index", "SearchIndex": "index",
    "MemoryRanker": "ranker", "RankedMemory": "results", "SearchResults": "results",
    "SearchOptions": "options", "Hint": "hints", "SearchWarning": "hints",
    "DEFAULT_MODE": "scoring", "MODE_NAMES": "scoring",
    "ShortTermMemory": "short_term", "Turn": "short_term",
    "MemoryStore": "store",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'miniclaw.memory' has no attribute {name!r}")
    value = getattr(import_module(f"miniclaw.memory.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from miniclaw.memory.entry import DAILY_NOTE, LONG_TERM, Entry
    from miniclaw.memory.hints import Hint, SearchWarning
    from miniclaw.memory.index import IndexStatus, RefreshReport, SearchIndex
    from miniclaw.memory.options import SearchOptions
    from miniclaw.memory.ranker import MemoryRanker
    from miniclaw.memory.results import RankedMemory, SearchResults
    from miniclaw.memory.scoring import DEFAULT_MODE, MODE_NAMES
    from miniclaw.memory.short_term import ShortTermMemory, Turn
    from miniclaw.memory.store import MemoryStore
