"""ChatSession and the console, in process, with string buffers for the terminal and a real
local server (or the echo provider) for the model."""

from __future__ import annotations

import io
import json
import stat
from datetime import datetime, timezone
from pathlib import Path

import pytest

from miniclaw.chat.console import run_console
from miniclaw.chat.echo import EchoProvider
from miniclaw.chat.loop import MAX_TOOL_ROUNDS, ChatSession
from miniclaw.chat.openai import OpenAIProvider
from miniclaw.cli.render import Style, search_text
from tests.chat.conftest import transcript_records
from tests.chat.server import HANG, FakeModelServer, stream, text_chunks, tool_call_chunks
from tests.conftest import write

SECRET = "PERIWINKLE"


def today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


@pytest.fixture
def memory_files(workspace: Path) -> Path:
    write(workspace, "SOUL.md", "# Soul\n\nYou are miniclaw.\n")
    write(workspace, "USER.md", f"# User\n\nAna. <private>Password hint {SECRET}</private>\n")
    write(workspace, "memory/MEMORY.md", f"# Memory\n\n## {today()}\n"
          f"- Insurance is with Acme, policy <private>{SECRET}-99</private> renewed in May\n"
          "- Prefers dark roast coffee\n")
    write(workspace, f"memory/{today()}.md", f"# Daily Note - {today()}\n\n## 08:00:00 UTC\n\n"
          f"Called Acme insurance about the renewal\n<private>\nAgent said {SECRET}\n</private>\n")
    return workspace


class Session:
    """A ChatSession on the workspace with its output captured."""

    def __init__(self, workspace: Path, provider, **options) -> None:
        self.out, self.err = io.StringIO(), io.StringIO()
        self.chat = ChatSession.open(workspace, provider, out=self.out, err=self.err,
                                     format_search=lambda found: search_text(found, Style(False)),
                                     **options)

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.chat.aclose()


def check_transcript_file(workspace: Path) -> None:
    files = list((workspace / "sessions").glob("*.jsonl"))
    assert len(files) == 1
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE((workspace / "sessions").stat().st_mode) == 0o700


async def test_echo_answers_with_the_memories_found_and_keeps_a_transcript(memory_files):
    async with Session(memory_files, EchoProvider()) as s:
        assert await s.chat.handle("when does my insurance renew?")
    assert s.out.getvalue().startswith("I found ")
    assert "Insurance is with Acme, policy renewed in May (memory/MEMORY.md:4, " in s.out.getvalue()
    records = transcript_records(memory_files)
    assert [r["role"] for r in records] == ["user", "assistant"]
    assert records[0]["content"] == "when does my insurance renew?"
    assert records[1]["content"] == s.out.getvalue().rstrip("\n")
    session_id = s.chat.transcript.session_id
    for record in records:
        assert set(record) - {"recall"} == {"role", "content", "timestamp", "session_id"}
        assert record["session_id"] == session_id and record["timestamp"].endswith("Z")
    assert [r.get("recall") for r in records] == [None, True]  # the answer only quoted memory
    assert SECRET not in json.dumps(records)
    check_transcript_file(memory_files)


async def test_echo_says_which_word_it_searched_instead(memory_files):
    async with Session(memory_files, EchoProvider()) as s:
        assert await s.chat.handle("what about my insurance polcy?")
    answer = s.out.getvalue()
    assert answer.startswith("Searched instead: polcy → policy\nI found ")
    assert "Insurance is with Acme" in answer


async def test_slash_search_shows_the_correction(memory_files):
    async with Session(memory_files, EchoProvider()) as s:
        assert await s.chat.handle("/search polcy")
    assert "Searched instead: polcy → policy" in s.out.getvalue()


async def test_the_search_tool_tells_the_model_which_word_it_searched_instead(memory_files):
    from miniclaw.chat.tools import run_tool
    from miniclaw.memory import MemoryStore

    async with MemoryStore(memory_files) as store:
        outcome = await run_tool(store, "search_memory", json.dumps({"query": "polcy"}))
    assert outcome.result.startswith("Searched instead: polcy → policy\n[memory/")


