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
  cancelled by the client), up to `DRAIN_SECONDS`;
- a client that closed its end (stdout) is written to no more, and the server ends quietly.

Like the SDK, it keeps the wire on descriptors of its own and points fd 0 at /dev/null and fd
1 at stderr, so stray output never reaches the client. Pipes, sockets and terminals (opened
again: `_own`) are read and written by the event loop, each end chosen on its own; a file
through worker threads, as the SDK does.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat

import anyio
from mcp import types

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
# At the end of input, how long answers still due are waited for; past it the SDK answers
# them -32000 "Connection closed" (and the server still waits for their work to end).
DRAIN_SECONDS = 30.0
_MAX_LINE = 256 * 1024 * 1024  # as good as no limit (the SDK has none); past it, not read


async def open_wire() -> tuple[Lines, LineWriter]:
    """The client's lines (checked) and the writer of the answers, on descriptors of our own,
    each read or written by the event loop when it can wait on it, else by worker threads."""
    (wire_in, loop_in), (wire_out, loop_out) = _own(os.dup(0)), _own(os.dup(1))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    loop = asyncio.get_running_loop()
    if loop_out:
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0))
        writer = LineWriter(asyncio.StreamWriter(transport, protocol, None, loop))
    else:
        writer = LineWriter(anyio.wrap_file(os.fdopen(wire_out, "wb", buffering=0)))
    if loop_in:
        reader = asyncio.StreamReader(limit=_MAX_LINE)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                     os.fdopen(wire_in, "rb", buffering=0))
        return Lines(_PipeLines(reader), writer), writer
    return Lines(anyio.wrap_file(os.fdopen(wire_in, "rb")), writer), writer


def _own(fd: int) -> tuple[int, bool]:
    """(the descriptor to use, whether the event loop can wait on it): a pipe or a socket
    as it is; a terminal opened again by its name, so that its file description is ours
    alone (the event loop makes it non-blocking, and the one the shell and stderr share
    stayed so after the server ended: `cat` then failed with "Resource temporarily
    unavailable"). A terminal read by a worker thread kept the process alive after Ctrl-C
    until a line was typed; a file is read and written by worker threads."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return fd, True
    if not os.isatty(fd):
        return fd, False
    from miniclaw.fs.platform import reopen_terminal

    mine = reopen_terminal(fd)
    if mine is None:  # no name to open it by (Windows' console: read by threads)
        return fd, False
    os.close(fd)
    return mine, True


class _PipeLines:
    """A pipe's (or terminal's) lines (bytes) by the event loop. A line past the reader's
    limit (`_MAX_LINE`) is one line that cannot be read, answered once as not JSON: it is
    skipped to its end (`readline` dropped only what it had buffered, and the rest of the
    line came back as more lines, each answered)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def __aiter__(self):
        return self

    async def __anext__(self) -> bytes:
        try:
            return await self.reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as end:  # the input ended (maybe mid-line)
            if not end.partial:
                raise StopAsyncIteration from None
            return end.partial
        except asyncio.LimitOverrunError:
            await self._skip_line()
            return b"\0\n"

    async def _skip_line(self) -> None:
        """Drop the rest of an overlong line, its newline included (or up to the end)."""
        while True:
            try:
                await self.reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as over:  # still no end within the limit
                await self.reader.readexactly(max(over.consumed, 1))
            except asyncio.IncompleteReadError:
                return


