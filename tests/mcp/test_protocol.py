"""The server as a process: only the protocol on stdout, a cancelled call, start-up errors,
and nothing of the SDK imported by any other command."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time

import pytest

from tests.mcp.conftest import call, connect, server_env


def _miniclaw(*args: str, stdin: str = "", timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miniclaw", *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout, env=server_env())


def test_stdout_holds_the_protocol_only_and_warnings_go_to_stderr(memories):
    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    (memories / "memory/2026-01-03.md").write_bytes(b"# Daily Note\n\n## 10:00:00 UTC\n\nbad \xff byte\n")
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "search_memory", "arguments": {"query": "byte"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "search_memory", "arguments": {"query": ["not", "text"]}}},
    ]
    proc = subprocess.Popen([sys.executable, "-m", "miniclaw", "--workspace", str(memories), "mcp"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=server_env())
    proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
    proc.stdin.flush()
    answers = [json.loads(proc.stdout.readline()) for _ in range(3)]  # JSON-RPC, nothing else
    proc.stdin.close()
    with proc.stdout, proc.stderr:
        rest, errors = proc.stdout.read(), proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode == 0 and rest == "", errors
    assert all(a["jsonrpc"] == "2.0" for a in answers)
    by_id = {a["id"]: a["result"] for a in answers}
    assert sorted(by_id) == [1, 2, 3]
    assert by_id[2]["structuredContent"]["results"][0]["content"] == "bad \ufffd byte"
    assert by_id[3]["isError"] is True
    assert "Warning: memory/2026-01-03.md" in errors and "Traceback" not in errors


async def test_a_cancelled_call_leaves_the_server_working_and_exits_cleanly(memories, tmp_path):
    """A call cancelled while its worker thread searches: the server answers the next calls,
    and on exit waits for that thread before closing the index (nothing on stderr)."""
    bullets = "".join(f"- kayak trip number {n} along the fjord\n" for n in range(3000))
    (memories / "memory/MEMORY.md").write_text(f"# Memory\n\n## 2026-01-05\n{bullets}")
    errlog = tmp_path / "server.err"
    with errlog.open("w") as log:
        async with connect(memories, errlog=log) as session:
            for delay in (0, 0.001, 0.01, 0.05):
                started = asyncio.ensure_future(session.call_tool(
                    "search_memory", {"query": "kayak fjord trip", "limit": 20}))
                await asyncio.sleep(delay)
                started.cancel()
            status = await call(session, "memory_status")
            found = await call(session, "search_memory", query="number 2999")
            last = asyncio.ensure_future(session.call_tool(
                "add_memory", {"content": "Cancelled or saved, never half", "kind": "long_term"}))
            await asyncio.sleep(0)
            last.cancel()
    assert status["entries"] == 3002  # MEMORY.md's and the two visible notes'
    assert found["results"][0]["content"] == "kayak trip number 2999 along the fjord"
    assert errlog.read_text() == ""
    after = _miniclaw("--workspace", str(memories), "memory", "read", "--long", "--json")
    entries = json.loads(after.stdout)["entries"]
    assert len(entries) in (3000, 3001)  # the cancelled write is whole or absent
    assert all(e["content"] != "" for e in entries)


def _waiting_for_a_lock(pid: int) -> bool:
    """Whether a thread of process `pid` is blocked waiting for a file lock (Linux)."""
    with open("/proc/locks", encoding="ascii") as locks:
        return any("->" in line and f" {pid} " in line for line in locks)


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="needs Linux's /proc/locks")
async def test_the_store_closes_only_once_a_cancelled_calls_thread_is_done(memories):
    """A write cancelled while its worker thread waits for the memory lock (held here, as by
    a CLI process mid-write): closing the server waits for that thread before it closes the
    store, so no thread is left using a closed index, and the write is whole."""
    from mcp import types

    from miniclaw.mcp_server import MemoryServer
    from miniclaw.memory import MemoryStore
    from miniclaw.memory.files import locked

    server = MemoryServer(MemoryStore(memories))
    params = types.CallToolRequestParams(name="add_memory", arguments={
        "content": "Written whole after all", "kind": "long_term"})
    with locked(memories / "memory"):
        call = asyncio.ensure_future(server.call_tool(None, params))
        for _ in range(3000):  # until its thread waits for the lock (30 s at most)
            if _waiting_for_a_lock(os.getpid()):
                break
            await asyncio.sleep(0.01)
        call.cancel()
        closing = asyncio.ensure_future(server.aclose())
        for _ in range(20):
            await asyncio.sleep(0)
        assert not closing.done()  # still waiting for the thread that waits for the lock
    await closing
    assert call.cancelled()
    assert "- Written whole after all" in (memories / "memory/MEMORY.md").read_text()


def test_a_missing_workspace_is_one_error_line(tmp_path):
    proc = _miniclaw("--workspace", str(tmp_path / "nowhere"), "mcp")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("Error: no workspace at") and len(proc.stderr.splitlines()) == 1


def test_no_other_command_imports_the_sdk(memories):
    code = ("import sys\nfrom miniclaw.cli import app\n"
            "for argv in (['mcp', '--help'], ['-w', sys.argv[1], 'memory', 'rank', '-q', 'x']):\n"
            "    try:\n        app(argv, prog_name='miniclaw')\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'mcp', 'mcp_types', 'pydantic', 'anyio', 'starlette'}), file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(memories)], capture_output=True,
                          text=True, timeout=60, env=server_env())
    assert proc.returncode == 0, proc.stderr
    assert "--read-only" in proc.stdout
    assert proc.stderr.splitlines()[-1] == "[]"
