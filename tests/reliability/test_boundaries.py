"""The filesystem boundary: nothing reaches outside the workspace, and what is made is private.

- `--date`, `--since` and `--until` that look like paths are usage errors (exit 2) that
  read nothing: a file placed where `../../etc/passwd` would land holds a secret word.
- `--workspace` (or MINICLAW_WORKSPACE) naming a file is a clear error, and nothing is written.
- Symlinks under memory/ that leave the workspace are not followed by searches or reads, and
  writes through them are refused; links that stay inside are followed. memory/ itself may
  be a link (to a synced folder): it is the boundary, and is used where it points. Dangling
  links, link loops, folders and FIFOs named like notes neither crash nor hang anything.
- Memory files, transcripts and the index are created 0600 in 0700 folders, whatever the
  umask (tested with umask 0 and 022), by init, add, the first search and a rebuild.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from miniclaw.cli import app
from miniclaw.config import index_path
from tests.reliability.support import PYTHON, REPO, assert_one_error_line, bad_stderr_lines, cli

SECRET = "zqoutsidezq"


def _day(offset: int) -> str:
    return (datetime.now(timezone.utc).date() - timedelta(days=offset)).isoformat()


@pytest.fixture
def boxed(tmp_path: Path) -> Path:
    """A workspace at tmp_path/a/b/ws with notes, and the secret planted where path tricks
    would land: tmp_path/a/b/etc/passwd, tmp_path/a/etc/passwd, tmp_path/x, /tmp-like spots."""
    ws = tmp_path / "a/b/ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory/MEMORY.md").write_text(f"# Memory\n\n## {_day(0)}\n- inside fact\n", encoding="utf-8")
    (ws / f"memory/{_day(1)}.md").write_text("# Daily Note\n\n## 09:00:00 UTC\n\ninside note\n",
                                            encoding="utf-8")
    for rel in ("a/b/etc/passwd", "a/etc/passwd", "etc/passwd", "a/b/x", "a/x", "x", "a/b/x.md",
                "a/b/ws/x", "a/b/ws/x.md", "a/b/ws/memory/x.md", "a/b/MEMORY.md"):
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"# Daily Note\n\n## 09:00:00 UTC\n\n{SECRET} planted\n", encoding="utf-8")
    return ws


def _invoke(ws: Path, *args: str, **kwargs):
    result = CliRunner().invoke(app, ["--workspace", str(ws), *args], **kwargs)
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


PATHLIKE_DAYS = ["../../etc/passwd", "2026-02-14/../../x", "/etc/passwd", "..", ".", "../x",
                 "../MEMORY", "x.md", "memory/../../x", "2026-02-14\\..\\..\\x", "~/x",
                 "%2e%2e%2fx", "/", "//etc//passwd", "../../../../../../../../etc/passwd",
                 "2026-02-14/../../../etc/passwd", "2026-02-14/x",
                 "file:///etc/passwd", "-1d/../x"]


@pytest.mark.parametrize("value", PATHLIKE_DAYS)
def test_a_path_as_date_is_a_usage_error_and_reads_nothing(boxed, value):
    for args in (["memory", "read", "--date", value],
                 ["memory", "rank", "-q", "planted", "--since", value],
                 ["memory", "rank", "-q", "planted", "--until", value]):
        result = _invoke(boxed, *args)
        assert result.exit_code == 2, (args, result.stdout, result.stderr)
        assert result.stdout == ""
        assert_one_error_line(result.stderr)
        assert SECRET not in result.stderr


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.one_of(
    st.text(max_size=30),
    st.lists(st.sampled_from(["..", "/", ".", "etc", "passwd", "2026-02-14", "memory", "x.md",
                              "~", "\\", "%2e", "MEMORY", "3d", "yesterday", " "]),
             min_size=1, max_size=6).map("".join)))
def test_any_date_value_reads_a_note_of_the_workspace_or_nothing(boxed, value):
    result = _invoke(boxed, "memory", "read", "--date", value)
    assert result.exit_code in (0, 2), (value, result.exit_code, result.stderr)
    assert SECRET not in result.stdout + result.stderr
    if result.exit_code == 0:  # a real date: the title names the note it read, in memory/
        first = result.stdout.splitlines()[0]
        assert first.startswith("Daily Note ") and "(memory/" in first, first
    else:
        assert result.stdout == "" and assert_one_error_line(result.stderr)


@pytest.mark.parametrize("command", [
    ["memory", "read", "--long"], ["memory", "read", "--date", "yesterday"], ["memory", "recent"],
    ["memory", "rank", "-q", "coffee"], ["memory", "add", "a fact"], ["memory", "add", "--long", "x"],
    ["memory", "status"], ["memory", "index", "--rebuild"], ["init"],
    ["memory", "tidy"], ["memory", "tidy", "--apply", "--yes"],
    ["context", "-q", "coffee"], ["chat", "--once", "hello"]])
def test_workspace_pointing_at_a_file_is_a_clear_error(tmp_path, command):
    target = tmp_path / "not-a-folder.md"
    target.write_text("just a file\n")
    for how in ("flag", "env"):
        if how == "flag":
            result = CliRunner().invoke(app, ["--workspace", str(target), *command])
        else:
            result = CliRunner().invoke(app, command, env={"MINICLAW_WORKSPACE": str(target)})
        assert result.exit_code == 2, (how, command, result.stdout, result.stderr)
        line = assert_one_error_line(result.stderr)
        assert str(target) in line, line
        assert target.read_text() == "just a file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "not-a-folder.md"]


def test_memory_being_a_file_is_a_clear_error(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "memory").write_text("I am a file\n")
    for command in (["memory", "add", "x"], ["memory", "add", "--long", "x"]):
        result = _invoke(ws, *command)
        assert result.exit_code in (1, 2), (command, result.stdout, result.stderr)
        assert_one_error_line(result.stderr)
    for command in (["memory", "read", "--long"], ["memory", "rank", "-q", "x"], ["memory", "recent"]):
        result = _invoke(ws, *command)
        if result.exit_code == 0:
            assert bad_stderr_lines(result.stderr) == []
        else:
            assert result.exit_code in (1, 2), (command, result.exit_code)
            assert_one_error_line(result.stderr)
    assert (ws / "memory").read_text() == "I am a file\n"


# -- symlinks --------------------------------------------------------------------------------------


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """A workspace whose memory/ holds links: out of the workspace (a past note, MEMORY.md,
    today's note, a chain through an inside link), inside it, dangling, looping, plus a folder
    named like a note."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "notes").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    note = f"# Daily Note\n\n## 09:00:00 UTC\n\n{SECRET} lives outside\n"
    for name in ("old.md", "memory.md", "today.md", "chained.md"):
        (outside / name).write_text(note if name != "memory.md" else
                                    f"# Memory\n\n- {SECRET} fact outside\n", encoding="utf-8")
    (ws / "notes/real.md").write_text("# Daily Note\n\n## 09:00:00 UTC\n\nzqinsidelinkzq here\n",
                                      encoding="utf-8")
    m = ws / "memory"
    (m / f"{_day(2)}.md").symlink_to(outside / "old.md")
    (m / "MEMORY.md").symlink_to(outside / "memory.md")
    (m / f"{_day(0)}.md").symlink_to(outside / "today.md")
    (ws / "notes/hop.md").symlink_to(outside / "chained.md")
    (m / f"{_day(3)}.md").symlink_to(ws / "notes/hop.md")  # inside link -> outside target
    (m / f"{_day(4)}.md").symlink_to("../notes/real.md")  # stays inside: followed
    (m / f"{_day(5)}.md").symlink_to(tmp_path / "nowhere.md")  # dangling
    (m / f"{_day(6)}.md").symlink_to(m / f"{_day(6)}.md")  # a loop
    (m / f"{_day(7)}.md").mkdir()  # a folder named like a note
    (m / f"{_day(8)}.md").symlink_to("/dev/zero")  # endless bytes, outside
    return ws


def test_links_out_of_the_workspace_are_not_read_or_searched(linked, tmp_path):
    for args in (["memory", "read", "--long"], ["memory", "read", "--date", _day(2)],
                 ["memory", "read", "--date", _day(3)], ["memory", "read"],
                 ["memory", "recent", "-d", "30"], ["memory", "recent", "-d", "30", "--json"],
                 ["memory", "rank", "-q", "zqout*", "--all", "--json"],
                 ["memory", "rank", "-q", "outside lives fact", "--all"],
                 ["memory", "rank", "-q", "zqoutsidezr", "--all"],  # a typo: no correction to it
                 ["memory", "status", "--json"], ["context", "-q", "outside lives fact"],
                 ["memory", "read", "--date", _day(8)]):
        result = _invoke(linked, *args)
        assert result.exit_code == 0, (args, result.stdout, result.stderr)
        assert SECRET not in result.stdout + result.stderr, args
    found = json.loads(_invoke(linked, "memory", "rank", "-q", SECRET, "--all", "--json").stdout)
    assert found["results"] == [] and found["total"] == 0
    inside = json.loads(_invoke(linked, "memory", "rank", "-q", "zqinsidelinkzq", "--all",
                                "--json").stdout)
    assert [hit["path"] for hit in inside["results"]] == [f"memory/{_day(4)}.md"]
    index = index_path(linked)
    for suffix in ("", "-wal"):
        if Path(f"{index}{suffix}").exists():
            assert SECRET.encode() not in Path(f"{index}{suffix}").read_bytes()


def test_writes_through_links_out_of_the_workspace_are_refused(linked, tmp_path):
    outside = tmp_path / "outside"
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    for args, link in ((["memory", "add", "--long", "through the link"], "MEMORY.md"),
                       (["memory", "add", "through the link"], f"{_day(0)}.md")):
        result = _invoke(linked, *args)
        assert result.exit_code == 2, (args, result.stdout, result.stderr)
        line = assert_one_error_line(result.stderr)
        assert "symlink" in line and link in line, line
        assert (linked / "memory" / link).is_symlink()
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before


def test_memory_folder_that_is_itself_a_link_is_used(tmp_path):
    """memory/ may be a link the user made to a folder elsewhere (a synced folder): the
    boundary is the memory folder, so its notes are read, searched and written there."""
    synced = tmp_path / "Dropbox" / "memory"
    synced.mkdir(parents=True)
    (synced / "MEMORY.md").write_text("# Memory\n\n## 2026-02-01\n- kayak rental booked\n",
                                      encoding="utf-8")
    (synced / f"{_day(1)}.md").write_text(
        f"# Daily Note - {_day(1)}\n\n## 09:00:00 UTC\n\nkayak trip planned\n", encoding="utf-8")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "memory").symlink_to(synced)
    added = _invoke(ws, "memory", "add", "kayak paddles bought")
    assert added.exit_code == 0, added.stderr
    found = json.loads(_invoke(ws, "memory", "rank", "-q", "kayak", "--all", "--json").stdout)
    assert sorted(hit["content"] for hit in found["results"]) == [
        "kayak paddles bought", "kayak rental booked", "kayak trip planned"]
    assert "kayak paddles bought" in (synced / f"{_day(0)}.md").read_text(encoding="utf-8")
    assert (ws / "memory").is_symlink()
    status = json.loads(_invoke(ws, "memory", "status", "--json").stdout)
    assert status["up_to_date"] and status["files_indexed"] == status["files_on_disk"] == 3


