"""`miniclaw memory ...`: add, read, recent, rank, forget, edit, index, status, tidy.

Each command parses its options, calls one `MemoryStore` coroutine through `run`, and hands
the result to `render`. The library is imported inside the commands, so `--help` stays fast.
"""


import sys
from typing import Annotated

import typer

from miniclaw.cli.app import (FormatOption, JsonOption, OnDemandGroup, command_app, group_app,
                              one_query, output_format, run, use_color, workspace_of)
from miniclaw.cli.zone_help import ZoneHelpCommand


class MemoryGroup(OnDemandGroup):
    """`miniclaw memory`: each command built only when named (cli/app.py's OnDemandGroup)."""

    subcommands = {name: f"{__name__}:memory_{name}" for name in
                   ("add", "read", "recent", "rank", "forget", "edit", "index", "status",
                    "tidy")}


memory_app = group_app(
    "memory", "Add, read and search memories (MEMORY.md and the daily notes).", MemoryGroup)


def _store(ctx: typer.Context):
    from miniclaw.memory import MemoryStore

    return MemoryStore(workspace_of(ctx))


def _style():
    from miniclaw.cli.render import Style

    return Style(use_color())


memory_add = command_app()


@memory_add.command("add", cls=ZoneHelpCommand)
def add(
    ctx: typer.Context,
    text: Annotated[str | None, typer.Argument(metavar="TEXT", help="The text to remember; - (or none, from a pipe) reads it from stdin.", show_default=False)] = None,
    long: Annotated[bool, typer.Option("--long", help="Add to long-term memory (MEMORY.md).")] = False,
    daily: Annotated[bool, typer.Option("--daily", help="Add to today's daily note (the default).")] = False,
    category: Annotated[str | None, typer.Option("--category", "-c", metavar="NAME", help="One category, e.g. decision, preference.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", metavar="TAG", help="A tag; repeat for more.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Write it even when the same fact is remembered already.")] = False,
    supersedes: Annotated[str | None, typer.Option("--supersedes", metavar="CITATION", help="The memory this fact replaces, as search cites it (memory/MEMORY.md:12#3fa9c2): kept in its file, marked superseded, hidden from searches (--all-versions shows it).", show_default=False)] = None,
    output: FormatOption = None,
    json_out: JsonOption = False,
) -> None:
    """Add a memory to today's daily note, or with --long to MEMORY.md.

    A fact already remembered (the same text but for case, punctuation and Markdown, or a
    near copy: docs/cli.md) is not written again: it says where it is (--force adds it).
    Text that starts with "-" goes after "--": miniclaw memory add -- "-5 degrees at dawn".

    \b
    Examples:
      miniclaw memory add "Prefers dark roast coffee" --long --category preference
      miniclaw memory add "Prefers green tea" --long --supersedes memory/MEMORY.md:4
      git log -1 --format=%B | miniclaw memory add -
    """
    json_out = output_format(output, json_out) == "json"
    from miniclaw.errors import UsageError

    if long and daily:
        raise UsageError("choose one of --long or --daily, not both")
    text = _text_or_stdin(text)

    async def work():
        async with _store(ctx) as store:
            return await store.add(text, long=long, category=category, tags=tag or (),
                                   force=force, supersedes=supersedes)

    added = run(work())
    entry = added.entry
    from miniclaw.cli.render import to_json

    if json_out:
        typer.echo(to_json(added.to_dict()))
    elif not added.written:
        typer.echo(f"Already remembered: {entry.citation}")
    elif entry is None:
        typer.echo("Added (all of its text is private, so it will not show in searches).")
    else:
        where = "long-term memory" if long else "today's daily note"
        typer.echo(f"Added to {where}: {entry.ref}")
    if added.superseded is not None and not json_out:
        typer.echo(f"Superseded: {added.superseded.citation} (kept in the file, marked; "
                   "searches show it with --all-versions)")


