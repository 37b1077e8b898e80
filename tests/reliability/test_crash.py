"""Crashes: writers and indexers killed with SIGKILL at random moments, many times.

A child process loops on `add_long_term` (or `add_daily_note`) and prints `written N`
(flushed) after each write returns; the test kills it after a random delay, then checks that
the memory file is the old content plus whole new entries (never a torn line), that every
entry reported written is there once and in order, that only the one write in flight may be
missing, and that no temporary file can be taken for a memory file. A second child runs
`memory index --rebuild` or `memory index` on a large-ish workspace and is killed part-way:
the next search must repair the index by itself and answer exactly like a brand-new index.
Delays come from a seeded generator, so each run kills at the same offsets (the work done
before a kill still varies with the machine's speed; the checks hold for any kill point).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import signal
import subprocess
import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from miniclaw.entries.parsing import parse_daily_note, parse_long_term
from miniclaw.sources.base import daily_note_date
from tests.reliability.support import (DAILY_NAME, PYTHON, REPO, bad_stderr_lines, cli,
                                       memory_files, rank_json, search_both)

pytestmark = pytest.mark.slow

WRITE_KILLS = 40  # kills of a MEMORY.md writer
DAILY_KILLS = 15  # kills of a daily-note writer
INDEX_KILLS = 15  # kills inside the index transaction (API child, after its k-th file)
RANDOM_INDEX_KILLS = 9  # kills of `memory index [--rebuild]` after a random delay
PREFILL = 3000  # entries already in MEMORY.md, so each insert rewrites ~250 KB

CHILD = textwrap.dedent(r"""
    import asyncio, sys
    from miniclaw.memory import MemoryStore

    ws, start, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]

    async def main():
        async with MemoryStore(ws) as store:
            print("ready", flush=True)
            n = start
            while True:
                text = f"crash entry {n} tok{n}z"
                if kind == "long":
                    await store.add_long_term(text)
                else:
                    await store.add_daily_note(text)
                print(f"written {n}", flush=True)
                n += 1

    asyncio.run(main())
""")

NEW_LONG_LINE = re.compile(r"^- crash entry (\d+) tok\1z \(added at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)$")
TEMP_NAME = re.compile(r"^\.(MEMORY\.md|\d{4}-\d\d-\d\d\.md)\.[^/]+\.tmp$")


def _today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


def _prefilled(ws: Path) -> None:
    (ws / "memory").mkdir(parents=True)
    day = datetime.now(timezone.utc).date() - timedelta(days=3)
    lines = ["# Memory", "", f"## {day.isoformat()}"]
    lines += [f"- older fact {i} about topic{i % 97} (added at {day.isoformat()}T08:00:00Z)"
              for i in range(PREFILL)]
    (ws / "memory/MEMORY.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _kill_after(env, ws: Path, start: int, kind: str, delay: float) -> list[int]:
    """Start a writer, let it run `delay` seconds after it is ready, SIGKILL it; the numbers
    it reported written."""
    # Unbuffered: `communicate` reads the raw pipe, so a buffered `readline` would swallow
    # the `written` lines that arrived with `ready`.
    proc = subprocess.Popen([PYTHON, "-c", CHILD, str(ws), str(start), kind], env=env,
                            cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            bufsize=0)
    first_write = b""
    try:
        first = proc.stdout.readline()
        assert first == b"ready\n", (first, proc.stderr.read())
        # The delay runs from the first write, so that on a loaded machine (a slow start) the
        # kill still lands among writes rather than before them.
        first_write = proc.stdout.readline()
        time.sleep(delay)
    finally:
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, err)
    assert not err.strip(), err  # killed, never failed on its own
    lines = (first_write + out).decode().splitlines()
    assert all(re.fullmatch(r"written \d+", line) for line in lines), lines[-3:]
    written = [int(line.split()[1]) for line in lines]
    assert written == list(range(start, start + len(written))), written
    return written


def _inserted_entries(old: str, new: str) -> list[int]:
    """The numbers of the entries `new` adds to `old`, checking that `new` is `old` with only
    whole lines inserted: entry lines, a new day's header and blank lines."""
    old_lines, new_lines = old.split("\n"), new.split("\n")
    pos, added = 0, []
    for line in new_lines:
        if pos < len(old_lines) and line == old_lines[pos]:
            pos += 1
            continue
        entry = NEW_LONG_LINE.match(line)
        assert entry or line == "" or re.fullmatch(r"## \d{4}-\d\d-\d\d", line), repr(line)
        if entry:
            added.append(int(entry.group(1)))
    assert pos == len(old_lines), "a line of the old MEMORY.md is missing or changed"
    return added


