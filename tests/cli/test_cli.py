"""The `miniclaw` command line through Typer's CliRunner: exit codes, stdout, stderr, files."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from miniclaw.cli import app
from tests.conftest import write

# docs/ARCHITECTURE.md's fields, plus `citation`, `ref` (issue 39) and `matched` (always true now).
RESULT_FIELDS = {"rank", "score", "source", "path", "line_start", "line_end", "citation", "ref", "date",
                 "category", "tags", "content", "excerpt", "matched"}
TEMPLATE_FILES = ["SOUL.md", "AGENTS.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "memory/MEMORY.md"]
ANSI = re.compile(r"\x1b\[")


def today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


def days_ago(n: int) -> str:
    return (datetime.now(timezone.utc).date() - timedelta(days=n)).isoformat()


def run(runner: CliRunner, ws: Path, *args: str):
    return runner.invoke(app, ["--workspace", str(ws), *args])


def snapshot(folder: Path) -> dict[str, bytes]:
    if not folder.exists():
        return {}
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def assert_usage_error(result) -> str:
    """Exit 2, exactly one `Error: ...` line on stderr, no traceback; returns that line."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    assert "Traceback" not in result.stderr + result.stdout
    return lines[0]


@pytest.fixture
def filled(workspace: Path) -> Path:
    """A workspace with long-term memory and two daily notes, dated relative to today."""
    write(workspace, "memory/MEMORY.md",
          f"# Memory\n\n## {today()}\n"
          f"- Prefers dark roast coffee (added at {today()}T09:12:03Z)\n"
          "<!-- @category: preference -->\n"
          "<!-- @tag: coffee -->\n"
          "<!-- @tag: morning -->\n"
          f"- Project Atlas deadline moved to March 3 (added at {today()}T17:40:11Z)\n")
    write(workspace, f"memory/{today()}.md",
          f"# Daily Note - {today()}\n\n## 09:12:03 UTC\n\nMet Sam about the Atlas budget.\n"
          "\n---\n\n## 10:00:00 UTC\n\nBought coffee beans for the office.\n")
    write(workspace, f"memory/{days_ago(2)}.md",
          f"# Daily Note - {days_ago(2)}\n\n## 08:00:00 UTC\n\nTwo days ago: dentist appointment.\n")
    write(workspace, f"memory/{days_ago(10)}.md",
          f"# Daily Note - {days_ago(10)}\n\n## 08:00:00 UTC\n\nTen days ago: bike repair.\n")
    return workspace


# -- init -------------------------------------------------------------------------------


def test_init_creates_template_files_with_private_modes(runner, tmp_path):
    ws = tmp_path / "new-ws"
    result = run(runner, ws, "init")
    assert result.exit_code == 0, result.stderr
    for rel in TEMPLATE_FILES:
        path = ws / rel
        assert path.is_file(), rel
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, rel
    assert stat.S_IMODE(ws.stat().st_mode) == 0o700
    assert stat.S_IMODE((ws / "memory").stat().st_mode) == 0o700
    assert (ws / "memory/MEMORY.md").read_text().startswith("# Memory")


def test_init_never_overwrites_an_existing_file(runner, tmp_path):
    ws = tmp_path / "mine"
    write(ws, "SOUL.md", "my own soul\n")
    write(ws, "memory/MEMORY.md", "# Memory\n\n- my own memory\n")
    before = snapshot(ws)
    result = run(runner, ws, "init")
    assert result.exit_code == 0, result.stderr
    after = snapshot(ws)
    assert after["SOUL.md"] == b"my own soul\n"
    assert after["memory/MEMORY.md"] == b"# Memory\n\n- my own memory\n"
    assert {k: after[k] for k in before} == before
    assert "kept" in result.stdout


def test_init_twice_changes_nothing(runner, tmp_path):
    ws = tmp_path / "twice"
    assert run(runner, ws, "init").exit_code == 0
    before = snapshot(ws)
    result = run(runner, ws, "init")
    assert result.exit_code == 0
    assert snapshot(ws) == before
    assert "0 files created" in result.stdout


def test_init_on_a_file_is_a_usage_error(runner, tmp_path):
    target = tmp_path / "a-file"
    target.write_text("not a folder")
    assert_usage_error(run(runner, target, "init"))
    assert target.read_text() == "not a folder"


# -- memory add -------------------------------------------------------------------------


def test_add_defaults_to_todays_daily_note(runner, workspace):
    result = run(runner, workspace, "memory", "add", "Met Sam about the budget")
    assert result.exit_code == 0, result.stderr
    note = workspace / f"memory/{today()}.md"
    assert "Met Sam about the budget" in note.read_text()
    assert not (workspace / "memory/MEMORY.md").exists()
    assert f"memory/{today()}.md:5" in result.stdout


def test_add_daily_flag_writes_the_daily_note(runner, workspace):
    result = run(runner, workspace, "memory", "add", "--daily", "daily words")
    assert result.exit_code == 0, result.stderr
    assert "daily words" in (workspace / f"memory/{today()}.md").read_text()


