"""The chat, the context builder and the memory tools (the MCP server's) search in mode
`auto`, the best available (issue 16), with real files and a real index; the model's
presence is played at its boundary (tests/search/test_auto_mode.py's `model_here`).

What a semantic search says about its vectors still to come (`vectors` warning) is for the
person at the terminal, once a session, never in the prompt the model reads.
"""

from __future__ import annotations

import io

import pytest

from miniclaw.chat.echo import EchoProvider
from miniclaw.chat.loop import ChatSession
from miniclaw.chat.providers import ToolCall
from miniclaw.cli.render import Style, search_text
from miniclaw.context import ContextBuilder
from miniclaw.semantic import model as embedding
from miniclaw.index.derived import DerivedData
from miniclaw.search.hints import SearchWarning
from miniclaw.search.scoring import BM25Scorer, SearchMode, register_mode
from miniclaw.semantic import retriever as semantic
from miniclaw.memory_tools import MemoryTools
from tests.conftest import long_term, write
from tests.search.test_auto_mode import QUERY, model_here, no_model  # noqa: F401 (fixtures)
from tests.search.test_retrievers import FACTS, HashedEmbedding

ONLY_BY_MEANING = "car wash on Sunday"  # no word of QUERY: found by the embedding alone


@pytest.fixture
def facts(workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    return workspace


class Recorder(EchoProvider):
    """The echo provider, keeping every request (the prompt the model would read); with
    `search`, its first answer of a turn asks for search_memory with these arguments."""

    def __init__(self, search: str | None = None) -> None:
        self.requests = []
        self.search = search

    async def stream(self, request):
        self.requests.append(request)
        if self.search and len(request.messages) == 2:
            yield ToolCall("call-1", "search_memory", self.search)
            return
        async for part in super().stream(request):
            yield part


def _session(workspace, provider, **options):
    out, err = io.StringIO(), io.StringIO()
    chat = ChatSession.open(workspace, provider, out=out, err=err,
                            format_search=lambda found: search_text(found, Style(False), {}),
                            **options)
    return chat, out, err


async def test_the_context_builder_uses_the_best_available_mode(store, facts, model_here):
    built = await ContextBuilder(store).build(QUERY, budget_tokens=1000)
    assert built.mode == "hybrid" and built.to_dict()["mode"] == "hybrid"
    assert ONLY_BY_MEANING in [item.content for item in built.items("memories")]
    words = await ContextBuilder(store, mode="bm25").build(QUERY, budget_tokens=1000)
    assert words.mode == "bm25"
    assert ONLY_BY_MEANING not in [item.content for item in words.items("memories")]


async def test_without_the_model_the_context_is_bm25s(store, facts, no_model):
    built = await ContextBuilder(store).build(QUERY, budget_tokens=1000)
    words = await ContextBuilder(store, mode="bm25").build(QUERY, budget_tokens=1000)
    assert built.mode == "bm25" and built.render() == words.render()


async def test_the_chat_loads_the_model_once_and_searches_by_meaning(facts, model_here):
    provider = Recorder(search='{"query": "automobile"}')
    chat, out, err = _session(facts, provider)
    try:
        for message in (QUERY, "automobile again", "/search automobile repair"):
            assert await chat.handle(message)
    finally:
        await chat.aclose()
    assert model_here.built == 1  # one process, one load: not once per turn or search
    # The context, the model's search_memory and /search all ranked by meaning.
    assert ONLY_BY_MEANING in provider.requests[0].messages[0]["content"]
    tool_answer = provider.requests[1].messages[-1]
    assert tool_answer["role"] == "tool" and ONLY_BY_MEANING in tool_answer["content"]
    assert 'Search Results for: "automobile repair"  [auto: hybrid]' in out.getvalue()
    assert err.getvalue() == ""


class Unfinished(HashedEmbedding):
    """A semantic retriever whose vectors are not all computed yet: it says so, as
    scoring/semantic.py's does, and counts its searches."""

    searches = 0

    def prepare(self, index, query):
        type(self).searches += 1
        return (SearchWarning("vectors", embedded=2, total=5),)


@pytest.fixture
def unfinished(model_here, monkeypatch):
    monkeypatch.setattr(Unfinished, "searches", 0)
    register_mode("hybrid", lambda: SearchMode("hybrid", (BM25Scorer(), Unfinished())))
    return Unfinished


async def test_vectors_still_to_come_are_said_to_the_person_not_the_model(facts, unfinished):
    provider = Recorder()
    chat, out, err = _session(facts, provider)
    try:
        assert await chat.handle(QUERY)
        assert await chat.handle("and the fence repair?")
        assert await chat.handle("/context")
        assert await chat.handle("/search repair")
    finally:
        await chat.aclose()
    said = "meaning search used the vectors of 2 of 5 memories so far"
    # Once a session on the terminal (stderr), then in /context's footer and /search.
    assert err.getvalue().count(said) == 2
    assert err.getvalue().startswith(f"({said} (`miniclaw memory index` computes the rest))\n")
    assert f"Warning: {said}" in err.getvalue()
    assert f"\n(memories ranked by hybrid; {said} (`miniclaw memory" in out.getvalue()
    for request in provider.requests:  # never in what the model reads
        prompt = request.messages[0]["content"]
        assert "vectors" not in prompt and "2 of 5" not in prompt
        assert ONLY_BY_MEANING in prompt or "fence" in request.messages[1]["content"]
    # The context builder asks the ranker a few times at most: a first turn embeds a few
    # searches' worth of new memories (EMBED_PER_SEARCH each), never the whole workspace.
    assert unfinished.searches <= 2 * 4 + 1


async def test_the_memory_tools_search_in_auto_unless_told(store, facts, model_here):
    tools = MemoryTools(store)
    found = await tools.call("search_memory", {"query": QUERY})
    assert found["mode"] == "hybrid" and found["auto"] is True and "degraded" not in found
    assert ONLY_BY_MEANING in [hit["content"] for hit in found["results"]]
    named = await tools.call("search_memory", {"query": QUERY, "mode": "bm25"})
    assert named["mode"] == "bm25" and "auto" not in named
    words = await MemoryTools(store, mode="bm25").call("search_memory", {"query": QUERY})
    assert words["mode"] == "bm25" and "auto" not in words
    context = await tools.call("get_context", {"message": QUERY})
    assert context["mode"] == "hybrid"
    assert model_here.built == 1


async def test_the_memory_tools_without_the_model(store, facts, no_model):
    found = await MemoryTools(store).call("search_memory", {"query": QUERY})
    assert found["mode"] == "bm25" and found["auto"] is True and "degraded" not in found
    refused = await MemoryTools(store).call("search_memory", {"query": QUERY, "mode": "hybrid"})
    assert refused["degraded"]["requested"] == "hybrid"  # named and refused: said


@pytest.mark.skipif(not embedding.available()[0], reason="embedding model not installed")
async def test_a_first_turn_in_a_workspace_without_vectors_embeds_only_a_few(store, workspace):
    """The real model: a workspace of 400 memories with no vector yet. The first context
    embeds what a few searches may (EMBED_PER_SEARCH each), ranks with that, and says how
    far along it is to the caller, not in the prompt."""
    facts = [f"Errand {n}: bought {n} lemons for the bakery on Elm street" for n in range(400)]
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", facts)))
    built = await ContextBuilder(store).build("lemons for the bakery", budget_tokens=1000)
    embedded, total = DerivedData(store.index, embedding.NAME).progress()
    assert built.mode == "hybrid" and total == 400
    assert 0 < embedded <= 4 * semantic.EMBED_PER_SEARCH
    assert built.vectors == SearchWarning("vectors", embedded=embedded, total=400)
    assert built.items("memories") and "vectors" not in built.render()
