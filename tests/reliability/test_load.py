"""Load: 8 writers (CLI and API, long-term and daily) against 4 searchers and a rebuilder.

Writers 0-3 send every 7th of their entries through the CLI (`python -m miniclaw memory
add`, one process per entry) and the rest through the API in the same process; writers 4-7
use the API only. Each writes 200 entries, alternating MEMORY.md and today's note. Meanwhile
two processes loop on `memory rank --json`, two loop on `search_memories` (one reusing a
store, one opening a new store each time), and one loops on `memory index --rebuild`.

Afterwards every entry must be in its file exactly once (read back through the API and found
by a regular expression over the raw bytes), in its writer's order, every file must parse,
and every search and rebuild during the run must have succeeded with a valid result: no
crash, no traceback, no "database is locked".
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import textwrap
from collections import Counter

import pytest

from miniclaw.memory import MemoryStore
from miniclaw.entries.parsing import parse_daily_note, parse_long_term
from miniclaw.sources.base import daily_note_date
from tests.reliability.support import PYTHON, REPO, cli, memory_files, search_both

WRITERS = 8
CLI_WRITERS = 4  # writers 0..3 mix CLI and API
ENTRIES = 200  # per writer
CLI_EVERY = 7  # in a CLI writer, entries n with n % CLI_EVERY == 0 go through the CLI (odd:
# so that both MEMORY.md and the daily note get CLI writes)
API_PACE_S = 0.06  # API-only writers pause between entries so they overlap the CLI writers
MARK = re.compile(rb"\bmark(\d+)q(\d+)x\b")

WRITER = textwrap.dedent(r"""
    import asyncio, json, os, subprocess, sys, time
    from miniclaw.memory import MemoryStore

    ws, w, total, cli_every, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    pace = float(sys.argv[6])
    failures, cli_calls = [], 0

    async def main():
        global cli_calls
        async with MemoryStore(ws) as store:
            while not os.path.exists(go):
                time.sleep(0.005)
            for n in range(total):
                text = f"load entry w{w} n{n} mark{w}q{n}x"
                long = n % 2 == 0
                if cli_every and n % cli_every == 0:
                    args = [sys.executable, "-m", "miniclaw", "--workspace", ws, "memory", "add", text]
                    done = subprocess.run(args + (["--long"] if long else []), capture_output=True,
                                          text=True, timeout=300)
                    cli_calls += 1
                    if done.returncode != 0 or done.stderr.strip() or not done.stdout.startswith("Added to"):
                        failures.append(f"cli add n={n}: rc={done.returncode} out={done.stdout!r} err={done.stderr!r}")
                else:
                    try:
                        entry = await (store.add_long_term(text) if long else store.add_daily_note(text))
                    except Exception as exc:
                        failures.append(f"api add n={n}: {exc!r}")
                        continue
                    if entry is None or entry.text != text:
                        failures.append(f"api add n={n} returned {entry!r}")
                    if not cli_every:
                        await asyncio.sleep(pace)  # spread API writes over the whole run

    asyncio.run(main())
    print(json.dumps({"cli_calls": cli_calls, "failures": failures}))
""")

CLI_SEARCHER = textwrap.dedent(r"""
    import json, os, subprocess, sys
    ws, me, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    queries = ["load entry", "mark1q10x", '"load entry" w3', "entry -w2", "mark*", "lod entri"]
    runs, failures = 0, []
    while not os.path.exists(stop) or runs == 0:
        q = queries[(runs + me) % len(queries)]
        done = subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", ws, "memory", "rank",
                               f"--query={q}", "--json", "--all", "-n", "10"],
                              capture_output=True, text=True, timeout=300)
        runs += 1
        try:
            data = json.loads(done.stdout)
            ok = isinstance(data["results"], list) and all(isinstance(h["content"], str) for h in data["results"])
        except Exception as exc:
            ok = False
        if done.returncode != 0 or not ok or done.stderr.strip():
            failures.append(f"rank {q!r}: rc={done.returncode} out={done.stdout[:300]!r} err={done.stderr!r}")
    print(json.dumps({"runs": runs, "failures": failures}))