def test_add_long_writes_memory_file(runner, workspace):
    result = run(runner, workspace, "memory", "add", "Prefers dark roast", "--long")
    assert result.exit_code == 0, result.stderr
    text = (workspace / "memory/MEMORY.md").read_text()
    assert f"## {today()}\n- Prefers dark roast (added at {today()}T" in text
    assert "memory/MEMORY.md:4" in result.stdout
    assert not (workspace / f"memory/{today()}.md").exists()


def test_add_with_category_and_repeated_tags(runner, workspace):
    result = run(runner, workspace, "memory", "add", "Chose Postgres", "--long",
                 "--category", "decision", "--tag", "atlas", "-t", "db")
    assert result.exit_code == 0, result.stderr
    lines = (workspace / "memory/MEMORY.md").read_text().splitlines()
    assert lines[-3:] == ["<!-- @category: decision -->", "<!-- @tag: atlas -->", "<!-- @tag: db -->"]


def test_add_json_prints_the_added_entry(runner, workspace):
    result = run(runner, workspace, "memory", "add", "json words", "--json", "-t", "x")
    assert result.exit_code == 0, result.stderr
    added = json.loads(result.stdout)["added"]
    assert (added["content"], added["source"], added["tags"]) == ("json words", "daily_note", ["x"])
    assert added["path"] == f"memory/{today()}.md"


def test_add_with_both_long_and_daily_is_exit_2_and_writes_nothing(runner, workspace):
    assert_usage_error(run(runner, workspace, "memory", "add", "x", "--long", "--daily"))
    assert snapshot(workspace) == {}


# -- memory read ------------------------------------------------------------------------


def test_read_today_shows_todays_entries(runner, filled):
    for args in (["memory", "read", "--today"], ["memory", "read"]):
        result = run(runner, filled, *args)
        assert result.exit_code == 0, result.stderr
        assert "Met Sam about the Atlas budget." in result.stdout
        assert "Bought coffee beans" in result.stdout
        assert "dentist" not in result.stdout


def test_read_long_shows_memory_entries(runner, filled):
    result = run(runner, filled, "memory", "read", "--long")
    assert result.exit_code == 0, result.stderr
    assert "Prefers dark roast coffee" in result.stdout
    assert "Project Atlas deadline" in result.stdout
    assert "Met Sam" not in result.stdout
    assert "memory/MEMORY.md:4" in result.stdout


def test_read_date_shows_that_days_note(runner, filled):
    result = run(runner, filled, "memory", "read", "--date", days_ago(2))
    assert result.exit_code == 0, result.stderr
    assert "dentist appointment" in result.stdout
    assert "Met Sam" not in result.stdout


def test_read_json_lists_entries(runner, filled):
    result = run(runner, filled, "memory", "read", "--long", "--json")
    assert result.exit_code == 0, result.stderr
    entries = json.loads(result.stdout)["entries"]
    assert [e["content"] for e in entries] == ["Prefers dark roast coffee",
                                               "Project Atlas deadline moved to March 3"]
    assert entries[0]["tags"] == ["coffee", "morning"]


def test_read_future_date_is_exit_2(runner, filled):
    tomorrow = (datetime.now(timezone.utc).date() + timedelta(days=1)).isoformat()
    line = assert_usage_error(run(runner, filled, "memory", "read", "--date", tomorrow))
    assert "future" in line


@pytest.mark.parametrize("value", ["2026-13-45", "2026-02-30", "not-a-date", "14/99/2026x"])
def test_read_malformed_date_is_exit_2(runner, filled, value):
    line = assert_usage_error(run(runner, filled, "memory", "read", "--date", value))
    assert "--date" in line


# -- memory recent ----------------------------------------------------------------------


def test_recent_shows_last_n_days_newest_first(runner, filled):
    result = run(runner, filled, "memory", "recent", "-d", "3")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "Met Sam" in out and "dentist" in out
    assert "bike repair" not in out
    assert out.index("Met Sam") < out.index("dentist")


def test_recent_with_wider_window_reaches_older_notes(runner, filled):
    result = run(runner, filled, "memory", "recent", "--days", "11")
    assert result.exit_code == 0, result.stderr
    assert "bike repair" in result.stdout
    assert result.stdout.index("dentist") < result.stdout.index("bike repair")


def test_recent_zero_days_is_exit_2(runner, filled):
    assert_usage_error(run(runner, filled, "memory", "recent", "-d", "0"))


# -- memory rank: human output ----------------------------------------------------------


