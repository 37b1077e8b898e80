"""The `openai` provider against a real HTTP server on 127.0.0.1: streaming, tool calls,
and every way a server can fail, each one `ProviderError` naming the server."""

from __future__ import annotations

import time

import pytest

from miniclaw.chat.openai import OpenAIProvider
from miniclaw.chat.providers import ChatRequest, ToolCall
from miniclaw.chat.tools import TOOLS
from miniclaw.context import Context
from miniclaw.errors import ProviderError
from tests.chat.server import (HANG, PAUSE, FakeModelServer, reply, stream, text_chunks,
                               tool_call_chunks)

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
REQUEST = ChatRequest(MESSAGES, TOOLS, Context("hi", 4000, ()))


async def collect(provider: OpenAIProvider, request: ChatRequest = REQUEST) -> list:
    try:
        return [event async for event in provider.stream(request)]
    finally:
        await provider.aclose()


async def test_streams_the_answer_piece_by_piece_as_it_comes():
    chunks = text_chunks("Hel", "lo", " there")
    with FakeModelServer([stream(chunks[0], PAUSE, *chunks[1:])]) as server:
        provider = OpenAIProvider(server.url, "tiny", read_timeout=5)
        pieces = []
        try:
            async for piece in provider.stream(REQUEST):
                pieces.append(piece)
                server.resume.set()  # the server holds the rest until the first piece is here
        finally:
            await provider.aclose()
    assert pieces == ["Hel", "lo", " there"]
    sent = server.requests[0]
    assert sent["model"] == "tiny" and sent["stream"] is True
    assert sent["messages"] == MESSAGES
    assert [tool["function"]["name"] for tool in sent["tools"]] == ["add_memory", "search_memory"]


async def test_tool_call_fragments_are_joined():
    script = [stream(*tool_call_chunks("call_7", "write_memory",
                                       {"content": "Likes tea", "kind": "long_term"}))]
    with FakeModelServer(script) as server:
        events = await collect(OpenAIProvider(server.url, "tiny"))
    assert events == [ToolCall("call_7", "write_memory", '{"content": "Likes tea", "kind": "long_term"}')]


async def test_api_key_is_sent_as_a_bearer_token():
    seen = {}

    with FakeModelServer() as server:
        original = server._answer

        def answer(handler, step):
            seen["auth"] = handler.headers.get("Authorization")
            original(handler, step)

        server._answer = answer
        await collect(OpenAIProvider(server.url, "tiny", api_key="sk-test"))
    assert seen["auth"] == "Bearer sk-test"


async def test_a_server_that_answers_with_one_json_object_is_accepted():
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Whole answer."}}]}
    with FakeModelServer([reply(200, body)]) as server:
        assert await collect(OpenAIProvider(server.url, "tiny")) == ["Whole answer."]


async def test_a_server_that_rejects_tools_is_asked_again_without_them():
    script = [reply(400, {"error": {"message": "tools are not supported"}}),
              stream(*text_chunks("Plain answer."))]
    with FakeModelServer(script) as server:
        provider = OpenAIProvider(server.url, "tiny")
        assert await collect(provider) == ["Plain answer."]
    assert "tools" in server.requests[0] and "tools" not in server.requests[1]


async def test_connection_refused_names_the_server(closed_port):
    url = f"http://127.0.0.1:{closed_port}/v1"
    with pytest.raises(ProviderError) as caught:
        await collect(OpenAIProvider(url, "tiny", connect_timeout=2))
    assert str(caught.value) == f"cannot reach the model server at {url}: connection refused"


async def test_a_server_that_hangs_hits_the_read_timeout():
    with FakeModelServer([HANG]) as server:
        started = time.monotonic()
        with pytest.raises(ProviderError, match=r"sent nothing for 0.3 s \(read timeout\)") as caught:
            await collect(OpenAIProvider(server.url, "tiny", read_timeout=0.3))
        assert time.monotonic() - started < 5
    assert server.url in str(caught.value)


async def test_a_server_that_stalls_mid_answer_hits_the_read_timeout():
    with FakeModelServer([stream(*text_chunks("partial"), PAUSE)]) as server:
        provider = OpenAIProvider(server.url, "tiny", read_timeout=0.3)
        got = []
        with pytest.raises(ProviderError, match="read timeout"):
            try:
                async for piece in provider.stream(REQUEST):
                    got.append(piece)
            finally:
                await provider.aclose()
    assert got == ["partial"]


@pytest.mark.parametrize("status,body,expected", [
    (500, {"error": {"message": "model crashed"}}, "answered HTTP 500: model crashed"),
    (401, {"error": {"message": "bad key"}}, "answered HTTP 401: bad key (check the API key"),
    (404, "no such route", "answered HTTP 404: no such route (check the URL, which usually ends in /v1"),
])
async def test_http_errors_are_one_clear_line(status, body, expected):
    with FakeModelServer([reply(status, body)]) as server:
        with pytest.raises(ProviderError) as caught:
            await collect(OpenAIProvider(server.url, "tiny"))
    assert str(caught.value).startswith(f"the model server at {server.url} {expected}")


async def test_an_answer_that_is_not_json_is_a_provider_error():
    with FakeModelServer([reply(200, "{not json")]) as server:
        with pytest.raises(ProviderError, match="sent something that is not JSON"):
            await collect(OpenAIProvider(server.url, "tiny"))


async def test_an_error_event_in_the_stream_is_a_provider_error():
    with FakeModelServer([stream({"error": {"message": "out of memory"}})]) as server:
        with pytest.raises(ProviderError, match="reported an error: out of memory"):
            await collect(OpenAIProvider(server.url, "tiny"))
