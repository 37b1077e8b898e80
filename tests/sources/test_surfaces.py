"""Every surface that lists memory sources lists the workspace's configured ones (issue 12:
no `daily_note` special case outside its own source): the memory tools' schemas, the
chat's tools and the MCP resources."""

from __future__ import annotations

import pytest

from miniclaw.errors import UsageError
from miniclaw.memory_tools import MemoryTools
from tests.sources.test_plugin_sources import _notes, _store


def _search_sources(spec) -> dict:
    return spec.input_schema["properties"]["sources"]


async def test_the_search_tool_offers_and_accepts_the_workspaces_sources(workspace, tmp_path):
    root = _notes(tmp_path)
    async with _store(workspace, root) as store:
        tools = MemoryTools(store)
        [search] = [spec for spec in tools.specs() if spec.name == "search_memory"]
        rule = _search_sources(search)
        assert rule["items"]["enum"] == ["long_term", "daily_note", "text_notes"]
        assert "text_notes (Text Note)" in rule["description"]
        found = await tools.call("search_memory", {"query": "lantern",
                                                   "sources": ["text_notes"]})
        assert {(r["source"], r["path"]) for r in found["results"]} == {
            ("text_notes", f"{root}/a.txt"), ("text_notes", f"{root}/trips/b.txt")}
        with pytest.raises(UsageError, match="one of long_term, daily_note, text_notes"):
            await tools.call("search_memory", {"query": "lantern", "sources": ["notes"]})


async def test_a_workspace_without_daily_notes_does_not_offer_them(workspace, tmp_path):
    from miniclaw.memory import MemoryStore
    from miniclaw.memory.sources import LongTermSource

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
            assert search["items"]["enum"] == ["long_term", "daily_note", "text_notes"]


def test_the_default_search_spec_is_the_built_in_sources_one():
    """The MCP tests compare a default workspace's tools with `SPECS`: they must agree."""
    from miniclaw.memory.sources import SOURCES
    from miniclaw.memory_tools import SEARCH, search_spec

    assert search_spec(SOURCES) == SEARCH
