"""The MCP server's tools and resources, through the SDK's stdio client."""

from __future__ import annotations

import json

from miniclaw.memory_tools import MAX_WRITES_PER_SESSION, SPECS
from tests.mcp.conftest import SECRET, call, connect, refused

TOOL_NAMES = ["search_memory", "add_memory", "read_memory", "get_context", "memory_status"]


async def test_lists_the_tools_with_descriptions_and_both_schemas(memories):
    async with connect(memories) as session:
        tools = (await session.list_tools()).tools
    assert [tool.name for tool in tools] == TOOL_NAMES
    for tool in tools:
        assert len(tool.description) > 80  # enough to use it without reading our docs
        assert tool.input_schema == SPECS[tool.name].input_schema  # the chat's own schema
        assert tool.output_schema["type"] == "object" and tool.output_schema["required"]
    assert [t.annotations.read_only_hint for t in tools] == [True, False, True, True, True]


async def test_search_gives_structured_results_with_citations_and_corrections(memories, today):
    async with connect(memories) as session:
        found = await call(session, "search_memory", query="atlas bugdet", limit=3)
        windowed = await call(session, "search_memory", query="kayak", days=7)
        filtered = await call(session, "search_memory", query="coffee",
                              category="preference", sources=["long_term"])
    assert found["corrections"] == [{"from": "bugdet", "to": "budget"}]
    top = found["results"][0]
    assert top["content"] == "Met Sam about the Atlas budget: 40k approved"
    assert top["citation"] == f"memory/{today}.md:5" and top["date"] == today
    assert windowed["results"] == []  # the kayak note is 40 days old
    assert [hit["citation"] for hit in filtered["results"]] == ["memory/MEMORY.md:4"]


async def test_added_memories_are_found_by_the_next_search(memories, today):
    async with connect(memories) as session:
        added = await call(session, "add_memory", content="Allergic to peanuts",
                           kind="long_term", category="health", tags=["food"])
        daily = await call(session, "add_memory", content="Booked the dentist for Friday")
        found = await call(session, "search_memory", query="peanut allergy")
        found_daily = await call(session, "search_memory", query="dentist")
    entry = added["entry"]
    assert added["saved"] and not added["private"] and added["writes_left"] == 99
    assert daily["writes_left"] == 98
    assert (entry["category"], entry["tags"], entry["source"]) == ("health", ["food"], "long_term")
    assert found["results"][0]["citation"] == entry["citation"]
    assert daily["entry"]["path"] == f"memory/{today}.md"
    assert found_daily["results"][0]["citation"] == daily["entry"]["citation"]
    assert "- Allergic to peanuts" in (memories / "memory/MEMORY.md").read_text()


async def test_read_memory_and_the_files_as_resources(memories, today):
    async with connect(memories) as session:
        long_term = await call(session, "read_memory", which="long_term")
        note = await call(session, "read_memory")  # today's, by default
        recent = await call(session, "read_memory", which="recent", days=60)
        listed = (await session.list_resources()).resources
        text = (await session.read_resource(f"miniclaw://memory/{today}.md")).contents[0].text
    assert [e["content"] for e in long_term["entries"]] == [
        "Prefers dark roast coffee, no sugar", "Bank login hint  kept offline"]
    assert [e["citation"] for e in note["entries"]] == [f"memory/{today}.md:5"]
    assert [e["content"] for e in recent["entries"]] == [
        "Met Sam about the Atlas budget: 40k approved", "Kayak trip to the fjord"]
    assert [r.uri for r in listed][:2] == ["miniclaw://memory/MEMORY.md",
                                           f"miniclaw://memory/{today}.md"]
    assert f"- Met Sam about the Atlas budget: 40k approved  (memory/{today}.md:5" in text


