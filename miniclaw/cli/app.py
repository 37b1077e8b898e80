"""The root command, shared options, and the one place where errors become exit codes.

Exit codes (docs/ARCHITECTURE.md): 0 success (including "no results"), 1 runtime failure, 2 bad usage
or bad input. Every error is one `Error: ...` line on stderr; `--debug` adds the traceback.
Only typer and the standard library are imported at module level: start-up time matters to
agents that call `miniclaw memory rank` in loops.
"""


import logging
import os
import sys
from collections.abc import Coroutine, Iterator, MutableMapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperGroup

T = TypeVar("T")

_state = {"debug": False}


class _WarningLine(logging.Handler):
    """Library warnings (a damaged file, a rebuilt index) as `Warning: ...` on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        from miniclaw.cli.render import printable

        sys.stderr.write(printable(f"Warning: {record.getMessage()}") + "\n")


#: `--json` as every reporting command offers it (one JSON object, nothing else on stdout).
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object and nothing else on stdout.")]
#: `--format` as every reporting command offers it (`output_format` reads it with --json):
#: text or json, and markdown where a command has a Markdown form (search, sessions search).
FormatOption = Annotated[str | None, typer.Option("--format", "-f", metavar="[text|json]", help="Output: text (default) or json (the same as --json).", show_default=False)]
MarkdownFormatOption = Annotated[str | None, typer.Option("--format", "-f", metavar="[text|json|markdown]", help="Output: text (default), json (the same as --json) or markdown.", show_default=False)]


def output_format(output: str | None, json_out: bool, forms: tuple[str, ...] = ("text", "json")) -> str:
    """The form `--format` (one of `forms`) and `--json` ask for: text unless either says."""
    from miniclaw.errors import UsageError

    form = (output or ("json" if json_out else "text")).strip().lower()
    if form not in forms:
        raise UsageError(f"--format must be {', '.join(forms[:-1])} or {forms[-1]}, not {output!r}")
    if json_out and form != "json":
        raise UsageError("--json asks for JSON: choose one of --json or --format")
    return form


class MiniclawGroup(TyperGroup):
    """Typer's group, with miniclaw's error contract instead of click's usage box, and its
    help (exit 0) when called bare (`miniclaw`, `miniclaw memory`). Only Typer's public
    names are used: `TyperException` is the base of its usage errors."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            typer.echo(ctx.get_help())
            raise typer.Exit(0)
        return super().parse_args(ctx, args)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True,
             **extra: Any) -> Any:
        from miniclaw.errors import MiniclawError

        try:
            _check_utf8(sys.argv[1:] if args is None else list(args))
            result = super().main(args, prog_name or "miniclaw", complete_var,
                                  standalone_mode=False, **extra)
            code = result if isinstance(result, int) else 0
        except typer.TyperException as exc:  # a usage error found by the parser
            words = sys.argv[1:] if args is None else list(args)
            code = _fail(exc.format_message() + _query_hint(exc, words), exc.exit_code, exc)
        except BrokenPipeError:
            # The reader went away (`miniclaw ... | head`): not an error worth a traceback.
            sys.stderr.close()
            code = 1
        except MiniclawError as exc:
            code = _fail(str(exc), exc.exit_code, exc)
        except OSError as exc:  # not converted by the library: still one line, not a traceback
            where = f": {exc.filename}" if exc.filename else ""
            code = _fail(f"{exc.strerror or exc}{where}", 1, exc)
        except typer.Abort:
            sys.stderr.write("Aborted.\n")
            code = 1
        except typer.Exit as exc:
            code = exc.exit_code

        if standalone_mode:
            sys.exit(code)
        return code


def _query_hint(exc: Exception, args: list[str]) -> str:
    """For an unknown option that was a word (`-draft`: the parser reads `-d` and the rest)
    on a command that takes a query: how to search for a query that starts with -word; for
    a long option typed with one dash (`-json`), which one was meant."""
    name = getattr(exc, "option_name", None) or ""
    command = getattr(getattr(exc, "ctx", None), "command", None)
    params = getattr(command, "params", ())
    if not any(param.name in ("query", "query_words", "message") for param in params) \
            or len(name) != 2 or name[0] != "-" or not name[1].isalpha():
        return ""
    options = [param for param in params if getattr(param, "param_type_name", "") == "option"]
    longs = [o for param in options for o in (*param.opts, *param.secondary_opts)
             if o.startswith("--")]
    valued = {o for param in options if not param.is_flag and not param.count
              for o in param.opts}
    skip, word = False, None
    for arg in args:  # the argument the parser failed on, not an option's value
        if not skip and arg.startswith(name) and len(arg) > 2 and arg[1:].isalnum():
            word = arg
            break
        skip = arg in valued
    if word is None:
        return ""
    meant = [o for o in longs if o.startswith("-" + word)]
    if meant:
        return f" (did you mean {meant[0]}?)"
    path = getattr(exc.ctx, "command_path", "") or f"miniclaw {command.name}"
    return f" (a query that starts with a -word goes after --: {path} -- \"{word} ...\")"


