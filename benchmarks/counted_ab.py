"""What taking a bare question's cosine out of hybrid (`VectorRetriever.counts`, the ranker's
`_counted_first`) costs a warm hybrid search on L: the ranking step (the first results found
and their entries read: `_counted_first` + `_finish`, against `_first` + `_finish` without
`counts`) timed by `thread_time` (CPU of the worker thread: a loaded machine disturbs it
less than wall time), and the search's wall time, the two arms alternated per query, the
query vectors embedded beforehand (with --embed-each: each search embeds its query, as a
new question does). Also how many entries reads the step made per search.

DIR is an L folder made by `semantic.py --speed L --keep DIR` (the vectors already there).
Run (from the repo root): PYTHONPATH=. .venv/bin/python benchmarks/counted_ab.py DIR [N] [--embed-each]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


async def measure(workspace: Path, queries: list[str], embed_each: bool = False) -> None:
    from miniclaw.memory import MemoryStore
    from miniclaw.search import ranker
    from miniclaw.semantic import retriever as semantic

    counts = semantic.VectorRetriever.counts
    first, counted, finish = ranker._first, ranker.MemoryRanker._counted_first, \
        ranker.MemoryRanker._finish
    spent: list[float] = []  # CPU seconds of the ranking step's parts in this search
    reads: list[int] = []  # entries reads of each `_counted_first`

    def timed_first(*args):
        start = time.thread_time()
        out = first(*args)
        spent.append(time.thread_time() - start)
        return out

    def timed_counted(self, *args):
        start, calls, entries = time.thread_time(), [], self.index.entries
        self.index.entries = lambda ids: (calls.append(1), entries(ids))[1]
        try:
            out = counted(self, *args)
        finally:
            del self.index.entries
        spent.append(time.thread_time() - start)
        reads.append(len(calls))
        return out

    def timed_finish(self, *args):
        start = time.thread_time()
        out = finish(self, *args)
        spent.append(time.thread_time() - start)
        return out

    ranker.MemoryRanker._counted_first = timed_counted
    ranker.MemoryRanker._finish = timed_finish
    async with MemoryStore(workspace) as store:
        await store.refresh_index()
        await store.search_memories("warm up query", limit=5, days=None, mode="hybrid")
        for q in queries if not embed_each else ():
            semantic._query_vector(q)
        cpu: dict[str, list[float]] = {"on": [], "off": []}
        wall: dict[str, list[float]] = {"on": [], "off": []}
        for n, q in enumerate(queries):
            for arm in (("on", "off") if n % 2 else ("off", "on")):
                if arm == "off":  # no `counts`: the ranker's path before the change
                    del semantic.VectorRetriever.counts
                    ranker._first = timed_first
                spent.clear()
                if embed_each:
                    semantic._query_vector.cache_clear()
                start = time.perf_counter()
                await store.search_memories(q, limit=5, days=None, mode="hybrid")
                wall[arm].append((time.perf_counter() - start) * 1000)
                cpu[arm].append(sum(spent) * 1000)
                semantic.VectorRetriever.counts = counts
                ranker._first = first
    for arm in cpu:
        print(f"{arm}: ranking step CPU p50 {statistics.median(cpu[arm]):.3f} ms "
              f"(mean {statistics.mean(cpu[arm]):.3f}); search wall p50 "
              f"{statistics.median(wall[arm]):.2f} ms")
    print("entries reads per search:", {r: reads.count(r) for r in sorted(set(reads))},
          f"load {os.getloadavg()[0]:.1f}")


def main() -> None:
    import search_speed as sp

    args = [a for a in sys.argv[1:] if a != "--embed-each"]
    base, n = Path(args[0]), int(args[1]) if len(args) > 1 else 200
    os.environ.update({"MINICLAW_INDEX": str(base / "index.sqlite3"),
                       "XDG_CACHE_HOME": str(base / "c")})
    writer = sp.Writer(sp.SEED)
    long_term, days = sp.SIZES["L"]
    sp.generate(base / "workspace", writer, long_term, days)  # as semantic.py made it
    asyncio.run(measure(base / "workspace", [writer.query() for _ in range(n)],
                        "--embed-each" in sys.argv))


if __name__ == "__main__":
    main()