def _leftover_temp_files(ws: Path) -> list[str]:
    """Names in memory/ that are not memory files; they must all be hidden temp files."""
    odd = [p.name for p in (ws / "memory").iterdir()
           if p.name != "MEMORY.md" and not DAILY_NAME.match(p.name)]
    assert all(TEMP_NAME.match(name) for name in odd), odd
    return odd


def test_sigkill_during_memory_md_inserts_never_tears_or_loses_an_entry(tmp_path, env):
    ws = tmp_path / "ws"
    _prefilled(ws)
    path = ws / "memory/MEMORY.md"
    rng = random.Random(20260214)
    reported: list[int] = []  # every number any child said it wrote
    maybe: set[int] = set()  # the write in flight at each kill
    start = 0
    leftovers: set[str] = set()
    for kill in range(WRITE_KILLS):
        before = path.read_bytes()
        written = _kill_after(env, ws, start, "long", rng.uniform(0.0, 0.25))
        after = path.read_bytes()
        in_flight = start + len(written)
        reported += written
        maybe.add(in_flight)
        start = in_flight + 1

        # Old content plus whole new lines: no torn line, nothing of the old file lost.
        assert after.endswith(b"\n")
        got = _inserted_entries(before.decode("utf-8"), after.decode("utf-8"))
        assert got in (written, written + [in_flight]), (got, written, in_flight)

        # The file parses, and holds each reported entry exactly once, in order.
        entries = parse_long_term(after.decode("utf-8"), "memory/MEMORY.md")
        numbers = [int(e.text.split()[2]) for e in entries if e.text.startswith("crash entry")]
        assert numbers == sorted(set(numbers))
        assert set(reported) <= set(numbers) <= set(reported) | maybe
        assert len(entries) == PREFILL + len(numbers)
        leftovers |= set(_leftover_temp_files(ws))

        if kill % 8 == 7 or kill == WRITE_KILLS - 1:
            # The next search sees every reported entry and equals a brand-new index's.
            query = f"tok{reported[-1]}z" if reported else "crash entry"
            shared, fresh = asyncio.run(search_both(ws, tmp_path / "fresh.sqlite3", query,
                                                    limit=20, days=None))
            assert shared == fresh
            if reported:
                assert any(f"tok{reported[-1]}z" in key[3] for key in shared)
    assert len(reported) > WRITE_KILLS  # the kills did land among writes, not only before them
    print(f"\nMEMORY.md kills: {WRITE_KILLS}, entries reported written: {len(reported)}, "
          f"in-flight writes that landed: {len(set(numbers) - set(reported))}, "
          f"temp files left behind: {len(leftovers)}")


def test_sigkill_during_daily_note_appends_never_tears_or_loses_an_entry(tmp_path, env):
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    rng = random.Random(4242)
    reported: list[int] = []
    maybe: set[int] = set()
    start = 0
    for _ in range(DAILY_KILLS):
        written = _kill_after(env, ws, start, "daily", rng.uniform(0.0, 0.2))
        reported += written
        maybe.add(start + len(written))
        start += len(written) + 1
        numbers = []
        for path in memory_files(ws):
            raw = path.read_bytes()
            assert raw.endswith(b"\n")
            text = raw.decode("utf-8")
            assert text.count("# Daily Note") == 1
            # Every section is whole: header, blank, the entry's line, then a separator.
            sections = text.split("\n---\n")
            for section in sections:
                assert re.fullmatch(r"(# Daily Note - \S+\n\n)?\n?## \d\d:\d\d:\d\d UTC\n\n"
                                    r"crash entry (\d+) tok\2z\n", section), section
            entries = parse_daily_note(text, f"memory/{path.name}", daily_note_date(path.name))
            numbers += [int(e.text.split()[2]) for e in entries]
        assert numbers == sorted(set(numbers))
        assert set(reported) <= set(numbers) <= set(reported) | maybe
        _leftover_temp_files(ws)
    assert len(reported) > DAILY_KILLS
    shared, fresh = asyncio.run(search_both(ws, tmp_path / "fresh.sqlite3", f"tok{reported[-1]}z",
                                            limit=5, days=None))
    assert shared == fresh and shared


