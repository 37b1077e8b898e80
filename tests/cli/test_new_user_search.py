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


# -- the chat and smaller edges (issue 39) --------------------------------------------------

def _chat(workspace: Path, stdin: str) -> subprocess.CompletedProcess:
    env = {name: "" for name in ("MINICLAW_LLM_BASE_URL", "MINICLAW_LLM_MODEL",
                                 "MINICLAW_LLM_PROVIDER")}
    return subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", str(workspace), "chat",
                           "--mode", "bm25"], input=stdin, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


@pytest.mark.parametrize("word", ["exit", "quit", "Exit", "  quit  "])
def test_exit_or_quit_typed_alone_ends_the_chat(workspace: Path, word: str):
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast coffee\n")
    done = _chat(workspace, f"{word}\ncoffee?\n")
    assert done.returncode == 0, done.stderr
    assert "I found" not in done.stdout  # neither line went to the assistant
    sessions = list((workspace / "sessions").glob("*.jsonl"))
    assert all(not path.read_text().strip() for path in sessions)


def test_the_echo_chat_shows_the_best_few_memories_not_every_one(workspace: Path):
    write(workspace, "memory/MEMORY.md", "# Memory\n\n" + "".join(
        f"- Coffee note {n}: tried a roast from farm {n}\n" for n in range(40)))
    done = _chat(workspace, "coffee roast?\n")
    assert done.returncode == 0, done.stderr
    shown = [line for line in done.stdout.splitlines() if line.startswith("- Coffee note")]
    assert len(shown) == 5
    assert "the 5 most relevant" in done.stdout and "more: /context shows them all" in done.stdout


def test_a_word_equal_to_a_tag_finds_the_tagged_entry(workspace: Path):
    write(workspace, "memory/MEMORY.md",
          "# Memory\n\n- Prefers the Ethiopian roast from Kaldi's\n"
          "<!-- @tag: coffee -->\n<!-- @tag: morning -->\n"
          "- Renewed the passport\n")
    done = cli(workspace, "search", "coffee", "--json")
    assert done.exit_code == 0, done.output
    results = json.loads(done.stdout)["results"]
    assert [r["content"] for r in results] == ["Prefers the Ethiopian roast from Kaldi's"]
    assert results[0]["tags"] == ["coffee", "morning"]


def test_the_result_cap_is_explained_in_help_and_error(workspace: Path):
    helped = cli(workspace, "search", "--help")
    assert "1-20: the best matches" in " ".join(helped.output.split())
    refused = cli(workspace, "search", "coffee", "-n", "50")
    assert refused.exit_code == 2
    assert "between 1 and 20, not 50: past the best 20" in refused.stderr


# -- diary questions about dates (issue 39) -------------------------------------------------

def _days_ago(n: int) -> str:
    return (_utc_today() - timedelta(days=n)).isoformat()


@pytest.fixture
def diary(workspace: Path) -> Path:
    today = _utc_today()
    last_week = today - timedelta(days=today.weekday() + 4)  # the Thursday of last week
    for day, text in ((_days_ago(0), "Plan: coffee next week with Sam"),
                      (_days_ago(1), "Went climbing with Ana at the gym"),
                      (last_week.isoformat(), "Dentist appointment, two fillings")):
        write(workspace, f"memory/{day}.md", daily_note(day, [text], ["09:00:00"]))
    return workspace


def _contents(done) -> list[str]:
    assert done.exit_code == 0, done.output
    return [r["content"] for r in json.loads(done.stdout)["results"]]


@pytest.mark.parametrize("mode", ["bm25", "keyword"])
def test_what_did_i_do_yesterday_lists_yesterdays_entries(diary: Path, mode: str):
    assert _contents(cli(diary, "search", "what did I do yesterday?", "--mode", mode,
                         "--json")) == ["Went climbing with Ana at the gym"]


def test_last_week_is_a_date_not_the_word_week(diary: Path):
    """It found "coffee next week" (today's note): the words, not the dates."""
    assert _contents(cli(diary, "search", "last week", "--json")) == [
        "Dentist appointment, two fillings"]
    assert _contents(cli(diary, "search", "what happened last week?", "--json")) == [
        "Dentist appointment, two fillings"]


def test_since_and_until_take_date_phrases(diary: Path):
    found = cli(diary, "search", "dentist climbing coffee", "--since", "last week",
                "--until", "last week", "--json")
    assert _contents(found) == ["Dentist appointment, two fillings"]
    assert _contents(cli(diary, "search", "climbing", "--since", "2 days ago", "--json")) == [
        "Went climbing with Ana at the gym"]
    refused = cli(diary, "search", "x", "--since", "last blursday")
    assert refused.exit_code == 2 and refused.stderr.count("\n") == 1


# -- one window everywhere, and what it hid said (issue 39) ---------------------------------

@pytest.fixture
def history(workspace: Path) -> Path:
    """A better match 60 days back (the word twice), a weaker one this week."""
    old, new = _days_ago(60), _days_ago(2)
    write(workspace, f"memory/{old}.md", daily_note(old, ["Passport renewal: passport photos "
                                                          "taken, passport form sent"],
                                                    ["09:00:00"]))
    write(workspace, f"memory/{new}.md", daily_note(new, ["Found the old passport in a drawer, "
                                                          "and a long list of other things "
                                                          "to sort out this weekend"],
                                                    ["09:00:00"]))
    return workspace


def test_search_says_how_many_better_older_matches_the_window_hid(history: Path):
    text = cli(history, "search", "passport")
    assert text.exit_code == 0, text.output
    assert "Found the old passport" in text.stdout
    assert "1 older match beyond 30 days: add --all to include them" in text.stdout
    found = json.loads(cli(history, "search", "passport", "--json").stdout)
    assert found["older"] == {"count": 1, "days": 30}
    assert [r["content"][:9] for r in found["results"]] == ["Found the"]  # unchanged
    every = json.loads(cli(history, "search", "passport", "--all", "--json").stdout)
    assert "older" not in every and len(every["results"]) == 2


