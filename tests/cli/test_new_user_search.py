"""What a new user tripped on (issues 38, 39): notes of a zone ahead, bad zone names,
hidden older notes, date questions, past questions ranked as memories, the chat's edges."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miniclaw.cli import app
from tests.conftest import daily_note, write


def run(workspace: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", str(workspace), *args],
                          capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=120)


def cli(workspace: Path, *args: str, env: dict | None = None):
    return CliRunner().invoke(app, ["--workspace", str(workspace), *args], env=env)


# -- time zones (issue 38) -----------------------------------------------------------------

def _utc_today() -> date:
    return datetime.now(timezone.utc).date()


def test_a_note_dated_tomorrow_is_listed_by_recent_and_read_by_date(workspace: Path):
    """Written in Tokyo (a day ahead), read in UTC: it exists, so it is shown."""
    tomorrow = (_utc_today() + timedelta(days=1)).isoformat()
    write(workspace, f"memory/{tomorrow}.md",
          daily_note(tomorrow, ["Landed in Tokyo, hotel near Shinjuku"], ["08:00:00"]))
    recent = run(workspace, "memory", "recent", "--json")
    assert recent.returncode == 0, recent.stderr
    assert [e["date"] for e in json.loads(recent.stdout)["entries"]] == [tomorrow]
    read = run(workspace, "memory", "read", "--date", tomorrow)
    assert read.returncode == 0, read.stderr
    assert "hotel near Shinjuku" in read.stdout
    # a later day with no note is still refused as in the future
    later = (_utc_today() + timedelta(days=2)).isoformat()
    refused = run(workspace, "memory", "read", "--date", later)
    assert refused.returncode == 2 and "future" in refused.stderr


@pytest.mark.parametrize("zone", ["America", "Europe", "A" * 300])
def test_a_zone_name_that_is_a_folder_or_too_long_is_one_line_exit_2(workspace: Path, zone: str):
    done = run(workspace, "memory", "recent", env={"MINICLAW_TIMEZONE": zone})
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("Error: unknown time zone") and done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr and "zoneinfo" not in done.stderr