def test_rank_human_output_format(runner, filled):
    result = run(runner, filled, "memory", "rank", "-q", "coffee")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.rstrip("\n").splitlines()
    assert lines[0] == 'Search Results for: "coffee"'
    heads = [line for line in lines if re.match(r"^\d+\. \[Score: ", line)]
    assert len(heads) >= 2  # the long-term bullet and the daily note that mention coffee
    for n, head in enumerate(heads, 1):
        assert re.fullmatch(rf"{n}\. \[Score: \d+(\.\d+)?\] (\d{{4}}-\d{{2}}-\d{{2}}|undated) "
                            r"\((Long-term Memory|Daily Note)\)", head), head
    assert any(head.endswith(f"{today()} (Long-term Memory)") for head in heads)
    first = lines.index(heads[0])
    assert lines[first + 1].startswith("   ") and "coffee" in lines[first + 1].lower()
    footer = re.fullmatch(r"Found (\d+) relevant memor(?:y|ies) \(showing top (\d+)\)", lines[-1])
    assert footer, lines[-1]
    assert int(footer.group(2)) == len(heads)
    assert "Prefers dark roast coffee" in result.stdout
    assert "Bought coffee beans for the office." in result.stdout


def test_rank_excerpt_is_at_most_150_characters(runner, workspace):
    long_text = " ".join(["filler"] * 40 + ["zanzibar"] + ["padding"] * 40)
    write(workspace, "memory/MEMORY.md", f"# Memory\n\n## {today()}\n- {long_text}\n")
    result = run(runner, workspace, "memory", "rank", "-q", "zanzibar")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("1. [Score: "))
    excerpt = lines[head + 1]
    assert excerpt.startswith("   ")
    assert "zanzibar" in excerpt
    assert len(excerpt[3:]) <= 150
    assert len(long_text) > 150


def test_rank_limit_shows_top_n_of_total(runner, filled):
    result = run(runner, filled, "memory", "rank", "-q", "coffee atlas", "-n", "1")
    assert result.exit_code == 0, result.stderr
    assert re.search(r"^Found (\d+) relevant memor(?:y|ies) \(showing top 1\)$", result.stdout, re.M)
    total = int(re.search(r"^Found (\d+)", result.stdout, re.M).group(1))
    assert total >= 3
    assert "2. [Score:" not in result.stdout


def test_rank_without_results_suggests_all_and_exits_0(runner, filled):
    write(filled, f"memory/{days_ago(40)}.md",  # older notes: --all may find more
          f"# Daily Note - {days_ago(40)}\n\n## 08:00:00 UTC\n\nForty days ago: a kite.\n")
    result = run(runner, filled, "memory", "rank", "-q", "xylophone")
    assert result.exit_code == 0, result.stderr
    assert 'Search Results for: "xylophone"' in result.stdout
    assert "--all" in result.stdout
    assert "Found" not in result.stdout


def test_rank_all_reaches_notes_outside_the_window(runner, filled):
    assert "bike repair" not in run(runner, filled, "memory", "rank", "-q", "bike", "--days", "5").stdout
    result = run(runner, filled, "memory", "rank", "-q", "bike", "--all")
    assert result.exit_code == 0, result.stderr
    assert "bike repair" in result.stdout


# -- memory rank: JSON ------------------------------------------------------------------