class LineWriter:
    """Whole lines to the client, one at a time (the SDK's answers and ours share it), and the
    requests still due an answer. A client that closed its end is written to no more: the
    server then ends quietly (it ended with a traceback)."""

    def __init__(self, out) -> None:
        self.out = out  # an asyncio.StreamWriter, or an anyio AsyncFile of bytes
        self.lock = anyio.Lock()
        self.due: dict[object, int] = {}  # request id -> answers still due (ids may repeat)
        self.settled = asyncio.Event()  # set while nothing is due
        self.settled.set()
        self.closed = False  # the client closed its end

    async def write(self, text: str, *, counted: bool = True) -> None:
        """Write a line; an answer of the SDK's (`counted`) settles its request. Ours, to a
        line that was no request, settles none (its id may be one still due)."""
        if await self._send(text.encode("utf-8", errors="replace")) and counted and self.due:
            self.forget(_answered_id(text))

    async def flush(self) -> None:
        await self._send(None)

    async def _send(self, data: bytes | None) -> bool:
        """Write `data` (None: flush what is written); False once the client closed its end."""
        if self.closed:
            return False
        stream = isinstance(self.out, asyncio.StreamWriter)
        try:
            async with self.lock:
                if data is None:
                    await (self.out.drain() if stream else self.out.flush())
                elif stream:
                    self.out.write(data)
                else:
                    await self.out.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.closed = True
        return not self.closed

    def expect(self, request_id: int | str) -> None:
        self.due[request_id] = self.due.get(request_id, 0) + 1
        self.settled.clear()

    def forget(self, request_id: object) -> None:
        """One request of this id needs no answer any more (answered, or cancelled)."""
        left = self.due.get(request_id, 0) - 1
        if left > 0:
            self.due[request_id] = left
        else:
            self.due.pop(request_id, None)
        if not self.due:
            self.settled.set()


_ANSWER_START = re.compile(r'\{"jsonrpc":"2\.0","id":(-?\d+|"(?:[^"\\]|\\.)*"),"(?:result|error)":')


def _answered_id(text: str) -> object:
    """The id of the request an outgoing line answers (None for a line that answers none: a
    notification, a request to the client). Read from the line's start, as the SDK writes
    an answer (`jsonrpc`, `id`, then `result` or `error`), not by parsing a whole answer
    that may be megabytes; any other form is parsed whole."""
    found = _ANSWER_START.match(text)
    if found:
        return json.loads(found.group(1))
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(message, dict) and "method" not in message:
        return message.get("id")
    return None


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
            if self.writer.closed:  # nobody reads the answers: the session is over
                raise StopAsyncIteration
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            answer = self._check(line)
            if answer is None:
                return line
            if answer:
                await self.writer.write(answer + "\n", counted=False)
                await self.writer.flush()
        if not self.writer.closed:
            with anyio.move_on_after(DRAIN_SECONDS):
                await self.writer.settled.wait()
        raise StopAsyncIteration

    def _check(self, line: str) -> str | None:
        """None for a message the SDK can read (a request's id noted as due), else the error
        to answer with ("" for none)."""
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except (ValueError, RecursionError):
            return error_answer(line, refused=True)
        if isinstance(message, types.JSONRPCRequest):
            self.writer.expect(message.id)
        elif isinstance(message, types.JSONRPCNotification):
            found = error_answer(line, refused=False)  # the SDK reads a bad id as no id
            if found:
                return found
            if message.method == "notifications/cancelled" and isinstance(message.params, dict):
                cancelled = message.params.get("requestId")
                if _is_id(cancelled):  # else no request's (a list, an object: unhashable)
                    self.writer.forget(cancelled)
        return None


def error_answer(line: str, refused: bool) -> str:
    """The JSON-RPC error that answers a line which is not a valid message ("" when none is
    due: a malformed response, which is never answered, or a line found valid here that the
    SDK did not refuse)."""
    try:
        message = json.loads(line, parse_constant=_not_json)
    except (ValueError, RecursionError):  # nested past Python's limit: not read as JSON
        return _error(None, PARSE_ERROR, "Parse error: the line is not JSON")
    if isinstance(message, list):
        return _error(None, INVALID_REQUEST,
                      "Invalid Request: batches are not supported; send one message per line")
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, "Invalid Request: a message is a JSON object")
    if "method" not in message and ("result" in message or "error" in message):
        return ""
    request_id = message.get("id")
    if "id" in message and not _is_id(request_id):
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


def _is_id(value: object) -> bool:
    """A request id as MCP has them: a string or an integer (not a bool, which Python
    counts as 1 or 0)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _not_json(constant: str):
    """NaN and Infinity, which Python's json reads and JSON has not."""
    raise ValueError(f"{constant} is not JSON")


def _error(request_id: int | str | None, code: int, message: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id,
                       "error": {"code": code, "message": message}}, separators=(",", ":"))