async def test_a_tool_call_writes_long_term_memory_and_shows_it(memory_files):
    script = [stream(*tool_call_chunks("call_1", "write_memory",
                                       {"content": "Allergic to penicillin", "kind": "long_term"})),
              stream(*text_chunks("Noted, ", "I will remember that."))]
    with FakeModelServer(script) as server:
        async with Session(memory_files, OpenAIProvider(server.url, "tiny")) as s:
            await s.chat.handle("I am allergic to penicillin, remember that")
    memory = (memory_files / "memory" / "MEMORY.md").read_text()
    assert "- Allergic to penicillin (added at" in memory
    line = memory.splitlines().index(next(l for l in memory.splitlines() if "penicillin" in l)) + 1
    shown = f"[remembered in long-term memory, memory/MEMORY.md:{line}: Allergic to penicillin]"
    assert s.out.getvalue() == f"{shown}\nNoted, I will remember that.\n"
    # the model got the tool's result, in OpenAI's format, before answering
    second = server.requests[1]["messages"]
    assert second[-2]["role"] == "assistant" and second[-2]["tool_calls"][0]["id"] == "call_1"
    assert second[-1] == {"role": "tool", "tool_call_id": "call_1",
                          "content": f"saved at memory/MEMORY.md:{line}"}
    records = transcript_records(memory_files)
    assert [(r["role"], r["content"]) for r in records] == [
        ("user", "I am allergic to penicillin, remember that"), ("tool", shown),
        ("assistant", "Noted, I will remember that.")]


async def test_a_tool_call_writes_todays_note(memory_files):
    script = [stream(*tool_call_chunks("c", "write_memory", {"content": "Ran 5k", "kind": "daily"})),
              stream(*text_chunks("Nice run!"))]
    with FakeModelServer(script) as server:
        async with Session(memory_files, OpenAIProvider(server.url, "tiny")) as s:
            await s.chat.handle("I ran 5k today")
    assert "Ran 5k" in (memory_files / "memory" / f"{today()}.md").read_text()
    assert "[remembered in today's note, memory/" in s.out.getvalue()


async def test_private_text_never_reaches_the_server_or_the_transcript(memory_files):
    script = [stream(*tool_call_chunks("s1", "search_memory", {"query": "acme insurance policy"})),
              stream(*text_chunks("Your policy with Acme renews in May."))]
    with FakeModelServer(script) as server:
        async with Session(memory_files, OpenAIProvider(server.url, "tiny")) as s:
            await s.chat.handle("what do you know about my insurance?")
            await s.chat.handle("and my coffee?")
    assert len(server.bodies) == 3
    system = server.requests[0]["messages"][0]["content"]
    assert "Insurance is with Acme" in system and "Ana." in system  # memory did reach it
    tool_result = server.requests[1]["messages"][-1]["content"]
    assert "[memory/MEMORY.md:4#" in tool_result  # the ref forget_memory takes
    for body in server.bodies:
        assert SECRET not in body and SECRET.lower() not in body.lower()
    assert SECRET not in json.dumps(transcript_records(memory_files))
    assert SECRET not in s.out.getvalue()


# -- what the person marks private in a message -------------------------------------------


async def test_private_text_typed_in_a_message_goes_only_to_the_transcript(memory_files):
    """Not to the model (the message, and the conversation so far in the next prompts), not
    to the context's search or short-term memory, not to /context; the transcript, the
    person's own file, keeps the message as typed, as a memory file keeps its private parts
    (its source hides them from the index)."""
    typed = ["gecko tank <private>GECKOSECRET1</private> setup",
             "ibis plan <private>IBISSECRET1</private> tomorrow", "what next?"]
    script = [stream(*text_chunks("Heat lamp first.")),
              stream(*tool_call_chunks("s1", "search_memory",
                                       {"query": "ibis <private>IBISSECRET3</private>"})),
              stream(*text_chunks("Nothing about ibis yet.")), stream(*text_chunks("Rest."))]
    with FakeModelServer(script) as server:
        async with Session(memory_files, OpenAIProvider(server.url, "tiny")) as s:
            for message in typed:
                assert await s.chat.handle(message)
            assert await s.chat.handle("/context")
            kept = [turn.content for turn in s.chat.store.short_term]
    assert server.requests[0]["messages"][-1] == {"role": "user", "content": "gecko tank  setup"}
    assert server.requests[1]["messages"][-1] == {"role": "user", "content": "ibis plan  tomorrow"}
    history = server.requests[-1]["messages"][0]["content"]
    assert "# Conversation so far" in history and "**user:** gecko tank  setup" in history
    assert "**user:** ibis plan  tomorrow" in history
    out = s.out.getvalue()
    assert "**user:** ibis plan  tomorrow" in out  # /context
    assert '[searched memory for "ibis": 0 found]' in out
    assert kept[0] == "gecko tank  setup" and s.err.getvalue() == ""
    said = "".join(server.bodies) + out + json.dumps(kept)
    assert "GECKOSECRET1" not in said and "IBISSECRET1" not in said
    # The model's own tool call goes back to it as it wrote it; the search and the line
    # shown (and kept in the history) have no private part.
    assert "IBISSECRET3" not in out + json.dumps(kept)
    records = transcript_records(memory_files)
    assert [r["content"] for r in records if r["role"] == "user"] == typed


