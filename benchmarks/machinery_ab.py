"""What each speed device saves a user, measured side by side in one run on L.

A second checkout (`--ab`) holds switches, in its own copy only, that turn one device off
each (environment variables `MC_AB_NO*`: the fork of the query's child, the collector's
freeze and raised threshold, `os._exit`, the int8 query graph, the ASCII WordPiece, the
parse workers); with no switch set it runs as this tree. The variants run alternated, in
an order rotated each round, each query new to every process.

- `cli`: one-shot `memory rank Q --all --mode M` per variant and mode, and a bare
  `python -c "import typer, asyncio"`: medians of wall and CPU time.
- `mcp`: `miniclaw mcp` started per variant, the time to its first search's answer.
- `warm`: a long-lived process, the query's embedding by the int8 graph and by the float
  one alternated (what a warm hybrid search spends on it); and warm bm25 searches by two
  stores, one with the inotify watch and one refreshing by stat, alternated.
- `build`: a first build of a folder's index (no vectors; XL: L is under the 8 MB that starts them) with and without the parse workers.

The switches are `machinery_ab.patch` (on 67eb808: `git worktree add AB 67eb808 && git -C AB
apply machinery_ab.patch`); variant "before" (`--before CHECKOUT`) runs another tree as it is.

Run (from the repo root; DIR made by `semantic.py --speed L --keep DIR`, AB the checkout):
  .venv/bin/python benchmarks/machinery_ab.py cli DIR --ab AB [--rounds 20] [--variants typer,nogc]
  .venv/bin/python benchmarks/machinery_ab.py cli DIR --ab . --before OLD --variants typer,before
  .venv/bin/python benchmarks/machinery_ab.py warm|mcp DIR --ab AB [--rounds N]
  .venv/bin/python benchmarks/machinery_ab.py build XLDIR --ab AB [--rounds 6]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

CLI_CASES = [("typer", None), ("base", "hybrid"), ("base", "bm25"), ("nofork", "hybrid"),
             ("nofreeze", "hybrid"), ("nofreeze", "bm25"), ("nothresh", "hybrid"),
             ("nothresh", "bm25"), ("noexit", "hybrid"), ("noexit", "bm25"),
             ("noint8", "hybrid"), ("noascii", "hybrid"), ("freezeonly", "hybrid"),
             ("freezeonly", "bm25"), ("nostartup", "hybrid"), ("nostartup", "bm25"),
             ("noneofthem", "hybrid"), ("noneofthem", "bm25")]
SWITCHES = {"base": [], "nofork": ["NOFORK"], "nofreeze": ["NOFREEZE"],
            "nothresh": ["NOTHRESH"], "noexit": ["NOEXIT"], "noint8": ["NOINT8"],
            "noascii": ["NOASCII"], "freezeonly": ["NOTHRESH", "NOEXIT"],
            "nostartup": ["NOFREEZE", "NOTHRESH", "NOEXIT"], "nogc": ["NOFREEZE", "NOTHRESH"],
            "noneofthem": ["NOFORK", "NOFREEZE", "NOTHRESH", "NOEXIT", "NOINT8", "NOASCII"],
            "typer": [], "before": []}
BEFORE: list[Path] = []  # `--before CHECKOUT`: variant "before" runs that tree


def env_for(ab: Path, folder: Path, variant: str) -> dict[str, str]:
    ab = BEFORE[0] if variant == "before" else ab
    env = {k: v for k, v in os.environ.items() if not k.startswith("MC_AB_")}
    env.update({"PYTHONPATH": str(ab), "MINICLAW_INDEX": str(folder / "index.sqlite3"),
                "XDG_CACHE_HOME": str(folder / "c"), "HOME": str(folder / "home"),
                "MINICLAW_HOME": str(folder / "home" / ".miniclaw")})
    env.update({f"MC_AB_{s}": "1" for s in SWITCHES[variant]})
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run(ab: Path, folder: Path, variant: str, mode: str | None, query: str) -> tuple[float, float]:
    if mode is None:
        cmd = [sys.executable, "-c", "import typer, asyncio"]
    else:
        cmd = [sys.executable, "-m", "miniclaw", "--workspace", str(folder / "workspace"),
               "memory", "rank", query, "--all", "--mode", mode]
    start = time.perf_counter()
    child = subprocess.Popen(cmd, env=env_for(ab, folder, variant),
                             cwd=BEFORE[0] if variant == "before" else ab,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    if status:
        sys.exit(f"{variant} {mode}: exit {status}: {child.stderr.read().decode()[-500:]}")
    return (time.perf_counter() - start) * 1000, (usage.ru_utime + usage.ru_stime) * 1000


def cli(ab: Path, folder: Path, rounds: int, only: list[str] | None = None) -> None:
    from hybrid_ab import queries

    cases = [c for c in CLI_CASES if not only or c[0] in only or c[0] == "base"]
    cases += [(v, m) for v in (only or []) if v not in {c[0] for c in CLI_CASES}
              for m in ("hybrid", "bm25")]

    asked = queries(rounds + 1)
    for variant, mode in cases:  # graphs saved, byte-code warm
        run(ab, folder, variant, mode, asked[0])
    times: dict = {case: [] for case in cases}
    for i in range(rounds):
        k = i % len(cases)
        for case in cases[k:] + cases[:k]:
            times[case].append(run(ab, folder, *case, asked[1 + i]))
    base = {mode: statistics.median(m[0] for m in times[("base", mode)])
            for mode in ("hybrid", "bm25")}
    for (variant, mode), measured in times.items():
        wall = statistics.median(m[0] for m in measured)
        ratio = f"  x{wall / base[mode]:.3f} of base" if mode else ""
        print(f"{variant:>10} {mode or '-':<7} wall p50 {wall:5.0f} ms   CPU p50 "
              f"{statistics.median(m[1] for m in measured):5.0f} ms{ratio}")
    print(f"{rounds} rounds, load average {os.getloadavg()} at the end")


def mcp(ab: Path, folder: Path, rounds: int) -> None:
    import mcp_speed as ms
    from hybrid_ab import queries

    asked = queries(rounds + 1)
    variants = ["base", "nofreeze"]
    got: dict[tuple[str, str], list[float]] = {}
    for i in range(rounds):
        for variant in variants[i % 2:] + variants[:i % 2]:
            for mode in ("hybrid", "bm25"):
                env = env_for(ab, folder, variant)
                start = time.perf_counter()
                proc = ms._start(folder / "workspace", env, mode)
                proc.stdin.write(ms._opening() + ms._search(2, asked[i]))
                proc.stdin.flush()
                ms._answer(proc, 2)
                got.setdefault((variant, mode), []).append((time.perf_counter() - start) * 1000)
                ms._stop(proc)
    for (variant, mode), t in got.items():
        print(f"mcp first answer {variant:>9} {mode:<7} p50 {statistics.median(t):5.0f} ms")
    print(f"{rounds} rounds, load average {os.getloadavg()} at the end")


_WARM = """
import asyncio, json, os, statistics, sys, time
from miniclaw.memory import MemoryStore, embedding
folder, asked = sys.argv[1], json.loads(sys.argv[2])
int8 = embedding.Embedder()
os.environ["MC_AB_NOINT8"] = "1"
plain = embedding.Embedder()
t = {"int8 query graph": [], "float graph": []}
for q in asked:
    for name, e in (("int8 query graph", int8), ("float graph", plain)):
        s = time.perf_counter(); e.embed_query(q); t[name].append((time.perf_counter() - s) * 1000)