# -- index updates -----------------------------------------------------------------------------


def _large_workspace(ws: Path) -> None:
    today = datetime.now(timezone.utc).date()
    (ws / "memory").mkdir(parents=True)
    lines = ["# Memory", ""]
    for d in range(30):
        day = today - timedelta(days=60 - d)
        lines.append(f"## {day.isoformat()}")
        lines += [f"- fact {d}-{i} about topic{(d * 100 + i) % 211} and item{i % 37} "
                  f"(added at {day.isoformat()}T09:00:00Z)" for i in range(100)]
        lines.append("")
    (ws / "memory/MEMORY.md").write_text("\n".join(lines), encoding="utf-8")
    for d in range(20):
        day = today - timedelta(days=d)
        parts = [f"# Daily Note - {day.isoformat()}", ""]
        for i in range(60):
            parts += [f"## {i // 60 % 24:02d}:{i % 60:02d}:00 UTC", "",
                      f"note {d}-{i} on topic{(d * 60 + i) % 211} with item{i % 37}", "", "---", ""]
        (ws / f"memory/{day.isoformat()}.md").write_text("\n".join(parts[:-2]) + "\n", encoding="utf-8")


def _rank(env, ws: Path, query: str, **extra_env: str) -> dict:
    done = cli({**env, **extra_env}, "--workspace", str(ws), "memory", "rank", f"--query={query}",
               "--json", "--all", "-n", "20")
    assert done.returncode == 0, done.stderr
    assert bad_stderr_lines(done.stderr) == [], done.stderr
    assert "damaged" not in done.stderr, done.stderr  # a killed writer must not corrupt SQLite
    return rank_json(done.stdout)


INDEXER = textwrap.dedent(r"""
    import asyncio, sys
    from miniclaw.memory import MemoryStore

    ws, rebuild = sys.argv[1], sys.argv[2] == "rebuild"

    def progress(done, total):
        print(f"progress {done} {total}", flush=True)

    async def main():
        async with MemoryStore(ws) as store:
            print("ready", flush=True)
            await store.refresh_index(rebuild=rebuild, progress=progress)
            print("done", flush=True)

    asyncio.run(main())
""")


def test_sigkill_in_the_middle_of_an_index_transaction_is_repaired(tmp_path, env):
    """Killed right after the index has written its k-th file (inside the transaction)."""
    ws = tmp_path / "ws"
    _large_workspace(ws)
    rng = random.Random(7)
    control = tmp_path / "control.sqlite3"
    assert cli(env, "--workspace", str(ws), "memory", "index").returncode == 0
    landed = []
    for kill in range(INDEX_KILLS):
        rebuild = kill % 2 == 0
        if not rebuild:  # change files so that an incremental update has work to do
            for note in sorted((ws / "memory").glob("2*.md"))[kill % 5::5]:
                note.write_text(note.read_text().replace("note ", f"note k{kill} ", 20))
        proc = subprocess.Popen([PYTHON, "-c", INDEXER, str(ws), "rebuild" if rebuild else "refresh"],
                                env=env, cwd=str(REPO), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, bufsize=0)
        assert proc.stdout.readline() == b"ready\n"
        target = None
        while True:
            line = proc.stdout.readline().decode()
            assert line.startswith("progress "), (line, proc.stderr.read())
            done, total = map(int, line.split()[1:])
            target = target or rng.randint(1, max(1, total - 1))
            if done >= target:
                time.sleep(rng.uniform(0, 0.01))
                break
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        assert not err.strip(), err
        # At least one file was still to do, but the child may just have finished.
        assert proc.returncode == -signal.SIGKILL or (proc.returncode == 0 and b"done" in out)
        landed.append(f"{'rebuild' if rebuild else 'refresh'} {done}/{total}"
                      + ("" if proc.returncode else " (finished first)"))

        query = ("topic17 item3", "note", "item9 -topic17")[kill % 3]
        repaired = _rank(env, ws, query)
        fresh = _rank(env, ws, query, MINICLAW_INDEX=str(control))
        assert repaired["results"] == fresh["results"], query
        assert repaired["total"] == fresh["total"]
    shared, fresh = asyncio.run(search_both(ws, tmp_path / "new.sqlite3", "topic17 item3",
                                            limit=20, days=None))
    assert shared == fresh
    print(f"\nkilled inside the index transaction after: {landed}")
    assert sum("finished" not in x for x in landed) >= INDEX_KILLS * 2 // 3, landed