async def test_get_context_is_the_prompt_the_assistant_would_get(memories):
    async with connect(memories) as session:
        context = await call(session, "get_context", message="what did Sam approve?",
                             budget=400)
    assert context["tokens"] <= 400
    memories_section = next(s for s in context["sections"] if s["name"] == "memories")
    assert memories_section["items"][0]["content"] == "Met Sam about the Atlas budget: 40k approved"
    assert "Atlas budget: 40k approved" in context["prompt"]


async def test_bad_arguments_are_tool_errors_and_the_server_goes_on(memories):
    async with connect(memories) as session:
        messages = [
            await refused(session, "search_memory", query=7),
            await refused(session, "search_memory"),
            await refused(session, "search_memory", query="coffee", limit=0),
            await refused(session, "search_memory", query="coffee", path="/etc/passwd"),
            await refused(session, "search_memory", query="coffee", since="someday"),
            await refused(session, "search_memory", query="-coffee"),
            await refused(session, "search_memory", query="coffee", tags=["a b"]),
            await refused(session, "add_memory", content="   "),
            await refused(session, "add_memory", content="x" * 4001),
            await refused(session, "add_memory", content="y" * 300_000),  # a line past 64 KiB
            await refused(session, "add_memory", content="a <private> never closed"),
            await refused(session, "add_memory", content="fine", kind="forever"),
            await refused(session, "read_memory", which="2999-01-01"),
            await refused(session, "get_context", message="hi", budget=10),
            await refused(session, "delete_memory", everything=True),
        ]
        still = await call(session, "search_memory", query="coffee")
    assert messages[0] == "Error: query must be a string, not int"
    assert messages[3].startswith("Error: search_memory has no argument 'path'")
    assert messages[-1].startswith("Error: there is no tool called 'delete_memory'")
    assert all(len(m.splitlines()) == 1 for m in messages)
    assert still["results"][0]["content"] == "Prefers dark roast coffee, no sugar"
    assert "never closed" not in (memories / "memory/MEMORY.md").read_text()


async def test_a_thousand_tags_are_a_tool_error_naming_the_limit(memories):
    """Issue 38: the tags of a `search_memory` call went past SQLite's expression depth and
    came back as an index problem (advice about the cache folder's permissions)."""
    from miniclaw.entries.entry import MAX_TAGS

    async with connect(memories) as session:
        message = await refused(session, "search_memory", query="coffee",
                                tags=[f"t{i}" for i in range(1000)])
        still = await call(session, "search_memory", query="coffee")
    assert f"{MAX_TAGS} at most" in message and "permissions" not in message, message
    assert len(message.splitlines()) == 1 and still["results"]


async def test_read_only_offers_no_write_and_refuses_one(memories):
    before = (memories / "memory/MEMORY.md").read_bytes()
    async with connect(memories, "--read-only") as session:
        names = [tool.name for tool in (await session.list_tools()).tools]
        message = await refused(session, "add_memory", content="Sneaky", kind="long_term")
        status = await call(session, "memory_status")
    assert "add_memory" not in names and len(names) == 4
    assert "read-only" in message
    assert status["read_only"] and status["writes_left"] == 0
    assert (memories / "memory/MEMORY.md").read_bytes() == before


async def test_a_session_writes_at_most_the_session_cap(memories, today):
    async with connect(memories) as session:
        results = [await session.call_tool("add_memory", {"content": f"fact {n}"})
                   for n in range(MAX_WRITES_PER_SESSION + 1)]
    assert [r.is_error for r in results] == [False] * MAX_WRITES_PER_SESSION + [True]
    assert "this session already wrote 100 memories" in results[-1].content[0].text
    note = (memories / f"memory/{today}.md").read_text()
    assert note.count("fact ") == MAX_WRITES_PER_SESSION


