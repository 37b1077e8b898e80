"""Speed of `miniclaw mcp` on the L workspace of `search_speed.py` (built the same way).

It prints, after building the index once:
  library p50   warm p50 of `search_memories(q, limit=5, days=None)` in this process (the
                figure of search_speed.py's "warm p50 ms"), alternated with the server's calls
  first answer  median over RUNS server starts of the wall time from spawning
                `miniclaw --workspace WS mcp` to the answer of its first search (initialize,
                initialized and a tools/call written at once on stdin); and to the answer of
                `initialize` alone
  sdk import    median wall time of `python -c "import mcp.server.lowlevel, mcp.server.stdio"`,
                the floor of any server on the official SDK (alternated with the starts)
  import CPU    median CPU seconds (user + system, so less sensitive to a loaded machine than
                wall time) of a bare `python -c pass`, of importing what the server needs of
                miniclaw (the CLI, the tools, the store), of the SDK's protocol types alone
                (`mcp_types.methods`: the pydantic models any server on the SDK parses every
                message with) and of the SDK's server modules: where the first answer's time goes
  mcp warm p50  p50/p95 of a search_memory call through the server, same queries, after one
                warm-up call: a line written on stdin to its answer read on stdout (no client
                library in the way), and its ratio to the library p50

Run (from the repo root): .venv/bin/python benchmarks/mcp_speed.py [--size L] [--queries 200] [--mode bm25]
Nothing touches the real home: the index and the cache are in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_speed import SEED, SIZES, Writer, generate, pct  # noqa: E402

from miniclaw.memory import MemoryStore  # noqa: E402

RUNS = 7
HANDSHAKE = "2025-11-25"


def _request(n: int, method: str, params: dict) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n"


def _search(n: int, query: str) -> str:
    return _request(n, "tools/call", {"name": "search_memory",
                                      "arguments": {"query": query, "limit": 5}})


def _start(ws: Path, env: dict, mode: str) -> subprocess.Popen:
    cmd = [str(Path(sys.executable).parent / "miniclaw"), "--workspace", str(ws), "mcp",
           "--mode", mode]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, bufsize=1, env=env)


def _opening() -> str:
    return (_request(1, "initialize", {"protocolVersion": HANDSHAKE, "capabilities": {},
                                       "clientInfo": {"name": "bench", "version": "1"}})
            + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")


def _answer(proc: subprocess.Popen, n: int) -> dict:
    while True:
        message = json.loads(proc.stdout.readline())
        if message.get("id") == n:
            if "error" in message or message["result"].get("isError"):
                raise RuntimeError(f"the server failed: {message}")
            return message


def _stop(proc: subprocess.Popen) -> None:
    proc.stdin.close()
    proc.wait(timeout=60)
    proc.stdout.close()


def first_answers(ws: Path, env: dict, query: str, mode: str) -> tuple[float, float, float]:
    """(seconds to the initialize answer, to the first search's answer, to import the SDK
    in a bare process), medians."""
    to_init, to_search, sdk = [], [], []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import mcp.server.lowlevel, mcp.server.stdio"],
                       check=True, env=env)
        sdk.append(time.perf_counter() - start)
        start = time.perf_counter()
        proc = _start(ws, env, mode)
        proc.stdin.write(_opening() + _search(2, query))
        proc.stdin.flush()
        _answer(proc, 1)
        to_init.append(time.perf_counter() - start)
        _answer(proc, 2)
        to_search.append(time.perf_counter() - start)
        _stop(proc)
    return statistics.median(to_init), statistics.median(to_search), statistics.median(sdk)


IMPORTS = {"python": "pass",
           "miniclaw": "import miniclaw.cli, miniclaw.memory_tools, miniclaw.store.store",
           "protocol types": "import mcp_types.methods",
           "SDK server": "import mcp.server.lowlevel, mcp.server.stdio"}


def import_cpu(env: dict) -> dict[str, float]:
    """Median CPU seconds of each of IMPORTS in a fresh process, the kinds alternated."""
    spent: dict[str, list[float]] = {name: [] for name in IMPORTS}
    for _ in range(RUNS):
        for name, code in IMPORTS.items():
            before = os.times()
            subprocess.run([sys.executable, "-c", code], check=True, env=env)
            after = os.times()
            spent[name].append(after.children_user + after.children_system
                               - before.children_user - before.children_system)
    return {name: statistics.median(seconds) for name, seconds in spent.items()}


async def warm_pairs(store: MemoryStore, ws: Path, env: dict, queries: list[str],
                     mode: str) -> tuple[list[float], list[float]]:
    """Seconds of each query in this process's store and through the server, alternated
    (library, then server, same query), so that both see the same load on a noisy machine."""
    proc = _start(ws, env, mode)
    proc.stdin.write(_opening() + _search(2, "warm up query"))
    proc.stdin.flush()
    _answer(proc, 2)
    await store.search_memories("warm up query", limit=5, days=None, mode=mode)
    library, served = [], []
    for n, query in enumerate(queries, 3):
        start = time.perf_counter()
        await store.search_memories(query, limit=5, days=None, mode=mode)
        library.append(time.perf_counter() - start)
        start = time.perf_counter()
        proc.stdin.write(_search(n, query))
        proc.stdin.flush()
        _answer(proc, n)
        served.append(time.perf_counter() - start)
    _stop(proc)
    return library, served


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="L", choices=sorted(SIZES))
    ap.add_argument("--queries", type=int, default=200)
    # bm25 by default, the library's default; the server's own is `auto` (hybrid where the
    # model is installed), which on this fresh index embeds 32 texts a search
    ap.add_argument("--mode", default="bm25", help="both sides' search mode (default bm25; a "
                    "semantic one embeds the fresh index's texts as it searches)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="miniclaw-mcp-speed-") as tmp:
        base = Path(tmp)
        ws = base / "workspace"
        env = {**os.environ, "HOME": str(base), "XDG_CACHE_HOME": str(base / "cache"),
               "MINICLAW_INDEX": str(base / "index.sqlite3")}
        os.environ.update(MINICLAW_INDEX=env["MINICLAW_INDEX"], XDG_CACHE_HOME=env["XDG_CACHE_HOME"])
        writer = Writer(SEED)
        generate(ws, writer, *SIZES[args.size])
        queries = [writer.query() for _ in range(args.queries)]
        async with MemoryStore(ws) as store:
            await store.rebuild_index()
            time.sleep(2.1)  # files written under 2 s ago are re-checked by every search
            to_init, to_search, sdk = first_answers(ws, env, queries[0], args.mode)
            cpu = import_cpu(env)
            alone, served = await warm_pairs(store, ws, env, queries, args.mode)
    library = pct(alone, 0.5)
    p50, p95 = pct(served, 0.5), pct(served, 0.95)
    print(f"| {args.size} | library warm p50 {library * 1e3:.2f} ms | first answer "
          f"{to_search * 1e3:.0f} ms (initialize {to_init * 1e3:.0f} ms; SDK import alone "
          f"{sdk * 1e3:.0f} ms) | mcp warm p50 "
          f"{p50 * 1e3:.2f} ms, p95 {p95 * 1e3:.2f} ms | mcp/library {p50 / library:.2f} |")
    print("import CPU (median s): " + ", ".join(f"{name} {seconds:.2f}"
                                                 for name, seconds in cpu.items()))


if __name__ == "__main__":
    asyncio.run(main())