def _text_or_stdin(text: str | None) -> str:
    """The memory text: the argument, or stdin for `-` or no argument from a pipe, read up to
    what the length limit can hold (an endless pipe was read into memory without bound)."""
    from miniclaw.errors import UsageError
    from miniclaw.store.store import MAX_ENTRY_CHARS

    if text is not None and text != "-":
        return text
    if text is None and (sys.stdin is None or sys.stdin.isatty()):
        raise UsageError("give the text to remember: miniclaw memory add TEXT (or pipe it "
                         "in with `memory add -`)")
    if sys.stdin is None:
        raise UsageError("stdin is closed: give the text to remember as an argument")
    most = 4 * MAX_ENTRY_CHARS + 8  # the limit's characters in UTF-8, a BOM and line ends
    stream = getattr(sys.stdin, "buffer", None)
    raw = stream.read(most + 1) if stream else sys.stdin.read(most + 1).encode()
    if len(raw) > most:
        raise UsageError(f"the memory text on stdin is longer than the limit of "
                         f"{MAX_ENTRY_CHARS:,} characters; nothing was written")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"stdin is not valid UTF-8 text (first bad byte at offset "
                         f"{exc.start}); nothing was written") from None


memory_read = command_app()


@memory_read.command("read", cls=ZoneHelpCommand)
def read(
    ctx: typer.Context,
    today: Annotated[bool, typer.Option("--today", help="Today's daily note (the default).")] = False,
    long: Annotated[bool, typer.Option("--long", help="Long-term memory (MEMORY.md).")] = False,
    date: Annotated[str | None, typer.Option("--date", metavar="DAY", help="The daily note of a day: YYYY-MM-DD, 'yesterday', '3d'.", show_default=False)] = None,
    output: FormatOption = None,
    json_out: JsonOption = False,
) -> None:
    """Print the entries of today's note, of MEMORY.md (--long) or of a day (--date).

    Private text is never shown.

    \b
    Example: miniclaw memory read --date 2026-02-14
    """
    json_out = output_format(output, json_out) == "json"
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
            asked = parse_day(date, day)
            day = check_not_future(asked, day, zone=zone_name(store.zone),
                                   exists=asked > day and store.has_note(asked))
        entries = run(store.read_day(day))
        title = f"Daily Note {day.isoformat()} (memory/{day.isoformat()}.md)"
    if json_out:
        typer.echo(render.entries_json(entries))
    else:
        typer.echo(render.entries_text(title, entries, _style(), zone_name(store.zone)))


memory_recent = command_app()


@memory_recent.command("recent", cls=ZoneHelpCommand)
def recent(
    ctx: typer.Context,
    days: Annotated[int, typer.Option("--days", "-d", metavar="N", help="How many days back, today included.")] = 7,
    output: FormatOption = None,
    json_out: JsonOption = False,
) -> None:
    """Print the daily notes of the last N days, newest first.

    \b
    Example: miniclaw memory recent -d 3
    """
    json_out = output_format(output, json_out) == "json"
    from miniclaw.cli import render
    from miniclaw.dates import zone_name

    store = _store(ctx)
    found = run(store.read_recent(days))
    if json_out:
        typer.echo(render.to_json({"days": days, "entries": [
            e.to_dict() for _, entries in found for e in entries]}))
    else:
        typer.echo(render.days_text(found, _style(), days, zone_name(store.zone)))


memory_rank = command_app()


