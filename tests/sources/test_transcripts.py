"""Chat transcripts as sources (issue 15): miniclaw's sessions/*.jsonl and Claude Code's
projects folder, the reference transcript search's filters, and `miniclaw sessions search`
compared with the reference tool's own output (tests/fixtures/formats/transcripts,
FORMATS.md section 4)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniclaw.memory import MemoryStore
from miniclaw.search.sessions import search_sessions
from miniclaw.sources.base import KINDS, SOURCES, read_entries
from miniclaw.sources.claude_code import ClaudeCodeSource
from miniclaw.sources.transcripts import NOISE, TranscriptSource, is_noise, kept_text
from tests.conftest import NOW
from tests.formats import FORMAT_FIXTURES

FIXTURES = FORMAT_FIXTURES / "transcripts"
PROJECTS = FIXTURES / "home" / ".claude" / "projects"
REPO = Path(__file__).parents[2]


def _parse_fixtures(source: ClaudeCodeSource) -> list:
    entries = []
    for path in sorted(PROJECTS.glob("*/*.jsonl")):
        text = path.read_text(encoding="utf-8")
        entries += read_entries(source, text, str(path.relative_to(PROJECTS)))
    return entries


def test_claude_code_records_are_the_reference_index_less_its_documented_gaps():
    """Every row the reference indexes, except: the sub-agent file (sidechain), the
    "usage limit reached" API message (model <synthetic>), "sounds good" (an
    acknowledgement), and the assistant turn that quotes a recall's output."""
    rows = [line.split("\t") for line in
            (FIXTURES / "expected" / "index-48ce2b6.tsv").read_text(encoding="utf-8").splitlines()]
    left_out = {("5d8e2c41-7a3b-4f9e-9c1d-2b6a8f0e4c17", "2025-12-27T14:05:06.502Z"),  # sounds good
                ("5d8e2c41-7a3b-4f9e-9c1d-2b6a8f0e4c17", "2025-12-27T14:05:15.639Z"),  # synthetic
                ("c9a4f1b2-6d3e-4b8a-9f17-3e5d2a1c0b98", "2025-12-29T09:15:28.685Z")}  # recall quote
    expected = [(sid, stamp, role, text.replace("\\n", "\n"), cwd) for sid, stamp, role, text, cwd
                in rows if not sid.startswith("agent-") and (sid, stamp) not in left_out]
    got = [(e.meta["session"], e.meta["timestamp"], e.meta["role"], e.text, e.meta["project"])
           for e in _parse_fixtures(ClaudeCodeSource())]
    assert sorted(got) == sorted(expected)


def test_a_claude_code_entry_has_its_place_date_and_metadata():
    entries = _parse_fixtures(ClaudeCodeSource())
    first = next(e for e in entries if e.text.startswith("How should the memory ranker"))
    assert first.source == "claude_code" and first.line_start == first.line_end == 5
    assert first.path == "-home-alice-code-miniclaw/5d8e2c41-7a3b-4f9e-9c1d-2b6a8f0e4c17.jsonl"
    assert str(first.date) == "2025-12-27" and first.time == "14:02:33"
    assert dict(first.meta) == {"session": "5d8e2c41-7a3b-4f9e-9c1d-2b6a8f0e4c17", "role": "user",
                                "timestamp": "2025-12-27T14:02:33.721Z",
                                "project": "/home/alice/code/miniclaw"}


def test_fork_sessions_are_left_out_and_sidechains_only_when_asked():
    sessions = {e.meta["session"] for e in _parse_fixtures(ClaudeCodeSource())}
    assert "7b1d9e04-3c2a-4e8f-a6b5-0d9c8e7f6a51" not in sessions  # first line queue-operation
    with_agents = _parse_fixtures(ClaudeCodeSource(sidechains=True))
    assert any(e.path.endswith("agent-3f9a2c1.jsonl") for e in with_agents)
    assert not any(e.path.endswith("agent-3f9a2c1.jsonl") for e in _parse_fixtures(ClaudeCodeSource()))


@pytest.mark.parametrize("text", [
    "ok", "thanks!", "Sounds good, thanks.", "OK thank you", "short one",
    "<ide_selection>x</ide_selection> what does this do here?",
    "[Request interrupted by user for tool use]",
    "[1/2] 5d8e2c4 • Dec 27\nForks are skipped by reading the first line.",
    "/home/a/code | 5d8e2c41 | 3 matches | 2025-12-27T14:03:56.543Z\n[user] how are forks found"])
def test_noise_short_acknowledgements_and_recall_output_are_left_out(text):
    assert kept_text(text) == ""


def test_only_the_recall_output_is_left_out_of_a_message_that_quotes_one():
    """The reference drops every message before a recall; only what it printed goes here."""
    text = ("Before that, we chose the queue-operation check.\n\n"
            "[1/2] 5d8e2c4 • Dec 27\nFork sessions are detected by the first line.")
    assert kept_text(text) == "Before that, we chose the queue-operation check."
    assert kept_text("Did you remember what we talked about for fork sessions?") != ""


@settings(deadline=None)
@given(st.lists(st.one_of(st.text(max_size=12), st.sampled_from(NOISE),
                          st.sampled_from([m[:-1] for m in NOISE])), max_size=6).map("".join))
