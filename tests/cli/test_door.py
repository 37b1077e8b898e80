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