async def test_private_text_is_never_returned(memories, today):
    answers = []
    async with connect(memories) as session:
        for query in (SECRET, "zanzibar", "vendor password", "bank login hint", "atlas"):
            answers.append(await call(session, "search_memory", query=query, limit=20))
        answers.append(await call(session, "search_memory", query="zanzibar*"))
        for which in ("long_term", "today", "recent", "2026-01-02"):
            answers.append(await call(session, "read_memory", which=which, days=90))
        answers.append(await call(session, "get_context", message=f"vendor password {SECRET}"))
        added = await call(session, "add_memory", content=f"<private>{SECRET}</private>")
        answers += [added, await call(session, "memory_status")]
        for resource in (await session.list_resources()).resources:
            answers.append((await session.read_resource(resource.uri)).contents[0].text)
    for answer in answers:  # a search echoes its query (and its words in suggestions, hints), a
        # context its message: the caller's own text, not memory
        if isinstance(answer, dict):
            for echo in ("query", "message", "suggestions", "hints"):
                answer.pop(echo, None)
            answer["prompt"] = answer.get("prompt", "").replace(f"vendor password {SECRET}", "")
    everything = json.dumps(answers, ensure_ascii=False)
    assert "zanzibar" not in everything, everything
    assert added["private"] and added["entry"] is None
    assert "Bank login hint  kept offline" in everything  # the visible part is served


async def test_the_private_part_of_a_query_or_message_is_neither_used_nor_returned(memories):
    """What the caller wraps in <private> is not searched (the kayak note would be found),
    not echoed (`query`, `message`, suggestions) and not in the prompt; a query that is all
    private is refused as an empty one is."""
    ssn = "123-45-6789"
    async with connect(memories, "--mode", "bm25") as session:
        found = await call(session, "search_memory", query="atlas <private>kayak fjord</private>")
        unknown = await call(session, "search_memory", query="quokka <private>kayak</private>")
        context = await call(session, "get_context",
                             message=f"sam <private>my ssn {ssn}, the kayak</private>")
        refusal = await refused(session, "search_memory", query="<private>kayak fjord")
    assert found["query"] == "atlas" and context["message"] == "sam"
    assert [hit["content"] for hit in found["results"]] == [
        "Met Sam about the Atlas budget: 40k approved"]
    everything = json.dumps([found, unknown, context, refusal]).lower()
    assert "kayak" not in everything and "fjord" not in everything and ssn not in everything
    assert refusal.startswith("Error: the query is empty")


async def test_a_resource_is_a_memory_file_or_refused(memories, tmp_path):
    from mcp.shared.exceptions import MCPError

    (tmp_path / "outside.md").write_text("# Daily Note\n\n## 10:00:00 UTC\n\nNot a memory\n")
    refusals = []
    async with connect(memories) as session:
        for uri in ("miniclaw://memory/../../outside.md", "file:///etc/passwd",
                    "miniclaw://memory/notes.md", "miniclaw://memory/2026-13-45.md",
                    f"miniclaw://memory/{tmp_path}/outside.md"):
            try:
                await session.read_resource(uri)
            except MCPError as exc:
                refusals.append(exc.message)
        still = await call(session, "memory_status")
    assert len(refusals) == 5 and all(m.startswith("no memory file at") for m in refusals)
    assert still["entries"] == 4  # and the server goes on


