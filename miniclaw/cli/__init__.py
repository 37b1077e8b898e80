"""The `miniclaw` command line: a thin layer over the library (see `app.py`)."""

from __future__ import annotations

import contextlib
import os
import sys

from miniclaw.cli.app import app  # its commands (app.SUBCOMMANDS) are imported when named
from miniclaw.interrupts import interrupts_not_lost

_VALUE_OPTIONS = {"-w", "--workspace"}


def _command_path(args: list[str]) -> list[str]:
    """The words naming the command in `args` (`["memory", "rank"]`), skipping root options."""
    path, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in _VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            path.append(arg)
            if len(path) == 2 or arg != "memory":
                break
        elif path:  # an option of the command itself: the path is complete
            break
    return path


# One-shot commands that only read and print. When one has returned, its files, index
# connections and threads are closed, so tearing down the interpreter (freeing every module
# and object, ~15 ms, more than a search) buys nothing, and `main` ends with `os._exit`.
# Every other command (writers, `index`, `chat`, `mcp`) exits normally, finalizers and all.
FAST_EXIT = frozenset({("search",), ("memory", "rank"), ("memory", "read"), ("memory", "recent"),
                       ("memory", "status"), ("context",)})


def main() -> None:
    """The console script: the whole app, its exit code, and nothing lost on the way out.
    Under a profiler or a coverage tracer it always exits normally, so that they can write
    their reports."""
    watched = sys.gettrace() is not None or sys.getprofile() is not None
    fast = not watched and tuple(_command_path(sys.argv[1:])) in FAST_EXIT
    try:
        with interrupts_not_lost():  # a Ctrl-C in a finalizer still ends the command
            app()
        code = 0
    except SystemExit as exc:
        if watched:
            raise
        code = exc.code
    except KeyboardInterrupt:  # Ctrl-C before Typer's own handling starts: its exit code, 130
        if watched:
            raise
        sys.stderr.write("Aborted.\n")
        code = 130
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"), as Python would report it
        if sys.stderr is not None:
            sys.stderr.write(f"{code}\n")
        code = 1
    code = _flush(code)
    if fast:
        os._exit(code)
    sys.exit(code)


def _flush(code: int) -> int:
    """Flush stdout and stderr; when the reader went away (`| head`), exit 1 quietly: the
    output was not all delivered, and the interpreter must not report it again on exit."""
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started with that stream closed (`>&-`)
            continue
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 1
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    return code


__all__ = ["app", "main"]