@memory_rank.command("rank")
def rank(
    ctx: typer.Context,
    query_words: Annotated[str | None, typer.Argument(metavar="QUERY", help='What to look for: words, "a phrase", +must, -mustnot, prefix* (or -q). One that starts with -mustnot goes after --: -- "-draft budget".', show_default=False)] = None,
    query: Annotated[str | None, typer.Option("--query", "-q", metavar="QUERY", help="The query, as an option (scripts that build it).", show_default=False)] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", help="How many results, 1-20: the best matches (past them results hardly hold what was meant: narrow the search with words, --since or --tag).")] = 5,
    days: Annotated[int | None, typer.Option("--days", metavar="N", help="Daily notes of the last N days  [default: 30]", show_default=False)] = None,
    all_history: Annotated[bool, typer.Option("--all", help="Search all history, not just the last 30 days.")] = False,
    since: Annotated[str | None, typer.Option("--since", metavar="DAY", help="Only entries dated on or after DAY (2026-02-14, yesterday, 7d); replaces the 30-day window.", show_default=False)] = None,
    until: Annotated[str | None, typer.Option("--until", metavar="DAY", help="Only entries dated on or before DAY.", show_default=False)] = None,
    category: Annotated[str | None, typer.Option("--category", "-c", metavar="NAME", help="Only entries of this category.", show_default=False)] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", metavar="TAG", help="Only entries with this tag; repeat: all must match.", show_default=False)] = None,
    source: Annotated[list[str] | None, typer.Option("--source", metavar="SOURCE", help="Only this memory source (long_term, daily_note, transcripts, or one config.json adds); repeatable.", show_default=False)] = None,
    require: Annotated[list[str] | None, typer.Option("--require", metavar="WORDS", help="Words every result must hold; repeatable.", show_default=False)] = None,
    exclude: Annotated[list[str] | None, typer.Option("--exclude", metavar="WORDS", help="Words no result may hold; repeatable.", show_default=False)] = None,
    mode: Annotated[str | None, typer.Option("--mode", metavar="[bm25|hybrid|vector|keyword|auto]", help="Ranking mode: bm25 (default: words), auto (the best available: hybrid when the embedding model is installed, else bm25; the chat's), hybrid (words and meaning, with the semantic extra or the embedder in config.json: `miniclaw doctor` gives the command), vector (meaning only) or keyword (word count, also called basic).", show_default=False)] = None,
    output: Annotated[str | None, typer.Option("--format", "-f", metavar="[text|json|markdown|ef|mnemonic]", help="Output: text (default), json, markdown, or another tool's shape: ef (EF Memory's entry blocks), mnemonic (its search-subcall JSON).", show_default=False)] = None,
    json_out: JsonOption = False,
    meta: Annotated[list[str] | None, typer.Option("--meta", metavar="KEY=VALUE", help="Only entries whose source metadata has this value (namespace=_semantic/decisions); repeatable.", show_default=False)] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show each score broken down by query term.")] = False,
    correct: Annotated[bool, typer.Option("--correct/--no-correct", help="Replace a misspelt word that matches nothing by the closest indexed spelling.")] = True,
    phrase: Annotated[bool, typer.Option("--phrase", help="Read the whole query as one phrase, no operators (as ConKeeper's memory-search.sh does).")] = False,
    all_versions: Annotated[bool, typer.Option("--all-versions", help="Include memories superseded by a newer fact (memory add --supersedes); each says by what.")] = False,
) -> None:
    """Search memories and print the best matches, best first.

    MEMORY.md is always searched; daily notes of the last 30 days unless --days, --all,
    --since or --until. Ranked by score, then newest date. A misspelt word that matches
    nothing is replaced by the closest indexed spelling (never a real word; --no-correct:
    never), and the output says so. `miniclaw search` and `miniclaw memory rank` are one
    command.

    \b
    Example: miniclaw search '"atlas budget" -draft' --since 2026-01-01 -n 5
    """
    from miniclaw.cli import render
    from miniclaw.errors import UsageError
    from miniclaw.search.options import SearchOptions

    query = one_query(query_words, query, "search")
    if all_history and days is not None:
        raise UsageError("choose one of --days or --all")
    if days is not None and (since is not None or until is not None):
        raise UsageError("choose --days or --since/--until: dates replace the window")
    form = _output_format(output, json_out)
    window = None if all_history else (30 if days is None else days)

    async def work():
        async with _store(ctx) as store:
            options = SearchOptions.build(
                store.today(), names=_FLAGS, limit=limit, days=window, since=since,
                until=until, category=category, tags=tag, sources=source, mode=mode,
                require=require, exclude=exclude, explain=explain, correct=correct,
                meta=_meta_pairs(meta), phrase=phrase, all_versions=all_versions)
            found = await store.search(query, options)
            return found, _shape_data(form, store, found, options)

    found, shaped = run(work())
    for line in render.warning_lines(found):
        typer.echo(line, err=True)
    if form in ("ef", "mnemonic"):
        from miniclaw.cli import render_formats

        typer.echo(render_formats.ef_text(found, shaped) if form == "ef"
                   else render_formats.mnemonic_json(shaped))
    elif form == "json":
        typer.echo(render.search_json(found))
    elif form == "markdown":
        typer.echo(render.search_markdown(found))
    else:
        typer.echo(render.search_text(found, _style()))


# The search arguments (search/options.py) by the names of rank's options, for its errors.
_FLAGS = {"limit": "-n/--limit", "days": "--days",
          "since": "--since", "until": "--until", "tags": "--tag", "sources": "--source",
          "category": "--category", "mode": "--mode", "require": "--require",
          "exclude": "--exclude"}