def test_a_weaker_older_match_is_not_said_to_be_hidden(history: Path):
    found = json.loads(cli(history, "search", "drawer", "--json").stdout)
    assert "older" not in found and len(found["results"]) == 1


def test_chat_search_context_and_the_search_tool_share_the_window(history: Path):
    """/search and context searched all history while `search` searched 30 days: one
    question, three answers. Now one window, and each says what it hid."""
    chat = _chat(history, "passport photos\n/search passport photos\n"
                          "/search --all passport photos\n")
    assert chat.returncode == 0, chat.stderr
    said = "1 older match beyond 30 days: /search --all QUERY includes them"
    assert chat.stdout.count(said) == 2  # the echo's answer and /search
    assert chat.stdout.count("Passport renewal: passport photos") == 1  # only with --all
    context = cli(history, "context", "passport photos", "--json")
    assert json.loads(context.stdout)["older"] == {"count": 1, "days": 30}
    from miniclaw.memory import MemoryStore
    from miniclaw.memory_tools import MemoryTools
    import asyncio

    async def tool():
        async with MemoryStore(history) as store:
            return await MemoryTools(store).call("search_memory", {"query": "passport photos"})

    assert asyncio.run(tool())["older"] == {"count": 1, "days": 30}


# -- past chat questions are not memories (issue 39) ----------------------------------------

@pytest.fixture
def asked(workspace: Path) -> Path:
    write(workspace, "memory/MEMORY.md",
          "# Memory\n\n- Started a new job at the adoption agency as a case worker\n")
    yesterday = (datetime.now(timezone.utc) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    write(workspace, "sessions/20260101-000000-abcdef.jsonl", json.dumps(
        {"role": "user", "content": "what is my job?", "timestamp": yesterday,
         "session_id": "20260101-000000-abcdef"}) + "\n")
    return workspace


def test_what_was_stated_ranks_above_what_was_asked(asked: Path):
    answer = "Started a new job at the adoption agency as a case worker"
    for mode in ("bm25", "keyword"):
        found = _contents(cli(asked, "search", "what is my job?", "--mode", mode, "--json"))
        assert found[0] == answer, (mode, found)
    context = json.loads(cli(asked, "context", "what is my job?", "--mode", "bm25",
                             "--json").stdout)
    memories = [item["content"] for s in context["sections"] if s["name"] == "memories"
                for item in s["items"]]
    assert memories[0] == answer
    chat = _chat(asked, "what is my job?\n")
    assert chat.stdout.splitlines()[1].startswith(f"- {answer} "), chat.stdout


# -- hybrid's rough edges (issue 39) --------------------------------------------------------

from tests.semantic.test_semantic import needs_model  # noqa: E402


@pytest.fixture
def asked_often(workspace: Path) -> Path:
    """The fact holds none of the question's words; the question was asked before, often."""
    write(workspace, "memory/MEMORY.md",
          "# Memory\n\n- Moved to a flat on Rue Oberkampf in Paris\n")
    session = "20260101-000000-abcdef"
    yesterday = (datetime.now(timezone.utc) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    write(workspace, f"sessions/{session}.jsonl", "".join(json.dumps(
        {"role": "user", "content": question, "timestamp": yesterday, "session_id": session})
        + "\n" for question in ("where do I live?", "where do I live again?", "what is my address?",
                                "where is home?", "where am I living now?", "do I live in Paris?")))
    return workspace


@needs_model
@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_where_do_i_live_finds_the_fact_and_counts_what_it_shows(asked_often: Path, mode: str):
    done = cli(asked_often, "search", "where do I live?", "--mode", mode, "-n", "10", "--json")
    found = json.loads(done.stdout)
    assert found["results"][0]["content"] == "Moved to a flat on Rue Oberkampf in Paris"
    assert found["total"] == len(found["results"])  # not "Found 7 (showing top 5)" of 10
    text = cli(asked_often, "search", "where do I live?", "--mode", mode, "-n", "10").stdout
    assert f"(showing top {len(found['results'])})" in text
    assert f"Found {len(found['results'])} relevant" in text


def test_a_question_of_common_words_is_not_told_to_use_fewer(workspace: Path):
    """"where do I live?" is one searched word: "use fewer words" was no advice."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast coffee\n")
    found = json.loads(cli(workspace, "search", "where do I live?", "--json").stdout)
    assert found["results"] == [] and "fewer_words" not in [h["kind"] for h in found["hints"]]


def test_the_context_holds_a_note_dated_tomorrow_with_todays(workspace: Path):
    tomorrow = (_utc_today() + timedelta(days=1)).isoformat()
    write(workspace, f"memory/{tomorrow}.md",
          daily_note(tomorrow, ["Landed in Tokyo, hotel near Shinjuku"], ["08:00:00"]))
    built = json.loads(cli(workspace, "context", "anything new", "--json").stdout)
    notes = [item["content"] for s in built["sections"] if s["name"] == "notes"
             for item in s["items"]]
    assert notes == ["Landed in Tokyo, hotel near Shinjuku"]
    assert f"## Today, in a zone ahead, {tomorrow}" in built["prompt"]


def test_sessions_search_still_finds_what_was_asked_first(asked: Path):
    """Past conversations are what `sessions search` looks for: a question is no lower there."""
    done = cli(asked, "sessions", "search", "job", "--json")
    assert done.exit_code == 0, done.output
    assert "what is my job?" in done.stdout
