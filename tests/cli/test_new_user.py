"""What a new user meets first: a new workspace's searches, and files they edited by hand
that a writer must not touch."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.cli.test_cli import days_ago, run
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
