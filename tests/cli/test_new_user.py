"""What a new user meets first: a new workspace's searches, and files they edited by hand
that a writer must not touch."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.cli.test_cli import days_ago, run, today
from tests.conftest import write


def test_a_new_workspace_suggests_all_only_when_older_notes_exist(runner: CliRunner,
                                                                  workspace: Path):
    """A first note and a search that finds nothing suggested `--all`, which could find
    nothing more: every note is inside the window. With a note older than the window the
    suggestion is true again."""
    assert run(runner, workspace, "memory", "add", "Tea at four").exit_code == 0
    done = run(runner, workspace, "search", "coffee")
    assert done.exit_code == 0, done.stderr
    assert "--all" not in done.stdout and "No memories matched." in done.stdout
    hints = json.loads(run(runner, workspace, "search", "coffee", "--json").stdout)["hints"]
    assert "widen_days" not in [hint["kind"] for hint in hints]
    write(workspace, f"memory/{days_ago(40)}.md",
          f"# Daily Note - {days_ago(40)}\n\n## 08:00:00 UTC\n\nForty days ago: a kite.\n")
    assert "search all history with --all" in run(runner, workspace, "search", "coffee").stdout
    # an empty older note (no entries) is nothing to find either
    write(workspace, f"memory/{days_ago(40)}.md", f"# Daily Note - {days_ago(40)}\n")
    assert "--all" not in run(runner, workspace, "search", "coffee").stdout


LATIN_1 = "# Memory\n\n## 2026-01-01\n- Caf\xe9 noir every morning\n- Tea at four\n".encode("latin-1")


def _error(result) -> str:
    """Exit 1 (the file on disk stops the command, not its arguments), one `Error:` line
    on stderr, nothing on stdout."""
    assert result.exit_code == 1, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    return line


def test_writers_refuse_a_memory_file_that_is_not_utf8(runner: CliRunner, workspace: Path,
                                                      monkeypatch):
    """A MEMORY.md saved as Latin-1 by an editor: `memory add --long` appended UTF-8 to it
    (a file of two encodings), `forget` rewrote it; now both refuse, naming the line of the
    first bad byte, and write nothing; the daily note likewise. `memory edit` still opens
    it: that is how it gets fixed."""
    memory = workspace / "memory"
    (memory / "MEMORY.md").write_bytes(LATIN_1)
    note = memory / f"{today()}.md"
    note.write_bytes(f"# Daily Note - {today()}\n\n## 08:00:00 UTC\n\nCaf\xe9\n".encode("latin-1"))
    before = {path.name: path.read_bytes() for path in memory.iterdir()}
    said = ("Error: memory/MEMORY.md is not valid UTF-8 (a bad byte on line 4): miniclaw writes "
            "UTF-8, so save it as UTF-8 first (`miniclaw memory edit memory/MEMORY.md:4` opens "
            "it there); nothing was written")
    assert _error(run(runner, workspace, "memory", "add", "--long", "Oat milk")) == said
    assert _error(run(runner, workspace, "memory", "forget", "memory/MEMORY.md:5", "--yes")) == said
    assert _error(run(runner, workspace, "memory", "forget", "-q", "tea", "--yes")) == said
    assert _error(run(runner, workspace, "memory", "add", "Oat milk")) == (
        f"Error: memory/{today()}.md is not valid UTF-8 (a bad byte on line 5): miniclaw "
        f"writes UTF-8, so save it as UTF-8 first (`miniclaw memory edit memory/{today()}.md:5` "
        "opens it there); nothing was written")
    assert {path.name: path.read_bytes() for path in memory.iterdir()} == before
    monkeypatch.setenv("EDITOR", "true")
    assert run(runner, workspace, "memory", "edit", "memory/MEMORY.md:4").exit_code == 0
    (memory / "MEMORY.md").write_bytes(LATIN_1.decode("latin-1").encode("utf-8"))  # fixed
    assert run(runner, workspace, "memory", "add", "--long", "Oat milk").exit_code == 0
    assert "Oat milk" in (memory / "MEMORY.md").read_text(encoding="utf-8")


def test_an_out_of_range_count_names_its_flag(runner: CliRunner, workspace: Path):
    """`search x -n 50` said "the result limit must be ...", a name no option has."""
    from tests.cli.test_cli import assert_usage_error

    assert assert_usage_error(run(runner, workspace, "search", "x", "-n", "50")).startswith(
        "Error: -n/--limit must be between 1 and 20, not 50: past the best 20")
    assert assert_usage_error(run(runner, workspace, "memory", "rank", "x", "--days", "0")) == (
        "Error: --days must be between 1 and 36500, not 0")