""")

API_SEARCHER = textwrap.dedent(r"""
    import asyncio, json, os, sys
    from miniclaw.memory import MemoryStore, RankedMemory
    ws, me, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    queries = ["load entry", "mark2q20x", "w5 entry", "+load -w1 entry", "entr*"]
    runs, failures = 0, []

    async def once(store, q):
        hits = await store.search_memories(q, limit=10, days=None)
        assert isinstance(hits, list) and all(isinstance(h, RankedMemory) for h in hits), hits
        assert len(hits) <= 10
        scores = [round(h.score, 9) for h in hits]  # ties within 1e-9 go newest first
        assert scores == sorted(scores, reverse=True), scores

    async def main():
        global runs
        shared = MemoryStore(ws)
        try:
            while not os.path.exists(stop) or runs == 0:
                q = queries[runs % len(queries)]
                try:
                    if me == 0:
                        await once(shared, q)  # one store, many searches (the watch path)
                    else:
                        async with MemoryStore(ws) as store:  # a new connection every time
                            await once(store, q)
                except Exception as exc:
                    failures.append(f"search {q!r}: {exc!r}")
                runs += 1
                await asyncio.sleep(0.01)
        finally:
            shared.close()

    asyncio.run(main())
    print(json.dumps({"runs": runs, "failures": failures}))
""")

REBUILDER = textwrap.dedent(r"""
    import json, os, subprocess, sys
    ws, stop = sys.argv[1], sys.argv[2]
    runs, failures = 0, []
    while not os.path.exists(stop) or runs == 0:
        done = subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", ws, "memory", "index",
                               "--rebuild"], capture_output=True, text=True, timeout=300)
        runs += 1
        if done.returncode != 0 or done.stderr.strip() or not done.stdout.startswith("Indexed"):
            failures.append(f"rebuild: rc={done.returncode} out={done.stdout!r} err={done.stderr!r}")
    print(json.dumps({"runs": runs, "failures": failures}))