#: The commands and groups under the root, in the order `miniclaw --help` lists them, each as
#: "module:Typer app". Only the one a command line names is imported and built (RootGroup).
SUBCOMMANDS = {
    "init": "miniclaw.cli.workspace:init_app",
    "chat": "miniclaw.cli.chat:chat_app",
    "context": "miniclaw.cli.context:context_app",
    "mcp": "miniclaw.cli.mcp:mcp_app",
    "doctor": "miniclaw.cli.doctor:doctor_app",
    "search": "miniclaw.cli.memory:search_app",
    "memory": "miniclaw.cli.memory:memory_app",
    "index": "miniclaw.cli.index:index_app",
    "sources": "miniclaw.cli.sources:sources_app",
    "sessions": "miniclaw.cli.sessions:sessions_app",
}


def command_app() -> typer.Typer:
    """The Typer app of one command built on demand (SUBCOMMANDS, the memory group's): no
    completion options of its own (the root has them) and plain help like the root's."""
    return typer.Typer(add_completion=False, rich_markup_mode=None)


def group_app(name: str, help: str, cls: type[TyperGroup] | None = None) -> typer.Typer:
    """A group of commands (`memory`, `index`, `sources`, `sessions`): miniclaw's error
    contract, its help when called bare, and plain help like the root's."""
    return typer.Typer(cls=cls or MiniclawGroup, name=name, help=help, no_args_is_help=True,
                       rich_markup_mode=None)


class _OnDemand(MutableMapping):
    """A group's commands by name, each built from its Typer app (Typer's public
    `get_group`/`get_command`) the first time it is looked up: Typer inspects every
    command's signature, and a start that built all 19 commands to run one paid ~7 ms
    (benchmarks/README.md), more than the search itself on a small workspace."""

    def __init__(self, built: dict, table: dict[str, str]) -> None:
        self._built, self._table = dict(built), dict(table)

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            from importlib import import_module

            from typer.main import get_command, get_group

            module, attribute = self._table[name].split(":")  # KeyError: no such command
            sub = getattr(import_module(module), attribute)
            group = isinstance(sub.info.cls, type) and issubclass(sub.info.cls, TyperGroup)
            self._built[name] = get_group(sub) if group else get_command(sub)
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self._built and name not in self._table:
            raise KeyError(name)
        self._built.pop(name, None)
        self._table.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        yield from self._table
        yield from (name for name in self._built if name not in self._table)

    def __len__(self) -> int:
        return len(self._table.keys() | self._built.keys())


class OnDemandGroup(MiniclawGroup):
    """A group whose commands (`subcommands`: name -> "module:Typer app") are built on
    demand, beside any that Typer registered (`app.add_typer`). Listing them (help,
    completion, "Did you mean") needs no building; looking one up builds that one only."""

    subcommands: dict[str, str] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _OnDemand(self.commands, self.subcommands)


class RootGroup(OnDemandGroup):
    """The root group: `miniclaw memory rank` builds the root, the memory group and rank."""

    subcommands = SUBCOMMANDS


def _check_utf8(args: list[str]) -> None:
    """Refuse arguments that are not UTF-8 before any command runs (Python hands their bytes
    over as lone surrogates, which no file or terminal can take). The workspace path is
    exempt: a path is bytes, and any bytes name a folder."""
    from miniclaw.errors import UsageError
    from miniclaw.text import is_utf8

    value_next, options = False, True
    for number, arg in enumerate(args, 1):
        if value_next:  # the path after -w or --workspace
            value_next = False
            continue
        if options:
            if arg == "--":  # what follows is text, even if it starts with -w
                options = False
                continue
            if arg in ("-w", "--workspace"):
                value_next = True
                continue
            if arg.startswith(("--workspace=", "-w")):
                continue
        if not is_utf8(arg):
            raise UsageError(f"argument {number} is not valid UTF-8 text (check the encoding "
                             "of the terminal or script that passed it); nothing was done")


def _fail(message: str, code: int, exc: BaseException) -> int:
    if _state["debug"]:
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    from miniclaw.cli.render import printable
    from miniclaw.entries.privacy import visible_typed

    message = visible_typed(message)  # an error may quote what was typed: never its private part
    first = message.strip().splitlines()[0] if message.strip() else type(exc).__name__
    sys.stderr.write(f"Error: {printable(first)}\n")
    return code


