"""miniclaw's memory: Markdown files the user owns, parsed into entries, searched fast.

    from miniclaw.memory import MemoryStore
    async with MemoryStore("~/.miniclaw/workspace") as store:
        await store.add_long_term("Prefers dark roast coffee", category="preference")
        for hit in await store.search_memories("coffee", limit=5):
            print(hit.score, hit.path, hit.line_start, hit.excerpt)
"""

from miniclaw.memory.entry import DAILY_NOTE, LONG_TERM, Entry
from miniclaw.memory.index import IndexStatus, RefreshReport, SearchIndex
from miniclaw.memory.ranker import MemoryRanker, RankedMemory, SearchResults
from miniclaw.memory.scoring import DEFAULT_MODE, MODE_NAMES
from miniclaw.memory.short_term import ShortTermMemory, Turn
from miniclaw.memory.store import MemoryStore

__all__ = [
    "DAILY_NOTE", "DEFAULT_MODE", "LONG_TERM", "MODE_NAMES", "Entry", "IndexStatus",
    "MemoryRanker", "MemoryStore", "RankedMemory", "RefreshReport", "SearchIndex",
    "SearchResults", "ShortTermMemory", "Turn",
]