def test_the_noise_test_is_any_marker_in_the_text(text):
    """`is_noise` looks for the `<` markers only when there is a `<`: the same answer as
    looking for every marker (texts built of markers, their prefixes and anything)."""
    assert is_noise(text) == any(marker in text for marker in NOISE)


def _kept_text_before(text: str) -> str:
    """`kept_text` as of 93140e5, which searched every paragraph for a recall line."""
    from miniclaw.sources.transcripts import MIN_TEXT, _patterns

    if is_noise(text):
        return ""
    recall_line, acknowledgement, paragraph_break = _patterns()
    if "•" in text or "|" in text or "[" in text or "Found" in text or "..." in text:
        paragraphs = paragraph_break.split(text)
        text = "\n\n".join(p for p in paragraphs if not recall_line.search(p)).strip()
    if len(text) < MIN_TEXT or acknowledgement.match(text):
        return ""
    return text


_RECALL_PIECES = st.sampled_from([
    "[1/3] 5d8e2c4 • Dec 27", "[2/9]  abcdef0  •", "•", "abc | s1 | 3 matches | 2026",
    "x | y | 1 match | z  ", "[user] hi there", "  [asst] answer", "... and 4 more matches",
    "Found matches in 2 sessions", "Found matches in 1 session ", "|", "[", "Found", "...",
    "Found matches in 3 sessions (showing top 1)",
    " match", "[user]", "\n", "\n\n", "\n \t\n", " ", "words we said", "ok", "thanks", "é"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_RECALL_PIECES | st.text(max_size=6), max_size=14).map("".join))
def test_kept_text_keeps_what_it_kept_before(text):
    """A message that cannot hold a recall line is not searched for one, paragraph by
    paragraph: still split and joined again as before, so its text is the same."""
    assert kept_text(text) == _kept_text_before(text)


@settings(deadline=None)
@given(st.text(max_size=300))
def test_any_text_parses_without_error(text):
    """A transcript is whatever is on disk: cut lines, bad JSON, odd shapes never raise."""
    for source in (TranscriptSource(), ClaudeCodeSource()):
        for entry in source.parse(text, "s.jsonl"):
            assert entry.text.strip()


@settings(deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=20),
                          st.dictionaries(st.sampled_from(["type", "text", "content"]),
                                          st.text(max_size=20), max_size=3)), max_size=4))
def test_odd_message_shapes_are_skipped(content):
    record = {"type": "user", "message": {"role": "user", "content": content},
              "timestamp": "2026-01-01T00:00:00.000Z", "sessionId": "s", "cwd": "/p"}
    for entry in ClaudeCodeSource().parse(json.dumps(record), "p/s.jsonl"):
        assert isinstance(entry.text, str) and entry.text


def test_the_kinds_are_registered():
    assert KINDS["transcripts"] == "miniclaw.sources.transcripts:TranscriptSource"
    assert KINDS["claude_code"] == "miniclaw.sources.claude_code:ClaudeCodeSource"
    assert "transcripts" in [source.name for source in SOURCES]  # on by default


# -- miniclaw's own transcripts --------------------------------------------------------------

def _chat(workspace: Path, session: str, *messages: tuple[str, str]) -> Path:
    from miniclaw.chat.transcript import Transcript

    transcript = Transcript(workspace / "sessions", session)

    async def write():
        for role, content in messages:
            await transcript.append(role, content, NOW)

    asyncio.run(write())
    transcript.close()
    return transcript.path


def test_the_chat_transcript_is_searched_by_default(workspace):
    _chat(workspace, "20260214-091203-a1b2c3",
          ("user", "Where did we leave the lantern for the camping trip?"),
          ("assistant", "In the blue crate in the garage, next to the tent pegs."),
          ("tool", "search_memory lantern -> 0 results"),
          ("error", "the model server did not answer about the lantern"))

    async def search():
        async with MemoryStore(workspace, now=lambda: NOW) as store:
            return await search_sessions(store, "lantern garage")

    found = asyncio.run(search())
    assert [hit.session for hit in found.sessions] == ["20260214-091203-a1b2c3"]
    roles = [m.meta["role"] for m in found.sessions[0].messages]
    assert roles == ["user", "assistant"]  # tool and error records are not messages


def test_the_running_session_and_copies_of_a_session_are_left_out(workspace):
    messages = (("user", "Which bakery sells the rye sourdough on Sundays?"),
                ("assistant", "The bakery on Elm Street sells rye sourdough on Sundays."))
    _chat(workspace, "20260214-091203-aaaaaa", *messages)
    copy = workspace / "sessions" / "20260215-091203-bbbbbb.jsonl"
    shutil.copy(workspace / "sessions" / "20260214-091203-aaaaaa.jsonl", copy)
    _chat(workspace, "20260216-091203-cccccc", ("user", "Ask the bakery about rye sourdough again."))

    async def search(skip):
        async with MemoryStore(workspace, now=lambda: NOW) as store:
            return await search_sessions(store, "bakery sourdough", skip=skip)

    shown = [hit.session for hit in asyncio.run(search(frozenset())).sessions]
    assert len(shown) == 2 and "20260216-091203-cccccc" in shown  # the copy is shown once
    running = [hit.session for hit in asyncio.run(
        search(frozenset({"20260216-091203-cccccc"}))).sessions]
    assert "20260216-091203-cccccc" not in running and len(running) == 1


