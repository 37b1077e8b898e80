"""The `miniclaw` command line: a thin layer over the library (see `app.py`)."""

from __future__ import annotations

import copy
import os
import sys

from miniclaw.cli.app import app
from miniclaw.cli.memory import memory_app
from miniclaw.cli import workspace as _workspace  # noqa: F401  (registers `init`)
from miniclaw.cli import chat as _chat  # noqa: F401  (registers `chat`)
from miniclaw.cli import context as _context  # noqa: F401  (registers `context`)
from miniclaw.cli import mcp as _mcp  # noqa: F401  (registers `mcp`)

app.add_typer(memory_app)

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


def _only(args: list[str]):
    """A copy of the app holding just the command being run, or None to use the full app.

    Typer builds the parser of every command at each start; agents run `memory rank` in
    loops, so building one command instead of eight is start-up time saved on every call.
    """
    path = _command_path(args)
    if not path or "--help" in args or "-h" in args:
        return None
    pruned = copy.copy(app)
    if path[0] == "memory":
        if len(path) < 2 or path[1] not in {c.name for c in memory_app.registered_commands}:
            return None
        group = copy.copy(memory_app)
        group.registered_commands = [c for c in memory_app.registered_commands if c.name == path[1]]
        info = copy.copy(app.registered_groups[0])
        info.typer_instance = group
        pruned.registered_groups, pruned.registered_commands = [info], []
    else:
        commands = [c for c in app.registered_commands if c.name == path[0]]
        if not commands:
            return None
        pruned.registered_groups, pruned.registered_commands = [], commands
    return pruned


def main() -> None:
    """The console script. It ends with `os._exit` once the command has returned and its
    output is flushed: tearing down the interpreter (freeing every module and object) costs
    ~15 ms, more than a search, and buys nothing here, since each command closes its own
    files, index connections and threads before it returns. Under a profiler or a coverage
    tracer it exits normally, so that they can write their reports."""
    watched = sys.gettrace() is not None or sys.getprofile() is not None
    try:
        (_only(sys.argv[1:]) or app)()
        code = 0
    except SystemExit as exc:
        if watched:
            raise
        code = exc.code
    except KeyboardInterrupt:  # Ctrl-C before click's own handling starts (building commands)
        if watched:
            raise
        sys.stderr.write("Aborted.\n")
        code = 1
    if watched:
        return
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"), as Python would report it
        if sys.stderr is not None:
            sys.stderr.write(f"{code}\n")
        code = 1
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started with that stream closed (`>&-`)
            continue
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: the output was not all delivered
            code = code or 1
    os._exit(code)


__all__ = ["app", "main"]