def test_rank_json_is_the_design_object_and_nothing_else(runner, filled):
    result = run(runner, filled, "memory", "rank", "-q", "coffee", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    # docs/ARCHITECTURE.md's object, with the spelling corrections and suggestions of the query
    # issue, and the hints and warnings as data of issue 12.
    assert set(data) == {"query", "mode", "total", "corrections", "suggestions", "hints",
                         "warnings", "results"}
    assert data["query"] == "coffee"
    assert isinstance(data["mode"], str) and data["mode"]
    assert isinstance(data["total"], int) and data["total"] >= 2
    assert 2 <= len(data["results"]) <= 5
    for rank, hit in enumerate(data["results"], 1):
        assert set(hit) == RESULT_FIELDS
        assert hit["rank"] == rank
        assert isinstance(hit["score"], (int, float))
        assert hit["source"] in ("long_term", "daily_note")
        assert isinstance(hit["line_start"], int) and hit["line_start"] <= hit["line_end"]
        assert isinstance(hit["tags"], list)
        assert isinstance(hit["content"], str) and isinstance(hit["excerpt"], str)
    contents = [hit["content"] for hit in data["results"]]
    assert "Bought coffee beans for the office." in contents
    daily_hit = next(h for h in data["results"] if h["content"].startswith("Bought coffee"))
    assert (daily_hit["path"], daily_hit["line_start"], daily_hit["date"]) == (
        f"memory/{today()}.md", 11, today())
    long_hit = next(h for h in data["results"] if h["source"] == "long_term")
    assert long_hit == {**long_hit, "path": "memory/MEMORY.md", "line_start": 4, "line_end": 4,
                        "date": today(), "category": "preference", "tags": ["coffee", "morning"],
                        "content": "Prefers dark roast coffee"}
    assert result.stderr == ""


def test_rank_total_is_never_less_than_the_results_shown(runner, filled):
    # "Found X relevant memories (showing top Y)" must not show more than it found.
    data = json.loads(run(runner, filled, "memory", "rank", "-q", "coffee", "--json").stdout)
    assert data["total"] >= len(data["results"]), data
    text = run(runner, filled, "memory", "rank", "-q", "coffee").stdout
    found, shown = map(int, re.search(r"Found (\d+) relevant memor(?:y|ies) \(showing top (\d+)\)",
                                      text).groups())
    assert found >= shown, text


def test_rank_json_scores_are_sorted_best_first(runner, filled):
    data = json.loads(run(runner, filled, "memory", "rank", "-q", "atlas coffee", "--json").stdout)
    scores = [hit["score"] for hit in data["results"]]
    assert scores == sorted(scores, reverse=True) and scores


def test_rank_json_without_results(runner, filled):
    result = run(runner, filled, "memory", "rank", "-q", "xylophone", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert (data["query"], data["total"], data["results"]) == ("xylophone", 0, [])
    # docs/ARCHITECTURE.md's object, with the spelling corrections and suggestions of the query
    # issue, and the hints and warnings as data of issue 12.
    assert set(data) == {"query", "mode", "total", "corrections", "suggestions", "hints",
                         "warnings", "results"}


@pytest.mark.parametrize("args", [
    ["memory", "rank", "-q", "coffee"],
    ["memory", "rank", "-q", "coffee", "--json"],
    ["memory", "read", "--long"],
    ["memory", "read"],
    ["memory", "recent"],
])
def test_no_ansi_escape_codes_when_not_a_terminal(runner, filled, args):
    result = run(runner, filled, *args)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip()
    assert not ANSI.search(result.stdout)
    assert not ANSI.search(result.stderr)


# -- bad input --------------------------------------------------------------------------


def _future() -> str:
    return (datetime.now(timezone.utc).date() + timedelta(days=3)).isoformat()


BAD_INPUTS = {
    "empty query": ["memory", "rank", "-q", ""],
    "whitespace query": ["memory", "rank", "-q", "   \t"],
    "query over 1000 chars": ["memory", "rank", "-q", "coffee " * 150],
    "query without words": ["memory", "rank", "-q", "!!! ???"],
    "unknown mode": ["memory", "rank", "-q", "coffee", "--mode", "bogus"],
    "limit 0": ["memory", "rank", "-q", "coffee", "-n", "0"],
    "limit 21": ["memory", "rank", "-q", "coffee", "-n", "21"],
    "limit not a number": ["memory", "rank", "-q", "coffee", "-n", "many"],
    "rank days 0": ["memory", "rank", "-q", "coffee", "--days", "0"],
    "rank days and all": ["memory", "rank", "-q", "coffee", "--days", "3", "--all"],
    "rank missing query": ["memory", "rank"],
    "recent days 0": ["memory", "recent", "--days", "0"],
    "recent days negative": ["memory", "recent", "-d", "-4"],
    "malformed date": ["memory", "read", "--date", "2026-99-99"],
    "unparseable date": ["memory", "read", "--date", "someday"],
    "future date": ["memory", "read", "--date", "FUTURE"],
    "two read targets": ["memory", "read", "--long", "--today"],
    "empty memory text": ["memory", "add", ""],
    "whitespace memory text": ["memory", "add", "  \n  "],
    "empty long memory text": ["memory", "add", "   ", "--long"],
    "bad category": ["memory", "add", "text", "--category", "Not Valid"],
    "bad tag": ["memory", "add", "text", "--tag", "has space"],
    "long and daily": ["memory", "add", "text", "--long", "--daily"],
}


@pytest.mark.parametrize("args", list(BAD_INPUTS.values()), ids=list(BAD_INPUTS))
def test_bad_input_exits_2_with_one_error_line_and_changes_nothing(runner, filled, args):
    args = [_future() if a == "FUTURE" else a for a in args]
    before = snapshot(filled)
    result = run(runner, filled, *args)
    assert_usage_error(result)
    assert result.stdout == ""
    assert snapshot(filled) == before


@pytest.mark.parametrize("args", [
    ["memory", "rank", "-q", "coffee", "--days", "800000"],
    ["memory", "rank", "-q", "coffee", "--days", "99999999999999999999999"],
    ["memory", "recent", "--days", "800000"],
], ids=["rank days before year 1", "rank days beyond C int", "recent days before year 1"])
def test_huge_day_counts_are_handled_without_a_traceback(runner, filled, args):
    # A window reaching before year 1 may mean "all history" (exit 0) or be bad input
    # (exit 2 with one Error line); it must never crash with a traceback (exit 1).
    before = snapshot(filled)
    result = run(runner, filled, *args)
    assert result.exit_code in (0, 2), (result.exit_code, repr(result.exception))
    if result.exit_code == 2:
        assert_usage_error(result)
    assert snapshot(filled) == before


def test_query_of_exactly_1000_chars_is_accepted(runner, filled):
    query = ("coffee " * 143)[:1000]
    assert len(query) == 1000
    assert run(runner, filled, "memory", "rank", "-q", query).exit_code == 0


@pytest.mark.parametrize("args", [
    ["memory", "rank", "-q", "coffee"],
    ["memory", "rank", "-q", "coffee", "--json"],
    ["memory", "add", "text"],
    ["memory", "add", "text", "--long"],
    ["memory", "read"],
    ["memory", "read", "--long"],
    ["memory", "recent"],
], ids=lambda a: " ".join(a[1:]))
def test_missing_workspace_exits_2_and_says_miniclaw_init(runner, tmp_path, args):
    ws = tmp_path / "no-such-workspace"
    result = run(runner, ws, *args)
    line = assert_usage_error(result)
    assert "miniclaw init" in line
    assert result.stdout == ""
    assert not ws.exists()


# -- damaged files ----------------------------------------------------------------------


def test_rank_finds_text_in_non_utf8_note_and_warns_naming_it(runner, workspace):
    (workspace / f"memory/{today()}.md").write_bytes(
        f"# Daily Note - {today()}\n\n## 09:00:00 UTC\n\nbroken \xff bytes here\n\n---\n\n"
        "## 10:00:00 UTC\n\nzanzibar trip planning\n".encode("latin-1"))
    result = run(runner, workspace, "memory", "rank", "-q", "zanzibar")
    assert result.exit_code == 0, result.stderr
    assert "zanzibar trip planning" in result.stdout
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert warnings and any(f"memory/{today()}.md" in line for line in warnings)


def test_rank_json_with_non_utf8_note_keeps_stdout_pure_json(runner, workspace):
    (workspace / f"memory/{today()}.md").write_bytes(
        b"## 10:00:00 UTC\n\nzanzibar \xfe\xff trip\n")
    result = run(runner, workspace, "memory", "rank", "-q", "zanzibar", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["results"][0]["content"] == "zanzibar \ufffd\ufffd trip"
    assert result.stderr.startswith("Warning:")


def test_read_of_non_utf8_note_warns_naming_it(runner, workspace):
    (workspace / f"memory/{today()}.md").write_bytes(b"## 10:00:00 UTC\n\nok \xff text\n")
    result = run(runner, workspace, "memory", "read")
    assert result.exit_code == 0, result.stderr
    assert "ok \ufffd text" in result.stdout
    assert result.stderr.startswith("Warning:") and f"memory/{today()}.md" in result.stderr


# -- privacy ----------------------------------------------------------------------------

SECRETS = ["pineapplesecret", "mangosecret", "papayasecret", "guavasecret"]


@pytest.fixture
def private_ws(workspace: Path) -> Path:
    write(workspace, "memory/MEMORY.md",
          f"# Memory\n\n## {today()}\n"
          "- visible coffee <private>pineapplesecret</private> note\n"
          "<private>\n- coffee mangosecret hidden bullet\n</private>\n"
          "- another coffee memory\n")
    write(workspace, f"memory/{today()}.md",
          "---\nprivate: true\n---\n\n## 09:00:00 UTC\n\ncoffee papayasecret in a private file\n")
    write(workspace, f"memory/{days_ago(1)}.md",
          f"# Daily Note - {days_ago(1)}\n\n## 09:00:00 UTC\n\nshown coffee line\n"
          "<private>\ncoffee guavasecret\n")
    return workspace


def _assert_no_secret(result, *, query: str | None = None):
    assert result.exit_code == 0, result.stderr
    out = result.stdout + result.stderr
    if query is not None:
        # Echoes of what the user typed are allowed: the header / "query" field, and the
        # suggestion to drop a word no memory holds. Nothing else may name the word.
        for echo in (f'"{query}"', f"drop '{query}'"):
            out = out.replace(echo, "")
    for secret in SECRETS:
        assert secret not in out, (secret, out)


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_private_text_never_appears_in_rank(runner, private_ws, json_flag):
    result = run(runner, private_ws, "memory", "rank", "-q", "coffee", "--all", *json_flag)
    _assert_no_secret(result)
    assert "visible coffee" in result.stdout
    assert "shown coffee line" in result.stdout


@pytest.mark.parametrize("secret", SECRETS)
def test_searching_for_private_words_finds_nothing(runner, private_ws, secret):
    result = run(runner, private_ws, "memory", "rank", "-q", secret, "--all", "--json")
    _assert_no_secret(result, query=secret)
    data = json.loads(result.stdout)
    assert (data["total"], data["results"]) == (0, [])
    text = run(runner, private_ws, "memory", "rank", "-q", secret, "--all")
    _assert_no_secret(text, query=secret)
    assert "No memories matched" in text.stdout


@pytest.mark.parametrize("args", [
    ["memory", "read", "--long"],
    ["memory", "read", "--long", "--json"],
    ["memory", "read"],
    ["memory", "read", "--json"],
    ["memory", "read", "--date", "yesterday"],
    ["memory", "recent"],
    ["memory", "recent", "--json"],
], ids=lambda a: " ".join(a[1:]))
def test_private_text_never_appears_in_read_or_recent(runner, private_ws, args):
    result = run(runner, private_ws, *args)
    _assert_no_secret(result)


def test_read_long_still_shows_the_visible_parts(runner, private_ws):
    result = run(runner, private_ws, "memory", "read", "--long")
    assert "visible coffee  note" in result.stdout
    assert "another coffee memory" in result.stdout


# -- guards -----------------------------------------------------------------------------


def _walk(command, path=()):
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _walk(sub, path + (name,))


def test_every_command_has_help_text():
    commands = list(_walk(typer.main.get_command(app)))
    assert len(commands) >= 8  # root, init, memory and its subcommands
    names = {" ".join(path) for path, _ in commands}
    assert {"init", "memory", "memory add", "memory read", "memory recent", "memory rank"} <= names
    for path, command in commands:
        assert (command.help or "").strip(), f"`miniclaw {' '.join(path)}` has no help text"


def test_every_option_has_help_text():
    for path, command in _walk(typer.main.get_command(app)):
        for param in command.params:
            if getattr(param, "param_type_name", "") == "option":
                assert (param.help or "").strip(), f"{' '.join(path)} {param.opts} has no help"


def test_help_of_every_command_exits_0(runner):
    for path, _ in _walk(typer.main.get_command(app)):
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.stderr)
        assert "Usage" in result.stdout


HEAVY = ("sqlite3", "_sqlite3", "Stemmer", "dateutil", "yaml", "wordfreq", "mcp", "httpx")
_CHECK = ("import sys\n"
          "heavy = sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r})\n"
          "print('HEAVY:' + ','.join(heavy), file=sys.stderr)\n")


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ))


