"""The chat loop at the terminal: read a line, let the session act on it, until the end.

This is the chat's one event loop (`asyncio.Runner`, kept open for the whole session so the
store and the HTTP client live across turns). Lines are read here in the main thread, between
turns, not in a worker thread. At a terminal, Ctrl-C cancels the line being typed, or the
answer being streamed (what was said is kept in the transcript, marked interrupted), and the
session goes on; Ctrl-D (or /exit) leaves, with exit code 0 and a goodbye line. On a
terminal, the prompt has line editing and history (readline); from a pipe, lines are read
one by one, with no prompt and no banner, Ctrl-C ends the session, and the exit code is 1
when a turn failed (a script must see it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TextIO

from miniclaw.chat.loop import ChatSession
from miniclaw.interrupts import ctrl_c_waits, interrupts_not_lost

PROMPT = "you> "


def run_console(open_session: Callable[[], Awaitable[ChatSession]], *, stdin: TextIO,
                stdout: TextIO, stderr: TextIO, interactive: bool) -> int:
    """Run a chat session on these streams; returns the exit code."""
    if interactive:
        try:
            import readline  # noqa: F401  (gives input() editing and history)
        except ImportError:  # not on every platform
            pass
    runner = asyncio.Runner()
    session: ChatSession | None = None
    ended = False
    try:
        try:
            with interrupts_not_lost():
                session = runner.run(open_session())
                _converse(runner, session, stdin, stdout, stderr, interactive)
        except KeyboardInterrupt:
            if session is None:  # while opening: there is no session to end
                raise
            stdout.write("\n")
        ended = True
    finally:
        with ctrl_c_waits():  # the session is ending: a Ctrl-C now must not cut that short
            try:
                if session is not None:
                    runner.run(session.aclose())
            finally:
                runner.close()
            if ended:
                _goodbye(session, stdout, stderr)
    return 1 if session.failed and not interactive else 0


def _converse(runner: asyncio.Runner, session: ChatSession, stdin: TextIO, stdout: TextIO,
              stderr: TextIO, interactive: bool) -> None:
    """Read lines and act on them until the user leaves (a piped Ctrl-C: KeyboardInterrupt)."""
    if interactive:
        session.confirm = _confirm_at(stdout)
        stderr.write(f"miniclaw chat with {session.provider.describe()}\n"
                     "Type a message, /help for commands, /exit or Ctrl-D to leave.\n")
        stderr.flush()
    while True:
        line = _read(stdin, stdout, interactive)
        if line is None:
            return
        try:
            if not runner.run(session.handle(line)):
                return
        except KeyboardInterrupt:
            if not interactive:
                raise
            stderr.write("(interrupted)\n")
            stderr.flush()
        if interactive:
            stdout.write("\n")


def _goodbye(session: ChatSession, stdout: TextIO, stderr: TextIO) -> None:
    saved = session.transcript.path
    where = f" The conversation is in {saved}." if saved.exists() else ""
    stdout.flush()
    stderr.write(f"Bye.{where}\n")
    stderr.flush()


def _read(stdin: TextIO, stdout: TextIO, interactive: bool) -> str | None:
    """The next line the user typed ("" after Ctrl-C at the prompt), or None at the end."""
    if interactive:
        try:
            return input(PROMPT)
        except EOFError:  # Ctrl-D
            stdout.write("\n")
            return None
        except KeyboardInterrupt:  # Ctrl-C: drop the line, prompt again
            stdout.write("^C\n")
            return ""
    line = stdin.readline()
    return line.rstrip("\r\n") if line else None


def _confirm_at(stdout: TextIO) -> Callable[[object], Awaitable[bool]]:
    """Ask the person at the terminal before the model removes a memory."""
    async def confirm(entry) -> bool:
        from miniclaw.text import printable

        stdout.write(f"\nThe assistant wants to forget {entry.citation}:\n"
                     f"    {printable(' '.join(entry.text.split()))}\n")
        stdout.flush()
        try:
            answer = input("Forget it? [y/N] ")
        except (EOFError, KeyboardInterrupt):
            return False
        return answer.strip().lower() in ("y", "yes")

    return confirm
