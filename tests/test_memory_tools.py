"""The shared tool layer: arguments are checked against the schema the model is shown,
whatever a model sends, and the chat offers the same definitions as the MCP server."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miniclaw.errors import UsageError
from miniclaw.memory_tools import SPECS, MemoryTools, WriteBudget, check_arguments

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)
ARGUMENTS = st.one_of(JSON, st.dictionaries(
    st.sampled_from(["query", "limit", "days", "tags", "sources", "content", "kind", "which",
                     "budget", "message", "mode", "since"]), JSON, max_size=4))


@given(name=st.sampled_from(sorted(SPECS)), arguments=ARGUMENTS)
def test_any_arguments_are_checked_or_refused_with_a_usage_error(name, arguments):
    spec = SPECS[name]
    try:
        checked = check_arguments(spec, arguments)
    except UsageError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert set(checked) == set(spec.input_schema["properties"])
    for key, rule in spec.input_schema["properties"].items():
        value = checked[key]
        if key in spec.input_schema["required"]:
            assert value is not None
        if value is not None and "enum" in rule:
            assert value in rule["enum"]
        if isinstance(value, int) and "minimum" in rule:
            assert rule["minimum"] <= value <= rule.get("maximum", value)


@pytest.mark.parametrize("arguments, message", [
    ({"query": True}, "query must be a string, not bool"),
    ({"query": "x", "limit": True}, "limit must be an integer, not bool"),
    ({"query": "x", "limit": 21}, "limit must be between 1 and 20, not 21"),
    ({"query": "x", "sources": ["both"]}, "must be one of long_term, daily_note, transcripts, not 'both'"),
    ({"query": "x", "tags": "work"}, "tags must be an array, not str"),
    ({"query": ""}, "query is empty"),
    ({}, "search_memory needs the argument 'query'"),
    (["coffee"], "the arguments must be a JSON object"),
])
def test_bad_search_arguments_say_what_to_change(arguments, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        check_arguments(SPECS["search_memory"], arguments)


def test_defaults_come_from_the_schema():
    checked = check_arguments(SPECS["search_memory"], {"query": "coffee"})
    assert checked["limit"] == 5 and checked["days"] == 30  # the window of every search (issue 39)
    assert check_arguments(SPECS["add_memory"], {"content": "x"})["kind"] == "daily"


def test_the_chat_offers_the_shared_definitions():
    from miniclaw.chat.tools import TOOLS

    for tool in TOOLS:
        spec = SPECS[tool["function"]["name"]]
        assert tool["function"]["parameters"] is spec.input_schema
        assert tool["function"]["description"] == spec.description


async def test_a_read_only_session_offers_and_runs_no_write(store):
    tools = MemoryTools(store, read_only=True)
    assert "add_memory" not in [spec.name for spec in tools.specs()]
    with pytest.raises(UsageError, match="read-only"):
        await tools.call("add_memory", {"content": "x"})
    assert not store.long_term_path.exists() and not list(store.memory_dir.iterdir())


async def test_the_write_budget_counts_only_writes_made(store):
    tools = MemoryTools(store, writes=WriteBudget(per_turn=2, per_session=5))
    with pytest.raises(UsageError):
        await tools.call("add_memory", {"content": "x" * 5000})
    with pytest.raises(UsageError, match="without closing it"):
        await tools.call("add_memory", {"content": "a <private> never closed"})
    await tools.call("add_memory", {"content": "first"})
    assert tools.writes.left == 1


@pytest.mark.parametrize("arguments, message", [
    ({"category": "c" * 1_000_000}, "category is 1000000 characters long; it may have 64 at most"),
    ({"tags": ["t"] * 100_000}, "tags has 100000 items; it may have 32 at most"),
    ({"tags": ["t" * 1_000_000]}, "each item of tags is 1000000 characters long; it may have 64"),
])
async def test_add_memory_caps_category_and_tags_and_writes_nothing(store, arguments, message):
    """The content was capped (4,000 characters), the category and tags were not: one call
    wrote megabytes."""
    store.require_workspace()
    tools = MemoryTools(store)
    with pytest.raises(UsageError, match=message):
        await tools.call("add_memory", {"content": "x", **arguments})
    assert not store.long_term_path.exists() and not list(store.memory_dir.iterdir())
    assert tools.writes.left == WriteBudget().left


@pytest.mark.parametrize("category, tags, message", [
    ("c" * 65, (), "the category is 65 characters long; the limit is 64"),
    (None, ["t" * 65], "a tag is 65 characters long; the limit is 64"),
    (None, [f"t{n}" for n in range(33)], "33 tags were given; the limit is 32"),
])
async def test_the_store_refuses_what_the_tools_schema_refuses(store, category, tags, message):
    """One validation for every writer (the CLI, the library, the chat, MCP)."""
    with pytest.raises(UsageError, match=message):
        await store.add_long_term("x", category=category, tags=tags)
    with pytest.raises(UsageError, match=message):
        await store.search("x", category=category, tags=tags)
    assert not store.long_term_path.exists()


async def test_add_memory_of_a_known_fact_gives_its_citation_and_costs_no_write(store):
    tools = MemoryTools(store)
    saved = await tools.call("add_memory", {"content": "Sam's birthday is June 2",
                                            "kind": "long_term"})
    left = tools.writes.left
    again = await tools.call("add_memory", {"content": "sam's birthday is June 2.",
                                            "kind": "long_term"})
    daily = await tools.call("add_memory", {"content": "Sam's birthday is June 2"})
    assert saved["saved"] and not again["saved"] and not daily["saved"]
    assert again["already_remembered"] == daily["already_remembered"] == saved["entry"]["citation"]
    assert again["entry"] == saved["entry"]
    assert tools.writes.left == left
    assert store.long_term_path.read_text().count("birthday") == 1
    assert not (store.memory_dir / f"{store.today().isoformat()}.md").exists()
