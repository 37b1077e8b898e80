"""miniclaw's memory: Markdown files the user owns, parsed into entries, searched fast.

    from miniclaw.memory import MemoryStore
    async with MemoryStore("~/.miniclaw/workspace") as store:
        await store.add_long_term("Prefers dark roast coffee", category="preference")
        for hit in await store.search_memories("coffee", limit=5):
            print(hit.score, hit.path, hit.line_start, hit.excerpt)

The public face of the packages below (store, search, index, entries...): it re-exports
and holds nothing else. Names are imported on first use (PEP 562), so importing one does not
pay for all.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

_EXPORTS = {
    "DAILY_NOTE": "entries.entry", "LONG_TERM": "entries.entry", "Entry": "entries.entry",
    "IndexStatus": "index.search_index", "RefreshReport": "index.search_index",
    "SearchIndex": "index.search_index",
    "MemoryRanker": "search.ranker", "RankedMemory": "search.results",
    "SearchResults": "search.results", "SearchOptions": "search.options",
    "Hint": "search.hints", "SearchWarning": "search.hints",
    "DEFAULT_MODE": "search.scoring", "MODE_NAMES": "search.scoring",
    "ShortTermMemory": "store.short_term", "Turn": "store.short_term",
    "MemoryStore": "store.store", "Added": "store.door",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'miniclaw.memory' has no attribute {name!r}")
    value = getattr(import_module(f"miniclaw.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from miniclaw.entries.entry import DAILY_NOTE, LONG_TERM, Entry
    from miniclaw.search.hints import Hint, SearchWarning
    from miniclaw.index.search_index import IndexStatus, RefreshReport, SearchIndex
    from miniclaw.search.options import SearchOptions
    from miniclaw.search.ranker import MemoryRanker
    from miniclaw.search.results import RankedMemory, SearchResults
    from miniclaw.search.scoring import DEFAULT_MODE, MODE_NAMES
    from miniclaw.store.door import Added
    from miniclaw.store.short_term import ShortTermMemory, Turn
    from miniclaw.store.store import MemoryStore