def test_importing_the_cli_does_not_import_heavy_modules():
    proc = _python("import miniclaw.cli\n" + _CHECK.format(heavy=set(HEAVY)))
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY:\n" in proc.stderr


@pytest.mark.parametrize("argv", [["--help"], ["memory", "--help"], ["memory", "rank", "--help"]])
def test_help_does_not_import_heavy_modules(argv):
    code = ("from miniclaw.cli import app\n"
            "try:\n"
            f"    app({argv!r}, prog_name='miniclaw')\n"
            "except SystemExit:\n"
            "    pass\n" + _CHECK.format(heavy=set(HEAVY)))
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout
    assert "HEAVY:\n" in proc.stderr


_BUILT = ("import sys\n"
          "from miniclaw.cli import app\n"
          "try:\n"
          "    app({argv!r}, prog_name='miniclaw')\n"
          "except SystemExit:\n"
          "    pass\n"
          "print('CLI:' + ','.join(sorted(m for m in sys.modules if m.startswith('miniclaw.cli.'))),"
          " file=sys.stderr)\n")


def test_a_command_imports_only_its_own_cli_module(workspace):
    """CLI start-up (issue 12): `memory rank` imports and builds the memory group only, not
    chat, sessions, sources, doctor... (Typer converts every command it is given, ~4 ms for
    all of them, on every start)."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-01\n- kayak rental booked\n")
    proc = _python(_BUILT.format(argv=["--workspace", str(workspace), "memory", "rank", "-q", "kayak"]))
    assert "kayak rental booked" in proc.stdout, proc.stderr
    loaded = proc.stderr.rsplit("CLI:", 1)[1].split()[0].split(",")
    assert {"miniclaw.cli.memory", "miniclaw.cli.render"} <= set(loaded)
    assert not {"miniclaw.cli.chat", "miniclaw.cli.sessions", "miniclaw.cli.sources",
                "miniclaw.cli.doctor", "miniclaw.cli.mcp", "miniclaw.cli.index",
                "miniclaw.cli.workspace", "miniclaw.cli.context"} & set(loaded), loaded


def test_a_search_does_not_import_aiofiles_a_memory_read_does(workspace):
    """aiofiles (the reads of whole memory files from coroutines, issue 33) is imported only
    by the commands that read that way: a one-shot search reads through the index."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-01\n- kayak rental booked\n")
    check = "print('AIOFILES', 'aiofiles' in sys.modules, file=sys.stderr)\n"
    for argv, imported in ((["search", "kayak"], False), (["memory", "read", "--long"], True)):
        proc = _python(_BUILT.format(argv=["--workspace", str(workspace), *argv]) + check)
        assert "kayak rental booked" in proc.stdout, proc.stderr
        assert f"AIOFILES {imported}" in proc.stderr, (argv, proc.stderr)


