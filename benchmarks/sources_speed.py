"""CLI rank on the L workspace with and without the three fixture stores (ConKeeper,
mnemonic, EF Memory) configured beside it, against `python -c "import typer, asyncio"`
(issues 12 and 14: within 1.3x).

search_speed.py's L generator; each variant's indexes built first; then one round per run:
bare python, CLI rank on L, CLI rank on L + stores (`memory rank -q Q --all`, Q cycling
over several queries: search_speed's warm queries and a few that the stores answer), in an
order rotated each round, so that a slow spell of the shared machine falls on every command
alike. It prints the medians of wall time and of CPU time (user + system of the child,
which a loaded machine disturbs much less) and the ratios to bare python.

`--other CHECKOUT` (repeatable) runs another checkout of miniclaw alongside (A/B): the same
console script with PYTHONPATH=CHECKOUT, its own indexes, in the same rounds; its output is
compared with this tree's for every query ("same results"). Byte-code is compiled first
(`compileall`, also into CHECKOUT), as an installed package has it.

`--instructions` also counts each command's instructions under valgrind (cachegrind, user
space only, PYTHONHASHSEED=0): the same on a loaded machine as on a quiet one, so a change
of a few percent shows where medians of times cannot (a run takes ~10 s under valgrind).
The ratios are higher than CPU time's: the kernel's share (exec, page faults) is not counted.

Run (from the repo root), with `nice` on a shared machine:
  .venv/bin/python benchmarks/sources_speed.py [RUNS] [--keep DIR] [--other CHECKOUT] [--instructions]
  git archive 4f25097 | tar -x -C /tmp/base  # an older tree to compare with: --other /tmp/base
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks.search_speed import SEED, SIZES, Writer, generate, timed_run  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "formats"
#: (kind, fixture folder, where it goes under the benchmark's HOME)
STORES = [("conkeeper", "conkeeper/project/.claude/memory", "code/app/.claude/memory"),
          ("mnemonic", "mnemonic/home/.claude/mnemonic", ".claude/mnemonic"),
          ("ef_memory", "efm/project", "code/efm")]
#: Queries beside the generated ones: words of the stores and of L.
FIXED_QUERIES = ["budget review", "coffee with sam", "database migration", "api error handling",
                 "deploy"]


def prepare(base: Path) -> tuple[Path, Path]:
    """The L workspace and a HOME holding the three stores (kept when already there)."""
    ws, home = base / "workspace", base / "home"
    if not ws.exists():
        home.mkdir(parents=True, exist_ok=True)
        generate(ws, Writer(SEED), *SIZES["L"])
        for _kind, fixture, where in STORES:
            shutil.copytree(FIXTURES / fixture, home / where, copy_function=shutil.copy)
    for folder in ("plain", ".miniclaw"):
        (home / folder).mkdir(exist_ok=True)
    (home / ".miniclaw" / "config.json").write_text(json.dumps({"workspaces": {str(ws): {
        "sources": ["long_term", "daily_note"] + [
            {"kind": kind, "root": f"~/{where}", "name": kind} for kind, _f, where in STORES]}}}))
    return ws, home


def variants(base: Path, home: Path, others: list[Path]) -> dict[str, dict]:
    """Each tree's environment for L alone and for L + stores (its own index files)."""
    common = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(base / "cache")}
    common.pop("PYTHONPATH", None)
    trees = {"": common} | {f"{other.name}:": {**common, "PYTHONPATH": str(other)}
                             for other in others}
    found = {}
    for label, env in trees.items():
        tag = label.rstrip(":") or "this"
        found[f"{label}L"] = {**env, "MINICLAW_HOME": str(home / "plain"),
                              "MINICLAW_INDEX": str(base / f"{tag}-plain.sqlite3")}
        found[f"{label}L+stores"] = {**env, "MINICLAW_HOME": str(home / ".miniclaw"),
                                     "MINICLAW_INDEX": str(base / f"{tag}-stores.sqlite3")}
    return found


