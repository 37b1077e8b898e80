"""The wire under `miniclaw mcp`: JSON-RPC messages, one per line, on stdin and stdout.

Why not the SDK's stdio transport alone: it drops a line it cannot read as a message without a
word, so a client whose request was malformed waits for an answer for ever, and when the input
ends it stops at once, cancelling the requests still being answered, so a script that pipes
its requests in and closes stdin loses the last answers. Here:

- every line is checked with the SDK's own validator before the SDK reads it; a line that is
  not a message is answered as JSON-RPC 2.0 says: -32700 (not JSON) or -32600 (not a valid
  request: a batch, `"jsonrpc"` not "2.0", no method, `params` not an object, an `id` that is
  neither a string nor an integer, which MCP requires), with the request's id when it has a
  usable one, else null. A malformed response from the client is never answered, and a blank
  line is no message;
- the end of the input waits for the answers to the requests already read (those not
  cancelled by the client), up to `DRAIN_SECONDS`.

Like the SDK, it keeps the wire on descriptors of its own and points fd 0 at /dev/null and fd
1 at stderr, so stray output never reaches the client. Pipes, sockets and terminals are read
and written by the event loop; anything else (a file) through worker threads, as the SDK does.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat

import anyio
from mcp import types

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
DRAIN_SECONDS = 30.0  # at the end of input, how long answers still due are waited for
_MAX_LINE = 256 * 1024 * 1024  # as good as no limit (the SDK has none); past it, not read


async def open_wire() -> tuple[Lines, LineWriter]:
    """The client's lines (checked) and the writer of the answers, on descriptors of our own."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    if all(_by_loop(fd) for fd in (wire_in, wire_out)):
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_MAX_LINE)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                     os.fdopen(wire_in, "rb", buffering=0))
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0))
        writer = LineWriter(asyncio.StreamWriter(transport, protocol, None, loop))
        return Lines(_PipeLines(reader), writer), writer
    writer = LineWriter(anyio.wrap_file(os.fdopen(wire_out, "wb", buffering=0)))
    return Lines(anyio.wrap_file(os.fdopen(wire_in, "rb")), writer), writer


def _by_loop(fd: int) -> bool:
    """Whether the event loop can wait on it: a pipe, a socket or a terminal. A terminal read
    by a worker thread kept the process alive after Ctrl-C, until a line was typed."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


class _PipeLines:
    """A pipe's (or terminal's) lines (bytes) by the event loop; a line past `_MAX_LINE` is one that cannot
    be read (answered as not JSON)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def __aiter__(self):
        return self

    async def __anext__(self) -> bytes:
        try:
            line = await self.reader.readline()
        except ValueError:  # past the limit: what was read of it is gone
            return b"\0\n"
        if not line:
            raise StopAsyncIteration
        return line


class LineWriter:
    """Whole lines to the client, one at a time (the SDK's answers and ours share it), and the
    ids of the requests they answer."""

    def __init__(self, out) -> None:
        self.out = out  # an asyncio.StreamWriter, or an anyio AsyncFile of bytes
        self.lock = anyio.Lock()
        self.due: set[int | str] = set()  # requests read and not yet answered
        self.settled = asyncio.Event()  # set while nothing is due
        self.settled.set()

    async def write(self, text: str) -> None:
        if self.due:
            self._answered(text)
        data = text.encode("utf-8", errors="replace")
        async with self.lock:
            if isinstance(self.out, asyncio.StreamWriter):
                self.out.write(data)
            else:
                await self.out.write(data)

    async def flush(self) -> None:
        async with self.lock:
            if isinstance(self.out, asyncio.StreamWriter):
                await self.out.drain()
            else:
                await self.out.flush()

    def expect(self, request_id: int | str) -> None:
        self.due.add(request_id)
        self.settled.clear()

    def forget(self, request_id: int | str) -> None:
        """A request that needs no answer any more (the client cancelled it)."""
        self.due.discard(request_id)
        if not self.due:
            self.settled.set()

    def _answered(self, text: str) -> None:
        try:
            message = json.loads(text)
        except ValueError:
            return
        if isinstance(message, dict) and "method" not in message:
            self.forget(message.get("id"))


class Lines:
    """The client's lines, as text, for the SDK: only lines it can read as a message (the
    others are answered here); at the end of input, once the answers still due are written."""

    def __init__(self, source, writer: LineWriter) -> None:
        self.source = source  # async iterable of bytes lines
        self.writer = writer

    def __aiter__(self):
        return self

    async def __anext__(self) -> str:
        async for raw in self.source:
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            answer = self._check(line)
            if answer is None:
                return line
            if answer:
                await self.writer.write(answer + "\n")
                await self.writer.flush()
        with anyio.move_on_after(DRAIN_SECONDS):
            await self.writer.settled.wait()
        raise StopAsyncIteration

    def _check(self, line: str) -> str | None:
        """None for a message the SDK can read (a request's id noted as due), else the error
        to answer with ("" for none)."""
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError:
            return error_answer(line, refused=True)
        if isinstance(message, types.JSONRPCRequest):
            self.writer.expect(message.id)
        elif isinstance(message, types.JSONRPCNotification):
            if '"id"' in line:  # the SDK reads a request with a bad id as a notification
                found = error_answer(line, refused=False)
                if found:
                    return found
            if message.method == "notifications/cancelled" and isinstance(message.params, dict):
                self.writer.forget(message.params.get("requestId"))
        return None


def error_answer(line: str, refused: bool) -> str:
    """The JSON-RPC error that answers a line which is not a valid message ("" when none is
    due: a malformed response, which is never answered, or a line found valid here that the
    SDK did not refuse)."""
    try:
        message = json.loads(line)
    except ValueError:
        return _error(None, PARSE_ERROR, "Parse error: the line is not JSON")
    if isinstance(message, list):
        return _error(None, INVALID_REQUEST,
                      "Invalid Request: batches are not supported; send one message per line")
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, "Invalid Request: a message is a JSON object")
    if "method" not in message and ("result" in message or "error" in message):
        return ""
    request_id = message.get("id")
    usable = isinstance(request_id, str) or (
        isinstance(request_id, int) and not isinstance(request_id, bool))
    if "id" in message and not usable:
        problem = '"id" must be a string or an integer'
        request_id = None
    elif message.get("jsonrpc") != "2.0":
        problem = '"jsonrpc" must be "2.0"'
    elif not isinstance(message.get("method"), str):
        problem = '"method" must be a string'
    elif "params" in message and not isinstance(message["params"], dict):
        problem = '"params" must be an object'
    elif refused:
        problem = "not a JSON-RPC 2.0 message MCP knows"
    else:
        return ""
    return _error(request_id, INVALID_REQUEST, f"Invalid Request: {problem}")


def _error(request_id: int | str | None, code: int, message: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id,
                       "error": {"code": code, "message": message}}, separators=(",", ":"))