# -- the command, against the reference tool's output -------------------------------------

def _configured(tmp_path: Path, workspace: Path) -> dict:
    projects = tmp_path / "claude" / "projects"
    shutil.copytree(PROJECTS, projects)
    home = tmp_path / "mchome"
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"workspaces": {str(workspace): {
        "sources": ["long_term", "daily_note", "transcripts",
                    {"class": "miniclaw.sources.claude_code:ClaudeCodeSource",
                     "root": str(projects)}],
        "roots": [str(projects)]}}}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_SESSION_ID", "MINICLAW_SESSION_ID")}
    return {**env, "MINICLAW_HOME": str(home), "MINICLAW_WORKSPACE": str(workspace),
            "PYTHONPATH": str(REPO)}


def _sessions(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miniclaw", "sessions", "search", *args],
                          env=env, capture_output=True, text=True, timeout=120)


def test_sessions_search_prints_what_the_reference_prints_less_its_gaps(tmp_path, workspace):
    """The reference's `search fork`, but: the message quoting a recall is gone, and the
    question asked before the recall is kept (the reference cut every earlier message)."""
    run = _sessions(_configured(tmp_path, workspace), "fork")
    assert run.returncode == 0 and run.stderr == "", run.stderr
    expected = (FIXTURES / "expected" / "search-fork-48ce2b6.txt").read_text(encoding="utf-8")
    expected = expected.replace(
        "[asst] Here is what the earlier sessions say: [1/2] 5d8e2c4 • Dec 27 — forks are skipped"
        " by checking the first line for a queue-operation record.\n",
        "[user] Did you remember what we talked about for fork sessions?\n")
    assert run.stdout == expected


def test_sessions_search_json_markdown_project_and_limits(tmp_path, workspace):
    env = _configured(tmp_path, workspace)
    run = _sessions(env, "fork", "--json", "--messages", "1")
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    first = found["sessions"][0]
    assert first["session"] == "5d8e2c41-7a3b-4f9e-9c1d-2b6a8f0e4c17" and first["matches"] == 3
    assert first["more"] == 2 and len(first["messages"]) == 1
    assert first["messages"][0]["role"] in ("user", "assistant")
    text = _sessions(env, "fork", "-m", "1").stdout
    assert "... and 2 more matches" in text
    total = json.loads(_sessions(env, "fork", "--json").stdout)["total"]
    assert total > 1  # the closing count is of every session found, as the JSON's total
    one = _sessions(env, "fork", "-n", "1").stdout
    assert one.rstrip().endswith(f"Found matches in {total} sessions (showing top 1)")
    assert "Found matches" not in kept_text(one)  # a recall of it, pasted in a chat, left out
    other = _sessions(env, "BM25 fork", "--project", "/home/alice/code/notes", "--json")
    assert [s["project"] for s in json.loads(other.stdout)["sessions"]] == ["/home/alice/code/notes"]
    markdown = _sessions(env, "saturation", "--format", "markdown").stdout
    assert markdown.startswith("# Conversations about: saturation") and "**user**" in markdown
    env["CLAUDE_SESSION_ID"] = "5d8e2c41-7a3b-4f9e-9c1d-2b6a8f0e4c17"
    shown = json.loads(_sessions(env, "fork", "--json").stdout)["sessions"]
    assert "5d8e2c41-7a3b-4f9e-9c1d-2b6a8f0e4c17" not in [s["session"] for s in shown]


def test_sessions_search_bad_input_is_one_error_line(tmp_path, workspace):
    run = _sessions(_configured(tmp_path, workspace), "fork", "--limit", "0")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith("Error:") and len(run.stderr.strip().splitlines()) == 1


def test_sessions_search_takes_the_query_as_argument_or_with_q_once(tmp_path, workspace):
    """As `search`, `memory rank` and `context` do: `-q` for scripts, never both or neither."""
    env = _configured(tmp_path, workspace)
    by_argument, by_option = _sessions(env, "fork", "--json"), _sessions(env, "-q", "fork", "--json")
    assert by_option.returncode == 0 and by_option.stdout == by_argument.stdout
    assert json.loads(by_option.stdout)["sessions"]
    for args in (("fork", "-q", "fork"), ()):
        run = _sessions(env, *args)
        assert run.returncode == 2 and run.stdout == ""
        assert run.stderr.startswith("Error: give ") and len(run.stderr.splitlines()) == 1


# -- privacy -------------------------------------------------------------------------------

SECRET = "zanzibarquokka"

_words = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=40).filter(
    lambda s: "private" not in s.lower() and SECRET not in s)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60,
          deadline=None)
@given(before=_words, after=_words)
def test_private_text_typed_in_a_chat_never_reaches_an_entry(before, after):
    """The shared redaction (`read_entries`) hides `<private>` in a transcript's message,
    however the JSON writer escaped the rest, in both formats."""
    message = f"{before} <private>{SECRET}</private> {after} lantern details"
    miniclaw_line = json.dumps({"role": "user", "content": message, "session_id": "s",
                                "timestamp": "2026-02-14T09:12:03.000Z"}, ensure_ascii=False)
    claude_line = json.dumps({"type": "user", "sessionId": "s", "cwd": "/p",
                              "timestamp": "2026-02-14T09:12:03.000Z",
                              "message": {"role": "user", "content": [{"type": "text", "text": message}]}})
    for source, line in ((TranscriptSource(), miniclaw_line), (ClaudeCodeSource(), claude_line)):
        for entry in read_entries(source, line + "\n", "s.jsonl"):
            assert SECRET not in entry.text and SECRET not in json.dumps(dict(entry.meta))