async def test_a_message_that_is_all_private_is_not_sent_and_the_session_goes_on(memory_files):
    with FakeModelServer([stream(*text_chunks("Hello."))]) as server:
        async with Session(memory_files, OpenAIProvider(server.url, "tiny")) as s:
            assert await s.chat.handle("<private>GECKOSECRET1</private>")
            assert await s.chat.handle("  <private>still GECKOSECRET1, never closed")
            assert await s.chat.handle("hello")
    assert len(server.requests) == 1 and "GECKOSECRET1" not in "".join(server.bodies)
    error = ("Error: all of that message is private (inside a private tag): nothing was sent "
             "to the assistant")
    assert s.err.getvalue().splitlines() == [error, error] and s.chat.failed
    assert [r["content"] for r in transcript_records(memory_files)] == ["hello", "Hello."]


async def test_slash_search_neither_searches_nor_echoes_private_words(memory_files):
    async with Session(memory_files, EchoProvider(), mode="bm25") as s:
        assert await s.chat.handle("/search ibis <private>IBISSECRET2</private>")
        assert await s.chat.handle("/search coffee <private>acme insurance</private>")
        assert await s.chat.handle("/search <private>IBISSECRET2</private>")
    out, err = s.out.getvalue(), s.err.getvalue()
    assert 'Search Results for: "ibis"' in out and "drop 'ibis'" in out
    assert 'Search Results for: "coffee"' in out and "Prefers dark roast coffee" in out
    assert "IBISSECRET2" not in out + err and "Acme" not in out  # acme was not searched
    assert err.startswith("Error: the query is empty")


async def test_a_refused_connection_keeps_the_session_and_the_transcript(memory_files, closed_port):
    url = f"http://127.0.0.1:{closed_port}/v1"
    async with Session(memory_files, OpenAIProvider(url, "tiny", connect_timeout=2)) as s:
        assert await s.chat.handle("first question")
        assert await s.chat.handle("/note still working")
        assert await s.chat.handle("second question")
    expected = f"Error: cannot reach the model server at {url}: connection refused\n"
    assert s.err.getvalue() == expected * 2
    assert "Noted in today's daily note" in s.out.getvalue()
    records = transcript_records(memory_files)
    assert [r["role"] for r in records] == ["user", "error", "user", "error"]
    assert [r["content"] for r in records if r["role"] == "user"] == ["first question", "second question"]
    assert len(s.chat.store.short_term) == 2  # the user's turns, kept for the next context


async def test_a_hanging_server_times_out_and_the_next_turn_works(memory_files):
    with FakeModelServer([HANG], default=stream(*text_chunks("Back again."))) as server:
        provider = OpenAIProvider(server.url, "tiny", read_timeout=0.3)
        async with Session(memory_files, provider) as s:
            assert await s.chat.handle("are you there?")
            assert await s.chat.handle("and now?")
    assert "read timeout" in s.err.getvalue() and server.url in s.err.getvalue()
    assert s.out.getvalue() == "Back again.\n"
    records = transcript_records(memory_files)
    assert [r["role"] for r in records] == ["user", "error", "user", "assistant"]


async def test_slash_commands(memory_files):
    async with Session(memory_files, EchoProvider()) as s:
        chat = s.chat
        assert await chat.handle("/context")
        assert "No message yet" in s.out.getvalue()
        assert await chat.handle("/remember Sam's birthday is June 2")
        assert await chat.handle("/note Bought a gift for Sam")
        assert await chat.handle("/search sam")
        assert await chat.handle("sam birthday")
        assert await chat.handle("/context")
        assert await chat.handle("/help")
        assert await chat.handle("/remember")
        assert await chat.handle("/frobnicate")
        assert await chat.handle("   ")
        assert not await chat.handle("/exit")
    out = s.out.getvalue()
    assert "Remembered in long-term memory: memory/MEMORY.md:6" in out
    assert f"Noted in today's daily note: memory/{today()}.md:" in out
    assert 'Search Results for: "sam"' in out and "Bought a gift for Sam" in out
    assert "# Relevant memories (cite as [path:line])" in out  # /context after a turn
    assert "tokens, estimated:" in out
    assert "/remember TEXT" in out  # /help
    assert s.err.getvalue().splitlines() == [
        "Error: /remember needs text: /remember TEXT",
        "Error: there is no command /frobnicate: /help lists them"]
    assert "Sam's birthday is June 2" in (memory_files / "memory" / "MEMORY.md").read_text()
    # commands are not messages: only the one question is in the transcript
    assert [r["role"] for r in transcript_records(memory_files)] == ["user", "assistant"]