@pytest.mark.slow  # each command that hangs costs its timeout
def test_a_fifo_named_like_a_note_hangs_nothing(tmp_path, env):
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / f"memory/{_day(0)}.md").write_text("# Daily Note\n\n## 09:00:00 UTC\n\nfine\n")
    os.mkfifo(ws / f"memory/{_day(1)}.md")
    os.mkfifo(ws / "memory/MEMORY.md")
    hung = []
    for args in (["memory", "rank", "-q", "fine", "--json"], ["memory", "status"],
                 ["memory", "recent"], ["memory", "read", "--date", _day(1)],
                 ["memory", "read", "--long"], ["context", "-q", "fine"]):
        try:
            done = cli(env, "--workspace", str(ws), *args, timeout=5)
        except subprocess.TimeoutExpired:
            hung.append(" ".join(args))
            continue
        assert done.returncode in (0, 1), (args, done.stderr)
        assert "Traceback" not in done.stderr
    assert hung == [], f"hung on a FIFO named like a memory file: {hung}"


# -- modes -----------------------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.mark.parametrize("umask", [0o000, 0o022], ids=["umask000", "umask022"])
def test_everything_created_is_0600_in_0700_folders(tmp_path, env, umask):
    def run(*args: str, ws: Path, **extra: str) -> None:
        done = subprocess.run([PYTHON, "-m", "miniclaw", "--workspace", str(ws), *args],
                              env={**env, **extra}, cwd=str(REPO), capture_output=True, text=True,
                              timeout=60, preexec_fn=lambda: os.umask(umask))
        assert done.returncode == 0, (args, done.stderr)

    cache = Path(env["XDG_CACHE_HOME"])
    ws = tmp_path / "ws"
    run("init", ws=ws)  # init
    run("memory", "add", "--long", "a fact", ws=ws)  # add
    run("memory", "add", "a note", ws=ws)
    run("memory", "rank", "-q", "fact", ws=ws)  # first search
    run("chat", "--once", "hello", ws=ws)  # a transcript
    index = cache / "miniclaw" / index_path(ws).name
    made = {"workspace": ws, "memory": ws / "memory", "sessions": ws / "sessions",
            "cache": cache, "cache/miniclaw": cache / "miniclaw"}
    for name, folder in made.items():
        assert _mode(folder) == 0o700, (name, oct(_mode(folder)))
    files = [p for p in ws.rglob("*") if p.is_file()] + [
        p for p in (cache / "miniclaw").rglob("*") if not p.is_dir()]
    assert index in files and any(p.suffix == ".jsonl" for p in files)
    for folder in (cache / "miniclaw").rglob("*"):  # e.g. the embedding model's saved graph
        if folder.is_dir():
            assert _mode(folder) == 0o700, (folder, oct(_mode(folder)))
    for path in files:
        assert _mode(path) == 0o600, (path, oct(_mode(path)))

    # Files that add creates (not only rewrites): MEMORY.md and today's note, both new.
    (ws / "memory/MEMORY.md").unlink()
    (ws / f"memory/{_day(0)}.md").unlink()
    run("memory", "add", "--long", "first", ws=ws)
    run("memory", "add", "first note", ws=ws)
    assert {p.name: _mode(p) for p in (ws / "memory").iterdir()} == {
        "MEMORY.md": 0o600, f"{_day(0)}.md": 0o600}

    # A rebuild from nothing, and an index at a path whose folders do not exist yet.
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    run("memory", "index", "--rebuild", ws=ws)
    elsewhere = tmp_path / "deep/er/index.sqlite3"
    run("memory", "index", "--rebuild", ws=ws, MINICLAW_INDEX=str(elsewhere))
    run("memory", "rank", "-q", "fact", ws=ws, MINICLAW_INDEX=str(elsewhere))
    for path in [index, elsewhere] + [Path(f"{p}{s}") for p in (index, elsewhere)
                                      for s in ("-wal", "-shm") if Path(f"{p}{s}").exists()]:
        assert _mode(path) == 0o600, (path, oct(_mode(path)))
    assert _mode(tmp_path / "deep") == 0o700 and _mode(tmp_path / "deep/er") == 0o700
