"""Warm hybrid on L in one long-lived process, variants alternated query by query (the
machine's speed drifts: only side-by-side figures compare):

- `float`: the query embedded by the memories' graph (float products), as before
  2026-11-27 night;
- `int8` (as it is): by the query graph (int8 products, `memory/int8_graph.py`);
- `int8-1t`: the query graph on one thread instead of two;
- `cand50`: as it is, with the cosine bringing 50 candidates a source instead of 30;
- `bm25`, for scale.

Needs an L folder made by `semantic.py --speed L --keep DIR` (its index and model cache).

Run (from the repo root):
  .venv/bin/python benchmarks/query_graph_ab.py DIR [--queries 100]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

VARIANTS = ("float", "int8", "int8-1t", "cand50", "bm25")


async def measure(folder: Path, asked: list[str]) -> dict[str, tuple[list[float], list[float]]]:
    from miniclaw.memory import MemoryStore
    from miniclaw.semantic import model as embedding
    from miniclaw.semantic import retriever as semantic

    embedding.THREADS = 1
    one = embedding.Embedder()
    embedding.THREADS = 2
    two = embedding.load()
    embed = {"float": lambda text: two.embed([text])[0], "int8": two.embed_query,
             "int8-1t": one.embed_query, "cand50": two.embed_query}
    times: dict[str, tuple[list[float], list[float]]] = {v: ([], []) for v in VARIANTS}
    async with MemoryStore(folder / "workspace") as store:
        await store.refresh_index()
        for n, query in enumerate(["warm up"] + asked):
            for variant in VARIANTS[n % len(VARIANTS):] + VARIANTS[:n % len(VARIANTS)]:
                if variant != "bm25":  # a fresh cache: each variant embeds the query
                    semantic._query_vector = functools.lru_cache(maxsize=1)(embed[variant])
                semantic.VectorRetriever.candidates = 50 if variant == "cand50" else \
                    semantic.CANDIDATES
                wall, cpu = time.perf_counter(), time.process_time()
                await store.search_memories(query, limit=5, days=None,
                                            mode="bm25" if variant == "bm25" else "hybrid")
                if n:
                    times[variant][0].append((time.perf_counter() - wall) * 1000)
                    times[variant][1].append((time.process_time() - cpu) * 1000)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="an L folder (semantic.py --speed L --keep DIR)")
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()
    from hybrid_ab import environment, queries

    os.environ.update(environment(Path.cwd(), args.folder.resolve()))
    times = asyncio.run(measure(args.folder.resolve(), queries(args.queries)))
    for variant, (wall, cpu) in times.items():
        print(f"{variant:8} wall p50 {statistics.median(wall):5.1f} ms   "
              f"CPU p50 {statistics.median(cpu):5.1f} ms")
    print(f"{args.queries} queries, load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