async def test_a_model_that_keeps_calling_tools_is_stopped(memory_files):
    looping = stream(*tool_call_chunks("x", "search_memory", {"query": "coffee"}))
    with FakeModelServer(default=looping) as server:
        async with Session(memory_files, OpenAIProvider(server.url, "tiny")) as s:
            assert await s.chat.handle("coffee?")
    assert len(server.requests) == MAX_TOOL_ROUNDS + 1
    assert "still calling tools" in s.err.getvalue()


async def test_a_bad_tool_call_is_answered_to_the_model_not_raised(memory_files):
    script = [stream(*tool_call_chunks("b", "write_memory", {"content": "  ", "kind": "daily"})),
              stream(*text_chunks("Sorry."))]
    with FakeModelServer(script) as server:
        async with Session(memory_files, OpenAIProvider(server.url, "tiny")) as s:
            await s.chat.handle("remember nothing")
    assert server.requests[1]["messages"][-1]["content"].startswith("error: the memory text is empty")
    assert "[write_memory failed: the memory text is empty" in s.out.getvalue()


def test_console_reads_lines_until_exit_and_says_goodbye(memory_files):
    stdin = io.StringIO("coffee?\n/exit\nnever read\n")
    stdout, stderr = io.StringIO(), io.StringIO()

    async def open_session():
        return ChatSession.open(memory_files, EchoProvider(), out=stdout, err=stderr,
                                format_search=lambda found: "")

    assert run_console(open_session, stdin=stdin, stdout=stdout, stderr=stderr,
                       interactive=False) == 0
    assert "Prefers dark roast coffee" in stdout.getvalue()
    assert stderr.getvalue().startswith("Bye. The conversation is in ")
    assert [r["content"] for r in transcript_records(memory_files)][0] == "coffee?"


def test_console_ends_at_end_of_input(memory_files):
    stdout, stderr = io.StringIO(), io.StringIO()

    async def open_session():
        return ChatSession.open(memory_files, EchoProvider(), out=stdout, err=stderr,
                                format_search=lambda found: "")

    assert run_console(open_session, stdin=io.StringIO(""), stdout=stdout, stderr=stderr,
                       interactive=False) == 0
    assert stderr.getvalue() == "Bye.\n"  # nothing said, so no transcript was created
    assert not (memory_files / "sessions").exists()


async def test_a_full_disk_while_chatting_leaves_whole_transcript_lines(memory_files, monkeypatch):
    """The disk fills up in the middle of a transcript line: the part written is cut back
    off, the user sees one error line, and the session goes on once there is room again."""
    import errno
    import os

    from miniclaw.fs import files

    def transcript_fd(fd: int) -> bool:
        return os.readlink(f"/proc/self/fd/{fd}").endswith(".jsonl")

    class FullDisk:  # stands in for `os` where whole writes are made (files.write_whole)
        full = False

        def write(self, fd, data):
            if self.full and transcript_fd(fd):
                os.write(fd, bytes(data[:9]))  # some bytes made it, then the disk was full
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return os.write(fd, data)

        def __getattr__(self, name):
            return getattr(os, name)

    disk = FullDisk()
    monkeypatch.setattr(files, "os", disk)
    async with Session(memory_files, EchoProvider()) as s:
        assert await s.chat.handle("when does my insurance renew?")
        disk.full = True
        assert await s.chat.handle("and my coffee?")  # the session goes on
        assert "Error: cannot write the transcript" in s.err.getvalue()
        assert "No space left on device" in s.err.getvalue()
        disk.full = False
        assert await s.chat.handle("coffee again")
    records = transcript_records(memory_files)  # every line is whole JSON
    assert [r["role"] for r in records] == ["user", "assistant", "user", "assistant"]
    assert [r["content"] for r in records[::2]] == ["when does my insurance renew?", "coffee again"]


