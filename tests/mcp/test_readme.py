"""The registrations of docs/mcp.md work as written: the command Claude Code is told to run (after
`--` in `claude mcp add`) and the Cursor `mcp.json` entry start a working server (the
workspace path put in for the page's example path)."""

from __future__ import annotations

import json
import re
import shlex
import sys
from contextlib import asynccontextmanager
from pathlib import Path

README = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text(encoding="utf-8")
EXAMPLE_WORKSPACES = ("~/.miniclaw/workspace", "/home/you/.miniclaw/workspace")


def claude_code_commands() -> list[list[str]]:
    """Each `claude mcp add NAME -- COMMAND ARGS...` of the README: its COMMAND ARGS."""
    lines = re.findall(r"^claude mcp add .*$", README, flags=re.MULTILINE)
    assert lines, "the README shows no registration with Claude Code"
    commands = []
    for line in lines:
        words = shlex.split(line)
        assert "--" in words, line
        assert words[words.index("--") - 1] == "miniclaw", line  # the name, after any options
        commands.append(words[words.index("--") + 1:])
    return commands


def cursor_command() -> list[str]:
    """The README's `mcpServers` entry for miniclaw: its command and args."""
    block = re.search(r"```json\n(\{\n  \"mcpServers\".*?)```", README, flags=re.DOTALL)
    assert block, "the README shows no mcp.json entry"
    entry = json.loads(block.group(1))["mcpServers"]["miniclaw"]
    return [entry["command"], *entry["args"]]


@asynccontextmanager
async def started(command: list[str], workspace: Path):
    """A client session with the server `command` starts, as the agent would start it (the
    `miniclaw` script of this environment, the test's workspace for the example's)."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from tests.mcp.conftest import server_env

    assert command[0] == "miniclaw", command
    args = [str(workspace) if arg in EXAMPLE_WORKSPACES else arg for arg in command[1:]]
    assert str(workspace) in args, command
    params = StdioServerParameters(command=str(Path(sys.executable).parent / "miniclaw"),
                                   args=args, env=server_env())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def test_the_claude_code_registrations_start_a_server(memories):
    for command in claude_code_commands():
        async with started(command, memories) as session:
            tools = [tool.name for tool in (await session.list_tools()).tools]
            assert "search_memory" in tools and ("add_memory" in tools) != ("--read-only" in command)


async def test_the_cursor_entry_starts_a_server(memories):
    command = cursor_command()
    async with started(command, memories) as session:
        found = await session.call_tool("search_memory", {"query": "coffee"})
        tools = [tool.name for tool in (await session.list_tools()).tools]
    assert not found.is_error and found.structured_content["results"]
    assert ("add_memory" in tools) != ("--read-only" in command)
