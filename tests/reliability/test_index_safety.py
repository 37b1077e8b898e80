"""The search index never destroys a file that is not its own, never serves another
workspace's rows, and a search stopped half-way (Ctrl-C, a failing source) never crashes.

Real subprocesses (`python -m miniclaw`), real files, real SQLite databases, a real FIFO.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import textwrap
from pathlib import Path

import pytest

from miniclaw.index.index_file import APPLICATION_ID
from tests.reliability.support import (INTERRUPT_IN_A_FINALIZER, PYTHON, REPO,
                                      assert_one_error_line, cli, rank_json)

MEMORY = "# Memory\n\n## 2026-02-01\n- apple pie with cinnamon\n- bread and butter\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    (folder / "memory").mkdir(parents=True)
    (folder / "memory/MEMORY.md").write_text(MEMORY)
    return folder


def _rank(env: dict, ws: Path, index: Path | str, query: str = "apple"):
    return cli({**env, "MINICLAW_INDEX": str(index)}, "--workspace", str(ws), "memory", "rank",
               "-q", query, "--all", "--json")


def _other_programs_database(path: Path, application_id: int = 0) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, customer TEXT)")
    conn.execute("INSERT INTO invoices (customer) VALUES ('ACME'), ('Initech')")
    conn.execute(f"PRAGMA application_id = {application_id}")
    conn.commit()
    conn.close()


def _refused(done, path: Path, before: bytes | None) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "index" in assert_one_error_line(done.stderr)
    assert done.stdout == ""
    if before is not None:
        assert path.read_bytes() == before
    for suffix in ("-wal", "-shm", "-journal"):
        assert not Path(f"{path}{suffix}").exists(), suffix


def test_the_workspace_memory_file_is_refused_as_index(env, ws):
    target = ws / "memory/MEMORY.md"
    _refused(_rank(env, ws, target), target, MEMORY.encode())


def test_a_path_inside_the_workspace_is_refused_even_when_new(env, ws):
    target = ws / "cache/index.sqlite3"
    done = _rank(env, ws, target)
    assert done.returncode == 2 and not target.exists() and not target.parent.exists()


def test_a_users_document_is_refused_and_kept(env, ws, tmp_path):
    target = tmp_path / "thesis.txt"
    target.write_text("Chapter 1. Years of work.\n" * 100)
    _refused(_rank(env, ws, target), target, target.read_bytes())


def test_another_programs_sqlite_database_keeps_its_tables(env, ws, tmp_path):
    for application_id in (0, 0x12345678):
        target = tmp_path / f"accounts-{application_id}.db"
        _other_programs_database(target, application_id)
        _refused(_rank(env, ws, target), target, target.read_bytes())
        conn = sqlite3.connect(target)
        assert conn.execute("SELECT customer FROM invoices").fetchall() == [("ACME",), ("Initech",)]
        conn.close()


def test_another_programs_damaged_database_is_not_taken_for_a_damaged_index(env, ws, tmp_path):
    target = tmp_path / "accounts.db"
    _other_programs_database(target)
    data = bytearray(target.read_bytes())
    data[100:] = b"\xa5" * (len(data) - 100)  # the header kept, its tables unreadable
    target.write_bytes(bytes(data))
    _refused(_rank(env, ws, target), target, bytes(data))


def test_a_fifo_is_refused_without_hanging(env, ws, tmp_path):
    target = tmp_path / "pipe"
    os.mkfifo(target)
    done = _rank(env, ws, target)  # `cli` has a timeout: a hang fails the test
    _refused(done, target, None)
    assert Path(target).is_fifo()


def test_a_device_and_a_folder_are_refused(env, ws, tmp_path):
    link = tmp_path / "null-link"
    link.symlink_to("/dev/null")  # a device, reached as root could delete it
    folder = tmp_path / "folder"
    folder.mkdir()
    for target in (link, folder):
        _refused(_rank(env, ws, target), target, None)
    assert link.is_symlink() and Path("/dev/null").is_char_device()
    assert folder.is_dir() and not any(folder.iterdir())


def test_garbage_at_an_explicit_path_is_not_taken_for_a_damaged_index(env, ws, tmp_path):
    target = tmp_path / "index.sqlite3"
    target.write_bytes(os.urandom(8192))
    _refused(_rank(env, ws, target), target, target.read_bytes())


def test_an_empty_file_or_database_becomes_the_index(env, ws, tmp_path):
    empty_file = tmp_path / "empty"
    empty_file.touch()
    empty_db = tmp_path / "empty.db"
    sqlite3.connect(empty_db).close()
    for target in (empty_file, empty_db):
        done = _rank(env, ws, target)
        assert done.returncode == 0, done.stderr
        assert [h["content"] for h in rank_json(done.stdout)["results"]] == ["apple pie with cinnamon"]
        conn = sqlite3.connect(target)
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        conn.close()


def test_an_earlier_miniclaws_index_is_still_rebuilt(env, ws, tmp_path):
    """Indexes made before the application id: a `meta` table with miniclaw's keys."""
    target = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(target)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO meta VALUES ('entries', '1'), ('terms', '3')")
    conn.execute("CREATE TABLE entries (id INTEGER PRIMARY KEY, content TEXT)")
    conn.execute("INSERT INTO entries VALUES (1, 'zqoldsecretzq')")
    conn.execute("PRAGMA user_version = 403")
    conn.commit()
    conn.close()
    done = _rank(env, ws, target)
    assert done.returncode == 0, done.stderr
    assert "format" in done.stderr  # the rebuild is reported
    assert rank_json(done.stdout)["total"] == 1
    assert b"zqoldsecretzq" not in target.read_bytes()


