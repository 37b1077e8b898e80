"""CLI rank on the L workspace with and without the three fixture stores (ConKeeper,
mnemonic, EF Memory) configured beside it, against `python -c "import typer, asyncio"`
(issue 14's speed target: within 1.3x).

search_speed.py's method: its L generator, indexes built first, then the three commands
alternated RUNS times (`memory rank -q Q --all`, Q cycling over its first 15 warm queries)
and the medians compared, of wall and of CPU time. The stores are the repository's fixtures
(tests/fixtures/formats/), copied.

Run (from the repo root): .venv/bin/python benchmarks/sources_speed.py [RUNS] [--keep DIR]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.search_speed import SEED, SIZES, Writer, generate, timed_run  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "formats"
#: (kind, fixture folder, where it goes under the benchmark's HOME)
STORES = [("conkeeper", "conkeeper/project/.claude/memory", "code/app/.claude/memory"),
          ("mnemonic", "mnemonic/home/.claude/mnemonic", ".claude/mnemonic"),
          ("ef_memory", "efm/project", "code/efm")]


def main(base: Path, runs: int) -> None:
    ws, home = base / "workspace", base / "home"
    if not ws.exists():
        home.mkdir(parents=True, exist_ok=True)
        generate(ws, Writer(SEED), *SIZES["L"])
        for _kind, fixture, where in STORES:
            shutil.copytree(FIXTURES / fixture, home / where, copy_function=shutil.copy)
    writer = Writer(SEED)
    queries = [writer.query() for _ in range(15)]
    common = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(base / "cache")}
    plain = {**common, "MINICLAW_HOME": str(base / "plain"),
             "MINICLAW_INDEX": str(base / "plain.sqlite3")}
    with_store = {**common, "MINICLAW_HOME": str(home / ".miniclaw"),
                  "MINICLAW_INDEX": str(base / "stores.sqlite3")}
    (base / "plain").mkdir(exist_ok=True)
    (home / ".miniclaw").mkdir(exist_ok=True)
    (home / ".miniclaw" / "config.json").write_text(json.dumps({"workspaces": {str(ws): {
        "sources": ["long_term", "daily_note"] + [
            {"kind": kind, "root": f"~/{where}", "name": kind} for kind, _f, where in STORES]}}}))
    cli = str(Path(sys.executable).parent / "miniclaw")

    def rank(query: str) -> list[str]:
        return [cli, "--workspace", str(ws), "memory", "rank", "-q", query, "--all"]

    for env in (plain, with_store):
        subprocess.run([cli, "--workspace", str(ws), "memory", "index"], env=env, check=True,
                       capture_output=True)
    time.sleep(2.1)  # past sync.RACY_NS: the runs measure an up-to-date index
    check = subprocess.run([cli, "--workspace", str(ws), "sources", "list", "--json"],
                           env=with_store, capture_output=True, text=True)
    entries = {row["name"]: row["entries"] for row in json.loads(check.stdout)["sources"]}
    assert all(entries.get(kind) for kind, _f, _w in STORES), entries  # each store is indexed
    bare = [sys.executable, "-c", "import typer, asyncio"]
    times: dict[str, list[tuple[float, float]]] = {"L": [], "L+stores": [], "python": []}
    for i in range(runs):
        query = queries[i % len(queries)]
        for name, cmd, env in (("L", rank(query), plain), ("L+stores", rank(query), with_store),
                               ("python", bare, plain)):
            times[name].append(timed_run(cmd, env))
    for kind, part in (("wall", 0), ("CPU", 1)):
        ms = {name: statistics.median(t[part] for t in values) * 1e3
              for name, values in times.items()}
        print(f"{runs} runs, {kind} time: L rank {ms['L']:.0f} ms, L+stores {ms['L+stores']:.0f} "
              f"ms, python+typer {ms['python']:.0f} ms; L/python {ms['L'] / ms['python']:.2f}, "
              f"L+stores/python {ms['L+stores'] / ms['python']:.2f} "
              f"(load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="?", type=int, default=30, help="alternated runs of each command")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="generate into DIR and keep it")
    options = parser.parse_args()
    if options.keep:
        main(options.keep, options.runs)
    else:
        with tempfile.TemporaryDirectory(prefix="miniclaw-sources-speed-") as tmp:
            main(Path(tmp), options.runs)
