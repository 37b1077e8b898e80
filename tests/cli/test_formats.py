"""`--format` on every reporting command (the same option as search's, the same help text,
read with --json by one helper), and `sources list` before the first search."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miniclaw.cli import app
from tests.cli.test_cli import assert_usage_error, run
from tests.conftest import write

# Each command given the option here, with what its JSON holds at the top (the contracts in
# docs/ARCHITECTURE.md).
COMMANDS = {
    ("context", "coffee"): {"message", "budget", "mode", "tokens", "corrections",
                            "sections", "prompt"},
    ("doctor",): {"workspace", "healthy", "findings", "checked", "fixed"},
    ("sources", "list"): {"workspace", "sources"},
    ("memory", "status"): {"workspace", "index_path", "index_exists", "files_on_disk",
                           "files_indexed", "entries", "up_to_date", "sources"},
    ("memory", "read", "--long"): {"entries"},
    ("memory", "recent"): {"days", "entries"},
    ("index", "prune", "--dry-run"): {"cache", "dry_run", "would_remove", "bytes"},
}
# The commands that write (or index), each run once per form: what their JSON holds.
WRITERS = {
    ("init",): {"workspace", "files"},
    ("memory", "add", "Likes green tea"): {"added"},
    ("memory", "forget", "memory/MEMORY.md:4", "--yes"): {"forgotten"},
    ("memory", "index"): {"files_parsed", "entries_added", "entries_removed"},
}


@pytest.fixture
def filled(workspace: Path) -> Path:
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-10\n- Prefers dark roast coffee\n")
    return workspace


@pytest.mark.parametrize("command", list(COMMANDS), ids=" ".join)
def test_format_json_is_the_json_of_json(runner: CliRunner, filled: Path, command):
    """`--format json` and `-f json` print what --json prints; `--format text` (any case)
    what no option prints. Before, these commands had --json only ("No such option")."""
    as_json = run(runner, filled, *command, "--json")
    for spelling in (["--format", "json"], ["-f", "JSON"]):
        done = run(runner, filled, *command, *spelling)
        assert done.exit_code == as_json.exit_code and "Error" not in done.stderr
        assert _stable(json.loads(done.stdout)) == _stable(json.loads(as_json.stdout))
    assert COMMANDS[command] <= json.loads(as_json.stdout).keys()
    plain = run(runner, filled, *command)
    assert run(runner, filled, *command, "--format", "text").stdout == plain.stdout
    assert not plain.stdout.lstrip().startswith("{")


@pytest.mark.parametrize("command", list(WRITERS), ids=" ".join)
def test_a_writing_command_takes_format_too(runner: CliRunner, filled: Path, command):
    """init, memory add, forget and index had --json only ("No such option: --format"). A
    form they have not is refused before anything is written."""
    from tests.cli.test_cli import snapshot

    before = snapshot(filled)
    line = assert_usage_error(run(runner, filled, *command, "-f", "markdown"))
    assert line == "Error: --format must be text or json, not 'markdown'"
    assert snapshot(filled) == before
    done = run(runner, filled, *command, "--format", "json")
    assert done.exit_code == 0, done.stderr
    assert WRITERS[command] <= json.loads(done.stdout).keys()
    if command[:2] != ("memory", "forget"):  # forgotten already: nothing left to forget
        again = run(runner, filled, *command, "-f", "TEXT")
        assert again.exit_code == 0 and again.stdout.strip()
        assert not again.stdout.lstrip().startswith("{")


def _stable(report: dict) -> dict:
    """A report without what changes from one run to the next (the index's update time)."""
    return {key: value for key, value in report.items() if key not in ("updated_at",)}


@pytest.mark.parametrize("command", list(COMMANDS), ids=" ".join)
def test_a_format_the_command_has_not_is_a_usage_error(runner: CliRunner, filled: Path, command):
    line = assert_usage_error(run(runner, filled, *command, "--format", "markdown"))
    assert line == "Error: --format must be text or json, not 'markdown'"
    line = assert_usage_error(run(runner, filled, *command, "--json", "--format", "text"))
    assert line == "Error: --json asks for JSON: choose one of --json or --format"


def test_every_format_option_has_the_same_help(runner: CliRunner):
    """One option, one help text, wherever it is offered; sessions search took `ef` and
    `mnemonic` (search's own shapes) and printed text."""
    helps = set()
    for command in [*COMMANDS, *WRITERS, ("sessions", "search")]:
        shown = runner.invoke(app, [*command[:2 if command[0] != "context" else 1], "--help"],
                              terminal_width=400).stdout
        start = shown.index("  -f, --format ")  # the option and its help, maybe wrapped
        end = shown.index("\n  -", start + 1)
        helps.add(" ".join(shown[start:end].split()))
    assert helps == {
        "-f, --format [text|json] Output: text (default) or json (the same as --json).",
        "-f, --format [text|json|markdown] Output: text (default), json (the same as --json) "
        "or markdown."}


def test_sessions_search_refuses_the_shapes_it_has_not(runner: CliRunner, filled: Path):
    line = assert_usage_error(run(runner, filled, "sessions", "search", "x", "-f", "ef"))
    assert line == "Error: --format must be text, json or markdown, not 'ef'"


def test_sources_list_says_a_source_is_not_indexed_yet(runner: CliRunner, workspace: Path,
                                                       isolated_home: Path):
    """Before the first search it said "0 entries indexed", as if the files held none."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-10\n- Prefers dark roast\n")
    write(workspace, "memory/2026-02-10.md", "# Daily Note - 2026-02-10\n\n## 09:00:00 UTC\n\nTea\n")
    before = run(runner, workspace, "sources", "list")
    assert before.exit_code == 0, before.stderr
    assert before.stdout.splitlines() == [
        "long_term  [built-in]  memory  not indexed yet (1 file): run `miniclaw memory index`",
        "daily_note  [built-in]  memory  not indexed yet (1 file): run `miniclaw memory index`",
        "transcripts  [built-in]  sessions  (not reachable)"]
    rows = json.loads(run(runner, workspace, "sources", "list", "--json").stdout)["sources"]
    assert [(r["files_on_disk"], r["files"], r["entries"]) for r in rows] == [
        (1, 0, 0), (1, 0, 0), (0, 0, 0)]
    (workspace / "sessions").mkdir()
    assert run(runner, workspace, "memory", "index").exit_code == 0
    assert run(runner, workspace, "sources", "list").stdout.splitlines() == [
        "long_term  [built-in]  memory  1 entry indexed",
        "daily_note  [built-in]  memory  1 entry indexed",
        "transcripts  [built-in]  sessions  no memory files yet"]
