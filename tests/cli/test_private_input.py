"""What a person types inside `<private>...</private>` in a query or a context message is
never searched and never printed back: not in text, JSON or Markdown, not in a hint, not in
an error. A query left empty by it is the usage error an empty query is."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miniclaw.cli import app
from tests.cli.test_cli import assert_usage_error
from tests.conftest import write

SECRET = "zebra"  # a public word of the memories: found whenever it is searched


def _day(offset: int) -> str:
    return (datetime.now(timezone.utc).date() - timedelta(days=offset)).isoformat()


@pytest.fixture
def zoo(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Notes (ten days old: not in the context's recent notes) and a chat transcript, both
    holding the secret word in the open."""
    monkeypatch.delenv("MINICLAW_SESSION_ID", raising=False)
    monkeypatch.delenv("CLAUDE_SESSION_ID", raising=False)
    day = _day(10)
    write(workspace, f"memory/{day}.md", f"# Daily Note - {day}\n\n## 09:00:00 UTC\n\n"
          f"the {SECRET} enclosure at the zoo\n\n---\n\n## 10:00:00 UTC\n\nlion in the park\n")
    records = [("s1", f"Where is the {SECRET} enclosure at the zoo these days?"),
               ("s2", "When does the lion park open on Sundays?")]
    for session, content in records:
        write(workspace, f"sessions/2026021{session[-1]}-091203-{session}0000.jsonl",
              json.dumps({"role": "user", "content": content, "timestamp": f"{day}T09:00:00.000Z",
                          "session_id": session}) + "\n")
    return workspace


def run(ws: Path, *args: str):
    return CliRunner().invoke(app, ["--workspace", str(ws), *args])


def printed(result) -> str:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout + result.stderr


@pytest.mark.parametrize("command", [("search",), ("memory", "rank", "-q")])
@pytest.mark.parametrize("form", ["text", "json", "markdown"])
def test_search_neither_searches_nor_echoes_private_words(zoo, command, form):
    for query in (f"lion <private>{SECRET}</private>", f"lion <private>{SECRET} enclosure"):
        result = run(zoo, *command, query, "--all", "--format", form, "--mode", "bm25")
        out = printed(result)
        assert SECRET not in out and "lion in the park" in out
        if form == "json":
            assert json.loads(result.stdout)["query"] == "lion"


def test_a_private_word_is_not_suggested_for_dropping(zoo):
    out = printed(run(zoo, "search", f"quokka <private>{SECRET}wombat</private>", "--all",
                      "--mode", "bm25", "--json"))
    assert "wombat" not in out and SECRET not in out and "drop 'quokka'" in out


@pytest.mark.parametrize("command", [("search",), ("memory", "rank", "-q"),
                                     ("sessions", "search")])
@pytest.mark.parametrize("query", [f"<private>{SECRET}</private>", f"  <private>{SECRET}", ""])
def test_a_query_that_is_all_private_is_the_usage_error_of_an_empty_query(zoo, command, query):
    line = assert_usage_error(run(zoo, *command, query))
    assert line.startswith("Error: the query is empty") and SECRET not in line


@pytest.mark.parametrize("form", ["text", "json", "markdown"])
def test_sessions_search_neither_searches_nor_echoes_private_words(zoo, form):
    result = run(zoo, "sessions", "search", f"lion <private>{SECRET}</private>", "--format", form)
    out = printed(result)
    assert SECRET not in out and "lion park" in out
    if form == "json":
        found = json.loads(result.stdout)
        assert found["query"] == "lion" and [s["session"] for s in found["sessions"]] == ["s2"]
    nothing = printed(run(zoo, "sessions", "search", f"quokka <private>{SECRET}</private>",
                          "--format", form))
    assert SECRET not in nothing


@pytest.mark.parametrize("form", ["text", "json"])
def test_context_leaves_the_private_part_of_the_message_out(zoo, form):
    ssn = "123-45-6789"
    result = run(zoo, "context", f"lion <private>my ssn {ssn} and the {SECRET}</private>",
                 "--format", form, "--mode", "bm25")
    out = printed(result)
    assert ssn not in out and SECRET not in out and "lion in the park" in out
    if form == "json":
        assert json.loads(result.stdout)["message"] == "lion"
    # All of it private: an empty message, refused as `context ""` is (exit 2), nothing leaked.
    for message in ("", "  ", f"<private>{SECRET}"):
        refused = run(zoo, "context", message, "--json", "--mode", "bm25")
        assert refused.exit_code == 2 and refused.stdout == "", message
        assert SECRET not in refused.stderr and "the message is empty" in refused.stderr


# -- errors quote what was typed: never its private part -------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_BAD_INPUTS = [("search", "dentist", "--tag", "{}"), ("memory", "read", "--date", "{}"),
               ("memory", "forget", "{}"), ("search", "dentist", "--category", "{}"),
               ("search", "dentist", "--since", "{}")]


@pytest.mark.parametrize("args", _BAD_INPUTS)
@pytest.mark.parametrize("typed", ["<private>SECRETQ</private>", "<private>SECRETQ",
                                   "x <private>SECRETQ</private> y"])
def test_an_error_never_echoes_private_text(zoo, args, typed):
    result = run(zoo, *(typed if a == "{}" else a for a in args))
    assert result.exit_code != 0 and result.stderr.startswith("Error: ")
    assert "SECRETQ" not in result.stdout + result.stderr


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secret=st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZ", min_size=6, max_size=12),
       args=st.sampled_from(_BAD_INPUTS), closed=st.booleans())
def test_no_error_path_echoes_private_text(zoo, secret, args, closed):
    typed = f"<private>{secret}</private>" if closed else f"<private>{secret}"
    result = run(zoo, *(typed if a == "{}" else a for a in args))
    assert secret not in result.stdout + result.stderr


async def test_chat_forget_error_never_echoes_private_text(zoo):
    import io

    from miniclaw.chat.echo import EchoProvider
    from miniclaw.chat.loop import ChatSession

    out, err = io.StringIO(), io.StringIO()
    chat = ChatSession.open(zoo, EchoProvider(), out=out, err=err, format_search=str)
    try:
        assert await chat.handle("/forget <private>SECRETQ</private>")
    finally:
        await chat.aclose()
    assert err.getvalue().startswith("Error: ") and "SECRETQ" not in out.getvalue() + err.getvalue()