def _meta_pairs(pairs: list[str] | None) -> tuple[tuple[str, str], ...]:
    """`--meta key=value` options as pairs (SearchOptions checks the keys)."""
    from miniclaw.errors import UsageError

    out = []
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"--meta takes KEY=VALUE (namespace=_semantic/decisions), not {pair!r}")
        out.append((key.strip(), value.strip()))
    return tuple(out)


def _shape_data(form: str, store, found, options):
    """What another tool's shape needs beyond the results, read while the store is open."""
    if form == "ef":
        from miniclaw.sources.ef_memory import result_notes

        return result_notes(store, found)
    if form == "mnemonic":
        from miniclaw.cli.render_formats import subcall

        meta = dict(options.meta)
        return subcall(store, found, namespace=meta.get("namespace"),
                       tag=options.tags[0] if options.tags else None, sources=options.sources)
    return None


def _output_format(output: str | None, json_out: bool) -> str:
    return output_format(output, json_out, ("text", "json", "markdown", "ef", "mnemonic"))


search_app = command_app()
search_app.command("search")(rank)  # `miniclaw search QUERY`: the same command as `memory rank`


memory_forget = command_app()


@memory_forget.command("forget")
def forget(
    ctx: typer.Context,
    citation: Annotated[str | None, typer.Argument(metavar="CITATION", help="The memory to remove, as search cites it: memory/2026-02-14.md:5#3fa9c2.", show_default=False)] = None,
    query: Annotated[str | None, typer.Option("--query", "-q", metavar="QUERY", help="Forget the best matches of this search (all history; MEMORY.md and daily notes only) instead.", show_default=False)] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", help="With -q: how many of the best matches.")] = 1,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask (needed when stdin is not a terminal).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be forgotten; write nothing, ask nothing.")] = False,
    output: FormatOption = None,
    json_out: JsonOption = False,
) -> None:
    """Remove a memory from its file, after showing it and asking.

    Cite it as search prints it (PATH:LINE#MARK): the mark names its text, so a memory
    that moved since is still found, and another memory now at its lines is never removed
    (a citation without the mark is checked against what search last showed there). -q
    searches only what forget can remove, MEMORY.md and the daily notes (not chat
    transcripts or other tools' files); a match it cannot remove is skipped and named.
    The file is rewritten atomically under the memory lock. The index catches up on the
    next search.

    \b
    Examples:
      miniclaw memory forget memory/2026-02-14.md:5#3fa9c2
      miniclaw memory forget -q "old wifi password" --dry-run
      miniclaw memory forget -q "old wifi password" --yes
    """
    json_out = output_format(output, json_out) == "json"
    from miniclaw.cli import render
    from miniclaw.errors import MiniclawError, UsageError
    from miniclaw.store import forget as forgetting
    from miniclaw.entries.entry import DAILY_NOTE, LONG_TERM

    if (citation is None) == (query is None):
        raise UsageError("give one of CITATION or -q QUERY")
    if not yes and not dry_run and not sys.stdin.isatty():
        raise UsageError("forgetting asks first, and stdin is not a terminal: pass --yes "
                         "to forget without asking (or --dry-run to see what would go)")

    async def targets():
        async with _store(ctx) as store:
            if citation is not None:
                return [await forgetting.find(store, citation, to_forget=True)], []
            hits = await store.search(query, limit=limit, days=None,
                                      sources=(LONG_TERM, DAILY_NOTE))
            found, skipped = [], []
            for hit in hits.results:
                try:
                    found.append(await forgetting.find(store, hit.ref, to_forget=True))
                except MiniclawError as exc:
                    skipped.append((hit.ref, exc))
            return found, skipped

    found, skipped = run(targets())
    style = _style()
    if citation is not None and found[0].line_start != forgetting.parse_citation(citation).start:
        typer.echo(f"{citation} has moved since it was cited: it is {found[0].ref} now", err=True)
    for ref, reason in skipped[not found:]:
        typer.echo(f"Skipped {ref}: {reason}", err=True)
    if not found and skipped:
        raise skipped[0][1]  # nothing can go: the first match's reason is the error
    skipped = [(ref, str(reason)) for ref, reason in skipped]
    if not found:
        if json_out:
            typer.echo(render.to_json({"would_forget" if dry_run else "forgotten": []}))
        else:
            typer.echo("No memories matched: nothing was forgotten.")
        return
    if dry_run:
        if json_out:
            typer.echo(render.entries_json(found, key="would_forget", **_skipped_json(skipped)))
        else:
            typer.echo(render.entries_text("Would forget (dry run, nothing written):", found, style))
        return
    if not json_out or not yes:
        typer.echo(render.entries_text("To forget:", found, style), err=json_out)
    if not yes and not typer.confirm(f"Forget {render.plural(len(found), 'memory', 'memories')}?",
                                     err=json_out):
        raise typer.Exit(1)

    async def work():
        async with _store(ctx) as store:
            return await forgetting.forget(store, found)

    gone = run(work())
    if json_out:
        typer.echo(render.entries_json(gone, key="forgotten", **_skipped_json(skipped)))
    else:
        typer.echo(f"Forgot {render.plural(len(gone), 'memory', 'memories')}: "
                   + ", ".join(e.citation for e in gone))


