"""Every surface that lists memory sources lists the workspace's configured ones (issue 12:
no `daily_note` special case outside its own source): the memory tools' schemas, the
chat's tools and the MCP resources."""

from __future__ import annotations

import pytest

from miniclaw.errors import UsageError
from miniclaw.memory_tools import MemoryTools
from tests.sources.test_plugin_sources import _notes, _store, configure_text_notes


def _search_sources(spec) -> dict:
    return spec.input_schema["properties"]["sources"]


async def test_the_search_tool_offers_and_accepts_the_workspaces_sources(workspace, tmp_path):
    root = _notes(tmp_path)
    async with _store(workspace, root) as store:
        tools = MemoryTools(store)
        [search] = [spec for spec in tools.specs() if spec.name == "search_memory"]
        rule = _search_sources(search)
        assert rule["items"]["enum"] == ["long_term", "daily_note", "transcripts", "text_notes"]
        assert "text_notes (Text Note)" in rule["description"]
        found = await tools.call("search_memory", {"query": "lantern",
                                                   "sources": ["text_notes"]})
        assert {(r["source"], r["path"]) for r in found["results"]} == {
            ("text_notes", f"{root}/a.txt"), ("text_notes", f"{root}/trips/b.txt")}
        with pytest.raises(UsageError, match="one of long_term, daily_note, transcripts, text_notes"):
            await tools.call("search_memory", {"query": "lantern", "sources": ["notes"]})


async def test_a_workspace_without_daily_notes_does_not_offer_them(workspace, tmp_path):
    from miniclaw.memory import MemoryStore
    from miniclaw.sources.base import LongTermSource

    async with MemoryStore(workspace, sources=(LongTermSource(),)) as store:
        [search] = [s for s in MemoryTools(store).specs() if s.name == "search_memory"]
        assert _search_sources(search)["items"]["enum"] == ["long_term"]


async def test_the_chat_tells_its_model_the_workspaces_sources(workspace, tmp_path):
    from miniclaw.chat.tools import offered_tools

    async with _store(workspace, _notes(tmp_path)) as store:
        for confirmed, names in ((False, ["add_memory", "search_memory"]),
                                 (True, ["add_memory", "search_memory", "forget_memory"])):
            tools = offered_tools(store, confirmed=confirmed)
            assert [t["function"]["name"] for t in tools] == names
            search = tools[1]["function"]["parameters"]["properties"]["sources"]
            assert search["items"]["enum"] == ["long_term", "daily_note", "transcripts", "text_notes"]


def test_the_default_search_spec_is_the_built_in_sources_one():
    """The MCP tests compare a default workspace's tools with `SPECS`: they must agree."""
    from miniclaw.sources.base import SOURCES
    from miniclaw.memory_tools import SEARCH, search_spec

    assert search_spec(SOURCES) == SEARCH


async def test_the_mcp_resources_are_the_files_of_the_configured_sources(workspace, tmp_path,
                                                                         monkeypatch):
    """Through a real `miniclaw mcp`: config.json adds a source outside the workspace; its
    files are listed and read as entries (private parts gone), and the built-in ones keep
    their URIs."""
    from pathlib import Path

    from mcp.shared.exceptions import MCPError

    from tests.mcp.conftest import connect
    from tests.sources.test_plugin_sources import SECRET

    root = _notes(tmp_path)
    (root / "nuit à Paris #2.txt").write_text("Lantern walk by the Seine.\n", encoding="utf-8")
    (workspace / "memory" / "MEMORY.md").write_text("# Memory\n\n## 2026-02-10\n- a lantern\n")
    (workspace / "memory" / "2026-02-12.md").write_text(
        "# Daily Note - 2026-02-12\n\n## 09:00:00 UTC\n\nlantern oil bought\n")
    home = configure_text_notes(tmp_path / "mchome", workspace, root)
    monkeypatch.setenv("MINICLAW_HOME", str(home))
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[2]))
    async with connect(workspace) as session:
        listed = (await session.list_resources()).resources
        texts = {str(r.uri): (await session.read_resource(r.uri)).contents[0].text
                 for r in listed}
        try:
            await session.read_resource("miniclaw://memory/2026-02-13.md")  # no such note
            refused = ""
        except MCPError as exc:
            refused = exc.message
    assert [str(r.uri) for r in listed] == [
        "miniclaw://memory/MEMORY.md", "miniclaw://memory/2026-02-12.md",
        f"miniclaw://memory/{root}/a.txt",
        f"miniclaw://memory/{root}/nuit%20%C3%A0%20Paris%20%232.txt",
        f"miniclaw://memory/{root}/trips/b.txt"]
    assert "- Lantern walk by the Seine." in texts[str(listed[3].uri)]
    assert [r.description for r in listed][1:3] == ["Daily Note - 2026-02-12",
                                                    f"Text Note ({root}/a.txt)"]
    b = texts[f"miniclaw://memory/{root}/trips/b.txt"]
    assert b.startswith(f"# Text Note ({root}/trips/b.txt)\n")
    assert f"- Packed the lantern oil.  ({root}/trips/b.txt:1)" in b
    assert SECRET not in "".join(texts.values())
    assert refused.startswith("no memory file at")


async def test_sources_the_server_cannot_use_are_an_error_it_survives(workspace, tmp_path,
                                                                      monkeypatch):
    """A source root config.json does not allow: listing resources and searching say why,
    and the server goes on answering."""
    import json

    from mcp.shared.exceptions import MCPError

    from tests.mcp.conftest import connect, refused

    (workspace / "memory" / "MEMORY.md").write_text("# Memory\n\n## 2026-02-10\n- a lantern\n")
    home = tmp_path / "mchome"
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"workspaces": {str(workspace): {
        "sources": ["long_term", {"class": "miniclaw.sources.base:DailyNoteSource",
                                  "root": str(tmp_path / "elsewhere")}]}}}), encoding="utf-8")
    monkeypatch.setenv("MINICLAW_HOME", str(home))
    async with connect(workspace) as session:
        with pytest.raises(MCPError, match="outside the workspace"):
            await session.list_resources()
        message = await refused(session, "search_memory", query="lantern")
        tools = (await session.list_tools()).tools
        status = await refused(session, "memory_status")
    assert "outside the workspace" in message and "outside the workspace" in status
    assert len(tools) == 5  # listed all the same, with the built-in sources