def instructions(cmd: list[str], env: dict) -> int:
    """Instructions one run of `cmd` executes (valgrind's cachegrind, `I refs`)."""
    import re

    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                           "--cachegrind-out-file=/dev/null", *cmd],
                          env={**env, "PYTHONHASHSEED": "0"}, capture_output=True, text=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or not found:
        raise RuntimeError(f"valgrind failed ({done.returncode}): {done.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def main(base: Path, runs: int, others: list[Path], count: bool = False) -> None:
    ws, home = prepare(base)
    for tree in [REPO, *others]:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "miniclaw")],
                       check=True, capture_output=True)
    writer = Writer(SEED)
    queries = [*FIXED_QUERIES, *(writer.query() for _ in range(15))]
    cli = str(Path(sys.executable).parent / "miniclaw")
    envs = variants(base, home, others)

    def rank(query: str) -> list[str]:
        return [cli, "--workspace", str(ws), "memory", "rank", "-q", query, "--all"]

    for env in envs.values():
        subprocess.run([cli, "--workspace", str(ws), "memory", "index"], env=env, check=True,
                       capture_output=True)
    time.sleep(2.1)  # past sync.RACY_NS: the runs measure an up-to-date index
    for name, env in envs.items():
        if name.endswith("+stores"):
            check = subprocess.run([cli, "--workspace", str(ws), "sources", "list", "--json"],
                                   env=env, capture_output=True, text=True, check=True)
            entries = {row["name"]: row["entries"] for row in json.loads(check.stdout)["sources"]}
            assert all(entries.get(kind) for kind, _f, _w in STORES), (name, entries)
    outputs: dict[tuple[str, str], str] = {}
    for name, env in envs.items():
        for query in queries:
            done = subprocess.run(rank(query), env=env, capture_output=True, text=True, check=True)
            outputs[name, query] = done.stdout + done.stderr
    same = {name: all(outputs[name, q] == outputs[name.split(":")[-1], q] for q in queries)
            for name in envs if ":" in name}

    commands = [("python", [sys.executable, "-c", "import typer, asyncio"], envs["L"])]
    commands += [(name, None, env) for name, env in envs.items()]
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _c, _e in commands}
    for i in range(runs):
        query = queries[i % len(queries)]
        shift = i % len(commands)
        for name, cmd, env in commands[shift:] + commands[:shift]:
            times[name].append(timed_run(cmd or rank(query), env))
    load = os.getloadavg()[0]
    print(f"{runs} rounds, {len(queries)} queries, load average {load:.1f} at the end")
    for kind, part in (("wall", 0), ("CPU", 1)):
        ms = {name: statistics.median(t[part] for t in values) * 1e3
              for name, values in times.items()}
        cells = ", ".join(f"{name} {value:.0f} ms ({value / ms['python']:.2f}x)"
                          for name, value in ms.items() if name != "python")
        print(f"{kind:>4}: python+typer {ms['python']:.0f} ms; {cells}")
    for name, ok in same.items():
        print(f"same results as this tree: {name} {'yes' if ok else 'NO'}")
    if count:
        bare = instructions(commands[0][1], commands[0][2])
        cells = []
        for name, _cmd, env in commands[1:]:
            mean = statistics.mean(instructions(rank(q), env) for q in queries[:3])
            cells.append(f"{name} {mean / 1e6:.0f} M ({mean / bare:.3f}x)")
        print(f"instructions (valgrind, mean of 3 queries): python+typer {bare / 1e6:.0f} M; "
              + ", ".join(cells))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="?", type=int, default=30, help="rounds of every command")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="generate into DIR and keep it")
    parser.add_argument("--other", type=Path, action="append", default=[], metavar="CHECKOUT",
                        help="another checkout of miniclaw to run alongside (repeatable)")
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions under valgrind (load-independent)")
    options = parser.parse_args()
    other_trees = [other.resolve() for other in options.other]
    if options.keep:
        main(options.keep, options.runs, other_trees, options.instructions)
    else:
        with tempfile.TemporaryDirectory(prefix="miniclaw-sources-speed-") as tmp:
            main(Path(tmp), options.runs, other_trees, options.instructions)