def _skipped_json(skipped: list[tuple[str, str]]) -> dict:
    """`{"skipped": [{"ref", "reason"}]}` for the matches forget -q could not remove, or {}."""
    return {"skipped": [{"ref": ref, "reason": why} for ref, why in skipped]} if skipped else {}


memory_edit = command_app()


@memory_edit.command("edit")
def edit(
    ctx: typer.Context,
    citation: Annotated[str, typer.Argument(metavar="CITATION", help="The memory to edit, as search cites it: memory/2026-02-14.md:5#3fa9c2.", show_default=False)],
) -> None:
    """Open a memory's file in $VISUAL or $EDITOR at its line.

    A ref (PATH:LINE#MARK, as search prints it) opens where its memory is now, even if
    the file shifted; a citation whose lines hold another memory since is refused.

    \b
    Example: EDITOR=vim miniclaw memory edit memory/MEMORY.md:12
    """
    import os
    import shlex
    import subprocess

    from miniclaw.errors import UsageError
    from miniclaw.store import forget as forgetting

    async def cited():
        async with _store(ctx) as store:
            return store, await forgetting.find(store, citation)

    store, entry = run(cited())
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor or not editor.strip():
        raise UsageError("set $EDITOR (or $VISUAL) to the editor to open, e.g. EDITOR=nano")
    command = [*shlex.split(editor), f"+{entry.line_start}", str(store.workspace / entry.path)]
    try:
        code = subprocess.call(command)
    except OSError as exc:
        raise UsageError(f"cannot start the editor {command[0]!r}: {exc.strerror or exc}") from None
    raise typer.Exit(code)


memory_index = command_app()


@memory_index.command("index")
def index(
    ctx: typer.Context,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Start from nothing instead of updating.")] = False,
    output: FormatOption = None,
    json_out: JsonOption = False,
) -> None:
    """Bring the search index up to date now (searches also do this by themselves).

    The index is a cache of the memory files; deleting it loses nothing. With an embedder
    (the semantic extra, or "embedder" in config.json), it also computes every memory's
    vector for --mode hybrid, with a progress bar: after a change of model, all again.

    \b
    Example: miniclaw memory index --rebuild
    """
    json_out = output_format(output, json_out) == "json"
    progress, embedding = _Progress(), _Progress("Embedding", "texts")

    async def work():
        async with _store(ctx) as store:
            report = await store.refresh_index(rebuild=rebuild, progress=progress)
            progress.close()
            # with an embedder: every text's vector by it, so hybrid search is complete
            return report, await store.embed_index(progress=embedding)

    try:
        report, vectors = run(work())
    finally:
        progress.close()
        embedding.close()
    from miniclaw.cli.render import plural, to_json

    rate = embedding.rate()
    if json_out:
        typer.echo(to_json({"files_parsed": report.files_parsed,
                            "entries_added": report.entries_added,
                            "entries_removed": report.entries_removed,
                            "files_removed": report.files_removed,
                            "files_left_out": report.files_left_out,
                            **({"vectors": {"embedded": vectors[0], "total": vectors[1],
                                            **({"per_second": round(rate, 1)} if rate else {})}}
                               if vectors else {})}))
        return
    # no news; but a rebuild read every file again, whatever it found (even nothing)
    if not (rebuild or report.entries_added or report.entries_removed or report.files_removed):
        typer.echo("Up to date: no memory changed since the index was last updated.")
    else:
        left_out = report.files_left_out  # in a folder that cannot be read: warned above
        typer.echo(f"Indexed {plural(report.files_parsed, 'file')}: "
                   f"{plural(report.entries_added, 'entry', 'entries')} added, "
                   f"{report.entries_removed} removed; "
                   f"{plural(report.files_removed - left_out, 'deleted file')} dropped"
                   + (f", {plural(left_out, 'file')} in a folder that cannot be read left out"
                      if left_out else "") + ".")
    if vectors:
        speed = f" ({rate:.1f} texts embedded a second)" if rate else ""
        typer.echo(f"Vectors for meaning search: {vectors[0]} of {vectors[1]} texts{speed}.")