def _escaped(text: str, which: list[bool]) -> str:
    """`text` as a JSON string's inside, the characters picked by `which` as `\\uXXXX`."""
    return "".join(f"\\u{ord(c):04x}" if escape else json.dumps(c)[1:-1]
                   for c, escape in zip(text, which))


@settings(max_examples=80, deadline=None)
@given(which=st.lists(st.booleans(), min_size=19, max_size=19).filter(any))
def test_a_tag_spelled_with_json_escapes_hides_its_text(which):
    """A JSON writer may escape any character (`\\u0070` for `p`): the tag the message holds
    once decoded hides its text, even when the line itself shows no `<` and no "private"
    (a line whose letters were all escaped reached the index whole). A line that shows one
    tag unescaped and the other escaped is hidden from its visible tag on (fail closed)."""
    opening, closing = _escaped("<private>", which[:9]), _escaped("</private>", which[9:])
    content = f"my pin is {opening}{SECRET}{closing} and the lantern is in the shed"
    miniclaw_line = ('{"role": "user", "content": "' + content + '", "session_id": "s",'
                     ' "timestamp": "2026-02-14T09:12:03.000Z"}')
    claude_line = ('{"type": "user", "sessionId": "s", "cwd": "/p", "timestamp":'
                   ' "2026-02-14T09:12:03.000Z", "message": {"role": "user", "content":'
                   ' [{"type": "text", "text": "' + content + '"}]}}')
    for source, line in ((TranscriptSource(), miniclaw_line), (ClaudeCodeSource(), claude_line)):
        entries = read_entries(source, line + "\n", "s.jsonl")
        assert all(SECRET not in e.text and SECRET not in json.dumps(dict(e.meta))
                   for e in entries), line
        if "<private>" not in line and "</private>" not in line:  # found once decoded only
            assert [e.text for e in entries] == ["my pin is  and the lantern is in the shed"]


def test_private_text_typed_in_a_chat_is_not_in_the_index_or_the_output(workspace):
    _chat(workspace, "20260214-091203-a1b2c3",
          ("user", f"The alarm code is <private>{SECRET}</private> and the lantern is in the shed."))

    async def search():
        async with MemoryStore(workspace, now=lambda: NOW) as store:
            return await search_sessions(store, f"lantern {SECRET}")

    found = asyncio.run(search())
    assert found.sessions and SECRET not in json.dumps(found.to_dict()["sessions"])
    for path in (Path(os.environ["XDG_CACHE_HOME"]) / "miniclaw").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes()


# -- appends are read from where the last read stopped ---------------------------------------

class CountingTranscripts(TranscriptSource):
    """miniclaw's transcripts, recording how much text each parse was given."""

    def __init__(self, **settings):
        super().__init__(**settings)
        self.parsed: list[str] = []

    def parse_part(self, text, path, head):
        self.parsed.append(text)
        return super().parse_part(text, path, head)


def _line(content: str, role: str = "user", second: int = 0) -> str:
    return json.dumps({"role": role, "content": content, "session_id": "s1",
                       "timestamp": f"2026-02-14T09:12:{second:02d}.000Z"}) + "\n"


def _index(workspace: Path, source) -> list[tuple]:
    async def refresh():
        async with MemoryStore(workspace, sources=(source,), now=lambda: NOW) as store:
            await store.search("anything", SearchOptions(days=None))

    asyncio.run(refresh())
    return _rows(workspace)


def _rows(workspace: Path) -> list[tuple]:
    from miniclaw.config import index_path

    with contextlib.closing(sqlite3.connect(index_path(workspace))) as conn:
        return conn.execute("SELECT id, line_start, ordinal, occurrence, content FROM entries"
                            " ORDER BY ordinal").fetchall()


from miniclaw.search.options import SearchOptions  # noqa: E402


def test_an_append_is_read_alone_and_a_rewrite_whole(workspace):
    path = workspace / "sessions" / "s1.jsonl"
    path.parent.mkdir()
    first = _line("We picked the blue tent for the lake trip.") + _line(
        "The blue tent sleeps four and packs small.", "assistant", 1)
    path.write_text(first, encoding="utf-8")
    source = CountingTranscripts()
    before = _index(workspace, source)
    assert [row[4][:12] for row in before] == ["We picked th", "The blue ten"]
    with open(path, "a", encoding="utf-8") as out:
        out.write(_line("We picked the blue tent for the lake trip.", second=2))  # same text again
    source.parsed.clear()
    after = _index(workspace, source)
    assert source.parsed == [_line("We picked the blue tent for the lake trip.", second=2)]
    assert after[:2] == before  # earlier entries untouched, same ids
    assert [(row[1], row[2], row[3]) for row in after] == [(1, 0, 0), (2, 1, 0), (3, 2, 1)]
    # Rewritten in place (same inode), its start changed: read whole again.
    with open(path, "r+", encoding="utf-8") as out:
        out.write(_line("We picked the green tent for the lake trip."))
    source.parsed.clear()
    rewritten = _index(workspace, source)
    assert len(source.parsed) == 1 and source.parsed[0].startswith('{"role": "user"')
    assert rewritten[0][4] == "We picked the green tent for the lake trip."