def many_writes(count: int, kind: str = "long_term", first: int = 0) -> tuple:
    """One answer asking for `count` write_memory calls at once (facts numbered from
    `first`: the same fact again would not be written twice)."""
    chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": [{
        "index": i, "id": f"w{i}", "type": "function", "function": {
            "name": "write_memory",
            "arguments": json.dumps({"content": f"Fact number {first + i}", "kind": kind})}}]}}]}
        for i in range(count)]
    return stream(*chunks)


async def test_a_model_writes_at_most_the_cap_in_one_turn(memory_files):
    from miniclaw.chat.tools import MAX_WRITES_PER_TURN

    script = [many_writes(MAX_WRITES_PER_TURN + 2), stream(*text_chunks("Done.")),
              many_writes(1, first=100), stream(*text_chunks("Done."))]
    with FakeModelServer(script) as server:
        async with Session(memory_files, OpenAIProvider(server.url, "tiny")) as s:
            await s.chat.handle("remember a lot")
            await s.chat.handle("and one more")  # a new turn: writing works again
    memory = (memory_files / "memory/MEMORY.md").read_text()
    assert memory.count("Fact number") == MAX_WRITES_PER_TURN + 1
    results = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert [r.startswith("saved at") for r in results] == [True] * MAX_WRITES_PER_TURN + [False] * 2
    assert results[-1].startswith(f"error: already {MAX_WRITES_PER_TURN} memories written in this turn")
    assert server.requests[3]["messages"][-1]["content"].startswith("saved at")


async def test_a_session_writes_at_most_the_session_cap(store):
    from miniclaw.chat.tools import WriteBudget, run_tool

    writes = WriteBudget(per_turn=10, per_session=3)
    outcomes = []
    for turn in range(2):
        writes.new_turn()
        for i in range(2):
            args = json.dumps({"content": f"Turn {turn} fact {i}", "kind": "daily"})
            outcomes.append(await run_tool(store, "write_memory", args, writes))
    assert [o.result.startswith("saved at") for o in outcomes] == [True, True, True, False]
    assert outcomes[-1].result.startswith("error: this session already wrote 3 memories")
    assert outcomes[-1].shown.startswith("[write_memory failed:")


async def test_an_oversized_write_is_refused_and_nothing_written(store):
    from miniclaw.chat.tools import MAX_WRITE_CHARS, run_tool

    args = json.dumps({"content": "x" * (MAX_WRITE_CHARS + 1), "kind": "long_term"})
    outcome = await run_tool(store, "write_memory", args)
    assert outcome.result.startswith(f"error: content is {MAX_WRITE_CHARS + 1} characters long")
    assert not store.long_term_path.exists()


async def test_any_miniclaw_error_of_a_tool_reaches_the_model(workspace, tmp_path, monkeypatch):
    from miniclaw.chat.tools import run_tool
    from miniclaw.memory import MemoryStore

    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.setenv("MINICLAW_INDEX", str(tmp_path / "a-file" / "index.sqlite3"))
    store = MemoryStore(workspace)
    try:
        outcome = await run_tool(store, "search_memory", json.dumps({"query": "coffee"}))
    finally:
        store.close()
    assert outcome.result.startswith("error: ") and outcome.shown.startswith("[search_memory failed: ")


async def test_remember_and_note_say_a_known_fact_is_known_and_force_writes_it(memory_files):
    async with Session(memory_files, EchoProvider()) as s:
        assert await s.chat.handle("/remember The boat is moored at pier 4")
        assert await s.chat.handle("/remember the boat is moored at pier 4!")
        assert await s.chat.handle("/note The boat is moored at pier 4")
        assert await s.chat.handle("/remember --force the boat is moored at pier 4")
    first, again, noted, forced = s.out.getvalue().splitlines()
    cited = first.removeprefix("Remembered in long-term memory: ").partition("#")[0]
    assert again == f"Already remembered: {cited} (/remember --force TEXT adds it again)"
    assert noted == f"Already remembered: {cited} (/note --force TEXT adds it again)"
    assert forced.startswith("Remembered in long-term memory:")
    assert (memory_files / "memory/MEMORY.md").read_text().lower().count("pier 4") == 2


async def test_the_models_add_memory_of_a_known_fact_is_told_where_it_is(memory_files):
    from miniclaw.chat.tools import run_tool

    async with Session(memory_files, EchoProvider()) as s:
        await s.chat.handle("/remember The boat is moored at pier 4")
        outcome = await run_tool(s.chat.store, "add_memory",
                                 json.dumps({"content": "the boat is moored at pier 4",
                                             "kind": "long_term"}))
    assert outcome.result.startswith("already remembered at memory/MEMORY.md:")
    assert "not saved again" in outcome.result
