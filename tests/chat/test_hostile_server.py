"""The `openai` provider against a broken or hostile server on 127.0.0.1: malformed JSON of
every kind, endless lines, bodies and answers, keep-alive comments forever. Each ends as one
`ProviderError` naming the server, in bounded time and memory."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniclaw.chat import reply
from miniclaw.chat.openai import OpenAIProvider
from miniclaw.chat.providers import ToolCall
from miniclaw.errors import ProviderError
from tests.chat.server import FakeModelServer, forever, raw, stream, text_chunks
from tests.chat.test_openai import collect


def choice(delta) -> dict:
    return {"choices": [{"index": 0, "delta": delta}]}


MALFORMED_CHUNKS = {
    "choices not a list": {"choices": "nope"},
    "a choice not an object": {"choices": ["nope"]},
    "delta a string": choice("hi"),
    "content a number": choice({"content": 42}),
    "content a list": choice({"content": ["a"]}),
    "tool_calls an object": choice({"tool_calls": {"index": 0}}),
    "a tool call a string": choice({"tool_calls": ["call"]}),
    "tool call index a string": choice({"tool_calls": [{"index": "0"}]}),
    "function a string": choice({"tool_calls": [{"index": 0, "function": "write_memory"}]}),
    "name a number": choice({"tool_calls": [{"index": 0, "function": {"name": 7}}]}),
    "id a list": choice({"tool_calls": [{"index": 0, "id": [], "function": {}}]}),
    "arguments a number": choice({"tool_calls": [{"index": 0, "function": {"arguments": 1}}]}),
    "a chunk that is a list": [1, 2],
    "a chunk that is a string": "text",
}


@pytest.mark.parametrize("chunk", MALFORMED_CHUNKS.values(), ids=MALFORMED_CHUNKS.keys())
async def test_a_malformed_chunk_is_one_provider_error(chunk):
    with FakeModelServer([stream(chunk)]) as server:
        with pytest.raises(ProviderError) as caught:
            await collect(OpenAIProvider(server.url, "tiny", read_timeout=5))
    assert str(caught.value).startswith(f"the model server at {server.url} sent ")


@pytest.mark.parametrize("body", [
    {"choices": {"message": {}}}, {"choices": [3]}, {"choices": [{"message": "hi"}]},
    {"choices": [{"message": {"content": {"text": "hi"}}}]},
    {"choices": [{"message": {"tool_calls": "x"}}]}, [{"choices": []}],
])
async def test_a_malformed_whole_answer_is_one_provider_error(body):
    with FakeModelServer([("reply", 200, body)]) as server:
        with pytest.raises(ProviderError, match="sent "):
            await collect(OpenAIProvider(server.url, "tiny", read_timeout=5))


async def test_arguments_sent_as_an_object_are_taken_as_their_json_text():
    chunk = choice({"tool_calls": [{"index": 0, "id": "c1", "function": {
        "name": "write_memory", "arguments": {"content": "Likes tea", "kind": "daily"}}}]})
    with FakeModelServer([stream(chunk)]) as server:
        events = await collect(OpenAIProvider(server.url, "tiny"))
    assert events == [ToolCall("c1", "write_memory", '{"content": "Likes tea", "kind": "daily"}')]


async def test_lone_surrogates_in_text_become_replacement_characters():
    with FakeModelServer([stream(*text_chunks("a\ud83d", "\ude00b"))]) as server:
        events = await collect(OpenAIProvider(server.url, "tiny"))
    assert events == ["a\ufffd", "\ufffdb"]
    "".join(events).encode("utf-8")  # printable and storable


async def test_an_endless_line_is_cut_off():
    script = [raw(forever(b"x" * 65536, first=b"data: "))]
    with FakeModelServer(script) as server:
        with pytest.raises(ProviderError, match=f"sent a line longer than {reply.MAX_LINE_BYTES} bytes"):
            await collect(OpenAIProvider(server.url, "tiny", read_timeout=5))


async def test_an_endless_json_body_is_cut_off():
    script = [raw(forever(b"x" * 65536, first=b'{"choices": "'), "application/json")]
    with FakeModelServer(script) as server:
        with pytest.raises(ProviderError, match=f"sent a body larger than {reply.MAX_BODY_BYTES} bytes"):
            await collect(OpenAIProvider(server.url, "tiny", read_timeout=5))


async def test_an_endless_error_body_still_gives_the_status():
    script = [raw(forever(b"x" * 65536), "text/plain")]
    with FakeModelServer(script) as server:
        original = server._answer

        def answer(handler, step):  # an HTTP 500 whose body never ends
            handler.send_response = lambda code, message=None: type(handler).send_response(
                handler, 500, message)
            original(handler, step)

        server._answer = answer
        with pytest.raises(ProviderError, match="answered HTTP 500"):
            await collect(OpenAIProvider(server.url, "tiny", read_timeout=5))


async def test_an_endless_answer_is_cut_off():
    piece = json.dumps(choice({"content": "y" * 65536}))
    script = [raw(forever(f"data: {piece}\n\n".encode()))]
    with FakeModelServer(script) as server:
        with pytest.raises(ProviderError, match=f"an answer longer than {reply.MAX_ANSWER_CHARS}"):
            await collect(OpenAIProvider(server.url, "tiny", read_timeout=5))


async def test_endless_tool_calls_are_cut_off():
    chunks = [choice({"tool_calls": [{"index": i, "function": {"name": "search_memory"}}]})
              for i in range(reply.MAX_TOOL_CALLS + 1)]
    with FakeModelServer([stream(*chunks)]) as server:
        with pytest.raises(ProviderError, match=f"more than {reply.MAX_TOOL_CALLS} tool calls"):
            await collect(OpenAIProvider(server.url, "tiny", read_timeout=5))


async def test_keep_alive_comments_forever_count_as_silence():
    script = [raw(forever(b": keep-alive\n\n", every=0.02))]
    with FakeModelServer(script) as server:
        with pytest.raises(ProviderError, match=r"sent nothing for 0.3 s \(read timeout\)"):
            await collect(OpenAIProvider(server.url, "tiny", read_timeout=0.3))


async def test_a_lone_surrogate_in_the_request_is_sent_escaped():
    from miniclaw.chat.providers import ChatRequest
    from miniclaw.context import Context

    request = ChatRequest([{"role": "user", "content": "caf\udce9"}], [], Context("x", 4000, ()))
    with FakeModelServer() as server:
        assert await collect(OpenAIProvider(server.url, "tiny"), request) == ["OK."]
    assert server.requests[0]["messages"][0]["content"] == "caf\udce9"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["choices", "delta", "content", "tool_calls", "index", "id",
                         "function", "name", "arguments", "message"]), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_any_json_chunk_gives_text_or_a_bad_reply(value):
    """The parser's contract, over any JSON: pieces of str, tool calls of str, or BadReply."""
    answer = reply.Answer()
    try:
        chunk = reply.parse_json(json.dumps(value))
        pieces = list(answer.chunk(chunk)) + list(reply.Answer().whole(chunk))
        calls = answer.tool_calls()
    except reply.BadReply:
        return
    assert all(isinstance(p, str) for p in pieces)
    assert all(isinstance(f, str) for call in calls for f in call)


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
async def test_every_line_ending_of_server_sent_events_is_read(end):
    def write(wfile, stop):
        for piece in ("Hel", "lo"):
            wfile.write(b"data: " + json.dumps(choice({"content": piece})).encode() + end + end)
            wfile.flush()
        wfile.write(b"data: [DONE]" + end + end)

    with FakeModelServer([raw(write)]) as server:
        assert await collect(OpenAIProvider(server.url, "tiny")) == ["Hel", "lo"]


async def test_lines_are_cut_at_the_cap_whatever_the_chunks():
    async def chunks():
        for piece in (b"ab", b"c\r", b"\nde", b"f" * 10):
            yield piece

    got = []
    with pytest.raises(reply.BadReply, match="a line longer than 8 bytes"):
        async for line in reply.lines(chunks(), max_bytes=8):
            got.append(line)
    assert got == ["abc", ""]


async def test_a_password_in_the_url_is_never_shown(closed_port):
    url = f"http://ana:hunter2@127.0.0.1:{closed_port}/v1"
    provider = OpenAIProvider(url, "tiny", connect_timeout=2)
    assert "hunter2" not in provider.describe()
    with pytest.raises(ProviderError) as caught:
        await collect(provider)
    assert str(caught.value) == (f"cannot reach the model server at http://127.0.0.1:{closed_port}/v1: "
                                 "connection refused")