def test_a_line_still_being_written_waits_for_its_end(workspace):
    path = workspace / "sessions" / "s1.jsonl"
    path.parent.mkdir()
    whole = _line("The ferry to the island leaves at nine sharp.")
    path.write_text(whole + _line("Bring the passports and the tickets.")[:20], encoding="utf-8")
    assert [row[4] for row in _index(workspace, TranscriptSource())] == [
        "The ferry to the island leaves at nine sharp."]
    path.write_text(whole + _line("Bring the passports and the tickets."), encoding="utf-8")
    assert [row[4] for row in _index(workspace, TranscriptSource())] == [
        "The ferry to the island leaves at nine sharp.", "Bring the passports and the tickets."]


def test_a_transcript_over_16_mb_is_indexed(workspace):
    path = workspace / "sessions" / "long.jsonl"
    path.parent.mkdir()
    line = _line("Profiling the indexer again with a larger corpus of words " + "x" * 400)
    with open(path, "w", encoding="utf-8") as out:
        out.write(line * (17 * 1024 * 1024 // len(line) + 1))
        out.write(_line("The needle message about the walrus is the last one."))
    assert path.stat().st_size > 16 * 1024 * 1024

    async def search():
        async with MemoryStore(workspace, now=lambda: NOW) as store:
            return await store.search("walrus", SearchOptions(days=None))

    found = asyncio.run(search())
    assert [hit.content for hit in found.results] == [
        "The needle message about the walrus is the last one."] and not found.warnings


def _cli(workspace: Path, *args: str):
    from typer.testing import CliRunner

    from miniclaw.cli import app

    return CliRunner().invoke(app, ["--workspace", str(workspace), *args])


def _found(workspace: Path, word: str) -> str:
    """What `search` and `sessions search` find for a word (both through the index), less
    the echo of the query."""
    runs = [_cli(workspace, "search", word, "--all", "--json"),
            _cli(workspace, "sessions", "search", word, "--json")]
    assert all(run.exit_code == 0 for run in runs), [run.output for run in runs]
    return json.dumps([json.loads(runs[0].stdout)["results"],
                       json.loads(runs[1].stdout)["sessions"]])


def _settled(path: Path) -> None:
    """As if written an hour ago: the next change moves its mtime, as an editor's does."""
    past = os.stat(path).st_mtime_ns - 3600 * 10**9
    os.utime(path, ns=(past, past))


def _long_session(workspace: Path, secret_line: str) -> Path:
    """`sessions/s1.jsonl`, ~400 KB (more than the 64 KB hashed at either end of an
    indexed prefix), `secret_line` in the middle."""
    path = workspace / "sessions" / "s1.jsonl"
    path.parent.mkdir(exist_ok=True)
    lines = [_line(f"filler message number {i} about the vegetable garden", second=i % 60)
             for i in range(4000)]
    lines[2000] = secret_line
    path.write_text("".join(lines), encoding="utf-8")
    _settled(path)
    return path


def _overwrite(path: Path, old: bytes, new: bytes) -> None:
    """Edit the file in place (same inode), as an editor that writes through does."""
    assert len(old) == len(new)
    with open(path, "r+b") as handle:
        data = handle.read()
        handle.seek(data.index(old))
        handle.write(new)


@pytest.mark.parametrize("edit", ["asterisks", "made private", "edited and appended"])
def test_a_transcript_edited_in_place_is_read_again_not_taken_for_an_append(workspace, edit):
    """Issue 37: a same-size edit in the middle of a transcript over 128 KB (a password
    overwritten, a phrase wrapped in `<private>` while as many characters were deleted)
    was taken for an append of nothing: `search` and `sessions search` kept the old words
    until the cache was deleted."""
    secret = "hunter7zebra"
    path = _long_session(workspace, _line(f"my password is {secret} for the wifi router"))
    assert secret in _found(workspace, secret)
    if edit == "asterisks":
        _overwrite(path, secret.encode(), b"*" * len(secret))
    elif edit == "made private":  # 19 characters of tags in, 19 of filler out
        _overwrite(path, f"my password is {secret} for the wifi router".encode(),
                   f"my pw is <private>{secret}</private> router".encode())
    else:
        _overwrite(path, secret.encode(), b"*" * len(secret))
        with open(path, "a", encoding="utf-8") as out:
            out.write(_line("the router sits in the hallway cupboard"))
    assert secret not in _found(workspace, secret)
    assert "wifi router" in _found(workspace, "router") or edit == "made private"
    with contextlib.closing(sqlite3.connect(_index_file(workspace))) as conn:
        rows = conn.execute("SELECT content FROM entries WHERE content LIKE '%router%'").fetchall()
    assert rows and not any(secret in row[0] for row in rows)
    assert (edit == "edited and appended") == any("hallway" in row[0] for row in rows)


def _damaged_line(size: int, end: str = "\n") -> str:
    """A record line of `size` bytes: a runaway write, not a message."""
    start = '{"role": "user", "content": "'
    return start + "x" * (size - len(start) - 2 - len(end)) + '"}' + end


def test_a_line_over_the_limit_is_skipped_with_one_warning_and_never_held(workspace):
    """Issue 37: one huge line was held whole in memory (and an unended one read again by
    every search that found the file changed). Now a line over `MAX_LINE_BYTES` is skipped
    as damaged, named once, and the lines after it are indexed at their own line numbers;
    a read that ends inside one goes on from there next time, without parsing it again."""
    from miniclaw.sources.appends import MAX_LINE_BYTES

    path = workspace / "sessions" / "s1.jsonl"
    path.parent.mkdir()
    source = CountingTranscripts()
    path.write_text(_line("The canoe trip starts at the north dock.")
                    + _damaged_line(MAX_LINE_BYTES + 4096)
                    + _line("Pack the dry bags the night before.", second=2), encoding="utf-8")
    rows = _index(workspace, source)
    assert [(row[1], row[4]) for row in rows] == [
        (1, "The canoe trip starts at the north dock."), (3, "Pack the dry bags the night before.")]
    assert sum(len(text) for text in source.parsed) < 4096  # never given the long line
    run = _cli(workspace, "search", "canoe", "--all")
    assert run.exit_code == 0 and "canoe trip" in run.stdout
    said = [line for line in run.stderr.splitlines() if "line 2 is over" in line]
    assert len(said) == 1 and "skipped as damaged" in said[0], run.stderr
    # A long line still being written at the end: skipped as far as it goes, and later
    # appends to it are passed over from there, not read again to be parsed.
    with open(path, "a", encoding="utf-8") as out:
        out.write(_damaged_line(MAX_LINE_BYTES + 4096, end=""))
    source.parsed.clear()
    _index(workspace, source)
    with open(path, "a", encoding="utf-8") as out:
        out.write("y" * 100_000 + "\n" + _line("The shuttle leaves the dock at noon.", second=5))
    _index(workspace, source)
    rows = _rows(workspace)
    assert [(row[1], row[4]) for row in rows][-1] == (5, "The shuttle leaves the dock at noon.")
    assert sum(len(text) for text in source.parsed) < 4096
    warnings = _cli(workspace, "search", "shuttle", "--all").stderr.splitlines()
    assert len(warnings) == 1 and "line 4 is over" in warnings[0]  # one per file, the last


def test_a_warning_about_an_earlier_part_outlives_an_append(workspace):
    """A transcript with bad bytes is named by every search; an append (read alone) set the
    file's warning to the new part's, none, and the bad bytes went unmentioned."""
    path = workspace / "sessions" / "s1.jsonl"
    path.parent.mkdir()
    path.write_bytes(_line("The canoe trip starts at the \udcff north dock.").encode(
        "utf-8", "surrogateescape").replace(b"\\udcff", b"\xff"))
    assert "not valid UTF-8" in _cli(workspace, "search", "canoe", "--all").stderr
    with open(path, "a", encoding="utf-8") as out:
        out.write(_line("Pack the dry bags the night before.", second=2))
    run = _cli(workspace, "search", "canoe", "--all")
    assert "canoe trip" in run.stdout and "not valid UTF-8" in run.stderr, run.stderr


def test_a_skipped_line_with_a_tag_hides_nothing_past_its_own_record(workspace):
    """A damaged line is not parsed. Transcripts apply the tag rules per record (issue 38:
    a tool result that quotes an unclosed `<private>` hid every later message), so a tag in
    the skipped line, which is one record, cannot reach the records after it."""
    from miniclaw.sources.appends import MAX_LINE_BYTES

    path = workspace / "sessions" / "s1.jsonl"
    path.parent.mkdir()
    damaged = _damaged_line(MAX_LINE_BYTES + 10).replace("xxxx", "<private>", 1)
    path.write_text(_line("The canoe trip starts at the north dock.") + damaged
                    + _line("The locker code is by the door.", second=2)
                    + _line("My <private>zanzibarquokka</private> paddles are in the shed.",
                            second=3),
                    encoding="utf-8")
    contents = [row[4] for row in _index(workspace, TranscriptSource())]
    assert contents == ["The canoe trip starts at the north dock.",
                        "The locker code is by the door.", "My  paddles are in the shed."]


_message = st.lists(st.sampled_from(["lake ", "tent ", " ", "<private>", "</private>", "é", "\n"]),
                    min_size=3, max_size=12).map("".join)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages=st.lists(_message, min_size=1, max_size=8),
       part=st.integers(min_value=1, max_value=200), split=st.integers(min_value=0, max_value=8))
def test_reading_in_parts_or_appends_hides_what_a_whole_read_hides(tmp_path, monkeypatch,
                                                                  messages, part, split):
    """Entries are the same whether the file is read whole, in parts, or as an earlier
    read plus an append: a `<private>` block open across parts stays hidden."""
    from miniclaw.sources import appends
    from miniclaw.index import sync

    source = TranscriptSource()
    root = tmp_path / "p"
    (root / "sessions").mkdir(parents=True, exist_ok=True)
    path = root / "sessions" / "s1.jsonl"
    lines = [_line(m, second=i) for i, m in enumerate(messages)]
    text = "".join(lines)
    whole = read_entries(source, text, "sessions/s1.jsonl")

    def entries(tail):
        found = []
        for parsed in sync._parse_growing(source, source.file(root, str(path)), str(root), tail):
            found += [(data[1], data[-1]) for _, data in parsed.keys]
            last = parsed.tail
        return found, last

    monkeypatch.setattr(appends, "PART_BYTES", part)
    path.write_text("".join(lines[:split]), encoding="utf-8")
    first, tail = entries(None)
    path.write_text(text, encoding="utf-8")
    tail = tail._replace(signature=(0, 0, path.stat().st_ino))
    rest, _ = entries(tail)
    expected = [(e.line_start, e.text) for e in whole]
    assert first + rest == expected
    assert entries(None)[0] == expected


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.one_of(_message, st.integers(245, 255), st.integers(300, 700)),
                      min_size=1, max_size=8),
       part=st.integers(min_value=1, max_value=400), cut=st.integers(min_value=0))
