"""Hybrid search on L, this tree against another checkout, alternated in one run (the
machine's speed drifts by a quarter within minutes, so only side-by-side figures compare).

- `cli`: one-shot `memory rank Q --all --mode M` processes, each query new to every process,
  the trees and modes in an order rotated each round; medians of wall and CPU time (user +
  system of the child).
- `warm`: searches in one long-lived process per tree, 'hybrid' with the neighbour context
  of the cosine on and off alternated per query (`VectorRetriever.neighbours`), and bm25.

Each tree needs its own L folder made by `semantic.py --speed L --keep DIR` (the index holds
the workspace's path, and each tree saves its model graph under DIR/c): copy one folder and
let semantic.py --keep DIR2 take the copy over, or run it twice.

Run (from the repo root):
  .venv/bin/python benchmarks/hybrid_ab.py cli DIR --other CHECKOUT DIR2 [--runs 15] [--modes hybrid,bm25]
  .venv/bin/python benchmarks/hybrid_ab.py warm DIR [--other CHECKOUT DIR2] [--queries 100]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))


def queries(n: int) -> list[str]:
    """semantic.py's queries for L (the writer's, after the workspace it generates)."""
    import search_speed as sp

    writer = sp.Writer(sp.SEED)
    long_term, days = sp.SIZES["L"]
    with tempfile.TemporaryDirectory() as tmp:
        sp.generate(Path(tmp) / "ws", writer, long_term, days)
    return [writer.query() for _ in range(n)]


def environment(repo: Path, folder: Path) -> dict[str, str]:
    """The child's settings; it also runs in `repo` (python puts the current folder first on
    its path, so a child started elsewhere could import another tree's miniclaw)."""
    env = {**os.environ, "PYTHONPATH": str(repo), "MINICLAW_INDEX": str(folder / "index.sqlite3"),
           "XDG_CACHE_HOME": str(folder / "c"), "HOME": str(folder / "home"),
           "MINICLAW_HOME": str(folder / "home" / ".miniclaw")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def one_shot(repo: Path, folder: Path, query: str, mode: str) -> tuple[float, float]:
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "miniclaw", "--workspace",
                              str(folder / "workspace"), "memory", "rank", query, "--all",
                              "--mode", mode], env=environment(repo, folder), cwd=repo,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    if status:
        sys.exit(f"{repo}: exit {status}: {child.stderr.read().decode()[-500:]}")
    return (time.perf_counter() - start) * 1000, (usage.ru_utime + usage.ru_stime) * 1000


def cli(trees: dict[str, tuple[Path, Path]], runs: int, modes: list[str]) -> None:
    asked = queries(runs + 1)
    cases = [(tree, mode) for tree in trees for mode in modes]
    for tree, mode in cases:  # the first process of each saves its graph, byte-code is warm
        one_shot(*trees[tree], asked[0], mode)
    times: dict[tuple[str, str], list[tuple[float, float]]] = {case: [] for case in cases}
    for i in range(runs):
        for tree, mode in cases[i % len(cases):] + cases[:i % len(cases)]:
            times[(tree, mode)].append(one_shot(*trees[tree], asked[1 + i], mode))
    for (tree, mode), measured in times.items():
        print(f"{tree:>8} {mode:<7} wall p50 {statistics.median(m[0] for m in measured):5.0f} ms"
              f"   CPU p50 {statistics.median(m[1] for m in measured):5.0f} ms")
    print(f"{runs} rounds, load average {os.getloadavg()[0]:.1f} at the end")


_WARM = """
import asyncio, json, statistics, sys, time
from miniclaw.memory import MemoryStore
from miniclaw.search import neighbours
from miniclaw.semantic import retriever as semantic
folder, asked = sys.argv[1], json.loads(sys.argv[2])
scaled = hasattr(neighbours, "SHORT_TERMS")  # a tree from before the cosine's context has none
variants = ["hybrid", "hybrid without cosine context", "bm25"] if scaled else ["hybrid", "bm25"]
async def main():
    async with MemoryStore(folder + "/workspace") as store:
        await store.refresh_index()
        for _ in range(3):
            await store.search_memories("warm up query", limit=5, days=None, mode="hybrid")
        times = {v: [] for v in variants}
        for q in asked:
            for v in variants:
                if scaled:
                    semantic.VectorRetriever.neighbours = v == "hybrid"
                semantic._query_vector.cache_clear()
                start = time.perf_counter()
                await store.search_memories(q, limit=5, days=None, mode=v.split()[0])
                times[v].append((time.perf_counter() - start) * 1000)
    print(json.dumps({v: statistics.median(t) for v, t in times.items()}))
asyncio.run(main())
"""


def warm(trees: dict[str, tuple[Path, Path]], n: int) -> None:
    asked = json.dumps(queries(n))
    for tree, (repo, folder) in trees.items():
        out = subprocess.run([sys.executable, "-c", _WARM, str(folder), asked], check=True,
                             env=environment(repo, folder), cwd=repo, capture_output=True,
                             text=True)
        for variant, p50 in json.loads(out.stdout.splitlines()[-1]).items():
            print(f"{tree:>8} {variant:<30} wall p50 {p50:5.1f} ms")
    print(f"{n} queries, load average {os.getloadavg()[0]:.1f} at the end")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["cli", "warm"])
    ap.add_argument("folder", type=Path, help="this tree's L folder (semantic.py --keep DIR)")
    ap.add_argument("--other", nargs=2, metavar=("CHECKOUT", "FOLDER"), type=Path,
                    help="another checkout of miniclaw and its own L folder")
    ap.add_argument("--runs", type=int, default=15, help="cli: rounds (default 15)")
    ap.add_argument("--modes", default="hybrid,bm25", help="cli: modes (default hybrid,bm25)")
    ap.add_argument("--queries", type=int, default=100, help="warm: queries (default 100)")
    args = ap.parse_args()
    trees = {"this": (REPO, args.folder.resolve())}
    if args.other:
        trees["other"] = (args.other[0].resolve(), args.other[1].resolve())
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(repo / "miniclaw")
                    for repo, _ in trees.values())], check=True, stdout=subprocess.DEVNULL)
    if args.what == "cli":
        cli(trees, args.runs, args.modes.split(","))
    else:
        warm(trees, args.queries)


if __name__ == "__main__":
    main()
