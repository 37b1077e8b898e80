"""`memory add` at the door: a fact already remembered is not written again (issue 36)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from miniclaw.cli import app
from tests.cli.test_cli import run, snapshot


def test_the_same_fact_twice_says_where_it_is_and_writes_once(runner: CliRunner, workspace: Path):
    first = run(runner, workspace, "memory", "add", "Prefers dark roast coffee", "--long")
    assert first.exit_code == 0 and first.stdout.startswith("Added to long-term memory:")
    before = snapshot(workspace)
    again = run(runner, workspace, "memory", "add", "--long", "--", "- *prefers* DARK roast coffee.")
    assert again.exit_code == 0, again.stderr
    assert again.stdout == "Already remembered: memory/MEMORY.md:4\n"
    assert snapshot(workspace) == before


def test_stdin_goes_through_the_door_too(runner: CliRunner, workspace: Path):
    run(runner, workspace, "memory", "add", "Standup moved to 9:30")
    piped = runner.invoke(app, ["--workspace", str(workspace), "memory", "add", "-"],
                          input="standup moved to 9:30!\n")
    assert piped.exit_code == 0 and piped.stdout.startswith("Already remembered: memory/")


def test_force_writes_it_anyway(runner: CliRunner, workspace: Path):
    run(runner, workspace, "memory", "add", "Prefers dark roast coffee", "--long")
    forced = run(runner, workspace, "memory", "add", "Prefers dark roast coffee", "--long",
                 "--force")
    assert forced.exit_code == 0 and forced.stdout.startswith("Added to long-term memory:")
    assert (workspace / "memory/MEMORY.md").read_text().count("dark roast") == 2


def test_json_says_written_and_duplicate_of(runner: CliRunner, workspace: Path):
    first = json.loads(run(runner, workspace, "memory", "add", "Sam likes green tea",
                           "--json").stdout)
    assert first["written"] is True and first["added"]["content"] == "Sam likes green tea"
    again = run(runner, workspace, "memory", "add", "sam likes green tea", "--json")
    data = json.loads(again.stdout)
    assert again.exit_code == 0
    assert data["written"] is False and data["added"] is None
    assert data["duplicate_of"]["citation"] == first["added"]["citation"]
    assert data["duplicate_of"]["ref"] == first["added"]["ref"]


def test_private_text_is_not_in_the_answer(runner: CliRunner, workspace: Path):
    run(runner, workspace, "memory", "add", "Locker code is <private>4471</private>", "--long")
    again = run(runner, workspace, "memory", "add", "Locker code is <private>9999</private>",
                "--long", "--json")
    assert json.loads(again.stdout)["written"] is False
    assert "4471" not in again.stdout + again.stderr and "9999" not in again.stdout


# -- --supersedes and --all-versions -------------------------------------------------------------


def test_supersedes_marks_search_hides_and_all_versions_explains(runner: CliRunner,
                                                                 workspace: Path):
    first = json.loads(run(runner, workspace, "memory", "add", "Sam lives in Oslo", "--long",
                           "--json").stdout)["added"]
    added = run(runner, workspace, "memory", "add", "Sam moved to Bergen", "--long",
                "--supersedes", first["ref"])
    assert added.exit_code == 0, added.stderr
    assert added.stdout.splitlines()[1] == (
        "Superseded: memory/MEMORY.md:4 (kept in the file, marked; searches show it with "
        "--all-versions)")
    hidden = run(runner, workspace, "search", "Sam", "--all")
    assert "Bergen" in hidden.stdout and "Oslo" not in hidden.stdout
    shown = run(runner, workspace, "search", "Sam", "--all", "--all-versions")
    assert "Oslo" in shown.stdout
    assert 'superseded by memory/MEMORY.md:6#' in shown.stdout
    assert ': "Sam moved to Bergen"' in shown.stdout
    markdown = run(runner, workspace, "search", "Sam", "--all", "--all-versions", "-f",
                   "markdown").stdout
    assert '_superseded by memory/MEMORY.md:6#' in markdown
    data = json.loads(run(runner, workspace, "search", "Sam", "--all", "--all-versions",
                          "--json").stdout)
    old = next(r for r in data["results"] if "Oslo" in r["content"])
    assert old["meta"]["superseded_by"].startswith("memory/MEMORY.md:6#")
    assert old["meta"]["superseded_by_text"] == "Sam moved to Bergen"


def test_supersedes_json_names_the_superseded_entry(runner: CliRunner, workspace: Path):
    run(runner, workspace, "memory", "add", "Atlas ships in May", "--long")
    data = json.loads(run(runner, workspace, "memory", "add", "Atlas slipped to June",
                          "--supersedes", "memory/MEMORY.md:4", "--json").stdout)
    assert data["written"] is True and data["superseded"]["content"] == "Atlas ships in May"


def test_bad_supersedes_is_one_line_exit_2_and_nothing_written(runner: CliRunner,
                                                               workspace: Path):
    from tests.cli.test_cli import assert_usage_error

    run(runner, workspace, "memory", "add", "Atlas ships in May", "--long")
    before = snapshot(workspace)
    for citation in ("memory/MEMORY.md:99", "memory/nowhere.md:1", "garbage"):
        line = assert_usage_error(run(runner, workspace, "memory", "add", "Atlas slipped",
                                      "--supersedes", citation))
        assert "supersede" in line or "citation" in line or "memory file" in line
    run(runner, workspace, "memory", "add", "Atlas slipped to June", "--supersedes",
        "memory/MEMORY.md:4")
    before = snapshot(workspace)
    assert "superseded already" in assert_usage_error(run(
        runner, workspace, "memory", "add", "Atlas slipped to July", "--supersedes",
        "memory/MEMORY.md:4"))
    assert snapshot(workspace) == before


def test_memory_read_shows_a_superseded_fact_marked(runner: CliRunner, workspace: Path):
    run(runner, workspace, "memory", "add", "Atlas ships in May", "--long")
    run(runner, workspace, "memory", "add", "Atlas slipped to June", "--long", "--supersedes",
        "memory/MEMORY.md:4")
    out = run(runner, workspace, "memory", "read", "--long").stdout
    assert "Atlas ships in May\n    superseded by memory/MEMORY.md:6#" in out
    data = json.loads(run(runner, workspace, "memory", "read", "--long", "--json").stdout)
    assert data["entries"][0]["meta"]["superseded_by"].startswith("memory/MEMORY.md:6#")