def test_a_damaged_index_at_an_explicit_path_is_rebuilt(env, ws, tmp_path):
    target = tmp_path / "index.sqlite3"
    assert _rank(env, ws, target).returncode == 0
    conn = sqlite3.connect(target)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    data = bytearray(target.read_bytes())
    data[page:] = b"\xa5" * (len(data) - page)  # the header (with miniclaw's id) kept
    target.write_bytes(bytes(data))
    done = _rank(env, ws, target)
    assert done.returncode == 0, done.stderr
    assert "damaged" in done.stderr
    assert rank_json(done.stdout)["total"] == 1


# -- one index, one workspace ---------------------------------------------------------------

_LONG_LIVED = textwrap.dedent("""
    import asyncio, json, subprocess, sys
    from miniclaw.memory import MemoryStore
    ws, other_command = sys.argv[1], sys.argv[2:]
    async def main():
        async with MemoryStore(ws) as store:
            for _ in range(3):  # from the second search on, the store watches its folder
                await store.search_memories("apple", days=None)
            other = subprocess.run(other_command, capture_output=True, text=True)
            found = await store.search_memories("apple", days=None, limit=20)
        print(json.dumps({"code": other.returncode, "stderr": other.stderr,
                          "found": [h.content for h in found]}))
    asyncio.run(main())
""")