memory_status = command_app()


@memory_status.command("status")
def status(ctx: typer.Context, output: FormatOption = None, json_out: JsonOption = False) -> None:
    """Show the workspace and its index: where, how big, what it holds, whether up to date.

    \b
    Example: miniclaw memory status --format json
    """
    from miniclaw.cli import render

    json_out = output_format(output, json_out) == "json"
    store = _store(ctx)
    try:
        found = run(store.index_status())
    finally:
        store.close()
    if json_out:
        typer.echo(render.to_json({"workspace": str(store.workspace), **render.status_dict(found)}))
    else:
        typer.echo(render.printable(f"Workspace: {store.workspace}"))
        typer.echo(render.status_text(found, _style()))


class _Progress:
    """A progress bar on stderr, shown only on a terminal once work has run for a second;
    with a `unit`, it shows how many a second (embedding L takes minutes: say how fast)."""

    def __init__(self, label: str = "Indexing", unit: str | None = None) -> None:
        import time

        self._label, self._unit = label, unit
        self._clock = time.monotonic
        self._start = self._clock()
        self._bar = None
        self._shown = 0
        self._first = self._last = None  # (done, time) at the first and the last report

    def __call__(self, done: int, total: int) -> None:
        now = self._clock()
        self._first = self._first or (done, now)
        self._last = (done, now)
        if self._bar is None:
            if now - self._start < 1.0 or not sys.stderr.isatty():
                return
            shown = (lambda _: f"{self.rate() or 0:.0f} {self._unit}/s") if self._unit else None
            self._bar = typer.progressbar(length=total, label=self._label, file=sys.stderr,
                                          item_show_func=shown)
            self._bar.__enter__()
        self._bar.update(done - self._shown)
        self._shown = done

    def rate(self) -> float | None:
        """Done per second between the first report and the last (None: nothing done)."""
        if self._first is None or self._last[0] <= self._first[0]:
            return None
        return (self._last[0] - self._first[0]) / max(self._last[1] - self._first[1], 1e-9)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


memory_tidy = command_app()


