"""`miniclaw memory rank` options through Typer's CliRunner: the query language, filters,
output formats, spelling fallback, --explain, excerpts, and any text as a query.

The CLI reads the real clock for relative dates and the 30-day window, so files here are
dated relative to `datetime.now(timezone.utc).date()`. Daily-note entries are written hours
apart unless a test is about neighbour context, so bm25 adds no context entries.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from miniclaw.cli import app
from tests.cli.test_cli import RESULT_FIELDS
from tests.conftest import daily_note, write

TOP_KEYS = {"query", "mode", "total", "corrections", "suggestions", "hints", "warnings",
            "results"}
RESULT_KEYS = RESULT_FIELDS  # the documented result fields, defined once in test_cli
HOURS = ["09:00:00", "13:00:00", "17:00:00", "21:00:00", "05:00:00", "01:00:00"]


def day(ago: int = 0) -> str:
    return (datetime.now(timezone.utc).date() - timedelta(days=ago)).isoformat()


def note(when: str, *texts: str, times: list[str] | None = None) -> str:
    return daily_note(when, texts, times or HOURS)


def write_note(ws: Path, ago: int, *texts: str, times: list[str] | None = None) -> None:
    write(ws, f"memory/{day(ago)}.md", note(day(ago), *texts, times=times))


def rank(runner: CliRunner, ws: Path, *args: str):
    return runner.invoke(app, ["--workspace", str(ws), "memory", "rank", *args])


def rank_json(runner: CliRunner, ws: Path, *args: str) -> dict:
    result = rank(runner, ws, *args, "--json")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def found(runner: CliRunner, ws: Path, *args: str) -> set[str]:
    return {hit["content"] for hit in rank_json(runner, ws, "-n", "20", *args)["results"]}


def assert_usage_error(result) -> str:
    """Exit 2, nothing on stdout, exactly one `Error: ...` line on stderr, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    assert "Traceback" not in result.stderr
    return lines[0]


APPROVED = "Sam approved the atlas budget"
DRAFT = "Sam wrote the atlas budget draft"
FRIDAY = "The atlas budget is due Friday"
REVERSED = "Sam said budget atlas twice"
COFFEE = "Sam likes dark roast coffee"
APART = "Atlas kickoff: the budget will be discussed later with finance"
MEETING = "Weekly meeting moved to Tuesday"
MEETINGS = "Too many meetings this week"
MEAL = "Lunch was a quick meal"
ALL_NOTES = {APPROVED, DRAFT, FRIDAY, REVERSED, COFFEE, APART, MEETING, MEETINGS, MEAL}


@pytest.fixture
def ws(workspace: Path) -> Path:
    write_note(workspace, 0, APPROVED, DRAFT, FRIDAY, REVERSED, COFFEE, APART)
    write_note(workspace, 1, MEETING, MEETINGS, MEAL)
    return workspace


# -- the query language ------------------------------------------------------------------


@pytest.mark.parametrize("args, expected", [
    (["-q", "coffee"], {COFFEE}),
    (["-q", "coffee meal"], {COFFEE, MEAL}),
    (["-q", '"atlas budget"'], {APPROVED, DRAFT, FRIDAY}),
    (["-q", '"budget atlas"'], {REVERSED}),
    (["-q", "atlas -draft"], {APPROVED, FRIDAY, REVERSED, APART}),
    (["-q", "atlas", "--exclude", "draft"], {APPROVED, FRIDAY, REVERSED, APART}),
    (["-q", "atlas", "--exclude", "draft", "--exclude", "friday"], {APPROVED, REVERSED, APART}),
    (["-q", "atlas +sam"], {APPROVED, DRAFT, REVERSED, COFFEE}),
    (["-q", "atlas", "--require", "sam"], {APPROVED, DRAFT, REVERSED, COFFEE}),
    (["-q", "budget", "--require", "sam", "--require", "draft"], {DRAFT}),
    (["-q", "meet*"], {MEETING, MEETINGS}),
    (["-q", '"atlas budget" -draft +sam'], {APPROVED}),
    (["-q", '"atlas budget"', "--exclude", "draft", "--require", "sam"], {APPROVED}),
    (["-q", "meet* -tuesday"], {MEETINGS}),
])
def test_query_operators_select_exactly_the_matching_entries(runner, ws, args, expected):
    assert found(runner, ws, *args) == expected