async def test_a_file_private_as_a_whole_is_neither_listed_nor_readable(memories, tmp_path,
                                                                        isolated_home):
    """A file's name may be what it hides (a ConKeeper ADR's is its subject): one private as
    a whole, or all of whose text is private, was listed by name and read as "(no entries)"."""
    from mcp.shared.exceptions import MCPError

    root = tmp_path / "app" / ".claude" / "memory"
    (root / "decisions").mkdir(parents=True)
    (root / "decisions" / "ADR-004-fire-bob-after-the-q3-audit.md").write_text(
        "---\nprivate: true\n---\n# ADR-004: Fire Bob after the Q3 audit\n\nDecided.\n")
    (root / "decisions" / "ADR-005-sell-the-company.md").write_text(
        "# ADR-005\n\n<private>\nSell the company to Initech in May.\n</private>\n")
    (root / "decisions" / "ADR-006-use-sqlite.md").write_text(
        "# ADR-006: Use SQLite\n\n## Decision\n\nKeep the index in SQLite.\n")
    (isolated_home / ".miniclaw").mkdir()
    (isolated_home / ".miniclaw/config.json").write_text(json.dumps({"workspaces": {
        str(memories): {"sources": ["long_term", "daily_note",
                                    {"kind": "conkeeper", "root": str(root), "name": "app"}]}}}))
    hidden = ["miniclaw://memory/2026-01-02.md",
              f"miniclaw://memory/{root}/decisions/ADR-004-fire-bob-after-the-q3-audit.md",
              f"miniclaw://memory/{root}/decisions/ADR-005-sell-the-company.md"]
    refusals = []
    async with connect(memories) as session:
        listed = [str(r.uri) for r in (await session.list_resources()).resources]
        shown = (await session.read_resource(next(u for u in listed if "ADR-006" in u)))
        for uri in hidden:
            try:
                await session.read_resource(uri)
            except MCPError as exc:
                refusals.append(exc.message)
    assert len(listed) == 4 and "Keep the index in SQLite" in shown.contents[0].text
    assert not any(word in " ".join(listed) for word in ("2026-01-02", "fire-bob", "sell"))
    assert len(refusals) == 3 and all(m.startswith("no memory file at") for m in refusals)


async def test_a_tool_error_never_returns_private_text(memories):
    async with connect(memories) as session:
        for arguments in ({"tags": [f"<private>{SECRET}</private>"]},
                          {"category": f"<private>{SECRET}"},
                          {"since": f"<private>{SECRET}</private>"}):
            text = await refused(session, "search_memory", query="insurance", **arguments)
            assert SECRET not in text, arguments
        await call(session, "search_memory", query="insurance")  # the server goes on


def test_a_failed_resource_request_never_quotes_private_text():
    """resources/list and resources/read map a library error to INTERNAL_ERROR: like a tool
    error, its message loses any private part it quotes (a path or text a user typed)."""
    from miniclaw.errors import MiniclawError
    from miniclaw.mcp.server import _internal

    error = _internal(MiniclawError(f"cannot read notes/<private>{SECRET}</private>.md"))
    assert SECRET not in error.error.message and "cannot read notes/" in error.error.message


async def test_add_memory_of_a_known_fact_returns_its_citation(memories):
    async with connect(memories) as session:
        added = await call(session, "add_memory", content="Prefers window seats on trains",
                           kind="long_term")
        again = await call(session, "add_memory", content="prefers WINDOW seats on trains.",
                           kind="long_term")
    assert added["saved"] and not again["saved"]
    assert again["already_remembered"] == added["entry"]["citation"]
    assert again["writes_left"] == added["writes_left"]
    assert (memories / "memory/MEMORY.md").read_text().count("window seats") == 1


async def test_add_memory_supersedes_and_search_all_versions(memories):
    async with connect(memories) as session:
        old = await call(session, "add_memory", content="The Atlas demo is on Monday",
                         kind="long_term")
        new = await call(session, "add_memory", content="The Atlas demo moved to Wednesday",
                         kind="long_term", supersedes=old["entry"]["ref"])
        found = await call(session, "search_memory", query="atlas demo", days=3650)
        every = await call(session, "search_memory", query="atlas demo", days=3650,
                           all_versions=True)
        bad = await refused(session, "add_memory", content="The Atlas demo is off",
                            supersedes="memory/MEMORY.md:999")
    assert new["saved"] and new["superseded"]["content"] == "The Atlas demo is on Monday"
    assert "Monday" not in str(found["results"])
    hit = next(r for r in every["results"] if "Monday" in r["content"])
    assert hit["meta"]["superseded_by"] == new["entry"]["ref"]
    assert "cannot supersede memory/MEMORY.md:999" in bad