def test_long_lines_are_skipped_alike_whole_in_parts_or_across_an_append(
        tmp_path, monkeypatch, lines, part, cut):
    """With lines over `MAX_LINE_BYTES` (an integer above: a line of that many bytes, 250 at
    most kept), the entries are those of a whole read of the file with those lines blank,
    whatever the part size, and when the file was first read cut anywhere (inside a long
    line too)."""
    from miniclaw.sources import appends
    from miniclaw.index import sync

    monkeypatch.setattr(appends, "MAX_LINE_BYTES", 250)
    monkeypatch.setattr(appends, "PART_BYTES", part)
    source = TranscriptSource()
    root = tmp_path / "p"
    (root / "sessions").mkdir(parents=True, exist_ok=True)
    path = root / "sessions" / "s1.jsonl"
    texts = [_damaged_line(item) if isinstance(item, int) else _line(item, second=i)
             for i, item in enumerate(lines)]
    raw = "".join(texts).encode("utf-8")
    blank = "".join("\n" if isinstance(item, int) and item > 250 else text
                    for item, text in zip(lines, texts))
    expected = [(e.line_start, e.text) for e in read_entries(source, blank, "sessions/s1.jsonl")]

    def entries(tail):
        found, last = [], None
        for parsed in sync._parse_growing(source, source.file(root, str(path)), str(root), tail):
            found += [(data[1], data[-1]) for _, data in parsed.keys]
            last = parsed.tail
        return found, last

    assert all(len(text.encode()) <= 250 for item, text in zip(lines, texts)
               if not isinstance(item, int))
    path.write_bytes(raw)
    assert entries(None)[0] == expected
    path.write_bytes(raw[:cut % (len(raw) + 1)])
    first, tail = entries(None)
    path.write_bytes(raw)
    rest, _ = entries(tail._replace(signature=(0, 0, path.stat().st_ino)))
    assert first + rest == expected