def test_phrase_words_far_apart_do_not_match(runner, workspace):
    write_note(workspace, 0, APART)
    assert found(runner, workspace, "-q", '"atlas budget"') == set()


@pytest.mark.parametrize("query", [
    "NEAR(atlas budget)", "atlas AND budget", "'; DROP TABLE entries; --", "content:atlas",
    "atlas\\budget", "\\atlas\\", "atlas OR NOT budget", "col:val", "a\\\\b*",
])
def test_search_syntax_of_other_engines_is_text_and_exits_0(runner, ws, query):
    result = rank(runner, ws, "-q", query, "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["query"] == query.strip()
    assert len(found(runner, ws, "-q", "atlas")) == 5  # the index is intact


def test_fts_near_syntax_finds_entries_by_its_words(runner, ws):
    assert found(runner, ws, "-q", "NEAR(coffee meal)") == {COFFEE, MEAL}


def test_query_of_only_stop_words_exits_0_and_finds_nothing(runner, ws):
    result = rank(runner, ws, "-q", "the of")
    assert result.exit_code == 0, result.stderr
    assert "No memories matched." in result.stdout
    assert rank_json(runner, ws, "-q", "the of")["results"] == []


@pytest.mark.parametrize("query", ["+", "-", "*", "+ - *", "-foo", "-foo -bar", "", "  ", "+ +"])
def test_query_without_a_word_exits_2_with_one_error_line(runner, ws, query):
    assert_usage_error(rank(runner, ws, "-q", query))


def test_only_exclusions_error_says_to_add_a_word(runner, ws):
    assert "add a word" in assert_usage_error(rank(runner, ws, "-q", "-foo"))


def test_excluded_phrase_exits_2(runner, ws):
    assert_usage_error(rank(runner, ws, "-q", 'atlas -"atlas budget"'))


# -- filters ------------------------------------------------------------------------------


@pytest.fixture
def dated(workspace: Path) -> Path:
    for ago in (0, 1, 3, 10, 40):
        write_note(workspace, ago, f"coffee note from {ago} days ago")
    write(workspace, "memory/MEMORY.md",
          f"# Memory\n\n## {day(50)}\n- old coffee habit\n"
          f"\n## {day(2)}\n- new coffee habit\n"
          "\n## Preferences\n- undated coffee preference\n")
    return workspace


def notes_of(hits: set[str]) -> set[str]:
    return {text for text in hits if text.startswith("coffee note")}


def long_of(hits: set[str]) -> set[str]:
    return {text for text in hits if "habit" in text or "preference" in text}


def n(ago: int) -> str:
    return f"coffee note from {ago} days ago"


LONG = {"old coffee habit", "new coffee habit", "undated coffee preference"}


def test_default_window_is_30_days_and_memory_md_is_always_searched(runner, dated):
    hits = found(runner, dated, "-q", "coffee")
    assert notes_of(hits) == {n(0), n(1), n(3), n(10)}
    assert long_of(hits) == LONG


def test_days_narrows_the_daily_note_window(runner, dated):
    hits = found(runner, dated, "-q", "coffee", "--days", "2")
    assert notes_of(hits) == {n(0), n(1)}
    assert long_of(hits) == LONG


def test_all_searches_every_day(runner, dated):
    assert notes_of(found(runner, dated, "-q", "coffee", "--all")) == {n(0), n(1), n(3), n(10), n(40)}


def test_days_and_all_together_exit_2(runner, dated):
    assert_usage_error(rank(runner, dated, "-q", "coffee", "--days", "3", "--all"))


@pytest.mark.parametrize("since, notes, long", [
    (day(3), {n(0), n(1), n(3)}, {"new coffee habit"}),
    ("yesterday", {n(0), n(1)}, set()),
    ("7d", {n(0), n(1), n(3)}, {"new coffee habit"}),
    (day(45), {n(0), n(1), n(3), n(10), n(40)}, {"new coffee habit"}),
])
def test_since_replaces_the_window_and_filters_memory_md(runner, dated, since, notes, long):
    hits = found(runner, dated, "-q", "coffee", "--since", since)
    assert notes_of(hits) == notes
    assert long_of(hits) == long  # undated entries are left out


@pytest.mark.parametrize("until, notes, long", [
    ("yesterday", {n(1), n(3), n(10), n(40)}, {"old coffee habit", "new coffee habit"}),
    (day(5), {n(10), n(40)}, {"old coffee habit"}),
    ("3d", {n(3), n(10), n(40)}, {"old coffee habit"}),
])
def test_until_replaces_the_window_and_filters_memory_md(runner, dated, until, notes, long):
    hits = found(runner, dated, "-q", "coffee", "--until", until)
    assert notes_of(hits) == notes
    assert long_of(hits) == long


def test_since_and_until_together(runner, dated):
    hits = found(runner, dated, "-q", "coffee", "--since", day(40), "--until", "2d")
    assert notes_of(hits) == {n(3), n(10), n(40)}
    assert long_of(hits) == {"new coffee habit"}


def test_since_with_days_is_a_usage_error(runner, dated):
    # Dates replace the window: asking for both is ambiguous, so it is refused.
    assert_usage_error(rank(runner, dated, "-q", "coffee", "--days", "1", "--since", day(10)))


def test_since_after_until_exits_2(runner, dated):
    assert_usage_error(rank(runner, dated, "-q", "coffee", "--since", day(1), "--until", day(5)))


@pytest.mark.parametrize("value", ["notadate", "2026-13-45", "last blursday", "", "yesterdayy"])
def test_malformed_since_exits_2(runner, dated, value):
    assert_usage_error(rank(runner, dated, "-q", "coffee", "--since", value))


def test_malformed_until_exits_2(runner, dated):
    assert_usage_error(rank(runner, dated, "-q", "coffee", "--until", "2026-02-30"))


@pytest.fixture
def labelled(workspace: Path) -> Path:
    write(workspace, "memory/MEMORY.md",
          f"# Memory\n\n## {day(1)}\n"
          "- Chose Postgres for atlas\n<!-- @category: decision -->\n<!-- @tag: db -->\n<!-- @tag: atlas -->\n"
          "- Atlas deploys on Fridays\n<!-- @category: convention -->\n<!-- @tag: atlas -->\n"
          "- Atlas uses sqlite for tests\n<!-- @category: decision -->\n<!-- @tag: db -->\n"
          "- Atlas logo is blue\n")
    write_note(workspace, 0,
               "Atlas standup notes\n<!-- @category: decision -->\n<!-- @tag: atlas -->\n<!-- @tag: db -->",
               "Atlas retro notes\n<!-- @tag: atlas -->")
    return workspace


@pytest.mark.parametrize("args, expected", [
    (["--category", "decision"], {"Chose Postgres for atlas", "Atlas uses sqlite for tests",
                                  "Atlas standup notes"}),
    (["-c", "convention"], {"Atlas deploys on Fridays"}),
    (["--tag", "db"], {"Chose Postgres for atlas", "Atlas uses sqlite for tests",
                       "Atlas standup notes"}),
    (["--tag", "db", "--tag", "atlas"], {"Chose Postgres for atlas", "Atlas standup notes"}),
    (["-t", "atlas", "-t", "db", "-t", "nope"], set()),
    (["--source", "daily_note"], {"Atlas standup notes", "Atlas retro notes"}),
    (["--source", "long_term"], {"Chose Postgres for atlas", "Atlas deploys on Fridays",
                                 "Atlas uses sqlite for tests", "Atlas logo is blue"}),
    (["--source", "long_term", "--source", "daily_note"], {
        "Chose Postgres for atlas", "Atlas deploys on Fridays", "Atlas uses sqlite for tests",
        "Atlas logo is blue", "Atlas standup notes", "Atlas retro notes"}),
    (["--category", "decision", "--tag", "db", "--source", "long_term"], {
        "Chose Postgres for atlas", "Atlas uses sqlite for tests"}),
    (["--category", "decision", "--since", "today"], {"Atlas standup notes"}),
    (["--tag", "atlas", "--until", "yesterday"], {"Chose Postgres for atlas",
                                                  "Atlas deploys on Fridays"}),
])
def test_category_tag_and_source_filters(runner, labelled, args, expected):
    assert found(runner, labelled, "-q", "atlas", *args) == expected


def test_filters_combine_with_query_operators(runner, labelled):
    assert found(runner, labelled, "-q", "atlas -sqlite", "--tag", "db") == {
        "Chose Postgres for atlas", "Atlas standup notes"}


@pytest.mark.parametrize("tag", ["db atlas", "atlas db", "", " "])
def test_a_tag_that_no_entry_can_have_matches_nothing_or_exits_2(runner, labelled, tag):
    # Tags never hold spaces and are never empty (`memory add --tag ""` is exit 2), so such
    # a filter must not pick entries by how their tags happen to be stored.
    result = rank(runner, labelled, "-q", "atlas", "--tag", tag, "--json")
    if result.exit_code == 2:
        assert_usage_error(result)
    else:
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["results"] == []


def test_unknown_source_exits_2(runner, labelled):
    assert_usage_error(rank(runner, labelled, "-q", "atlas", "--source", "chat"))


def test_tag_filter_applies_inside_the_ranking(runner, workspace):
    # 30 matching entries; the 25 untagged say coffee three times and outrank the 5 tagged.
    strong = [f"coffee coffee coffee number {i}" for i in range(25)]
    weak = [f"coffee once number {i}\n<!-- @tag: x -->" for i in range(5)]
    times = [f"{h:02d}:00:00" for h in range(24)]
    write_note(workspace, 0, *strong[:20], times=times)
    write_note(workspace, 1, *strong[20:], *weak, times=times)
    data = rank_json(runner, workspace, "-q", "coffee", "-n", "5", "--tag", "x")
    assert sorted(hit["content"] for hit in data["results"]) == [
        f"coffee once number {i}" for i in range(5)]
    unfiltered = rank_json(runner, workspace, "-q", "coffee", "-n", "5")
    assert all(hit["tags"] == [] for hit in unfiltered["results"])


# -- output formats -----------------------------------------------------------------------


@pytest.fixture
def md_ws(workspace: Path) -> Path:
    write(workspace, "memory/MEMORY.md",
          f"# Memory\n\n## {day(1)}\n"  # lines 1-3
          f"- Chose Postgres for atlas (added at {day(1)}T10:00:00Z)\n"  # line 4
          "<!-- @category: decision -->\n"  # line 5
          "- Atlas logo is blue\n")  # line 6
    write_note(workspace, 0, "Atlas standup notes", "Atlas retro notes")  # lines 5 and 11
    return workspace


def test_markdown_groups_results_by_file_with_line_numbers(runner, md_ws):
    result = rank(runner, md_ws, "-q", "atlas", "--format", "markdown", "-n", "10")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.rstrip("\n").split("\n")
    assert lines[0] == '## Results for: "atlas"'
    assert lines[-1] == "Found 4 matches across 2 files."
    heads = [i for i, line in enumerate(lines) if line.startswith("### ")]
    assert sorted(lines[i] for i in heads) == sorted(
        ["### memory/MEMORY.md", f"### memory/{day(0)}.md"])
    groups = {}
    for k, start in enumerate(heads):
        end = heads[k + 1] if k + 1 < len(heads) else len(lines)
        groups[lines[start][4:]] = [line for line in lines[start + 1 : end]
                                    if line.startswith("**Line ")]
    assert sorted(groups["memory/MEMORY.md"]) == [
        "**Line 4:** Chose Postgres for atlas", "**Line 6:** Atlas logo is blue"]
    assert sorted(groups[f"memory/{day(0)}.md"]) == [
        "**Line 11:** Atlas retro notes", "**Line 5:** Atlas standup notes"]


def test_markdown_line_number_is_the_first_line_of_a_multi_line_entry(runner, workspace):
    write(workspace, "memory/MEMORY.md",
          f"# Memory\r\n\r\n## {day(1)}\r\n- First bullet\r\n- Second bullet starts here\r\n"
          "  and its continuation mentions quokka\r\n- Third bullet\r\n")
    stdout = rank(runner, workspace, "-q", "quokka", "-f", "markdown").stdout
    assert ("**Line 5:** Second bullet starts here and its continuation mentions quokka"
            in stdout.split("\n"))


def test_markdown_puts_the_category_comment_before_its_entry_only(runner, md_ws):
    lines = rank(runner, md_ws, "-q", "atlas", "-f", "markdown", "-n", "10").stdout.split("\n")
    postgres = lines.index("**Line 4:** Chose Postgres for atlas")
    assert lines[postgres - 1] == "<!-- @category: decision -->"
    assert lines.count("<!-- @category: decision -->") == 1
    for text in ("**Line 6:** Atlas logo is blue", "**Line 5:** Atlas standup notes"):
        assert not lines[lines.index(text) - 1].startswith("<!--")


def test_markdown_counts_one_match_in_the_singular(runner, md_ws):
    lines = rank(runner, md_ws, "-q", "postgres", "-f", "markdown").stdout.rstrip("\n").split("\n")
    assert lines[-1] == "Found 1 match across 1 file."


def test_markdown_without_results_still_ends_with_the_count(runner, md_ws):
    result = rank(runner, md_ws, "-q", "xylophone", "-f", "markdown")
    assert result.exit_code == 0
    assert result.stdout.rstrip("\n").split("\n")[-1] == "Found 0 matches across 0 files."


@pytest.mark.parametrize("args", [["--json"], ["--format", "json"], ["-f", "JSON"]])
def test_json_object_has_exactly_the_documented_keys(runner, md_ws, args):
    result = rank(runner, md_ws, "-q", "atlas", *args)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == TOP_KEYS
    assert data["query"] == "atlas" and data["mode"] == "bm25" and data["total"] == 4
    assert [hit["rank"] for hit in data["results"]] == [1, 2, 3, 4]
    for hit in data["results"]:
        assert set(hit) == RESULT_KEYS
        assert hit["matched"] is True


def test_json_result_fields_describe_the_entry(runner, md_ws):
    from miniclaw.entries.entry import mark

    data = rank_json(runner, md_ws, "-q", "postgres")
    assert data["results"] == [{
        "rank": 1, "score": data["results"][0]["score"], "source": "long_term",
        "path": "memory/MEMORY.md", "line_start": 4, "line_end": 4, "citation": "memory/MEMORY.md:4",
        "ref": "memory/MEMORY.md:4#" + mark("Chose Postgres for atlas"), "date": day(1),
        "category": "decision", "tags": [], "content": "Chose Postgres for atlas",
        "excerpt": "Chose Postgres for atlas", "matched": True}]
    assert data["results"][0]["score"] > 0


def test_json_suggestions_mention_all_when_fewer_results_than_asked(runner, md_ws):
    write_note(md_ws, 40, "Older: a kite")  # outside the window: --all may find more
    data = rank_json(runner, md_ws, "-q", "postgres", "-n", "5")
    assert len(data["results"]) == 1
    assert data["suggestions"] and any("--all" in hint for hint in data["suggestions"])


def test_json_suggestions_are_not_empty_when_fewer_results_than_asked_with_all(runner,
                                                                             workspace):
    write_note(workspace, 0, "Bought a new bicycle helmet")
    data = rank_json(runner, workspace, "-q", "helmet", "--all", "-n", "5")
    assert len(data["results"]) == 1
    assert data["suggestions"], "fewer results than -n, yet nothing to try"
    assert not any("--all" in hint for hint in data["suggestions"])


def test_json_suggestions_are_an_empty_list_when_enough_results(runner, md_ws):
    data = rank_json(runner, md_ws, "-q", "atlas", "-n", "3")
    assert len(data["results"]) == 3
    assert data["suggestions"] == []
    assert data["corrections"] == []


def test_text_is_the_default_format(runner, md_ws):
    assert rank(runner, md_ws, "-q", "atlas").stdout == rank(
        runner, md_ws, "-q", "atlas", "--format", "text").stdout


@pytest.mark.parametrize("args", [
    ["--json", "--format", "markdown"], ["--json", "--format", "text"], ["--format", "yaml"],
])
def test_conflicting_or_unknown_formats_exit_2(runner, md_ws, args):
    assert_usage_error(rank(runner, md_ws, "-q", "atlas", *args))


# -- spelling fallback ---------------------------------------------------------------------


@pytest.fixture
def bikes(workspace: Path) -> Path:
    write_note(workspace, 0, "Bought a new bicycle helmet", "Fixed the desk lamp")
    return workspace


def test_text_output_shows_the_correction(runner, bikes):
    result = rank(runner, bikes, "-q", "bicyle")
    assert result.exit_code == 0, result.stderr
    assert "bicyle → bicycle" in result.stdout
    assert "Bought a new bicycle helmet" in result.stdout


def test_json_lists_the_correction(runner, bikes):
    data = rank_json(runner, bikes, "-q", "bicyle")
    assert data["corrections"] == [{"from": "bicyle", "to": "bicycle"}]
    assert [hit["content"] for hit in data["results"]] == ["Bought a new bicycle helmet"]


def test_markdown_shows_the_correction(runner, bikes):
    assert "bicyle → bicycle" in rank(runner, bikes, "-q", "bicyle", "-f", "markdown").stdout


def test_word_in_the_index_is_not_corrected(runner, bikes):
    write_note(bikes, 1, "Roast lamb for dinner", "Lamb stew", "More lamb")
    data = rank_json(runner, bikes, "-q", "lamp")
    assert data["corrections"] == []
    assert [hit["content"] for hit in data["results"]] == ["Fixed the desk lamp"]


def test_correction_needs_the_same_first_letter(runner, bikes):
    data = rank_json(runner, bikes, "-q", "vicycle")
    assert data["corrections"] == [] and data["results"] == []


def test_word_without_close_spelling_stays_and_is_suggested_to_drop(runner, bikes):
    data = rank_json(runner, bikes, "-q", "xylophone")
    assert data["corrections"] == [] and data["results"] == []
    assert any("xylophone" in hint and "drop" in hint for hint in data["suggestions"])
    text = rank(runner, bikes, "-q", "xylophone").stdout
    assert "drop 'xylophone'" in text and "→" not in text


@pytest.mark.parametrize("word, near", [("hiking", "hiring"), ("reboot", "report"),
                                        ("sister", "systems")])
def test_a_real_word_is_never_replaced_by_a_close_one(runner, workspace, word, near):
    write_note(workspace, 0, "Hiring a new engineer", "The report is due", "Our systems are down")
    data = rank_json(runner, workspace, "-q", word)
    assert data["corrections"] == [] and data["results"] == []
    assert any(word in hint and "drop" in hint for hint in data["suggestions"])
    assert near in {t for hit in rank_json(runner, workspace, "-q", near)["results"]
                    for t in hit["content"].lower().split()}


@pytest.mark.parametrize("query", ["東京駅", "京都", "Москва"])
def test_a_word_in_another_script_is_not_corrected(runner, workspace, query):
    write_note(workspace, 0, "東京タワーに行きました", "Москве холодно")
    data = rank_json(runner, workspace, "-q", query)
    assert data["corrections"] == []
    assert all("東京" in hit["content"] for hit in data["results"])  # only what holds its words


def test_no_correct_searches_the_word_as_typed(runner, bikes):
    data = rank_json(runner, bikes, "-q", "bicyle", "--no-correct")
    assert data["corrections"] == [] and data["results"] == []
    text = rank(runner, bikes, "-q", "bicyle", "--no-correct").stdout
    assert "→" not in text and "No memories matched." in text


# -- --explain ----------------------------------------------------------------------------

_WHY = re.compile(r"^   why: (.*)$")
_HEAD = re.compile(r"^\d+\. \[Score: (\d+(?:\.\d+)?)\]")


def why_lines(stdout: str) -> list[tuple[float, dict[str, float]]]:
    """(score shown, parts of its why: line) for each result of the text output."""
    out, score = [], None
    for line in stdout.split("\n"):
        head = _HEAD.match(line)
        if head:
            assert score is None, "a result without a why: line"
            score = float(head.group(1))
        why = _WHY.match(line)
        if why:
            parts = {}
            for piece in why.group(1).split(" + "):
                name, value = piece.rsplit(" ", 1)
                parts[name] = float(value)
            out.append((score, parts))
            score = None
    assert score is None, "the last result has no why: line"
    return out


def test_explain_text_has_a_why_line_per_result_summing_to_the_score(runner, ws):
    result = rank(runner, ws, "-q", "atlas budget sam", "--explain", "-n", "10")
    assert result.exit_code == 0, result.stderr
    heads = [line for line in result.stdout.split("\n") if _HEAD.match(line)]
    explained = why_lines(result.stdout)
    assert len(explained) == len(heads) >= 5
    for score, parts in explained:
        assert sum(parts.values()) == pytest.approx(score, abs=0.005 * (len(parts) + 1))


def test_explain_json_is_a_dict_summing_to_the_score(runner, ws):
    data = rank_json(runner, ws, "-q", "atlas budget sam", "--explain", "-n", "10")
    assert data["results"]
    for hit in data["results"]:
        assert set(hit) == RESULT_KEYS | {"explain"}
        assert isinstance(hit["explain"], dict) and hit["explain"]
        assert sum(hit["explain"].values()) == pytest.approx(
            hit["score"], abs=0.0001 * (len(hit["explain"]) + 1))


def test_explain_markdown_has_a_why_line(runner, ws):
    stdout = rank(runner, ws, "-q", "coffee", "--explain", "-f", "markdown").stdout
    assert re.search(r"^_why: coffe \d+\.\d{2}_$", stdout, re.M)


def test_no_explain_without_the_flag(runner, ws):
    data = rank_json(runner, ws, "-q", "atlas")
    assert all("explain" not in hit for hit in data["results"])
    assert "why:" not in rank(runner, ws, "-q", "atlas").stdout


@pytest.fixture
def conversation(workspace: Path) -> Path:
    write_note(workspace, 0, "Met Sam about the zephyr project", "He agreed to the numbers",
               times=["10:00:00", "10:05:00"])
    return workspace


def test_an_entry_next_to_a_match_is_neither_shown_nor_counted(runner, conversation):
    data = rank_json(runner, conversation, "-q", "zephyr", "--explain")
    assert [hit["content"] for hit in data["results"]] == ["Met Sam about the zephyr project"]
    assert data["total"] == 1
    out = rank(runner, conversation, "-q", "zephyr").stdout
    assert "He agreed" not in out and "context: next to a match" not in out


def test_a_matching_neighbour_share_is_explained_in_text(runner, workspace):
    write_note(workspace, 0, "zephyr kickoff", "budget followup", times=["10:00:00", "10:05:00"])
    lines = rank(runner, workspace, "-q", "zephyr budget", "--explain").stdout.split("\n")
    assert any(re.fullmatch(r"   why: zephyr \d+\.\d{2} \+ neighbours \d+\.\d{2}", line)
               for line in lines)


def test_phrase_holds_in_every_matched_result_even_next_to_a_match(runner, workspace):
    write_note(workspace, 0, APPROVED, REVERSED, times=["10:00:00", "10:05:00"])
    data = rank_json(runner, workspace, "-q", '"atlas budget"')
    assert [hit["content"] for hit in data["results"] if hit["matched"]] == [APPROVED]


def test_keyword_mode_adds_no_neighbour_context(runner, conversation):
    data = rank_json(runner, conversation, "-q", "zephyr", "--mode", "keyword")
    assert [hit["content"] for hit in data["results"]] == ["Met Sam about the zephyr project"]


# -- excerpt window ------------------------------------------------------------------------


def filler(words: int, word: str = "filler") -> str:
    return " ".join([word] * words)


@pytest.mark.parametrize("text, starts_cut, ends_cut", [
    (f"{filler(30)} zanzibar {filler(30)}", True, True),
    (f"zanzibar {filler(60)}", False, True),
    (f"{filler(60)} zanzibar", True, False),
])
def test_text_excerpt_is_short_holds_the_match_and_marks_cuts(runner, workspace, text,
                                                              starts_cut, ends_cut):
    assert len(text) > 150
    write_note(workspace, 0, text)
    lines = rank(runner, workspace, "-q", "zanzibar").stdout.split("\n")
    head = next(i for i, line in enumerate(lines) if _HEAD.match(line))
    excerpt = lines[head + 1][3:]
    assert len(excerpt) <= 150
    assert "zanzibar" in excerpt
    assert excerpt.startswith("…") == starts_cut
    assert excerpt.endswith("…") == ends_cut


def test_excerpt_holds_every_matched_word_that_fits(runner, workspace):
    text = f"{filler(25)} zanzibar {filler(8, 'middle')} quokka {filler(25)}"
    write_note(workspace, 0, text)
    data = rank_json(runner, workspace, "-q", "zanzibar quokka")
    excerpt = data["results"][0]["excerpt"]
    assert len(excerpt) <= 150
    assert "zanzibar" in excerpt and "quokka" in excerpt
    assert excerpt.startswith("…") and excerpt.endswith("…")
    assert data["results"][0]["content"] == text


def test_excerpt_prefers_the_window_with_most_query_words(runner, workspace):
    text = (f"quokka {filler(30)} zanzibar quokka {filler(30)} ")
    write_note(workspace, 0, text)
    excerpt = rank_json(runner, workspace, "-q", "zanzibar quokka")["results"][0]["excerpt"]
    assert "zanzibar quokka" in excerpt and len(excerpt) <= 150


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(before=st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=12), max_size=40),
       after=st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=12), max_size=40))