def test_a_command_runs_its_blocking_work_in_one_worker_thread():
    """A one-shot command's library calls share one worker (and so one index connection):
    a thread per source cost a search beside three stores more CPU than it saved
    (benchmarks/README.md). asyncio's default executor starts a thread per waiting call."""
    import asyncio
    import threading

    from miniclaw.cli.app import run

    async def work() -> set[str]:
        names = await asyncio.gather(*(asyncio.to_thread(lambda: threading.current_thread().name)
                                       for _ in range(4)))
        return set(names)

    assert run(work()) == {"miniclaw-cli_0"}


_CTRL_C_BEFORE_THE_COMMAND_RUNS = """
import asyncio, gc, sys
from miniclaw.cli.app import run

where = sys.argv[1]
if where == "runner set up":  # the Runner's set-up, the loop made but not yet running
    init = asyncio.Runner._lazy_init
    def _lazy_init(self):
        init(self)
        raise KeyboardInterrupt
    asyncio.Runner._lazy_init = _lazy_init
else:  # in the Runner's run, before the command's task exists
    create = asyncio.BaseEventLoop.create_task
    def create_task(self, coro, **kwargs):
        asyncio.BaseEventLoop.create_task = create  # once: the Runner's close makes tasks
        raise KeyboardInterrupt
    asyncio.BaseEventLoop.create_task = create_task

async def command():
    return 1
try:
    run(command())
except KeyboardInterrupt:
    gc.collect()  # what a Ctrl-C left unclosed is reported now
    print("interrupted")
"""