def test_an_empty_or_missing_sessions_folder_costs_a_search_no_source_search(workspace, monkeypatch):
    """On by default, but a search runs no retriever over a source with no file on disk."""
    from miniclaw.search.ranker import MemoryRanker

    (workspace / "memory" / "MEMORY.md").write_text("# Long-term Memory\n\n## 2026-02-10\n\n"
                                                    "- The atlas budget was approved.\n")
    searched: list[str] = []
    original = MemoryRanker._search_source

    def recording(self, source, *args):
        searched.append(source.name)
        return original(self, source, *args)

    monkeypatch.setattr(MemoryRanker, "_search_source", recording)

    async def search():
        async with MemoryStore(workspace, now=lambda: NOW) as store:
            return await store.search("atlas budget", SearchOptions(days=None))

    asyncio.run(search())
    assert "transcripts" not in searched and "long_term" in searched
    (workspace / "sessions").mkdir()
    asyncio.run(search())
    assert "transcripts" not in searched
    _chat(workspace, "20260214-091203-a1b2c3", ("user", "What did the atlas budget cover?"))
    searched.clear()
    found = asyncio.run(search())
    assert "transcripts" in searched and {hit.source for hit in found.results} == {
        "long_term", "transcripts"}


# -- the assistant recalls ------------------------------------------------------------------

def test_the_context_cites_past_messages_by_session_and_time_not_the_running_one(workspace,
                                                                               monkeypatch):
    from miniclaw.context import ContextBuilder

    _chat(workspace, "20260210-080000-aaaaaa",
          ("user", "My sister's wedding is in Porto on the third of June."))
    _chat(workspace, "20260214-091203-bbbbbb",
          ("user", "Remind me where my sister's wedding is, the Porto trip?"))
    monkeypatch.setenv("MINICLAW_SESSION_ID", "20260214-091203-bbbbbb")

    async def build():
        async with MemoryStore(workspace, now=lambda: NOW) as store:
            return await ContextBuilder(store).build("where is my sister's wedding?")

    rendered = asyncio.run(build()).render()
    assert ("[sessions/20260210-080000-aaaaaa.jsonl:1, 2026-02-14 09:12:03, session "
            "20260210-080000-aaaaaa, user] My sister's wedding is in Porto") in rendered
    assert "Remind me where" not in rendered


