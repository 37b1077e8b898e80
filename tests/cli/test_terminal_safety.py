"""What reaches the terminal: no escape sequences from memory text, a model or an error
message; bytes that are not UTF-8 in argv or piped chat input are one `Error:` line and
nothing written; `--json` is valid UTF-8. Real processes, real files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miniclaw.cli.render import Style
from miniclaw.text import printable
from tests.chat.server import FakeModelServer, reply, stream, text_chunks
from tests.conftest import write

# An OSC title, an OSC 52 clipboard write, a CSI clear screen, an 8-bit CSI, a bell, a CR.
HOSTILE = "\x1b]0;pwned\x07 \x1b]52;c;ZXZpbA==\x07 \x1b[2J \x9b31m \x07\r"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


def miniclaw(ws: Path, *args: str | bytes, stdin: bytes = b"", env: dict | None = None):
    return subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", str(ws), *args],
                          input=stdin, capture_output=True, timeout=60,
                          env={**os.environ, "PYTHONUTF8": "1", **(env or {})})


@pytest.fixture
def hostile_ws(workspace: Path) -> Path:
    write(workspace, "memory/MEMORY.md", f"# Memory\n\n## {today()}\n- Coffee order {HOSTILE} end\n")
    write(workspace, f"memory/{today()}.md",
          f"# Daily Note - {today()}\n\n## 08:00:00 UTC\n\nCoffee with Sam {HOSTILE} end\n")
    return workspace


@pytest.mark.parametrize("args", [
    ["memory", "read", "--long"], ["memory", "read"], ["memory", "recent"],
    ["memory", "rank", "-q", "coffee"], ["memory", "rank", "-q", "coffee", "-f", "markdown"],
    ["memory", "rank", "-q", "coffee", "--explain"], ["context", "-q", "coffee"],
])
def test_memory_text_reaches_the_terminal_without_control_characters(hostile_ws, args):
    proc = miniclaw(hostile_ws, *args)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode("utf-8")
    assert "Coffee" in out and "end" in out
    assert not CONTROL.search(out.replace("\n", "").replace("\t", ""))


@pytest.mark.parametrize("args", [["memory", "read", "--long", "--json"],
                                  ["memory", "rank", "-q", "coffee", "--json"],
                                  ["context", "-q", "coffee", "--json"]])
def test_json_output_keeps_the_text_escaped(hostile_ws, args):
    proc = miniclaw(hostile_ws, *args)
    assert proc.returncode == 0, proc.stderr
    assert b"\x1b" not in proc.stdout and b"\\u001b]52;c;" in proc.stdout
    json.loads(proc.stdout)


def test_a_model_answer_and_a_server_error_reach_the_terminal_clean(workspace):
    script = [stream(*text_chunks("Here ", HOSTILE, " done")),
              reply(500, {"error": {"message": f"boom {HOSTILE}"}})]
    with FakeModelServer(script) as server:
        proc = miniclaw(workspace, "chat", "--base-url", server.url, "--model", "m",
                        stdin=b"first\nsecond\n")
    assert proc.returncode == 1  # piped, and the second turn failed
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert "Here" in out and "done" in out and "Error: " in err and "boom" in err
    assert not CONTROL.search((out + err).replace("\n", ""))


@pytest.mark.parametrize("args", [
    ["memory", "add", b"\xff"], ["memory", "add", "--long", b"caf\xe9"],
    ["memory", "add", "ok", "--tag", b"\xfe"], ["memory", "rank", "-q", b"\xff"],
    ["context", "-q", b"\xff"], ["chat", "--once", b"\xff"], ["memory", "add", "--", b"-\xff"],
])
def test_argv_that_is_not_utf8_is_one_error_line_and_nothing_written(workspace, args):
    before = sorted(p.name for p in (workspace / "memory").iterdir())
    proc = miniclaw(workspace, *args)
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.startswith("Error: argument ") and "is not valid UTF-8" in err
    assert len(err.splitlines()) == 1
    assert sorted(p.name for p in (workspace / "memory").iterdir()) == before
    assert not (workspace / "sessions").exists()


def test_a_workspace_path_that_is_not_utf8_is_still_a_path(tmp_path):
    ws = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    proc = subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", ws, "init"],
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert os.path.isfile(os.path.join(ws, b"memory", b"MEMORY.md"))


def test_piped_chat_lines_that_are_not_utf8_are_refused_one_by_one(workspace):
    proc = miniclaw(workspace, "chat", stdin=b"/note caf\xe9\n/remember \xff\xfe\n/note fine\n")
    assert proc.returncode == 1  # piped, and two lines were refused
    err = proc.stderr.decode()
    assert err.count("Error: that line is not valid UTF-8 text") == 2 and "Traceback" not in err
    notes = list((workspace / "memory").glob("2*.md"))
    assert len(notes) == 1 and "fine" in notes[0].read_text() and "caf" not in notes[0].read_text()
    assert not (workspace / "memory" / "MEMORY.md").exists()


@pytest.mark.parametrize("json_flag", [True, False])
def test_output_is_valid_utf8_for_a_path_that_is_not(workspace, tmp_path, json_flag):
    index = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"index-\xff.sqlite3"))
    args = ["memory", "status"] + (["--json"] if json_flag else [])
    for env in ({"PYTHONUTF8": "1"}, {"PYTHONUTF8": "0", "LC_ALL": "C"}):
        proc = miniclaw(workspace, *args, env={"MINICLAW_INDEX": index, **env})
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout.decode("utf-8")  # strict: no byte that is not UTF-8
        assert "index-\ufffd.sqlite3" in (json.loads(out)["index_path"] if json_flag else out)


@given(st.text())
def test_printable_leaves_no_control_and_always_encodes(text):
    shown = printable(text)
    assert not CONTROL.search(shown)
    shown.encode("utf-8")
    assert printable(shown) == shown


@given(st.text(), st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=3))
def test_colour_keeps_its_own_codes_and_nothing_else(text, spans):
    style = Style(True)
    codes = set(style._codes.values())
    for shown in (style(text, "bold", "yellow"), style.highlight(text, spans)):
        for code in codes:
            shown = shown.replace(code, "")
        assert not CONTROL.search(shown)


@pytest.mark.parametrize("exception, where, printed", [
    ("InvalidStateError", "_chain_future.<locals>._set_state", False),  # the Ctrl-C race
    ("InvalidStateError", "elsewhere", True),
    ("RuntimeError", "_chain_future.<locals>._set_state", True),
])
def test_the_ctrl_c_race_of_asyncios_future_chain_is_the_one_callback_error_not_printed(
        caplog, exception, where, printed):
    """Python 3.11's asyncio: a Ctrl-C cancelling the command between a worker's result
    arriving and being set raised InvalidStateError in a callback, and its traceback was
    printed though the command ended as any Ctrl-C does (seen once in
    tests/reliability/test_index_safety.py under load). Every other error of a callback is
    printed as asyncio prints it."""
    import asyncio

    from miniclaw.cli.app import not_the_ctrl_c_race

    def callback() -> None:
        pass

    callback.__qualname__ = where
    loop = asyncio.new_event_loop()
    try:
        handle = asyncio.Handle(callback, (), loop)
        error = (asyncio.InvalidStateError if exception == "InvalidStateError"
                 else RuntimeError)("invalid state")
        with caplog.at_level("ERROR", logger="asyncio"):
            not_the_ctrl_c_race(loop, {"message": f"Exception in callback {handle!r}",
                                       "exception": error, "handle": handle})
    finally:
        loop.close()
    assert bool(caplog.records) is printed