ROOT_HELP = """miniclaw: a personal assistant whose memory is plain Markdown you own.

Long-term memory is memory/MEMORY.md, and each day has its note, memory/YYYY-MM-DD.md;
searches keep their index (a cache) up to date by themselves.

\b
Examples:
  miniclaw init                                    create ~/.miniclaw/workspace
  miniclaw memory add "Prefers dark roast" --long  remember for good
  echo "Call Sam back" | miniclaw memory add       today's note, from a pipe
  miniclaw search "atlas budget" --all             search all history
  miniclaw memory forget memory/2026-02-14.md:5    remove a memory
  miniclaw chat                                    talk, with memory in the prompt
  miniclaw --install-completion                    tab completion for your shell
"""

app = typer.Typer(
    cls=RootGroup,
    name="miniclaw",
    help=ROOT_HELP,
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from miniclaw import __version__

        typer.echo(f"miniclaw {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    workspace: Annotated[str | None, typer.Option(
        "--workspace", "-w", metavar="PATH", envvar="MINICLAW_WORKSPACE", show_envvar=True,
        help="Workspace folder [default: $MINICLAW_HOME/workspace, ~/.miniclaw/workspace].",
    )] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of errors.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """The global options (the root help is ROOT_HELP, above)."""
    from miniclaw.config import resolve_workspace
    from miniclaw.errors import UsageError

    _state["debug"] = debug
    if workspace is not None and not workspace.strip():
        raise UsageError("--workspace is empty: give the workspace folder (or leave it out "
                         "for ~/.miniclaw/workspace)")
    logger = logging.getLogger("miniclaw")
    if not any(isinstance(h, _WarningLine) for h in logger.handlers):
        logger.addHandler(_WarningLine())
    logger.setLevel(logging.WARNING)
    ctx.obj = resolve_workspace(workspace)


def workspace_of(ctx: typer.Context) -> Path:
    """The workspace chosen by --workspace, MINICLAW_WORKSPACE or the default."""
    root_ctx = ctx.find_root()
    if root_ctx.obj is None:
        from miniclaw.config import resolve_workspace

        root_ctx.obj = resolve_workspace(None)
    return root_ctx.obj


def one_query(words: str | None, option: str | None, command: str, name: str = "query") -> str:
    """The query given as the command's argument or with -q (scripts), exactly once:
    `search`, `memory rank` and `context` take it the same way."""
    from miniclaw.errors import UsageError

    if words is not None and option is not None:
        raise UsageError(f"give the {name} once: as {name.upper()} or with -q/--query, not both")
    if words is None and option is None:
        raise UsageError(f"give a {name}: miniclaw {command} {name.upper()} (or -q {name.upper()})")
    return option if words is None else words


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one library coroutine to completion: the CLI's only event loop. Its blocking
    work runs in one worker thread: a one-shot command does one operation, and a thread
    per source (each opening its own index connection) cost a search beside three stores
    ~10 ms more CPU than it saved in wall time (benchmarks/README.md)."""
    import asyncio

    async def in_one_thread() -> T:
        from concurrent.futures import ThreadPoolExecutor

        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(1, thread_name_prefix="miniclaw-cli"))
        loop.set_exception_handler(not_the_ctrl_c_race)
        return await coro

    main = in_one_thread()
    loop = None
    try:
        loop = asyncio.new_event_loop()
        with asyncio.Runner(loop_factory=lambda: loop) as runner:
            return runner.run(main)
    finally:
        # A Ctrl-C can land before the loop runs the command (inside the Runner's set-up,
        # before its task exists), and the Runner then closes neither: the coroutines would
        # be "never awaited" and the loop "unclosed" on stderr. Closing twice is harmless.
        main.close()
        coro.close()
        if loop is not None:
            loop.close()


def not_the_ctrl_c_race(loop, context: dict) -> None:
    """The event loop's handler of errors in callbacks: asyncio's own (a message and a
    traceback on stderr), but for one race. A Ctrl-C's handler cancels the command's
    task at once; when that lands between asyncio checking that the awaited worker's
    future is not cancelled and setting its result (`futures._chain_future`, Python
    3.11), the setting raises InvalidStateError in a callback, though nothing failed: the
    command ends with 130 as for any Ctrl-C, and that traceback is not printed."""
    import asyncio

    if isinstance(context.get("exception"), asyncio.InvalidStateError) \
            and "_chain_future" in repr(context.get("handle")):
        return
    loop.default_exception_handler(context)


def use_color(stream=None) -> bool:
    """Colour only on a terminal, and never with NO_COLOR set (https://no-color.org)."""
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