@pytest.mark.parametrize("where", ["runner set up", "task not made"])
def test_a_ctrl_c_before_the_command_runs_leaves_nothing_unclosed(where):
    """Seen once under load in tests/reliability/test_index_safety.py: a Ctrl-C inside
    asyncio's set-up left the loop unclosed and the coroutines never awaited, and Python
    printed both on stderr ("Exception ignored in: BaseEventLoop.__del__", "coroutine
    'run.<locals>.in_one_thread' was never awaited")."""
    done = subprocess.run([sys.executable, "-X", "dev", "-c", _CTRL_C_BEFORE_THE_COMMAND_RUNS,
                           where], capture_output=True, text=True, timeout=60,
                          cwd=str(Path(__file__).resolve().parents[2]))
    assert done.stdout == "interrupted\n"
    assert done.stderr == ""


def test_root_help_and_suggestions_still_know_every_command(runner):
    """The root builds a command only when it is named, yet its help lists all of them, in
    the same order, and a typo is still answered with the command meant."""
    from miniclaw.cli.app import SUBCOMMANDS
    from miniclaw.cli.memory import MemoryGroup

    def listed(*argv: str) -> list[str]:
        shown = runner.invoke(app, [*argv, "--help"])
        return [line.split()[0] for line in shown.stdout.split("Commands:", 1)[1].splitlines()
                if line.startswith("  ")]

    assert listed() == list(SUBCOMMANDS)
    assert listed("memory") == ["add", "read", "recent", "rank", "forget", "edit", "index",
                                "status", "tidy"] == list(MemoryGroup.subcommands)
    typo = runner.invoke(app, ["memroy", "rank"])
    assert typo.exit_code == 2
    assert typo.stderr == "Error: No such command 'memroy'. Did you mean 'memory'?\n"


# -- the console script, as a process (it ends with os._exit after flushing) ----------------

def _miniclaw(ws: Path, *args: str, **options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", str(ws), *args],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ),
                          **options)


def test_process_delivers_all_of_a_large_output_and_exits_0(workspace):
    write(workspace, "memory/MEMORY.md",
          "# Memory\n\n## 2026-02-01\n" + "".join(f"- kayak trip number {i}\n" for i in range(300)))
    proc = _miniclaw(workspace, "memory", "read", "--long", "--json")
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout) > 20_000
    assert len(json.loads(proc.stdout)["entries"]) == 300  # nothing lost in the buffer


def test_process_reports_bad_input_in_one_line_with_exit_2(workspace):
    proc = _miniclaw(workspace, "memory", "rank", "-q", "kayak", "-n", "0")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("Error:")


def test_process_writes_a_memory_durably_before_exiting(workspace):
    proc = _miniclaw(workspace, "memory", "add", "kayak rental booked", "--long")
    assert proc.returncode == 0, proc.stderr
    assert "kayak rental booked" in (workspace / "memory/MEMORY.md").read_text()
    found = _miniclaw(workspace, "memory", "rank", "-q", "kayak", "--format", "json")
    assert [r["content"] for r in json.loads(found.stdout)["results"]] == ["kayak rental booked"]


