"""`miniclaw mcp`: the memory tools and the memory files served to coding agents over the
Model Context Protocol (stdio), with the official `mcp` SDK (the optional extra `mcp`).

The tools are `miniclaw.memory_tools`, the chat's own: one `MemoryTools` per server process
(one client over stdio), so the write caps hold per session as in the chat (no turns here:
the session cap is the cap). Every answer is structured content that matches the tool's
output schema, plus the same JSON as text for clients that read only text. A bad call is a
tool error (`isError`) whose text says what to change; the server goes on.

The files of the workspace's sources that hold a visible entry are resources
(`miniclaw://memory/MEMORY.md`, `miniclaw://memory/DAY.md`, then those config.json adds),
read through the parser as entries with citations: no private text, no file private as a
whole (its name may be its title), and no path from the client is ever opened (a URI names
a file the sources list or is refused).

Cancellation: the SDK cancels the handler of a cancelled request, but a worker thread
already running a search cannot be stopped. The call runs as its own task, which the handler
stops waiting for; the store is closed only once every such task is over, so no thread ever
uses a closed index connection. Everything but the protocol goes to stderr (the wire,
`mcp/wire.py`, points fd 1 at stderr while it serves; it also answers the lines that are not
JSON-RPC messages, and lets the requests read before the input ends be answered).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from pathlib import Path

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from miniclaw import __version__
from miniclaw.errors import MiniclawError
from miniclaw.mcp.wire import open_wire
from miniclaw.store.store import MemoryStore
from miniclaw.search.scoring import AUTO_MODE, best_available
from miniclaw.memory_tools import MAX_WRITES_PER_SESSION, MemoryTools, WriteBudget

log = logging.getLogger("miniclaw")

URI_PREFIX = "miniclaw://memory/"
INSTRUCTIONS = (
    "The user's own memory: plain Markdown files (MEMORY.md for lasting facts, one daily "
    "note per day). Search it before answering questions about the user, their projects and "
    "past decisions; quote the citations (path:line). Save only what the user would want "
    "remembered, one self-contained sentence per memory.")


PROBE_ENV = "MINICLAW_MCP_PROBE"  # set by doctor's start check: answer, touch nothing


def serve(workspace: Path, *, read_only: bool = False, mode: str = AUTO_MODE) -> None:
    """Serve until the client closes stdin."""
    store = MemoryStore(workspace)
    store.require_workspace()  # before serving: a wrong workspace is one Error line
    if os.isatty(0):
        sys.stderr.write("miniclaw mcp speaks the Model Context Protocol on stdin and stdout: "
                         "register it with an agent (see the README). Ctrl-C ends it.\n")
    try:
        anyio.run(MemoryServer(store, read_only=read_only, mode=mode).run)
    except KeyboardInterrupt:  # Ctrl-C in a terminal: not an error worth a traceback
        pass


class MemoryServer:
    """One MCP session over one workspace's `MemoryStore`."""

    def __init__(self, store: MemoryStore, *, read_only: bool = False,
                 mode: str = AUTO_MODE) -> None:
        self.store = store
        writes = WriteBudget(per_turn=MAX_WRITES_PER_SESSION, per_session=MAX_WRITES_PER_SESSION)
        self.tools = MemoryTools(store, writes=writes, read_only=read_only, mode=mode)
        self._calls: set[asyncio.Task] = set()
        self.server = Server(
            "miniclaw", version=__version__, title="miniclaw memory",
            instructions=INSTRUCTIONS, on_list_tools=self.list_tools,
            on_call_tool=self.call_tool, on_list_resources=self.list_resources,
            on_read_resource=self.read_resource)
        self.server.middleware.append(_say_what_is_wrong)

    async def run(self) -> None:
        if not os.environ.get(PROBE_ENV):  # `miniclaw doctor` only asks whether it answers
            self._start(self._warm())
        try:
            async with stdio_server(*await open_wire()) as (read_stream, write_stream):
                await self.server.run(read_stream, write_stream,
                                      self.server.create_initialization_options())
        except BaseExceptionGroup as group:
            # Ctrl-C cancels this task, and the SDK's tasks may then find the streams between
            # them closed: that is the end asked for, not a traceback (it was one, exit 1).
            closed = (anyio.BrokenResourceError, anyio.ClosedResourceError)
            if not asyncio.current_task().cancelling() or group.split(closed)[1] is not None:
                raise
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the store once every call is over, cancelled ones included."""
        while self._calls:
            await asyncio.gather(*self._calls, return_exceptions=True)
        self.store.close()

    async def _warm(self) -> None:
        """Bring the index up to date while the client starts, and load the embedding model
        when the search mode is `auto` (once, in a worker thread), so the first search is
        fast."""
        try:
            await self.store.refresh_index()
        except MiniclawError:
            pass  # the first search reports it
        if self.tools.mode == AUTO_MODE:
            await asyncio.to_thread(best_available)

    def _start(self, work) -> asyncio.Task:
        """Run `work` as a task of its own, which `aclose` waits for."""
        task = asyncio.ensure_future(work)
        self._calls.add(task)
        task.add_done_callback(_settled)
        task.add_done_callback(self._calls.discard)
        return task

    async def _finish(self, work):
        """Await `work` in its own task: a cancelled request stops waiting for it, and the
        store stays open until it is over (a worker thread cannot be stopped)."""
        return await asyncio.shield(self._start(work))

    # -- tools ---------------------------------------------------------------------------

    async def list_tools(self, ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=spec.name, description=spec.description,
                       input_schema=spec.input_schema, output_schema=spec.output_schema,
                       annotations=types.ToolAnnotations(
                           read_only_hint=not spec.writes, destructive_hint=False,
                           idempotent_hint=not spec.writes, open_world_hint=False))
            for spec in self.tools.specs()])

    async def call_tool(self, ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            result = await self._finish(self.tools.call(params.name, params.arguments))
        except MiniclawError as exc:  # a bad argument, a cap, a damaged file, a failing index
            return _tool_error(str(exc))
        except OSError as exc:
            return _tool_error(f"{exc.strerror or exc}")
        except Exception as exc:  # a bug of ours: the agent gets an error, the server goes on
            log.error("%s failed inside miniclaw (%s)", params.name, type(exc).__name__)
            return _tool_error(f"{params.name} failed inside miniclaw ({type(exc).__name__}); "
                               "please report it")
        text = json.dumps(result, ensure_ascii=False)
        return types.CallToolResult(content=[types.TextContent(text=text)],
                                    structured_content=result)

    # -- resources -----------------------------------------------------------------------

    async def list_resources(self, ctx, params) -> types.ListResourcesResult:
        """Every file of the workspace's sources that holds a visible entry (MEMORY.md, then
        the notes newest first): a file private as a whole, or all private, is not named."""
        try:
            listed = await self._finish(self.store.files_with_entries())
        except MiniclawError as exc:
            raise _internal(exc) from None
        return types.ListResourcesResult(resources=[types.Resource(
            uri=resource_uri(file.path), name=file.path.removeprefix("memory/"),
            mime_type="text/markdown", description=_title(source, file))
            for source, file in listed])

    async def read_resource(self, ctx, params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        """A listed file as its visible entries; one with none (private as a whole, or all
        private) is refused as a file that is not there is, so its name says nothing."""
        uri = str(params.uri)
        try:
            listed = await self._finish(self.store.source_files())
            found = [(s, f) for s, f in listed if resource_uri(f.path) == uri]
            entries = found and await self._finish(self.store.read_file(found[0][1].path))
        except MiniclawError as exc:
            raise _internal(exc) from None
        if not entries:
            from miniclaw.entries.privacy import visible_typed

            raise MCPError(types.INVALID_PARAMS, f"no memory file at {visible_typed(uri)!r}: "
                           "resources are "
                           "the files resources/list names, such as "
                           f"{URI_PREFIX}MEMORY.md and {URI_PREFIX}YYYY-MM-DD.md")
        source, file = found[0]
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, mime_type="text/markdown",
            text=entries_markdown(_title(source, file), entries))])


def resource_uri(path: str) -> str:
    """A memory file's URI: `miniclaw://memory/` and its path within memory/ (MEMORY.md,
    2026-02-14.md), or its whole display path for a source elsewhere."""
    from urllib.parse import quote

    return URI_PREFIX + quote(path.removeprefix("memory/"), safe="/~")


def _title(source, file) -> str:
    """What people call the file: "Daily Note - 2026-02-14", "Long-term Memory (memory/...)"."""
    label = source.label or source.name
    return f"{label} - {file.day.isoformat()}" if file.day else f"{label} ({file.path})"


def entries_markdown(title: str, entries) -> str:
    """A memory file as the parser reads it: one bullet per entry with its citation."""
    lines = [f"# {title}", ""]
    for entry in entries:
        when = " ".join(x for x in (entry.date and entry.date.isoformat(), entry.time) if x)
        about = ", ".join(x for x in (when, entry.category, *entry.tags) if x)
        body = entry.text.replace("\n", "\n  ")
        lines.append(f"- {body}  ({entry.citation}{'; ' + about if about else ''})")
    return "\n".join(lines) + "\n"


async def _say_what_is_wrong(ctx, call_next):
    """The SDK answers a request before `initialize`, and params its schema refuses, with
    -32602 "Invalid request parameters" and no word more: say which, and what to change."""
    try:
        return await call_next(ctx)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "params"
        raise MCPError(types.INVALID_PARAMS,
                       f"Invalid params for {ctx.method}: {where}: {first['msg']}") from None
    except MCPError as exc:
        if (exc.error.code, exc.error.message, exc.error.data) != (
                types.INVALID_PARAMS, "Invalid request parameters", ""):
            raise
        raise MCPError(types.INVALID_PARAMS, f"{ctx.method} before the "
                       "session is initialized: send initialize, then the notification "
                       "notifications/initialized, first") from None


def _internal(exc: MiniclawError) -> MCPError:
    """A resource request that failed: its message, never a private part it quotes."""
    from miniclaw.entries.privacy import visible_typed

    return MCPError(types.INTERNAL_ERROR, visible_typed(str(exc)))


def _tool_error(message: str) -> types.CallToolResult:
    from miniclaw.entries.privacy import visible_typed

    message = visible_typed(message)  # it may quote the arguments: never their private part
    return types.CallToolResult(content=[types.TextContent(text=f"Error: {message}")],
                                is_error=True)


def _settled(task: asyncio.Task) -> None:
    """Collect the outcome of a call nobody waits for any more (its request was cancelled)."""
    if not task.cancelled():
        task.exception()