""")


def _start(script: str, env, *args) -> subprocess.Popen:
    return subprocess.Popen([PYTHON, "-c", script, *map(str, args)], env=env, cwd=str(REPO),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(proc: subprocess.Popen, timeout: float = 400) -> tuple[int, dict, str]:
    out, err = proc.communicate(timeout=timeout)
    err_text = err.decode("utf-8", "replace")
    try:
        summary = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        summary = {"failures": [f"no summary: stdout={out[-500:]!r}"]}
    return proc.returncode, summary, err_text


@pytest.mark.slow
def test_writers_searchers_and_a_rebuilder_at_once_lose_nothing(tmp_path, env):
    ws = tmp_path / "ws"
    assert cli(env, "--workspace", str(ws), "init").returncode == 0
    go, stop = tmp_path / "go", tmp_path / "stop"

    others = [_start(CLI_SEARCHER, env, ws, i, stop) for i in range(2)]
    others += [_start(API_SEARCHER, env, ws, i, stop) for i in range(2)]
    others.append(_start(REBUILDER, env, ws, stop))
    writers = [_start(WRITER, env, ws, w, ENTRIES, CLI_EVERY if w < CLI_WRITERS else 0, go, API_PACE_S)
               for w in range(WRITERS)]
    go.touch()
    try:
        writer_results = [_finish(p) for p in writers]
    finally:
        stop.touch()
        other_results = [_finish(p) for p in others]

    report = {"writers": [r[1] for r in writer_results], "others": [r[1] for r in other_results]}
    (tmp_path / "load-report.json").write_text(json.dumps(report, indent=1))
    for code, summary, err in writer_results + other_results:
        assert "database is locked" not in err and "Traceback" not in err, err
        assert code == 0 and not err.strip(), err
        assert summary["failures"] == [], summary["failures"][:3]
        assert "database is locked" not in json.dumps(summary)
    assert sum(r[1]["cli_calls"] for r in writer_results) == CLI_WRITERS * len(range(0, ENTRIES, CLI_EVERY))
    for code, summary, err in other_results:
        assert summary["runs"] >= 1
    print("\nload:", {"cli_calls": [r[1]["cli_calls"] for r in writer_results],
                      "search_runs": [r[1]["runs"] for r in other_results[:4]],
                      "rebuilds": other_results[4][1]["runs"]})

    expected_long = Counter(f"load entry w{w} n{n} mark{w}q{n}x"
                            for w in range(WRITERS) for n in range(0, ENTRIES, 2))
    expected_daily = Counter(f"load entry w{w} n{n} mark{w}q{n}x"
                             for w in range(WRITERS) for n in range(1, ENTRIES, 2))

    # Read back through the API: every entry exactly once, in the right store.
    async def read_back():
        async with MemoryStore(ws) as store:
            long_entries = await store.read_long_term()
            daily_entries = []
            for path in memory_files(ws):
                day = daily_note_date(path.name)
                if day is not None:
                    daily_entries += await store.read_day(day)
            return long_entries, daily_entries

    long_entries, daily_entries = asyncio.run(read_back())
    assert Counter(e.text for e in long_entries) == expected_long
    assert Counter(e.text for e in daily_entries) == expected_daily

    # And by grepping the raw bytes: each mark once, MEMORY.md for even n, notes for odd n.
    seen: Counter = Counter()
    for path in memory_files(ws):
        for w, n in MARK.findall(path.read_bytes()):
            seen[(int(w), int(n))] += 1
            assert (int(n) % 2 == 0) == (path.name == "MEMORY.md"), (path.name, w, n)
    assert seen == Counter({(w, n): 1 for w in range(WRITERS) for n in range(ENTRIES)})

    # Every file parses on its own; each writer's entries are in the order it wrote them.
    names = sorted(p.name for p in (ws / "memory").iterdir())
    assert names == [p.name for p in memory_files(ws)], names  # no temp or stray files
    for path in memory_files(ws):
        text = path.read_text(encoding="utf-8")
        rel = f"memory/{path.name}"
        if path.name == "MEMORY.md":
            entries = parse_long_term(text, rel)
            headers = re.findall(r"^## (\S+)$", text, re.M)
            assert len(headers) == len(set(headers)), headers  # one header per day
        else:
            entries = parse_daily_note(text, rel, daily_note_date(path.name))
            assert text.count("# Daily Note") == 1
        assert len(entries) == sum(1 for _ in MARK.finditer(path.read_bytes()))
        for w in range(WRITERS):
            order = [int(e.text.split()[3][1:]) for e in entries if e.text.split()[2] == f"w{w}"]
            assert order == sorted(order), (path.name, w)

    # The shared index, after all that, answers exactly like a brand-new one.
    for query in ("load entry", "mark3q7x", "mark6q100x", "w4 n11"):
        shared, fresh = asyncio.run(search_both(ws, tmp_path / "fresh.sqlite3", query,
                                                limit=20, days=None))
        assert shared == fresh, query


def test_a_search_that_another_process_updates_the_index_under_does_not_fail(tmp_path, env, monkeypatch):
    """The load test's rare failure, made deterministic: another process commits an index
    update while a search is between two of its statements (after reading the corpus totals,
    before the document frequencies). Real files, a real subprocess, a real SQLite file; the
    only hook is a trace callback saying when the search has reached that point."""
    from miniclaw.index import database as database_module

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    lines = ["# Memory", "", "## 2026-11-20"] + [f"- load entry w{i % 8} n{i}" for i in range(200)]
    (ws / "memory/MEMORY.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert cli(env, "--workspace", str(ws), "memory", "index").returncode == 0
    others: list = []
    connect = database_module.IndexDatabase._connect_checked

    def traced(self):
        conn = connect(self)

        def trace(sql: str) -> None:
            if sql.startswith("SELECT t.term, SUM(b.n) FROM terms t JOIN blocks b") and not others:
                with open(ws / "memory/MEMORY.md", "a", encoding="utf-8") as handle:
                    handle.write("".join(f"- load entry extra {i}\n" for i in range(300)))
                others.append(cli(env, "--workspace", str(ws), "memory", "index"))
        conn.set_trace_callback(trace)
        return conn

    monkeypatch.setattr(database_module.IndexDatabase, "_connect_checked", traced)

    async def search():
        async with MemoryStore(ws) as store:
            return await store.search_memories("+load -w1 entry", limit=10, days=None)

    hits = asyncio.run(search())
    assert others and others[0].returncode == 0, others  # the other process did commit
    assert 0 < len(hits) <= 10
    assert all(h.content.startswith("load entry") and "w1" not in h.content for h in hits)