@memory_tidy.command("tidy", cls=ZoneHelpCommand)
def tidy(
    ctx: typer.Context,
    days: Annotated[int | None, typer.Option("--days", "-d", metavar="N", help="Only the daily notes of the last N days (MEMORY.md always).", show_default=False)] = None,
    all_days: Annotated[bool, typer.Option("--all", help="Every daily note (the default).")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", help="At most N clusters, N pairs (N proposals), best first.")] = 20,
    apply: Annotated[bool, typer.Option("--apply", help="Merge each duplicate cluster (with --suggest: add each proposal), asking first.")] = False,
    suggest: Annotated[bool, typer.Option("--suggest", help="Ask the configured model server which daily-note facts belong in MEMORY.md.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="With --apply: do not ask (needed when stdin is not a terminal).")] = False,
    output: FormatOption = None,
    json_out: JsonOption = False,
) -> None:
    """Find duplicate memories and facts that changed, across MEMORY.md and the notes.

    Read only by default: clusters of duplicates and near-duplicates, then pairs that look
    like one subject with two values (candidates for superseding), best first, each entry
    with its ref (PATH:LINE#MARK, as search prints it and forget takes it). --apply merges
    each duplicate cluster into one entry, asking y/n/q before each: the earliest date,
    every tag and category, and a `~ merged from ...` line are kept; pairs are never
    changed. --suggest asks the model server (chat's settings) which daily-note facts
    belong in MEMORY.md; --suggest --apply adds the ones you accept.

    \b
    Examples:
      miniclaw memory tidy --days 30
      miniclaw memory tidy --apply
      miniclaw memory tidy --suggest --json
    """
    json_out = output_format(output, json_out) == "json"
    from miniclaw.cli import render
    from miniclaw.errors import UsageError

    if all_days and days is not None:
        raise UsageError("choose one of --days or --all")
    if yes and not apply:
        raise UsageError("--yes goes with --apply (the report alone writes nothing)")
    if apply and not yes and not sys.stdin.isatty():
        raise UsageError("tidy --apply asks before each change, and stdin is not a terminal: "
                         "pass --yes to apply without asking")
    if limit < 1:
        raise UsageError(f"--limit must be 1 or more, not {limit}")
    style = _style()
    if suggest:
        return _suggest(ctx, days, limit, apply, yes, json_out, style)
    from miniclaw.tidy import merge, report

    def ask(cluster) -> str:
        typer.echo(render.tidy_cluster_text(1 + asked.index(cluster), cluster, style), err=json_out)
        return _ask("Merge these into one entry?")

    async def work():
        async with _store(ctx) as store:
            found = await report.build(store, days=days, limit=limit)
            if not apply:
                return found, None
            asked.extend(found.duplicates)
            return found, await merge.apply(store, found.duplicates, None if yes else ask)

    asked: list = []
    found, done = run(work())
    if done is None:
        typer.echo(render.to_json(found.to_dict()) if json_out else render.tidy_text(found, style))
        return
    if json_out:
        typer.echo(render.to_json({**found.to_dict(), "applied": [o.to_dict() for o in done]}))
    for outcome in done:
        if outcome.refused:
            typer.echo(f"Not merged ({outcome.cluster.entries[0].ref}): {outcome.refused}", err=True)
        elif outcome.merged and not json_out:
            typer.echo(f"Merged {render.plural(len(outcome.cluster.entries), 'entry', 'entries')} into "
                       f"{outcome.merged.ref}")
    if not json_out and not found.duplicates:
        typer.echo("No duplicates: nothing to merge.")
    if any(o.refused for o in done):
        raise typer.Exit(1)


def _ask(question: str) -> str:
    """y, n or q from the terminal (q: stop asking, keep what was done)."""
    import click

    return typer.prompt(f"{question} [y/n/q]", type=click.Choice(["y", "n", "q"]),
                        show_choices=False, err=True)


def _suggest(ctx, days, limit, apply, yes, json_out, style) -> None:
    """`memory tidy --suggest [--apply]`: the model's proposals, and with --apply, added."""
    from miniclaw import config
    from miniclaw.cli import render
    from miniclaw.errors import UsageError
    from miniclaw.tidy import suggest

    settings = config.llm_settings()
    if settings.provider != "openai":
        raise UsageError("--suggest needs a model server: set MINICLAW_LLM_BASE_URL and "
                         "MINICLAW_LLM_MODEL, or \"base_url\" and \"model\" in config.json")

    async def complete(messages):
        from miniclaw.chat.providers import complete

        return await complete(settings, messages)

    def ask(proposal) -> str:
        typer.echo(_proposal_text(proposal, style), err=json_out)
        return _ask("Add this to MEMORY.md?")

    async def work():
        async with _store(ctx) as store:
            found = await suggest.suggest(store, complete, days=days, limit=limit)
            return found, (await suggest.add(store, found, None if yes else ask) if apply else None)

    found, done = run(work())
    if json_out:
        payload = {"proposals": [p.to_dict() for p in found]}
        if done is not None:
            payload["applied"] = [a.to_dict() for a in done]
        typer.echo(render.to_json(payload))
    elif done is None:
        typer.echo("\n".join([f"Proposals for MEMORY.md ({render.plural(len(found), 'proposal', 'proposals')}"
                              "; add them with --apply):"] + [_proposal_text(p, style) for p in found])
                   if found else "No proposals: the model found nothing for MEMORY.md.")
    for item in done or ():
        if item.refused:
            typer.echo(f"Not added ({item.proposal.entry.ref}): {item.refused}", err=True)
        elif item.added and not json_out:
            typer.echo(f"Added to long-term memory: {item.added.ref}")
        elif item.duplicate_of and not json_out:
            typer.echo(f"Already remembered: {item.duplicate_of.ref}")
    if any(a.refused for a in done or ()):
        raise typer.Exit(1)


def _proposal_text(proposal, style) -> str:
    from miniclaw.text import printable

    why = f" ({printable(proposal.reason)})" if proposal.reason else ""
    return (f"- {printable(proposal.text)}" + style(why, "dim") + "\n"
            + style(f"    from {proposal.entry.ref}", "dim"))