def test_a_shared_index_file_refuses_a_second_workspace(env, ws, tmp_path):
    """A long-lived process of one workspace keeps its own rows; the other workspace is
    refused (one `Error:` line, exit 2) instead of replacing them under it."""
    import json

    index = tmp_path / "shared.sqlite3"
    other = tmp_path / "other"
    (other / "memory").mkdir(parents=True)
    (other / "memory/MEMORY.md").write_text("# Memory\n\n- apple zqotherworkspacezq\n")
    command = [PYTHON, "-m", "miniclaw", "--workspace", str(other), "memory", "rank",
               "-q", "apple", "--json"]
    done = subprocess.run([PYTHON, "-c", _LONG_LIVED, str(ws), *command],
                          env={**env, "MINICLAW_INDEX": str(index)}, cwd=str(REPO),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["code"] == 2, report
    assert str(ws) in assert_one_error_line(report["stderr"])
    assert report["found"] == ["apple pie with cinnamon"]
    assert b"zqotherworkspacezq" not in index.read_bytes()


_JUST_MADE = textwrap.dedent("""
    import json, os, subprocess, sys
    from miniclaw.index.database import IndexDatabase
    ws, other_command = sys.argv[1], sys.argv[2:]
    database = IndexDatabase(os.environ["MINICLAW_INDEX"], ws)
    database.connection()  # the schema made and committed (to the WAL), nothing indexed
    with open(database.path, "rb") as file:
        id_in_the_file = int.from_bytes(file.read(100)[68:72], "big")
    other = subprocess.run(other_command, capture_output=True, text=True)
    database.close()
    print(json.dumps({"id_in_the_file": id_in_the_file, "code": other.returncode,
                      "stderr": other.stderr, "stdout": other.stdout}))
""")


def test_a_new_index_at_an_explicit_path_is_shared_while_its_maker_has_it_open(env, ws, tmp_path):
    """A new index's header (with miniclaw's id) stays in the WAL until a checkpoint: while
    the process that made it had it open and had not checkpointed (its first build still
    running), any other process read an id of 0 in the file and refused the index ("not a
    miniclaw search index", exit 2): four first searches started together failed so."""
    import json

    index = tmp_path / "explicit.sqlite3"
    command = [PYTHON, "-m", "miniclaw", "--workspace", str(ws), "memory", "rank", "-q",
               "bread", "--json"]
    done = subprocess.run([PYTHON, "-c", _JUST_MADE, str(ws), *command],
                          env={**env, "MINICLAW_INDEX": str(index)}, cwd=str(REPO),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["id_in_the_file"] == 0  # the case: the id only in the WAL
    assert report["code"] == 0, report["stderr"]
    assert [h["content"] for h in rank_json(report["stdout"])["results"]] == ["bread and butter"]


# -- stopping a search half-way ----------------------------------------------------------

def _large_workspace(folder: Path, notes: int = 300, per_note: int = 12) -> None:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(3000)] + ["apple", "bread", "cloud", "dingo"] * 50
    (folder / "memory").mkdir(parents=True)
    lines = ["# Memory\n"]
    for day in range(1, 29):
        lines.append(f"\n## 2025-02-{day:02d}\n")
        lines += [f"- {' '.join(rng.choices(words, k=20))}\n" for _ in range(60)]
    (folder / "memory/MEMORY.md").write_text("".join(lines))
    for n in range(notes):
        day = 1 + n % 28
        month = 1 + (n // 28) % 12
        year = 2020 + n // 336
        parts = [f"# Daily Note - {year}-{month:02d}-{day:02d}\n"]
        for i in range(per_note):
            parts.append(f"\n## {i:02d}:00:00 UTC\n\n{' '.join(rng.choices(words, k=25))}\n")
        (folder / f"memory/{year}-{month:02d}-{day:02d}.md").write_text("".join(parts))


# The CLI's own entry point, saying when Python's start-up and the imports are done and
# `main` has begun (a Ctrl-C before that is Python's KeyboardInterrupt, not miniclaw's to
# handle): the line is written by the app `main` calls, inside its handlers. Written before
# `main()`, a Ctrl-C of a loaded machine could land between the two lines.
_STARTED = ("import sys\n"
            "import miniclaw.cli as cli\n"
            "command = cli.app\n"
            "def app():\n"
            "    sys.stderr.write('started\\n')\n"
            "    sys.stderr.flush()\n"
            "    command()\n"
            "cli.app = app\n"
            "sys.argv[0] = 'miniclaw'\n"
            "cli.main()\n")


@pytest.mark.slow
def test_ctrl_c_at_any_point_of_a_search_never_crashes(env, tmp_path):
    """SIGINT at seeded random points of searches, index builds included: the process
    always exits by itself (no signal death: a segfault) and prints no traceback."""
    folder = tmp_path / "large"
    _large_workspace(folder)
    rng = random.Random(20261124)
    outcomes = []
    for run in range(30):
        index = tmp_path / ("index.sqlite3" if run % 3 else f"cold-{run}.sqlite3")
        process = subprocess.Popen(
            [PYTHON, "-c", _STARTED, "--workspace", str(folder), "memory", "rank", "-q",
             "apple bread cloud dingo w17 w2", "--all", "-n", "20"],
            env={**env, "MINICLAW_INDEX": str(index)}, cwd=str(REPO),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert process.stderr.readline() == b"started\n"  # past Python's own start-up
        try:
            process.wait(timeout=rng.uniform(0.0, 0.6))
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
        outcomes.append(process.returncode)
        assert process.returncode >= 0, (run, process.returncode, err.decode()[-2000:])
        assert b"Traceback" not in err, (run, err.decode()[-2000:])
    assert 130 in outcomes  # some runs really were interrupted (Ctrl-C: exit 130, as Typer's)
    assert set(outcomes) <= {0, 130}, outcomes


_FAILING_SOURCE = textwrap.dedent("""
    import asyncio, json, sys, threading
    from miniclaw.memory import MemoryStore
    from miniclaw.search.ranker import MemoryRanker
    ws = sys.argv[1]
    querying, closing, outcome = threading.Event(), threading.Event(), []
    original = MemoryRanker._search_source
    def search_source(self, source, *args):
        if source.name == "long_term":
            querying.wait(timeout=30)  # fails while the other source is mid-query
            raise RuntimeError("this source failed")
        def mid_query(conn):  # a query still running in its thread as the store closes
            querying.set()
            closing.wait(timeout=30)
            return conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
        try:
            outcome.append(self.index._run(mid_query))
        except BaseException as exc:
            outcome.append(repr(exc))
        return original(self, source, *args)
    MemoryRanker._search_source = search_source
    async def main():
        store = MemoryStore(ws)
        try:
            await store.search_memories("apple", days=None)
        except RuntimeError:
            pass
        finally:
            closing.set()
            store.close()
        print(json.dumps(outcome))
    asyncio.run(main())
""")


# A Ctrl-C that Python raises inside a finalizer (an import lock's cleanup, an event loop's
# __del__) is dropped by Python: "Exception ignored in ... Traceback", and the command went
# on to exit 0 (seen in test_ctrl_c_at_any_point_of_a_search_never_crashes on a loaded
# machine).
_FINALIZER_INTERRUPT = INTERRUPT_IN_A_FINALIZER + """
import sys, time
import miniclaw.cli as cli

def app():
    interrupt_in_a_finalizer()
    time.sleep(20)

cli.app = app
sys.argv[0] = "miniclaw"
cli.main()
"""


def test_a_ctrl_c_that_lands_in_a_finalizer_still_ends_a_command():
    done = subprocess.run([PYTHON, "-c", _FINALIZER_INTERRUPT], capture_output=True,
                          text=True, timeout=60, cwd=str(REPO))
    assert done.returncode == 130  # before: 0, after sleeping the whole 20 s
    assert done.stderr == "Aborted.\n"  # before: "Exception ignored in: ... Traceback"


def test_one_source_failing_does_not_close_the_others_connection(env, tmp_path):
    folder = tmp_path / "ws2"
    (folder / "memory").mkdir(parents=True)
    (folder / "memory/MEMORY.md").write_text(MEMORY)
    (folder / "memory/2026-02-12.md").write_text(
        "# Daily Note - 2026-02-12\n\n## 09:00:00 UTC\n\napple crumble\n")
    done = subprocess.run([PYTHON, "-c", _FAILING_SOURCE, str(folder)], env=env, cwd=str(REPO),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == "[3]", done.stdout  # the query ran to its end, on its connection
