"""Many processes adding memories at once: nothing is lost, duplicated or garbled."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from miniclaw.memory import MemoryStore
from miniclaw.entries.parsing import parse_daily_note, parse_long_term
from tests.conftest import NOW

PROCESSES = 8
ENTRIES = 100  # per process; even numbers go to MEMORY.md, odd ones to the daily note

WORKER = textwrap.dedent("""
    import asyncio, sys, time
    from datetime import datetime, timezone
    from pathlib import Path
    from miniclaw.memory import MemoryStore

    workspace, worker, count, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    now = datetime(2026, 2, 14, 9, 12, 3, tzinfo=timezone.utc)

    async def main():
        async with MemoryStore(workspace, now=lambda: now) as store:
            while not go.exists():  # start together
                time.sleep(0.005)
            for n in range(count):
                text = f"worker {worker} entry {n} marker w{worker}e{n}"
                if n % 2 == 0:
                    entry = await store.add_long_term(text, tags=[f"w{worker}"])
                else:
                    entry = await store.add_daily_note(text + "\\nsecond line")
                assert entry is not None and entry.text.startswith(text), entry

    asyncio.run(main())
""")


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "home" / ".cache"))
    for name in ("MINICLAW_HOME", "MINICLAW_WORKSPACE", "MINICLAW_INDEX"):
        env.pop(name, None)
    return env


def test_concurrent_processes_lose_and_duplicate_nothing(tmp_path, workspace):
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(workspace), str(w),
                               str(ENTRIES), str(go)],
                              env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for w in range(PROCESSES)]
    go.touch()
    failures = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        if proc.returncode != 0:
            failures.append(err.decode(errors="replace"))
    assert not failures, failures[0]

    async def read_back():
        async with MemoryStore(workspace, now=lambda: NOW) as store:
            return await store.read_long_term(), await store.read_day(NOW.date())

    long_entries, daily_entries = asyncio.run(read_back())
    expected_long = sorted(f"worker {w} entry {n} marker w{w}e{n}"
                           for w in range(PROCESSES) for n in range(0, ENTRIES, 2))
    expected_daily = sorted(f"worker {w} entry {n} marker w{w}e{n}\nsecond line"
                            for w in range(PROCESSES) for n in range(1, ENTRIES, 2))
    assert sorted(e.text for e in long_entries) == expected_long
    assert sorted(e.text for e in daily_entries) == expected_daily

    # Each worker's own entries are in the order it wrote them, with its own tag.
    for w in range(PROCESSES):
        mine = [e for e in long_entries if e.text.startswith(f"worker {w} ")]
        assert [int(e.text.split()[3]) for e in mine] == list(range(0, ENTRIES, 2))
        assert all(e.tags == (f"w{w}",) for e in mine)

    # Both files are well formed: one header, one title, and every entry parses on its own.
    memory = (workspace / "memory/MEMORY.md").read_text(encoding="utf-8")
    daily = (workspace / "memory/2026-02-14.md").read_text(encoding="utf-8")
    assert memory.count("## 2026-02-14\n") == 1 and memory.startswith("# Memory\n")
    assert daily.count("# Daily Note") == 1
    assert len(parse_long_term(memory, "memory/MEMORY.md")) == len(expected_long)
    assert len(parse_daily_note(daily, "memory/2026-02-14.md", NOW.date())) == len(expected_daily)
    assert sorted(p.name for p in (workspace / "memory").iterdir()) == ["2026-02-14.md", "MEMORY.md"]