def test_any_long_entry_gives_a_short_excerpt_around_the_match(runner, workspace, before, after):
    text = " ".join(before + ["zanzibar"] + after)
    write_note(workspace, 0, text)
    lines = rank(runner, workspace, "-q", "zanzibar").stdout.split("\n")
    excerpt = lines[next(i for i, line in enumerate(lines) if _HEAD.match(line)) + 1][3:]
    assert len(excerpt) <= 150 and "zanzibar" in excerpt
    body = excerpt.removeprefix("…").removesuffix("…")
    assert body in text
    assert excerpt.startswith("…") == (not text.startswith(body))
    assert excerpt.endswith("…") == (not text.endswith(body))
    if len(text) <= 150:
        assert excerpt == text


def test_short_entry_excerpt_is_the_whole_text(runner, workspace):
    write_note(workspace, 0, "zanzibar   trip\nplanned")
    hit = rank_json(runner, workspace, "-q", "zanzibar")["results"][0]
    assert hit["excerpt"] == "zanzibar trip planned"


# -- any text as the query ------------------------------------------------------------------

# NUL characters are not filtered out: CliRunner passes argv in process (no exec), so a NUL
# reaches the command like any other character (test_nul_characters_... checks it does).
_query = st.one_of(
    st.text(max_size=40),
    st.lists(st.one_of(st.sampled_from(["atlas", "budget", "bicyle", "the", "-", "+", "*", '"',
                                        "--json", "-q", "NEAR(", ")", "'", "\\", ":", "-x"]),
                       st.text(max_size=5)), max_size=8).map(" ".join),
    st.text(min_size=995, max_size=1005, alphabet="ab -+*\"é漢"),
)


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=_query, keep_index=st.booleans(),
       fmt=st.sampled_from([["--json"], ["--format", "json"]]))