def test_process_whose_reader_goes_away_ends_without_a_traceback(workspace):
    write(workspace, "memory/MEMORY.md",
          "# Memory\n\n## 2026-02-01\n" + "".join(f"- kayak trip {i} along the northern coast, camping on the beaches\n"
                                         for i in range(5000)))  # far beyond a pipe's buffer
    proc = subprocess.Popen([sys.executable, "-m", "miniclaw", "--workspace", str(workspace),
                             "memory", "read", "--long"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
    proc.stdout.read(10)
    proc.stdout.close()  # like `| head -c 10`
    with proc.stderr:
        stderr = proc.stderr.read().decode()
    proc.wait(timeout=60)  # it ends, rather than blocking on the full pipe
    assert "Traceback" not in stderr and "Exception ignored" not in stderr


@pytest.mark.parametrize("closed", [">&-", "2>&-"])
def test_process_started_with_a_closed_stream_still_works(workspace, closed):
    """Under cron or a daemon stdout or stderr may be closed: Python then has no stream."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-01\n- kayak rental booked\n")
    proc = subprocess.run(["bash", "-c", f'"$@" {closed}', "_", sys.executable, "-m", "miniclaw",
                           "--workspace", str(workspace), "memory", "rank", "-q", "kayak"],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    if closed == "2>&-":
        assert "kayak rental booked" in proc.stdout


def test_process_under_a_profiler_exits_normally_so_the_profile_is_written(workspace, tmp_path):
    out = tmp_path / "rank.prof"
    proc = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "miniclaw",
                           "--workspace", str(workspace), "memory", "rank", "-q", "kayak"],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 0


_WITH_A_GROUP_FIRST = """
import sys, typer
from miniclaw.cli import app
extra = typer.Typer(name="extra", help="A group registered before memory's.")

@extra.command()
def hello() -> None:
    print("hello from extra")

import miniclaw.cli
app.add_typer(extra, name="extra")
app.registered_groups.insert(0, app.registered_groups.pop())  # as if added before memory's
sys.argv = ["miniclaw", *sys.argv[1:]]
miniclaw.cli.main()
"""


def test_a_group_registered_before_memory_breaks_no_command_of_the_console_script(workspace):
    """The entry point once pruned Typer's registry and took the first group for memory's:
    any named group added first made every `memory` command `No such command 'memory'`."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-01\n- kayak rental booked\n")
    run = [sys.executable, "-c", _WITH_A_GROUP_FIRST, "--workspace", str(workspace)]
    found = subprocess.run([*run, "memory", "rank", "-q", "kayak"], capture_output=True,
                           text=True, timeout=60, env=dict(os.environ))
    assert found.returncode == 0, found.stderr
    assert "kayak rental booked" in found.stdout
    extra = subprocess.run([*run, "extra", "hello"], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ))
    assert (extra.returncode, extra.stdout) == (0, "hello from extra\n"), extra.stderr


_MARK_AT_EXIT = """
import atexit, sys
mark = sys.argv.pop(1)
atexit.register(lambda: open(mark, "w").close())  # runs only on a normal exit
sys.argv[0] = "miniclaw"
from miniclaw.cli import main
main()
"""


@pytest.mark.parametrize("args, finalized", [
    (["memory", "rank", "-q", "kayak"], False),  # a one-shot read: os._exit after flushing
    (["memory", "add", "kayak paddles ordered"], True),  # a writer: the interpreter's own exit
    (["memory", "index"], True),
])
def test_only_one_shot_reads_skip_the_interpreters_exit(workspace, tmp_path, args, finalized):
    mark = tmp_path / "finalized"
    proc = subprocess.run([sys.executable, "-c", _MARK_AT_EXIT, str(mark), "--workspace",
                           str(workspace), *args], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert mark.exists() is finalized


@pytest.mark.parametrize("command", [
    ["search"], ["context"], ["memory", "add"], ["memory", "rank"], ["memory", "forget"],
    ["memory", "edit"], ["sources", "add"], ["sources", "remove"], ["sessions", "search"],
])
def test_every_argument_is_named_in_capitals_in_the_usage_line(command):
    """Arguments read as placeholders, the same way in every command (`[TEXT]`, not `[text]`)."""
    usage = CliRunner().invoke(app, [*command, "--help"]).output.splitlines()[0]
    assert usage.startswith("Usage: miniclaw " + " ".join(command) + " [OPTIONS] ")
    arguments = re.findall(r"[\[{]([^\]}]+)[\]}]", usage.split("[OPTIONS]", 1)[1])
    assert arguments and all(name == name.upper() for name in arguments), usage


def test_a_bm25_search_without_the_model_reads_no_install_metadata(tmp_path):
    """Without the semantic extra, each search asked for the model's reason, whose install
    command reads pip's metadata (importlib.metadata, json): a bm25 search asks only whether
    the model is installed (CI caught `json` imported by a plain search)."""
    import subprocess
    import sys

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory/MEMORY.md").write_text("# Memory\n\n- coffee\n", encoding="utf-8")
    code = ("import sys\nfrom miniclaw.semantic import model\nmodel._NEEDS['numpy'] = 'no-such-pkg'\n"
            "model._NEEDS['no_such_module_xyz'] = 'no-such-pkg'\nfrom miniclaw.cli import app\n"
            f"try:\n    app(['-w', {str(ws)!r}, 'memory', 'rank', '-q', 'nothing'])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in ('importlib.metadata', 'miniclaw.install') if m in sys.modules),"
            " file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr
