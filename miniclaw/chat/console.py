"""The chat loop at the terminal: read a line, let the session act on it, until the end.

This is the chat's one event loop (`asyncio.Runner`, kept open for the whole session so the
store and the HTTP client live across turns). Lines are read here in the main thread, between
turns, not in a worker thread: so Ctrl-C and Ctrl-D at the prompt simply end the session,
and Ctrl-C during an answer stops it and ends the session too, always with exit code 0 and
a goodbye line. On a terminal, the prompt has line editing and history (readline); from a
pipe, lines are read one by one, with no prompt and no banner.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TextIO

from miniclaw.chat.loop import ChatSession

PROMPT = "you> "


def run_console(open_session: Callable[[], Awaitable[ChatSession]], *, stdin: TextIO,
                stdout: TextIO, stderr: TextIO, interactive: bool) -> int:
    """Run a chat session on these streams; returns the exit code (0)."""
    if interactive:
        try:
            import readline  # noqa: F401  (gives input() editing and history)
        except ImportError:  # not on every platform
            pass
    with asyncio.Runner() as runner:
        session = runner.run(open_session())
        try:
            if interactive:
                stderr.write(f"miniclaw chat with {session.provider.describe()}\n"
                             "Type a message, /help for commands, /exit or Ctrl-D to leave.\n")
                stderr.flush()
            while True:
                line = _read(stdin, stdout, interactive)
                if line is None or not runner.run(session.handle(line)):
                    break
                if interactive:
                    stdout.write("\n")
        except KeyboardInterrupt:
            stdout.write("\n")
        finally:
            runner.run(session.aclose())
    saved = session.transcript.path
    where = f" The conversation is in {saved}." if saved.exists() else ""
    stdout.flush()
    stderr.write(f"Bye.{where}\n")
    stderr.flush()
    return 0


def _read(stdin: TextIO, stdout: TextIO, interactive: bool) -> str | None:
    """The next line the user typed, or None at the end of input."""
    if interactive:
        try:
            return input(PROMPT)
        except EOFError:  # Ctrl-D
            stdout.write("\n")
            return None
    line = stdin.readline()
    return line.rstrip("\r\n") if line else None
