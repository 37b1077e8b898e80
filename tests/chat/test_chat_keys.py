"""Issue 18, the chat: /commands in --once, `//`, /forget, the forget_memory tool (offered
only where the person can confirm), and Ctrl-C / Ctrl-D at a real terminal (a pty)."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.chat.conftest import transcript_records
from tests.chat.server import PAUSE, FakeModelServer, stream, text_chunks, tool_call_chunks
from tests.chat.test_cli_chat import miniclaw, today, ws  # noqa: F401  (the fixture)
from tests.conftest import write


def test_once_runs_a_command_instead_of_asking_the_model(ws):
    with FakeModelServer() as server:
        proc = miniclaw(ws, "chat", "--once", "/note Bought oat milk", "--base-url", server.url,
                        "--model", "tiny")
    assert proc.returncode == 0, proc.stderr
    assert "Noted in today's daily note" in proc.stdout
    assert server.requests == []
    assert "Bought oat milk" in (ws / "memory" / f"{today()}.md").read_text()


def test_once_with_a_bad_command_is_a_usage_error(ws):
    proc = miniclaw(ws, "chat", "--once", "/nosuch thing")
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: there is no command /nosuch")


def test_a_double_slash_sends_a_literal_slash(ws):
    with FakeModelServer() as server:
        proc = miniclaw(ws, "chat", "--base-url", server.url, "--model", "tiny",
                        stdin="//etc/hosts is a file?\n")
    assert proc.returncode == 0, proc.stderr
    assert server.requests[0]["messages"][-1] == {"role": "user",
                                                   "content": "/etc/hosts is a file?"}


def test_slash_forget_in_a_piped_chat(ws):
    proc = miniclaw(ws, "chat", stdin="/forget memory/MEMORY.md:4\n")
    assert proc.returncode == 0, proc.stderr
    assert "Forgot memory/MEMORY.md:4: Project Atlas deadline moved to March 3" in proc.stdout
    assert "Atlas" not in (ws / "memory" / "MEMORY.md").read_text()


def test_a_piped_chat_neither_offers_nor_runs_forget_memory(ws):
    call = tool_call_chunks("c1", "forget_memory", {"citation": "memory/MEMORY.md:4"})
    with FakeModelServer([stream(*call), stream(*text_chunks("Done."))]) as server:
        proc = miniclaw(ws, "chat", "--base-url", server.url, "--model", "tiny",
                        stdin="forget the atlas deadline\n")
    offered = [tool["function"]["name"] for tool in server.requests[0]["tools"]]
    assert "forget_memory" not in offered
    assert "[forget_memory failed: there is no tool called 'forget_memory'" in proc.stdout
    assert "Atlas" in (ws / "memory" / "MEMORY.md").read_text()


# -- at a terminal -------------------------------------------------------------------------

class Terminal:
    """`miniclaw chat` on a pseudo-terminal: what a person types, what they see."""

    def __init__(self, ws: Path, *args: str) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "miniclaw", "--workspace", str(ws), "chat", *args],
            stdin=slave, stdout=slave, stderr=slave, env={**os.environ, "TERM": "dumb"},
            close_fds=True)
        os.close(slave)
        self.seen = ""
        self.mark = 0

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait_for(self, text: str, seconds: float = 20) -> None:
        """Wait until `text` shows after what was waited for before (a person types only
        once the prompt is back: keys typed earlier reach the terminal, not readline)."""
        deadline = time.monotonic() + seconds
        while text not in self.seen[self.mark:]:
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {text!r}; saw {self.seen!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    self.seen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:  # the process closed the terminal
                    assert text in self.seen[self.mark:], self.seen
                    break
        self.mark = self.seen.index(text, self.mark) + len(text)

    def ctrl_c(self) -> None:
        self.proc.send_signal(signal.SIGINT)  # what the terminal sends for Ctrl-C

    def close(self) -> int:
        try:
            try:
                code = self.proc.wait(20)
            except subprocess.TimeoutExpired:
                raise AssertionError(self.seen) from None
        finally:
            self.proc.kill()
            os.close(self.master)
        return code


def test_ctrl_c_cancels_the_line_then_the_answer_and_ctrl_d_leaves(ws):
    script = [stream({"choices": [{"index": 0, "delta": {"content": "Half an"},
                                   "finish_reason": None}]}, PAUSE, *text_chunks(" answer")),
              stream(*text_chunks("Still here."))]
    with FakeModelServer(script) as server:
        term = Terminal(ws, "--base-url", server.url, "--model", "tiny")
        try:
            term.wait_for("you> ")
            term.type("a line I regret")
            time.sleep(0.2)  # let readline take the characters before the signal
            term.ctrl_c()
            term.wait_for("^C")
            term.wait_for("you> ")
            term.type("tell me something\r")
            term.wait_for("Half an")
            term.ctrl_c()
            term.wait_for("(interrupted)")
            term.wait_for("you> ")
            term.type("are you still there?\r")
            term.wait_for("Still here.")
            term.wait_for("you> ")
            term.type("\x04")  # Ctrl-D
            term.wait_for("Bye.")
        finally:
            code = term.close()
    assert code == 0
    said = [(r["role"], r["content"], r.get("interrupted", False)) for r in transcript_records(ws)]
    assert said == [("user", "tell me something", False), ("assistant", "Half an", True),
                    ("user", "are you still there?", False), ("assistant", "Still here.", False)]
    assert "a line I regret" not in json.dumps([r["content"] for r in server.requests[-1]["messages"]])


def test_the_model_forgets_only_what_the_person_confirms(ws):
    write(ws, "memory/MEMORY.md", f"# Memory\n\n## {today()}\n"
          "- Project Atlas deadline moved to March 3 (added at 2026-02-14T17:40:11Z)\n"
          "- Sam prefers green tea (added at 2026-02-14T17:41:00Z)\n")
    forget = lambda line: stream(*tool_call_chunks("c", "forget_memory",  # noqa: E731
                                                   {"citation": f"memory/MEMORY.md:{line}"}))
    script = [forget(4), stream(*text_chunks("Kept it.")),
              forget(5), stream(*text_chunks("Forgotten."))]
    with FakeModelServer(script) as server:
        term = Terminal(ws, "--base-url", server.url, "--model", "tiny")
        try:
            term.wait_for("you> ")
            term.type("forget the atlas deadline\r")
            term.wait_for("Forget it? [y/N] ")
            term.type("n\r")
            term.wait_for("Kept it.")
            term.wait_for("you> ")
            term.type("forget the tea\r")
            term.wait_for("Sam prefers green tea\r\nForget it? [y/N] ")
            term.type("y\r")
            term.wait_for("Forgotten.")
            term.wait_for("you> ")
            term.type("/exit\r")
            term.wait_for("Bye.")
        finally:
            code = term.close()
    assert code == 0
    offered = [tool["function"]["name"] for tool in server.requests[0]["tools"]]
    assert "forget_memory" in offered
    text = (ws / "memory" / "MEMORY.md").read_text()
    assert "Atlas" in text and "green tea" not in text
    tools = [r["content"] for r in transcript_records(ws) if r["role"] == "tool"]
    assert tools[0].startswith("[forget_memory failed: the user chose to keep memory/MEMORY.md:4")
    assert tools[1] == "[forgot memory/MEMORY.md:5: Sam prefers green tea]"