def test_sigkill_during_index_updates_is_repaired_by_the_next_search(tmp_path, env):
    ws = tmp_path / "ws"
    _large_workspace(ws)
    rng = random.Random(99)
    fresh_dir = tmp_path / "fresh"
    fresh_dir.mkdir()
    from miniclaw.config import index_path

    index = Path(env["XDG_CACHE_HOME"]) / "miniclaw" / index_path(ws).name
    started = time.monotonic()
    assert cli(env, "--workspace", str(ws), "memory", "index", "--rebuild").returncode == 0
    build_s = time.monotonic() - started
    queries = ["topic17 item3", "fact", '"note 4-2"', "item9 -topic17"]
    kinds: list[str] = []
    took: dict[str, float] = {}  # how long a kind of update took when it finished unkilled
    for kill in range(RANDOM_INDEX_KILLS):
        kind = ("rebuild", "refresh", "create")[kill % 3]
        if kind == "refresh":  # files changed since the index: an incremental update is due
            with open(ws / "memory/MEMORY.md", "a", encoding="utf-8") as handle:
                handle.write(f"\n## Added by hand {kill}\n- hand fact {kill} topic17 item3\n")
            note = sorted((ws / "memory").glob("2*.md"))[kill % 20]
            note.write_text(note.read_text().replace("note ", f"note k{kill} ", 30))
        if kind == "create":  # killed while creating the index from nothing
            for suffix in ("", "-wal", "-shm"):
                Path(f"{index}{suffix}").unlink(missing_ok=True)
        args = ["memory", "index"] + ([] if kind == "refresh" else ["--rebuild"])
        proc = subprocess.Popen([PYTHON, "-m", "miniclaw", "--workspace", str(ws), *args],
                                env=env, cwd=str(REPO), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        began = time.monotonic()
        try:
            proc.wait(timeout=rng.uniform(0.05, max(0.2, took.get(kind, build_s) * 1.2)))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
        else:  # it finished first (the first build ran on a loaded machine): aim shorter
            took[kind] = time.monotonic() - began
        _, err = proc.communicate(timeout=60)
        assert b"Traceback" not in err, err
        kinds.append(f"{kind}:{'killed' if proc.returncode == -signal.SIGKILL else 'finished'}")

        # The next search repairs the killed index by itself. The control is an index no
        # process was ever killed on (kept up to date by the same searches), and every few
        # kills a brand-new one.
        query = queries[kill % len(queries)]
        repaired = _rank(env, ws, query)
        control = fresh_dir / ("control.sqlite3" if kill % 4 else f"new-{kill}.sqlite3")
        fresh = _rank(env, ws, query, MINICLAW_INDEX=str(control))
        assert repaired["results"] == fresh["results"], query
        assert repaired["total"] == fresh["total"]
        status = cli(env, "--workspace", str(ws), "memory", "status", "--json")
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["up_to_date"] is True
    killed = sum(k.endswith("killed") for k in kinds)
    print(f"\nindex kills: {kinds}; build takes {build_s:.2f} s")
    assert killed >= RANDOM_INDEX_KILLS // 2, kinds  # most kills landed while the index was being written