async def main():
    from miniclaw.memory.scoring import semantic
    stores = {}
    for name, watch in (("bm25, inotify watch", "1"), ("bm25, stat refresh", "0")):
        os.environ["MINICLAW_WATCH"] = watch  # read when the store's index opens
        stores[name] = s = MemoryStore(folder + "/workspace")
        await s.__aenter__()
        for _ in range(3):
            await s.search_memories("warm up query", limit=5, days=None, mode="bm25")
    t.update({name: [] for name in stores}, **{"hybrid (int8 query graph)": []})
    for q in asked:
        for name, s in stores.items():
            st = time.perf_counter()
            await s.search_memories(q, limit=5, days=None, mode="bm25")
            t[name].append((time.perf_counter() - st) * 1000)
        semantic._query_vector.cache_clear()
        st = time.perf_counter()
        await stores["bm25, inotify watch"].search_memories(q, limit=5, days=None, mode="hybrid")
        t["hybrid (int8 query graph)"].append((time.perf_counter() - st) * 1000)
    print(json.dumps({k: statistics.median(v) for k, v in t.items()}))
asyncio.run(main())
"""


def warm(ab: Path, folder: Path, n: int) -> None:
    from hybrid_ab import queries

    out = subprocess.run([sys.executable, "-c", _WARM, str(folder), json.dumps(queries(n))],
                         env=env_for(ab, folder, "base"), cwd=ab, capture_output=True, text=True)
    if out.returncode:
        sys.exit(out.stderr[-2000:])
    for name, p50 in json.loads(out.stdout.splitlines()[-1]).items():
        print(f"warm {name:<22} p50 {p50:6.2f} ms")
    print(f"{n} queries, load average {os.getloadavg()} at the end")


_BUILD = """
import asyncio, sys
from miniclaw.memory import MemoryStore
async def main():
    async with MemoryStore(sys.argv[1]) as store:
        await store.refresh_index()
asyncio.run(main())
"""


def build(ab: Path, folder: Path, rounds: int) -> None:
    got: dict[str, list[float]] = {"workers": [], "one process": []}
    with tempfile.TemporaryDirectory(prefix="mach-build-") as tmp:
        for i in range(rounds):
            for name in (["workers", "one process"] if i % 2 == 0 else ["one process", "workers"]):
                index = Path(tmp) / "index.sqlite3"
                for p in Path(tmp).glob("index.sqlite3*"):
                    p.unlink()
                env = env_for(ab, folder, "base")
                env["MINICLAW_INDEX"] = str(index)
                if name == "one process":
                    env["MC_AB_NOWORKERS"] = "1"
                start = time.perf_counter()
                subprocess.run([sys.executable, "-c", _BUILD, str(folder / "workspace")],
                               env=env, cwd=ab, check=True, capture_output=True)
                got[name].append(time.perf_counter() - start)
    for name, t in got.items():
        print(f"first build, {name:<12} p50 {statistics.median(t):5.2f} s  ({len(t)} runs)")
    print(f"load average {os.getloadavg()} at the end")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["cli", "mcp", "warm", "build"])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--ab", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--before", type=Path, help="cli: another checkout, variant 'before'")
    ap.add_argument("--variants", help="cli: only these variants (comma-separated), and base")
    args = ap.parse_args()
    ab, folder = args.ab.resolve(), args.folder.resolve()
    BEFORE.extend([args.before.resolve()] if args.before else [])
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ab / "miniclaw")], check=True,
                   stdout=subprocess.DEVNULL)
    if args.what == "cli":
        cli(ab, folder, args.rounds, args.variants.split(",") if args.variants else None)
    else:
        {"mcp": mcp, "warm": warm, "build": build}[args.what](ab, folder, args.rounds)


if __name__ == "__main__":
    main()
