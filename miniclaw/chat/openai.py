"""The `openai` provider: any OpenAI-compatible `/chat/completions` server, streamed.

Works with Ollama, llama.cpp's server, vLLM, LM Studio and hosted APIs. The answer arrives as
server-sent events (`data: {...}` lines, ended by `data: [DONE]`) and is passed on piece by
piece; tool calls arrive in fragments and are joined before they are handed over. A server
that ignores `"stream": true` and answers with one JSON object is accepted too.

Timeouts: `connect_timeout` to open the connection, `read_timeout` for the longest silence
between two pieces of the answer (not for the whole answer). A server that rejects the
request when tools are offered (HTTP 400 or 422) is asked again without them, once, and not
offered tools again in this session.

Every failure of the server or the network is converted here, where httpx raises it, into one
`ProviderError` whose message names the server: nothing else escapes.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator

import httpx

from miniclaw.chat.providers import ChatRequest, ToolCall
from miniclaw.errors import ProviderError

MAX_DETAIL_CHARS = 300


class OpenAIProvider:
    name = "openai"

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 connect_timeout: float = 5.0, read_timeout: float = 120.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        self._tools_accepted = True
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(read_timeout, connect=connect_timeout), headers=headers,
            transport=transport)

    @property
    def where(self) -> str:
        return f"the model server at {self.base_url}"

    def describe(self) -> str:
        return f"openai: {self.model} at {self.base_url}"

    async def aclose(self) -> None:
        await self._client.aclose()

    async def stream(self, request: ChatRequest) -> AsyncIterator[str | ToolCall]:
        body = {"model": self.model, "messages": request.messages, "stream": True}
        offer_tools = bool(request.tools) and self._tools_accepted
        if offer_tools:
            body["tools"] = request.tools
        try:
            while True:
                async with self._client.stream("POST", f"{self.base_url}/chat/completions",
                                               json=body) as response:
                    if response.status_code in (400, 422) and "tools" in body:
                        self._tools_accepted = False
                        del body["tools"]
                        continue
                    if response.status_code >= 400:
                        raise await self._status_error(response)
                    if "json" in response.headers.get("content-type", ""):
                        events = self._whole(response)
                    else:
                        events = self._events(response)
                    async for event in events:
                        yield event
                    return
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from exc

    # -- reading the answer --------------------------------------------------------------

    async def _events(self, response: httpx.Response) -> AsyncIterator[str | ToolCall]:
        """Pieces of text as the server sends them, then the tool calls, joined."""
        calls: dict[int, dict[str, str]] = {}
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue  # blank separators, `: keep-alive` comments, `event:` lines
            data = line[5:].strip()
            if data == "[DONE]":
                break
            chunk = self._json(data)
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    yield delta["content"]
                for part in delta.get("tool_calls") or ():
                    slot = calls.setdefault(part.get("index", len(calls)),
                                            {"id": "", "name": "", "arguments": ""})
                    function = part.get("function") or {}
                    slot["id"] = slot["id"] or part.get("id") or ""
                    slot["name"] = slot["name"] or function.get("name") or ""
                    slot["arguments"] += function.get("arguments") or ""
        for index, slot in sorted(calls.items()):
            yield ToolCall(slot["id"] or f"call_{index}", slot["name"], slot["arguments"])

    async def _whole(self, response: httpx.Response) -> AsyncIterator[str | ToolCall]:
        """A server that answered with one JSON object instead of a stream."""
        chunk = self._json((await response.aread()).decode("utf-8", "replace"))
        message = ((chunk.get("choices") or [{}])[0]).get("message") or {}
        if message.get("content"):
            yield message["content"]
        for index, call in enumerate(message.get("tool_calls") or ()):
            function = call.get("function") or {}
            yield ToolCall(call.get("id") or f"call_{index}", function.get("name") or "",
                           function.get("arguments") or "")

    def _json(self, data: str) -> dict:
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            raise ProviderError(f"{self.where} sent something that is not JSON: "
                                f"{data[:80]!r}; is it an OpenAI-compatible server?") from None
        if not isinstance(chunk, dict):
            raise ProviderError(f"{self.where} sent {data[:80]!r} where an object was expected")
        if chunk.get("error"):
            raise ProviderError(f"{self.where} reported an error: {_detail(chunk)}")
        return chunk

    # -- errors --------------------------------------------------------------------------

    async def _status_error(self, response: httpx.Response) -> ProviderError:
        raw = (await response.aread()).decode("utf-8", "replace")
        try:
            detail = _detail(json.loads(raw))
        except (json.JSONDecodeError, AttributeError):
            detail = " ".join(raw.split())[:MAX_DETAIL_CHARS]
        message = f"{self.where} answered HTTP {response.status_code}"
        if detail:
            message += f": {detail}"
        if response.status_code in (401, 403):
            message += " (check the API key: MINICLAW_LLM_API_KEY or api_key in config.json)"
        elif response.status_code == 404:
            message += (f" (check the URL, which usually ends in /v1, and that the server "
                        f"has the model {self.model!r})")
        return ProviderError(message)

    def _transport_error(self, exc: httpx.HTTPError) -> ProviderError:
        if isinstance(exc, httpx.ConnectTimeout):
            return ProviderError(f"cannot reach {self.where}: no connection within "
                                 f"{self.connect_timeout:g} s")
        if isinstance(exc, httpx.ConnectError):
            return ProviderError(f"cannot reach {self.where}: {_reason(exc)}")
        if isinstance(exc, httpx.ReadTimeout):
            return ProviderError(
                f"{self.where} sent nothing for {self.read_timeout:g} s (read timeout); if the "
                "model is slow to start, raise read_timeout in config.json or --read-timeout")
        if isinstance(exc, httpx.TimeoutException):
            return ProviderError(f"{self.where} timed out: {exc or type(exc).__name__}")
        if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
            return ProviderError(f"{self.where} broke off the answer: {_reason(exc)}")
        return ProviderError(f"the request to {self.where} failed: {exc or type(exc).__name__}")


def _reason(exc: BaseException) -> str:
    """Why a connection failed, from the OS error at the bottom of httpx's chain."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        if isinstance(seen, socket.gaierror):
            return f"unknown host ({seen.strerror or seen})"
        if isinstance(seen, ConnectionResetError):
            return "connection reset"
        seen = seen.__cause__ or seen.__context__
    return str(exc) or type(exc).__name__


def _detail(payload) -> str:
    """The error message in an OpenAI-style error body ({"error": {"message": ...}})."""
    error = payload.get("error", payload) if isinstance(payload, dict) else payload
    if isinstance(error, dict):
        error = error.get("message") or error.get("detail") or json.dumps(error)
    return " ".join(str(error).split())[:MAX_DETAIL_CHARS]