def test_slash_search_in_chat_reaches_past_conversations_not_this_one(workspace):
    import io

    from miniclaw.chat.echo import EchoProvider
    from miniclaw.chat.loop import ChatSession
    from miniclaw.cli.render import Style, search_text

    _chat(workspace, "20260210-080000-aaaaaa",
          ("user", "The spare key is under the blue flowerpot by the door."))

    async def talk():
        out, err = io.StringIO(), io.StringIO()
        chat = ChatSession.open(workspace, EchoProvider(), out=out, err=err,
                                format_search=lambda found: search_text(found, Style(False)))
        try:
            await chat.handle("is the flowerpot key still there?")
            await chat.handle("/search flowerpot")
        finally:
            await chat.aclose()
        return out.getvalue(), chat.transcript.session_id

    try:
        said, running = asyncio.run(talk())
    finally:
        os.environ.pop("MINICLAW_SESSION_ID", None)
    searched = said.split("flowerpot key still there", 1)[-1]
    assert "sessions/20260210-080000-aaaaaa.jsonl:1" in searched
    assert f"sessions/{running}.jsonl" not in searched


def test_echo_answers_are_recalls_and_are_not_found_again(workspace):
    """The offline echo answers by quoting memory. Before, each answer was indexed, so a
    later search found every memory again in each answer that had quoted it, and the next
    answers quoted those answers (copies within copies, session after session)."""
    import io

    from miniclaw.chat.echo import EchoProvider
    from miniclaw.chat.loop import ChatSession

    (workspace / "memory" / "MEMORY.md").write_text(
        "# Memory\n\n- Planning the walrus expedition for spring\n", encoding="utf-8")

    async def talk(times: int) -> None:
        for _ in range(times):
            chat = ChatSession.open(workspace, EchoProvider(), out=io.StringIO(),
                                    err=io.StringIO(), format_search=lambda found: "")
            try:
                await chat.handle("any news on the walrus expedition?")
            finally:
                await chat.aclose()
                os.environ.pop("MINICLAW_SESSION_ID", None)

    async def found() -> list[str]:
        async with MemoryStore(workspace, now=lambda: NOW) as store:
            hits = await store.search_memories("walrus expedition spring", limit=20, days=None)
        return [hit.citation for hit in hits]

    asyncio.run(talk(3))
    answers = [r for path in sorted((workspace / "sessions").glob("*.jsonl"))
               for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())
               if r["role"] == "assistant"]
    assert len(answers) == 3 and all(r["recall"] is True for r in answers)
    assert all("walrus expedition for spring" in r["content"] for r in answers)
    cited = asyncio.run(found())
    assert "memory/MEMORY.md:3" in cited  # the memory, and what the user asked (line 1):
    assert sorted(c.rsplit(":", 1)[1] for c in cited if c.startswith("sessions/")) == ["1"] * 3
    # before: also each session's answer (line 2), quoting the memory


def test_a_transcript_time_is_utc_whatever_the_workspace_zone(workspace):
    """docs/cli.md: `timestamp`, UTC. Before, a workspace with a time zone wrote its local time
    (+14:00), and sessions search mixed those with Claude Code's UTC times."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from miniclaw.chat.transcript import Transcript

    transcript = Transcript(workspace / "sessions", "20261128-051800-aaaaaa")
    local = datetime(2026, 11, 28, 5, 18, 0, 619000, tzinfo=ZoneInfo("Pacific/Kiritimati"))
    asyncio.run(transcript.append("user", "the kayak needs a new paddle", local))
    transcript.close()
    record = json.loads(transcript.path.read_text(encoding="utf-8"))
    assert record["timestamp"] == "2026-11-27T15:18:00.619Z"


def test_a_rebuild_reads_a_transcript_whole_again(workspace):
    path = workspace / "sessions" / "s1.jsonl"
    path.parent.mkdir()
    path.write_text(_line("The kayak rental opens at eight in the morning."), encoding="utf-8")
    _index(workspace, TranscriptSource())
    with open(path, "a", encoding="utf-8") as out:
        out.write(_line("The kayak rental closes at six in the evening.", second=1))
    _index(workspace, TranscriptSource())

    async def rebuild():
        async with MemoryStore(workspace, sources=(TranscriptSource(),), now=lambda: NOW) as store:
            return await store.rebuild_index()

    report = asyncio.run(rebuild())
    assert report.files_parsed == 1 and report.entries_added == 2
    assert [row[4] for row in _rows(workspace)] == [
        "The kayak rental opens at eight in the morning.",
        "The kayak rental closes at six in the evening."]
    with contextlib.closing(sqlite3.connect(_index_file(workspace))) as conn:
        assert conn.execute("SELECT COUNT(*) FROM meta WHERE key LIKE 'tail:%'").fetchone() == (1,)


def _index_file(workspace: Path) -> Path:
    from miniclaw.config import index_path

    return index_path(workspace)


def test_a_missing_sessions_folder_does_not_cost_the_other_sources_their_watch(workspace):
    (workspace / "memory" / "MEMORY.md").write_text("# Long-term Memory\n\n## 2026-02-10\n\n"
                                                    "- The atlas budget was approved.\n")

    async def searches():
        async with MemoryStore(workspace, now=lambda: NOW) as store:
            for _ in range(3):  # from the second search on, the store watches its folders
                assert await store.search_memories("atlas")
            return store.index._watch is not None and store.index._watch.active

    assert asyncio.run(searches())
