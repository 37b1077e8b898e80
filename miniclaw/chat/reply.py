"""Reading an OpenAI-compatible answer defensively: the one place that trusts nothing in it.

A model server is a program we do not control, and some are broken or hostile: any field of
a reply can have the wrong JSON type, text can hold lone surrogates, a line or a body can be
endless. Everything a server sends goes through here: lines are cut at `MAX_LINE_BYTES`, a
whole body at `MAX_BODY_BYTES`, an answer (text and tool-call arguments) at
`MAX_ANSWER_CHARS` and `MAX_TOOL_CALLS`; a value of the wrong type is a `BadReply`, which
the provider turns into one `ProviderError` naming the server. Lone surrogates in text (a
server splitting an emoji's escapes) become U+FFFD, so the text can be printed and saved.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

from miniclaw.chat.providers import ToolCall
from miniclaw.text import utf8

MAX_LINE_BYTES = 1 << 20  # one `data:` line (one chunk); real ones are well under 10 KB
MAX_BODY_BYTES = 8 << 20  # a whole JSON answer, or an error body
MAX_ANSWER_CHARS = 1_000_000  # text plus tool-call arguments of one answer (~250k tokens)
MAX_TOOL_CALLS = 32  # tool calls in one answer

_LINE_END = re.compile(rb"\r\n|\r|\n")


class BadReply(Exception):
    """The server sent something that is not a well-formed answer; the message says what
    it sent ("a line longer than ...")."""



async def lines(chunks: AsyncIterator[bytes], max_bytes: int = MAX_LINE_BYTES) -> AsyncIterator[str]:
    """The lines of a byte stream (ended by `\\n`, `\\r\\n` or `\\r`, as server-sent events
    may be), each at most `max_bytes` long. A `\\r\\n` split between two chunks gives one
    extra empty line, which means nothing in an event stream."""
    buffer = bytearray()
    async for chunk in chunks:
        buffer += chunk
        start = 0
        while found := _LINE_END.search(buffer, start):
            if found.start() - start > max_bytes:
                raise BadReply(f"a line longer than {max_bytes} bytes")
            yield bytes(buffer[start:found.start()]).decode("utf-8", "replace")
            start = found.end()
        del buffer[:start]
        if len(buffer) > max_bytes:
            raise BadReply(f"a line longer than {max_bytes} bytes")
    if buffer:
        yield bytes(buffer).decode("utf-8", "replace")


async def body(chunks: AsyncIterator[bytes], max_bytes: int = MAX_BODY_BYTES) -> str:
    """A whole response body as text, refused past `max_bytes`."""
    data = bytearray()
    async for chunk in chunks:
        data += chunk
        if len(data) > max_bytes:
            raise BadReply(f"a body larger than {max_bytes} bytes")
    return data.decode("utf-8", "replace")


def parse_json(data: str) -> dict:
    """One JSON object (a chunk or a whole answer)."""
    try:
        value = json.loads(data)
    except (json.JSONDecodeError, RecursionError):
        raise BadReply(f"something that is not JSON: {utf8(data[:80])!r}") from None
    if not isinstance(value, dict):
        raise BadReply(f"{utf8(data[:80])!r} where an object was expected")
    return value


def _get(obj: dict, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """obj[key] when it is of `kind`, None when absent or null; anything else is a BadReply."""
    value = obj.get(key)
    if value is None or isinstance(value, kind) and not isinstance(value, bool):
        return value
    names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
    raise BadReply(f"a malformed answer ({where}.{key} is a {type(value).__name__}, "
                   f"not {_article(names)})")


def _article(names: str) -> str:
    return {"str": "a string", "dict": "an object", "list": "a list", "int": "an integer"}.get(
        names, names)


def _objects(value: list | None, where: str) -> Iterator[dict]:
    for item in value or ():
        if not isinstance(item, dict):
            raise BadReply(f"a malformed answer ({where} holds a {type(item).__name__}, "
                           "not an object)")
        yield item


def _arguments(function: dict, where: str) -> str:
    """A tool call's arguments, which the API defines as a JSON text; an object some servers
    send instead is accepted as the text of that object."""
    value = function.get("arguments")
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return _get(function, "arguments", str, where) or ""


class Answer:
    """One answer being read: checks each chunk, joins tool-call fragments, counts sizes."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, str]] = {}
        self._size = 0

    def _count(self, text: str) -> str:
        self._size += len(text)
        if self._size > MAX_ANSWER_CHARS:
            raise BadReply(f"an answer longer than {MAX_ANSWER_CHARS} characters")
        return utf8(text)

    def chunk(self, chunk: dict) -> Iterator[str]:
        """The pieces of text in one streamed chunk; its tool-call fragments are kept."""
        for choice in _objects(_get(chunk, "choices", list, "chunk"), "chunk.choices"):
            delta = _get(choice, "delta", dict, "choice") or {}
            content = _get(delta, "content", str, "delta")
            if content:
                yield self._count(content)
            for part in _objects(_get(delta, "tool_calls", list, "delta"), "delta.tool_calls"):
                self._fragment(part)

    def _fragment(self, part: dict) -> None:
        index = _get(part, "index", int, "tool_call")
        index = len(self._calls) if index is None else index
        if index not in self._calls and len(self._calls) >= MAX_TOOL_CALLS:
            raise BadReply(f"more than {MAX_TOOL_CALLS} tool calls")
        slot = self._calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
        function = _get(part, "function", dict, "tool_call") or {}
        slot["id"] = slot["id"] or self._count(_get(part, "id", str, "tool_call") or "")
        slot["name"] = slot["name"] or self._count(_get(function, "name", str, "function") or "")
        slot["arguments"] += self._count(_arguments(function, "function"))

    def whole(self, answer: dict) -> Iterator[str]:
        """The text of an answer sent as one JSON object; its tool calls are kept."""
        choices = list(_objects(_get(answer, "choices", list, "answer"), "answer.choices"))
        message = _get(choices[0], "message", dict, "choice") or {} if choices else {}
        content = _get(message, "content", str, "message")
        if content:
            yield self._count(content)
        for index, call in enumerate(_objects(_get(message, "tool_calls", list, "message"),
                                              "message.tool_calls")):
            self._fragment({**call, "index": index})

    def tool_calls(self) -> list[ToolCall]:
        """The tool calls asked for, joined, in order."""
        return [ToolCall(slot["id"] or f"call_{index}", slot["name"], slot["arguments"])
                for index, slot in sorted(self._calls.items())]