def test_any_query_exits_0_with_json_or_2_with_one_error_line(runner, ws, tmp_path,
                                                              monkeypatch, text, keep_index, fmt):
    index = tmp_path / "index" / "search.sqlite3"
    monkeypatch.setenv("MINICLAW_INDEX", str(index))
    if not keep_index:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{index}{suffix}").unlink(missing_ok=True)
    result = rank(runner, ws, "--query", text, *fmt)
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 2), (result.exit_code, result.stdout, result.stderr)
    if result.exit_code == 0:
        data = json.loads(result.stdout)
        assert isinstance(data, dict) and set(data) == TOP_KEYS
        assert index.exists()
    else:
        assert_usage_error(result)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=_query, fmt=st.sampled_from([[], ["-f", "markdown"], ["--explain"]]))
def test_any_query_in_text_or_markdown_exits_0_or_2(runner, ws, tmp_path, monkeypatch, text, fmt):
    monkeypatch.setenv("MINICLAW_INDEX", str(tmp_path / "index.sqlite3"))
    result = rank(runner, ws, "--query", text, *fmt)
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exit_code in (0, 2), (result.exit_code, result.stdout, result.stderr)
    if result.exit_code == 2:
        assert_usage_error(result)
    else:
        assert result.stdout.strip()


@pytest.mark.parametrize("text", ["atlas\x00budget", "\x00", "-\x00", "\x00*"])
def test_nul_characters_in_the_query_are_handled(runner, ws, text):
    result = rank(runner, ws, "-q", text, "--json")
    assert result.exit_code in (0, 2), (result.exit_code, result.stderr)
    if result.exit_code == 0:
        json.loads(result.stdout)
    else:
        assert_usage_error(result)


def test_atlas_nul_budget_searches_both_words(runner, ws):
    assert found(runner, ws, "-q", "atlas\x00budget") == {APPROVED, DRAFT, FRIDAY, REVERSED, APART}
