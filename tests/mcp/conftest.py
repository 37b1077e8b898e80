"""MCP tests: `miniclaw mcp` runs as a subprocess (`sys.executable -m miniclaw`), driven by the
SDK's own stdio client, on a real workspace with the cache inside tmp_path."""

from __future__ import annotations

import json
import os
import sys
from contextlib import asynccontextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

pytest.importorskip("mcp")

SECRET = "zanzibar-4471"  # only ever inside <private>: no answer may hold it


def server_env() -> dict[str, str]:
    """The test's environment (HOME and the cache in tmp_path: see tests/conftest.py)."""
    env = dict(os.environ)
    env.pop("MINICLAW_WORKSPACE", None)
    return env


@asynccontextmanager
async def connect(workspace: Path, *options: str, errlog=None):
    """A client session with a fresh `miniclaw mcp` server on `workspace`."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, env=server_env(),
        args=["-m", "miniclaw", "--workspace", str(workspace), "mcp", *options])
    with open(os.devnull, "w") if errlog is None else errlog as log:
        async with stdio_client(params, errlog=log) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def call(session, name: str, **arguments) -> dict:
    """A tool call that must succeed; its structured result (the SDK has checked it
    against the tool's output schema)."""
    result = await session.call_tool(name, arguments)
    assert not result.is_error, result.content[0].text
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def refused(session, name: str, **arguments) -> str:
    """A tool call that must be a tool error; its message."""
    result = await session.call_tool(name, arguments)
    assert result.is_error, result.structured_content
    text = result.content[0].text
    assert text.startswith("Error: ") and "Traceback" not in text
    return text


@pytest.fixture
def today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


@pytest.fixture
def memories(workspace: Path, today: str) -> Path:
    """A workspace with long-term memory, today's note, an older note and private text."""
    old = (datetime.now(timezone.utc).date() - timedelta(days=40)).isoformat()
    files = {
        "MEMORY.md": "# Memory\n\n## 2026-01-05\n"
                     "- Prefers dark roast coffee, no sugar\n"
                     "<!-- @category: preference -->\n"
                     f"- Bank login hint <private>{SECRET}</private> kept offline\n",
        f"{today}.md": f"# Daily Note - {today}\n\n## 08:00:00 UTC\n\n"
                       "Met Sam about the Atlas budget: 40k approved\n\n---\n\n"
                       f"## 09:00:00 UTC\n\n<private>\nAtlas vendor password {SECRET}\n</private>\n",
        f"{old}.md": f"# Daily Note - {old}\n\n## 10:00:00 UTC\n\nKayak trip to the fjord\n",
        "2026-01-02.md": f"---\nprivate: true\n---\n# Daily Note\n\n## 10:00:00 UTC\n\nAtlas {SECRET}\n",
    }
    for name, text in files.items():
        (workspace / "memory" / name).write_text(text, encoding="utf-8")
    return workspace
