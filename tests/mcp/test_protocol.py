"""The server as a process: only the protocol on stdout, a cancelled call, start-up errors,
and nothing of the SDK imported by any other command."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

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
         "params": {"name": "search_memory", "arguments": {"query": "byte", "days": 36500}}},
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

    from miniclaw.mcp.server import MemoryServer
    from miniclaw.memory import MemoryStore
    from miniclaw.fs.files import locked

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


def _handshake() -> list[str]:
    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    return [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}}}),
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})]


def _serve(workspace, lines: list[str], *, stdin=None, stdout=None) -> tuple[list[dict], str]:
    """`miniclaw mcp` given these lines (or reading `stdin`, writing `stdout`, open files),
    then the end of its input: (its answers, its stderr)."""
    proc = subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", str(workspace), "mcp"],
                          input=None if stdin else "".join(f"{x}\n" for x in lines),
                          stdin=stdin, stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=60, env=server_env())
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout if stdout is None else Path(stdout.name).read_text(encoding="utf-8")
    return [json.loads(line) for line in out.splitlines()], proc.stderr


MALFORMED = {  # a line -> the id and code of its answer, and what the message says
    "not json": (None, -32700, "not JSON"),
    '[{"jsonrpc": "2.0", "id": 5, "method": "ping"}]': (None, -32600, "batches"),
    '"ping"': (None, -32600, "a message is a JSON object"),
    '{"jsonrpc": "1.0", "id": 7, "method": "ping"}': (7, -32600, '"jsonrpc" must be "2.0"'),
    '{"jsonrpc": "2.0", "id": "eight"}': ("eight", -32600, '"method" must be a string'),
    '{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": "x"}':
        (9, -32600, '"params" must be an object'),
    '{"jsonrpc": "2.0", "method": 5}': (None, -32600, '"method" must be a string'),
    '{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}': (None, -32600, '"id" must be a string or'),
    '{"jsonrpc": "2.0", "id": null, "method": "ping"}': (None, -32600, '"id" must be a string or'),
    '{"jsonrpc": "2.0", "\\u0069d": 2.5, "method": "ping"}': (None, -32600, '"id" must be a'),
    '{"jsonrpc": "2.0", "id": NaN, "method": "ping"}': (None, -32700, "not JSON"),
    "[" * 100_000 + "]" * 100_000: (None, -32700, "not JSON"),  # json.loads: RecursionError
}


def test_a_line_that_is_not_a_message_gets_its_json_rpc_error_and_the_server_goes_on(memories):
    """The SDK's transport dropped these without a word (a client waited for ever); a blank
    line and a malformed response from the client are never answered."""
    lines = [*_handshake(), *MALFORMED, "", '{"jsonrpc": "2.0", "id": 3, "result": 5}',
             '{"jsonrpc": "2.0", "id": 10, "method": "ping"}']
    answers, errors = _serve(memories, lines)
    assert [a["id"] for a in answers if "result" in a] == [1, 10]
    failed = sorted(((a["id"] is None, str(a["id"]), a["error"]["code"], a["error"]["message"])
                     for a in answers if "error" in a))
    expected = sorted(MALFORMED.values(), key=lambda e: (e[0] is None, str(e[0]), e[1], e[2]))
    assert len(failed) == len(expected) == len(answers) - 2
    for (_, request_id, code, message), (want_id, want_code, says) in zip(failed, expected):
        assert (request_id, code) == (str(want_id), want_code) and says in message
    assert all(a["jsonrpc"] == "2.0" for a in answers) and "Traceback" not in errors


def test_every_request_read_before_the_input_ends_is_answered(memories):
    """A script pipes its requests in and closes stdin: the SDK stopped at the end of input
    and cancelled the calls still running, so the last answers were lost."""
    calls = [json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
        "name": "search_memory", "arguments": {"query": "Atlas budget"}}}) for n in range(2, 6)]
    answers, errors = _serve(memories, [*_handshake(), *calls])
    assert sorted(a["id"] for a in answers) == [1, 2, 3, 4, 5], errors
    assert all("Atlas" in a["result"]["structuredContent"]["results"][0]["content"]
               for a in answers if a["id"] > 1)


def test_a_request_the_client_cancelled_is_not_waited_for_at_the_end(memories):
    """The client cancelled it: no answer is due (MCP), and the server ends without one."""
    cancel = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 2}})
    slow = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "search_memory", "arguments": {"query": "Atlas"}}})
    start = time.monotonic()
    answers, _ = _serve(memories, [*_handshake(), slow, cancel])
    assert time.monotonic() - start < 30  # DRAIN_SECONDS: the end did not wait for id 2
    assert [a["id"] for a in answers if a["id"] != 2] == [1]


def test_the_wire_from_and_to_files_is_checked_the_same(memories, tmp_path):
    """Not a pipe (`miniclaw mcp < requests > answers`): read and written by worker threads."""
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(f"{x}\n" for x in [*_handshake(), "not json",
                                                  '{"jsonrpc": "2.0", "id": 10, "method": "ping"}']))
    with open(requests, encoding="utf-8") as stdin, open(tmp_path / "answers.jsonl", "w") as stdout:
        answers, errors = _serve(memories, [], stdin=stdin, stdout=stdout)
    assert sorted((a["id"] or 0, "error" in a) for a in answers) == [(0, True), (1, False), (10, False)]
    assert [a["error"]["code"] for a in answers if "error" in a] == [-32700]


@pytest.mark.parametrize("stdout", ["terminal", "file"])
def test_ctrl_c_ends_the_server_at_a_terminal(memories, tmp_path, stdout):
    """stdin a terminal: a worker thread blocked reading it kept the process alive after
    Ctrl-C until a line was typed; the event loop reads a terminal now (whatever stdout
    is), on a description of its own: the terminal the shell shares is left blocking
    (`cat` failed on it afterwards)."""
    import fcntl
    import pty
    import select
    import signal

    master, slave = pty.openpty()
    out = open(tmp_path / "answers", "w") if stdout == "file" else slave
    proc = subprocess.Popen([sys.executable, "-m", "miniclaw", "--workspace", str(memories), "mcp"],
                            stdin=slave, stdout=out, stderr=slave, close_fds=True, env=server_env())
    seen = ""
    try:
        os.write(master, b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n')
        answers = (lambda: seen) if stdout == "terminal" else \
            (lambda: (tmp_path / "answers").read_text())
        deadline = time.monotonic() + 30
        while '"result"' not in answers():
            assert time.monotonic() < deadline, seen
            if select.select([master], [], [], 0.1)[0]:
                seen += os.read(master, 4096).decode()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0, seen
        assert not fcntl.fcntl(slave, fcntl.F_GETFL) & os.O_NONBLOCK
    finally:
        proc.kill()
        os.close(master)
        os.close(slave)
        if stdout == "file":
            out.close()
    assert "Traceback" not in seen


def test_a_client_that_closes_its_end_ends_the_server_quietly(memories):
    """Nobody reads the answers any more: exit 0, no traceback (it was an ExceptionGroup
    ending in ConnectionResetError)."""
    proc = subprocess.Popen([sys.executable, "-m", "miniclaw", "--workspace", str(memories), "mcp"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=server_env())
    proc.stdout.close()
    with proc.stderr:
        try:
            proc.stdin.write("".join(f"{x}\n" for x in [*_handshake(), "not json", *(
                json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}) for n in range(2, 40))]))
            proc.stdin.close()
        except BrokenPipeError:  # it ended before reading all of them
            pass
        errors = proc.stderr.read()
    assert proc.wait(60) == 0 and "Traceback" not in errors, errors


async def test_a_line_past_the_limit_is_one_line_skipped_to_its_end():
    """asyncio's readline dropped only what it had buffered of an overlong line: the rest
    came back as more lines, and the client got an error answer for each."""
    from miniclaw.mcp.wire import _PipeLines

    reader = asyncio.StreamReader(limit=16)
    chunks = [b'{"a": 1}\n', b"x" * 10, b"y" * 30, b"z" * 50 + b'\n{"b": 2}\n',
              b"w" * 40 + b"\n", b"tail"]

    async def feed():
        for chunk in chunks:
            reader.feed_data(chunk)
            await asyncio.sleep(0.01)
        reader.feed_eof()

    feeding = asyncio.ensure_future(feed())
    lines = [line async for line in _PipeLines(reader)]
    await feeding
    assert lines == [b'{"a": 1}\n', b"\0\n", b'{"b": 2}\n', b"\0\n", b"tail"]


@pytest.mark.parametrize("request_id", [{"id": 2}, [2]])
def test_a_cancel_that_names_no_request_id_leaves_the_server_working(memories, request_id):
    """`requestId` an object or a list killed the server with a traceback (unhashable, as a
    key of the answers due)."""
    cancel = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": request_id}})
    answers, errors = _serve(memories, [*_handshake(), cancel,
                                        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"})])
    assert [a["id"] for a in answers] == [1, 3] and "Traceback" not in errors


def test_a_request_before_initialize_or_with_bad_params_says_what_is_wrong(memories):
    """Both were -32602 "Invalid request parameters" and no word more."""
    early = [json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
             json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"})]
    bad = [json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                       "params": {"arguments": {}}}),
           json.dumps({"jsonrpc": "2.0", "id": 5, "method": "resources/read",
                       "params": {"uri": 5}})]
    answers, errors = _serve(memories, [*early, *_handshake(), *bad])
    by_id = {a["id"]: a for a in answers}
    assert sorted(by_id) == [1, 2, 3, 4, 5] and "result" in by_id[3], answers
    assert by_id[2]["error"]["code"] == -32602
    assert "tools/list before the session is initialized: send initialize" in by_id[2]["error"]["message"]
    assert by_id[4]["error"]["message"] == "Invalid params for tools/call: params.name: Field required"
    assert by_id[5]["error"]["message"].startswith("Invalid params for resources/read: params.uri:")


def test_ctrl_c_amid_a_stream_of_requests_ends_the_server_quietly(memories):
    """Ctrl-C while the SDK's reader waited to hand on a request: its stream closed under it,
    and the server ended with an ExceptionGroup of BrokenResourceError (exit 1)."""
    import signal
    import threading

    pings = "".join(json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}) + "\n"
                    for n in range(2, 20_000))
    proc = subprocess.Popen([sys.executable, "-m", "miniclaw", "--workspace", str(memories), "mcp"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=server_env())

    def send() -> None:
        try:
            proc.stdin.write("".join(f"{x}\n" for x in _handshake()) + pings)
            proc.stdin.close()
        except (BrokenPipeError, ValueError):  # it ended before reading all of them
            pass

    writer = threading.Thread(target=send, daemon=True)
    writer.start()
    try:
        for _ in range(200):  # the requests are flowing
            assert proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        proc.stdout.read()
        errors = proc.stderr.read()
        assert proc.wait(60) == 0 and "Traceback" not in errors, errors
    finally:
        proc.kill()
        writer.join(10)
        proc.stdout.close()
        proc.stderr.close()


def test_ctrl_c_during_the_sdks_import_is_held_until_it_is_done(memories):
    """A Ctrl-C that landed while pydantic built the SDK's models became a SchemaError
    traceback: it waits for the import to end, then aborts as any Ctrl-C does."""
    code = ("import atexit, os, signal, sys\n"
            "class Hook:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'miniclaw.mcp.server':\n"
            "            os.kill(os.getpid(), signal.SIGINT)\n"
            "        return None\n"
            "sys.meta_path.insert(0, Hook())\n"
            "atexit.register(lambda: print('imported:', 'miniclaw.mcp.server' in sys.modules))\n"
            "from miniclaw.cli import main\n"
            "sys.argv = ['miniclaw', '--workspace', sys.argv[1], 'mcp']\n"
            "main()\n")
    proc = subprocess.run([sys.executable, "-c", code, str(memories)], capture_output=True,
                          text=True, timeout=60, env=server_env())
    assert (proc.returncode, proc.stdout) == (130, "imported: True\n")
    assert "Traceback" not in proc.stderr and "Error" not in proc.stderr
