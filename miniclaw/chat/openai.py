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
import re
import socket
import time
from collections.abc import AsyncIterator

import httpx

from miniclaw.chat import reply
from miniclaw.chat.providers import ChatRequest, ToolCall
from miniclaw.errors import ProviderError
from miniclaw.text import utf8

MAX_DETAIL_CHARS = 300
MAX_ERROR_BODY_BYTES = 64 << 10  # of an error body only the message is shown


class OpenAIProvider:
    name = "openai"
    recalls = False

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 connect_timeout: float = 5.0, read_timeout: float = 120.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        # What people see: a `user:password@` in the URL is a secret, and errors end up in
        # the transcript too.
        self.shown_url = re.sub(r"(?<=//)[^/@]*@", "", self.base_url, count=1)
        self.model = model
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        self._tools_accepted = True
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(read_timeout, connect=connect_timeout), headers=headers,
            transport=transport)

    @property
    def where(self) -> str:
        return f"the model server at {self.shown_url}"

    def describe(self) -> str:
        return f"openai: {self.model} at {self.shown_url}"

    async def aclose(self) -> None:
        await self._client.aclose()

    async def stream(self, request: ChatRequest) -> AsyncIterator[str | ToolCall]:
        body = {"model": self.model, "messages": request.messages, "stream": True}
        offer_tools = bool(request.tools) and self._tools_accepted
        if offer_tools:
            body["tools"] = request.tools
        try:
            while True:
                # ASCII JSON: a lone surrogate in a memory file or a setting is sent escaped
                # instead of failing to encode.
                async with self._client.stream(
                        "POST", f"{self.base_url}/chat/completions",
                        content=json.dumps(body).encode("ascii"),
                        headers={"Content-Type": "application/json"}) as response:
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
        except httpx.InvalidURL as exc:  # not an HTTPError; the settings check most of these
            raise ProviderError(f"the model server URL {self.shown_url} is not valid: {exc}") from exc
        except reply.BadReply as exc:
            raise ProviderError(f"{self.where} sent {exc}; is it an OpenAI-compatible "
                                "server?") from None

    # -- reading the answer --------------------------------------------------------------

    async def _events(self, response: httpx.Response) -> AsyncIterator[str | ToolCall]:
        """Pieces of text as the server sends them, then the tool calls, joined.

        Only `data:` lines count as the server speaking: a server that sends nothing but
        keep-alive comments for `read_timeout` seconds is as silent as one sending nothing.
        """
        answer = reply.Answer()
        last_data = time.monotonic()
        async for line in reply.lines(response.aiter_bytes()):
            if not line.startswith("data:"):  # blank separators, `: keep-alive`, `event:`
                if time.monotonic() - last_data > self.read_timeout:
                    raise httpx.ReadTimeout("only keep-alive comments")
                continue
            last_data = time.monotonic()
            data = line[5:].strip()
            if data == "[DONE]":
                break
            for piece in answer.chunk(self._json(data)):
                yield piece
        for call in answer.tool_calls():
            yield call

    async def _whole(self, response: httpx.Response) -> AsyncIterator[str | ToolCall]:
        """A server that answered with one JSON object instead of a stream."""
        answer = reply.Answer()
        for piece in answer.whole(self._json(await reply.body(response.aiter_bytes()))):
            yield piece
        for call in answer.tool_calls():
            yield call

    def _json(self, data: str) -> dict:
        chunk = reply.parse_json(data)
        if chunk.get("error"):
            raise ProviderError(f"{self.where} reported an error: {_detail(chunk)}")
        return chunk

    # -- errors --------------------------------------------------------------------------

    async def _status_error(self, response: httpx.Response) -> ProviderError:
        try:
            raw = await reply.body(response.aiter_bytes(), MAX_ERROR_BODY_BYTES)
        except reply.BadReply:
            raw = ""
        try:
            detail = _detail(json.loads(raw))
        except (json.JSONDecodeError, RecursionError, AttributeError):
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
    return utf8(" ".join(str(error).split())[:MAX_DETAIL_CHARS])
