"""`miniclaw memory ...`: add, read, recent, rank, index, status.

Each command parses its options, calls one `MemoryStore` coroutine through `run`, and hands
the result to `render`. The library is imported inside the commands, so `--help` stays fast.
"""


import sys
from typing import Annotated

import typer

from miniclaw.cli.app import MiniclawGroup, run, use_color, workspace_of
from miniclaw.cli.zone_help import ZoneHelpCommand

memory_app = typer.Typer(
    cls=MiniclawGroup,
    name="memory",
    help="Add, read and search memories (MEMORY.md and the daily notes).",
    no_args_is_help=True,
    rich_markup_mode=None,
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object and nothing else on stdout.")]


def _store(ctx: typer.Context):
    from miniclaw.memory import MemoryStore

    return MemoryStore(workspace_of(ctx))


def _style():
    from miniclaw.cli.render import Style

    return Style(use_color())


@memory_app.command("add", cls=ZoneHelpCommand)
def add(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The text to remember.", show_default=False)],
    long: Annotated[bool, typer.Option("--long", help="Add to long-term memory (MEMORY.md).")] = False,
    daily: Annotated[bool, typer.Option("--daily", help="Add to today's daily note (the default).")] = False,
    category: Annotated[str | None, typer.Option("--category", "-c", help="One category, e.g. decision, preference.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="A tag; repeat for more.")] = None,
    json_out: JsonOption = False,
) -> None:
    """Add a memory to today's daily note, or with --long to MEMORY.md.

    Text that starts with "-" goes after "--": miniclaw memory add -- "-5 degrees at dawn".
    Example: miniclaw memory add "Prefers dark roast coffee" --long --category preference
    """
    from miniclaw.errors import UsageError

    if long and daily:
        raise UsageError("choose one of --long or --daily, not both")

    async def work():
        async with _store(ctx) as store:
            if long:
                return await store.add_long_term(text, category=category, tags=tag or ())
            return await store.add_daily_note(text, category=category, tags=tag or ())

    entry = run(work())
    from miniclaw.cli.render import to_json

    if json_out:
        typer.echo(to_json({"added": entry.to_dict() if entry else None}))
    elif entry is None:
        typer.echo("Added (all of its text is private, so it will not show in searches).")
    else:
        where = "long-term memory" if long else "today's daily note"
        typer.echo(f"Added to {where}: {entry.citation}")


@memory_app.command("read", cls=ZoneHelpCommand)
def read(
    ctx: typer.Context,
    today: Annotated[bool, typer.Option("--today", help="Today's daily note (the default).")] = False,
    long: Annotated[bool, typer.Option("--long", help="Long-term memory (MEMORY.md).")] = False,
    date: Annotated[str | None, typer.Option("--date", help="The daily note of a day: YYYY-MM-DD, 'yesterday', '3d'.", show_default=False)] = None,
    json_out: JsonOption = False,
) -> None:
    """Print the entries of today's note, of MEMORY.md (--long) or of a day (--date).

    Private text is never shown. Example: miniclaw memory read --date 2026-02-14
    """
    from miniclaw.cli import render
    from miniclaw.dates import check_not_future, parse_day, zone_name
    from miniclaw.errors import UsageError

    if sum(bool(x) for x in (today, long, date is not None)) > 1:
        raise UsageError("choose one of --today, --long or --date")
    store = _store(ctx)
    if long:
        entries = run(store.read_long_term())
        title = f"Long-term Memory ({store.long_term_path.relative_to(store.workspace).as_posix()})"
    else:
        day = store.today()
        if date is not None:
            day = check_not_future(parse_day(date, day), day, zone=zone_name(store.zone))
        entries = run(store.read_day(day))
        title = f"Daily Note {day.isoformat()} (memory/{day.isoformat()}.md)"
    if json_out:
        typer.echo(render.entries_json(entries))
    else:
        typer.echo(render.entries_text(title, entries, _style(), zone_name(store.zone)))


@memory_app.command("recent", cls=ZoneHelpCommand)
def recent(
    ctx: typer.Context,
    days: Annotated[int, typer.Option("--days", "-d", help="How many days back, today included.")] = 7,
    json_out: JsonOption = False,
) -> None:
    """Print the daily notes of the last N days, newest first.

    Example: miniclaw memory recent -d 3
    """
    from miniclaw.cli import render
    from miniclaw.dates import zone_name

    store = _store(ctx)
    found = run(store.read_recent(days))
    if json_out:
        typer.echo(render.to_json({"days": days, "entries": [
            e.to_dict() for _, entries in found for e in entries]}))
    else:
        typer.echo(render.days_text(found, _style(), days, zone_name(store.zone)))


@memory_app.command("rank")
def rank(
    ctx: typer.Context,
    query: Annotated[str, typer.Option("--query", "-q", help='What to look for: words, "a phrase", +must, -mustnot, prefix*.', show_default=False)],
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many results (1-20).")] = 5,
    days: Annotated[int | None, typer.Option("--days", help="Daily notes of the last N days  [default: 30]", show_default=False)] = None,
    all_history: Annotated[bool, typer.Option("--all", help="Search all history, not just the last 30 days.")] = False,
    since: Annotated[str | None, typer.Option("--since", help="Only entries dated on or after DAY (2026-02-14, yesterday, 7d); replaces the 30-day window.", show_default=False)] = None,
    until: Annotated[str | None, typer.Option("--until", help="Only entries dated on or before DAY.", show_default=False)] = None,
    category: Annotated[str | None, typer.Option("--category", "-c", help="Only entries of this category.", show_default=False)] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="Only entries with this tag; repeat: all must match.", show_default=False)] = None,
    source: Annotated[list[str] | None, typer.Option("--source", help="Only long_term or daily_note; repeatable.", show_default=False)] = None,
    require: Annotated[list[str] | None, typer.Option("--require", help="Words every result must hold; repeatable.", show_default=False)] = None,
    exclude: Annotated[list[str] | None, typer.Option("--exclude", help="Words no result may hold; repeatable.", show_default=False)] = None,
    mode: Annotated[str | None, typer.Option("--mode", help="Ranking mode: bm25 (default) or keyword.", show_default=False)] = None,
    output: Annotated[str | None, typer.Option("--format", "-f", help="text (default), json or markdown.", show_default=False)] = None,
    json_out: JsonOption = False,
    explain: Annotated[bool, typer.Option("--explain", help="Show each score broken down by query term.")] = False,
    correct: Annotated[bool, typer.Option("--correct/--no-correct", help="Replace a misspelt word that matches nothing by the closest indexed spelling.")] = True,
) -> None:
    """Search memories and print the best matches, best first.

    MEMORY.md is always searched; daily notes of the last 30 days unless --days, --all,
    --since or --until. Ranked by score, then newest date. A misspelt word that matches
    nothing is replaced by the closest indexed spelling (never a real word; --no-correct:
    never), and the output says so.
    Example: miniclaw memory rank -q '"atlas budget" -draft' --since 2026-01-01 -n 5
    """
    from miniclaw.cli import render
    from miniclaw.dates import parse_day
    from miniclaw.errors import UsageError

    if all_history and days is not None:
        raise UsageError("choose one of --days or --all")
    if days is not None and (since is not None or until is not None):
        raise UsageError("choose --days or --since/--until: dates replace the window")
    form = _output_format(output, json_out)
    window = None if all_history else (30 if days is None else days)

    async def work():
        async with _store(ctx) as store:
            today = store.today()
            first = parse_day(since, today, flag="--since") if since is not None else None
            last = parse_day(until, today, flag="--until") if until is not None else None
            return await store.search(
                query, limit=limit, days=window, since=first, until=last, category=category,
                tags=tag or (), sources=source, mode=mode, require=require or (),
                exclude=exclude or (), explain=explain, correct=correct)

    found = run(work())
    if form == "json":
        typer.echo(render.search_json(found))
    elif form == "markdown":
        typer.echo(render.search_markdown(found))
    else:
        typer.echo(render.search_text(found, _style()))


def _output_format(output: str | None, json_out: bool) -> str:
    from miniclaw.errors import UsageError

    form = (output or ("json" if json_out else "text")).strip().lower()
    if form not in ("text", "json", "markdown"):
        raise UsageError(f"--format must be text, json or markdown, not {output!r}")
    if json_out and form != "json":
        raise UsageError("--json asks for JSON: choose one of --json or --format")
    return form


@memory_app.command("index")
def index(
    ctx: typer.Context,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Start from nothing instead of updating.")] = False,
) -> None:
    """Bring the search index up to date now (searches also do this by themselves).

    The index is a cache of the memory files; deleting it loses nothing.
    Example: miniclaw memory index --rebuild
    """
    progress = _Progress()

    async def work():
        async with _store(ctx) as store:
            return await store.refresh_index(rebuild=rebuild, progress=progress)

    try:
        report = run(work())
    finally:
        progress.close()
    typer.echo(f"Indexed {report.files_parsed} file(s): {report.entries_added} entries added, "
               f"{report.entries_removed} removed; {report.files_removed} deleted file(s) dropped.")


@memory_app.command("status")
def status(ctx: typer.Context, json_out: JsonOption = False) -> None:
    """Show the index: where it is, its size, what it holds, and whether it is up to date.

    Example: miniclaw memory status --json
    """
    from miniclaw.cli import render

    store = _store(ctx)
    try:
        found = run(store.index_status())
    finally:
        store.close()
    if json_out:
        typer.echo(render.to_json(render.status_dict(found)))
    else:
        typer.echo(render.status_text(found, _style()))


class _Progress:
    """A progress bar on stderr, shown only on a terminal once work has run for a second."""

    def __init__(self) -> None:
        import time

        self._clock = time.monotonic
        self._start = self._clock()
        self._bar = None
        self._shown = 0

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            if self._clock() - self._start < 1.0 or not sys.stderr.isatty():
                return
            self._bar = typer.progressbar(length=total, label="Indexing", file=sys.stderr)
            self._bar.__enter__()
        self._bar.update(done - self._shown)
        self._shown = done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
