"""Issue 18, asking: `miniclaw search QUERY`, a positional query for `memory rank`, text from
stdin for `memory add`, and `--json` on the commands that report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from miniclaw.cli import app
from tests.cli.test_cli import assert_usage_error, run, snapshot


def miniclaw(ws: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", str(ws), *args],
                          input=stdin, capture_output=True, env=os.environ.copy(),
                          stdin=None if stdin is not None else subprocess.DEVNULL)


def test_search_prints_what_memory_rank_prints(runner: CliRunner, workspace: Path):
    run(runner, workspace, "memory", "add", "Sam approved the atlas budget", "--long")
    by_search = run(runner, workspace, "search", "atlas", "--json")
    by_rank = run(runner, workspace, "memory", "rank", "-q", "atlas", "--json")
    positional = run(runner, workspace, "memory", "rank", "atlas", "--json")
    assert by_search.exit_code == by_rank.exit_code == positional.exit_code == 0
    assert json.loads(by_search.stdout) == json.loads(by_rank.stdout) == json.loads(positional.stdout)
    assert json.loads(by_search.stdout)["results"][0]["content"] == "Sam approved the atlas budget"


def test_a_query_given_twice_or_not_at_all_is_a_usage_error(runner: CliRunner, workspace: Path):
    both = assert_usage_error(run(runner, workspace, "search", "atlas", "-q", "budget"))
    assert "not both" in both
    none = assert_usage_error(run(runner, workspace, "memory", "rank"))
    assert "give a query" in none


def test_memory_add_dash_reads_the_text_from_stdin(workspace: Path):
    proc = miniclaw(workspace, "memory", "add", "-", "--long",
                    stdin="Line one from a pipe\nline two, ünïcode\n".encode())
    assert proc.returncode == 0, proc.stderr
    found = miniclaw(workspace, "memory", "read", "--long", "--json")
    assert json.loads(found.stdout)["entries"][0]["content"] == "Line one from a pipe\nline two, ünïcode"


def test_memory_add_without_text_reads_a_pipe(workspace: Path):
    proc = miniclaw(workspace, "memory", "add", stdin=b"piped without a dash")
    assert proc.returncode == 0, proc.stderr
    assert b"Added to today's daily note" in proc.stdout
    found = miniclaw(workspace, "search", "piped", "--json")
    assert json.loads(found.stdout)["results"][0]["content"] == "piped without a dash"


def test_memory_add_refuses_stdin_that_is_not_utf8_and_writes_nothing(workspace: Path):
    before = snapshot(workspace)
    proc = miniclaw(workspace, "memory", "add", "-", stdin=b"caf\xe9 latte")
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith("Error: stdin is not valid UTF-8")
    assert b"Traceback" not in proc.stderr
    assert snapshot(workspace) == before


def test_memory_add_with_empty_stdin_is_a_usage_error(workspace: Path):
    before = snapshot(workspace)
    proc = miniclaw(workspace, "memory", "add", "-", stdin=b"")
    assert proc.returncode == 2
    assert proc.stderr.decode().count("\n") == 1 and proc.stderr.startswith(b"Error: ")
    assert snapshot(workspace) == before


def test_init_json(runner: CliRunner, tmp_path: Path):
    ws = tmp_path / "new"
    first = run(runner, ws, "init", "--json")
    assert first.exit_code == 0
    report = json.loads(first.stdout)
    assert report["workspace"] == str(ws)
    assert {"path": "memory/MEMORY.md", "created": True} in report["files"]
    again = json.loads(run(runner, ws, "init", "--json").stdout)
    assert not any(f["created"] for f in again["files"])


def test_index_json(runner: CliRunner, workspace: Path):
    run(runner, workspace, "memory", "add", "one note")
    result = run(runner, workspace, "memory", "index", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    data.pop("vectors", None)  # only with the extra `semantic` (tests/semantic/test_semantic.py)
    assert data == {"files_parsed": 1, "entries_added": 1, "entries_removed": 0,
                    "files_removed": 0, "files_left_out": 0}


def test_an_index_with_nothing_to_do_says_it_is_up_to_date(runner: CliRunner, workspace: Path):
    """It said "Indexed 0 files: 0 entries added, 0 removed; 0 deleted files dropped.",
    which a new user read as a fault."""
    run(runner, workspace, "memory", "add", "one kayak note")
    assert "Indexed 1 file" in run(runner, workspace, "memory", "index").stdout
    again = run(runner, workspace, "memory", "index")
    assert again.exit_code == 0
    assert again.stdout.splitlines()[0] == ("Up to date: no memory changed since the index "
                                            "was last updated.")


def test_a_rebuild_says_what_it_read_even_when_it_found_nothing(runner: CliRunner,
                                                               workspace: Path):
    """A rebuild reads every file again. With no entries yet it said "Up to date: no memory
    changed", as if it had done nothing (and the load test's rebuilder, which expects
    "Indexed", failed when it ran before any writer had written)."""
    rebuilt = run(runner, workspace, "memory", "index", "--rebuild")
    assert rebuilt.exit_code == 0
    assert rebuilt.stdout.startswith("Indexed "), rebuilt.stdout


def test_counts_are_singular_and_plural(runner: CliRunner, workspace: Path):
    run(runner, workspace, "memory", "add", "one kayak note")
    one = run(runner, workspace, "search", "kayak")
    assert "Found 1 relevant memory (showing top 1)" in one.stdout
    indexed = run(runner, workspace, "memory", "index", "--rebuild")
    assert "Indexed 1 file: 1 entry added" in indexed.stdout
    run(runner, workspace, "memory", "add", "two kayak notes")
    two = run(runner, workspace, "search", "kayak")
    assert "Found 2 relevant memories (showing top 2)" in two.stdout


def test_memory_add_reads_no_more_of_an_endless_pipe_than_the_limit_can_hold(workspace: Path):
    """All of stdin was read before the 100,000-character limit was checked: an endless pipe
    (`yes | miniclaw memory add -`) grew memory without bound. Now the reading stops past
    what the limit can hold, and the add is refused (exit 2), nothing written."""
    import threading

    before = snapshot(workspace)
    proc = subprocess.Popen([sys.executable, "-m", "miniclaw", "--workspace", str(workspace),
                             "memory", "add", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ.copy())
    sent = [0]

    def feed() -> None:  # 64 MB unless the reader stops first
        chunk = b"y\n" * 32768
        try:
            while sent[0] < 64 * 2**20:
                proc.stdin.write(chunk)
                sent[0] += len(chunk)
            proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    errors = proc.stderr.read().decode()
    assert proc.wait(120) == 2
    feeder.join(30)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        try:
            stream.close()
        except BrokenPipeError:  # what was left in its buffer
            pass
    assert errors == ("Error: the memory text on stdin is longer than the limit of 100,000 "
                      "characters; nothing was written\n")
    assert sent[0] < 8 * 2**20  # what the limit holds, and a pipe's buffer
    assert snapshot(workspace) == before


def test_memory_add_of_the_limit_from_stdin_is_kept_whole(workspace: Path):
    """The bounded read keeps a text of the limit in 4-byte characters, BOM and CRLF."""
    text = "\U0001F600" * 100_000
    proc = miniclaw(workspace, "memory", "add", "-", "--long",
                    stdin=b"\xef\xbb\xbf" + text.encode() + b"\r\n")
    assert proc.returncode == 0, proc.stderr
    found = miniclaw(workspace, "memory", "read", "--long", "--json")
    assert json.loads(found.stdout)["entries"][0]["content"] == text
