"""`miniclaw sources list|add|remove`: the workspace's memory sources in config.json."""

from typing import Annotated

import typer

from miniclaw.cli.app import FormatOption, JsonOption, group_app, output_format, run, workspace_of

sources_app = group_app(
    "sources", "List, add or remove the memory sources a workspace searches (other agents' memory).")


@sources_app.command("list")
def list_sources(ctx: typer.Context, output: FormatOption = None,
                 json_out: JsonOption = False) -> None:
    """Show each source: name, kind, root, whether its root is reachable, entries indexed.

    \b
    Example: miniclaw sources list --json
    """
    from miniclaw.cli.render import printable, to_json
    from miniclaw.memory import MemoryStore
    from miniclaw.sources.config import describe

    json_out = output_format(output, json_out) == "json"
    workspace = workspace_of(ctx)
    found = describe(workspace)
    store = MemoryStore(workspace)
    try:
        counts = {name: (on_disk, files, entries)
                  for name, on_disk, files, entries in run(store.index_status()).by_source}
    finally:
        store.close()
    rows = [{**source._asdict(), **dict(zip(("files_on_disk", "files", "entries"),
                                            counts.get(source.name, (0, 0, 0))))}
            for source in found]
    if json_out:
        typer.echo(to_json({"workspace": str(workspace), "sources": rows}))
        return
    from miniclaw.sources.base import shown_name

    for row in rows:  # a name edited into config.json by hand may hold a newline: escaped
        typer.echo(printable(f"{shown_name(row['name'])}  [{row['kind']}]  {row['root']}  "
                             f"{_state(row)}"))


def _state(row: dict) -> str:
    """What a source holds for a search: entries indexed, or why none are (not reachable,
    no files, or not indexed yet: before the first search it is not a count of 0)."""
    from miniclaw.cli.render import plural

    if not row["reachable"]:
        return "(not reachable)"
    if row["files"]:
        return f"{plural(row['entries'], 'entry', 'entries')} indexed"
    if row["files_on_disk"]:
        return (f"not indexed yet ({plural(row['files_on_disk'], 'file')}): run "
                "`miniclaw memory index`")
    return "no memory files yet"


@sources_app.command("add")
def add_source(
    ctx: typer.Context,
    kind: Annotated[str, typer.Argument(metavar="KIND", help="The kind of memory: conkeeper, mnemonic, ef_memory, claude_code (Claude Code's transcripts) or transcripts (miniclaw's chats, searched by default); or, without ROOT, a built-in source removed before (long_term, daily_note, transcripts).", show_default=False)],
    root: Annotated[str | None, typer.Argument(metavar="ROOT", help="The folder it lives in (e.g. ~/code/app/.claude/memory); none for a built-in source.", show_default=False)] = None,
    name: Annotated[str | None, typer.Option("--name", metavar="NAME", help="Its name for --source: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit [default: the kind].", show_default=False)] = None,
    output: FormatOption = None,
    json_out: JsonOption = False,
) -> None:
    """Add a memory source to the workspace (config.json), allowing its folder.

    \b
    Example: miniclaw sources add conkeeper ~/code/app/.claude/memory --name app
    """
    from miniclaw.cli.render import printable, to_json
    from miniclaw.sources import config as source_config

    json_out = output_format(output, json_out) == "json"
    workspace = workspace_of(ctx)
    done = source_config.add(workspace, kind, root, name)
    if root is not None and not source_config.holds_files(workspace, done.source.name):
        typer.echo(printable(f"Warning: no {kind} memory files under {root} (yet): is it the "
                             "folder the memory lives in?"), err=True)
    if json_out:
        typer.echo(to_json(_change_json("added", done)))
        return
    typer.echo(printable(f"Added {_what(done)} to {done.config}; the next search indexes it."))


def _change_json(verb: str, done) -> dict:
    """`sources add`/`remove --json`: `verb` ("added", "removed") is the item as config.json
    holds it (a built-in's name, or the source's object: as before), `source` the same
    fields whatever its form (those of a `sources list` row), `config` the file."""
    source = done.source
    return {verb: done.item, "source": {"name": source.name, "kind": source.kind,
                                        "root": source.root}, "config": str(done.config)}


def _what(done) -> str:
    """The source changed, for people: its name, and its kind and root unless built in."""
    from miniclaw.sources.base import shown_name

    source = done.source
    name = shown_name(source.name)  # one removed may have a name edited in by hand
    return name if source.kind == "built-in" else f"{name} ({source.kind}, {source.root})"


@sources_app.command("remove")
def remove_source(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="NAME", help="The source's name (see `miniclaw sources list`).", show_default=False)],
    output: FormatOption = None,
    json_out: JsonOption = False,
) -> None:
    """Remove a memory source from the workspace (config.json); its files are untouched.

    \b
    Example: miniclaw sources remove app
    """
    from miniclaw.cli.render import printable, to_json
    from miniclaw.sources import config as source_config

    json_out = output_format(output, json_out) == "json"
    done = source_config.remove(workspace_of(ctx), name)
    if json_out:
        typer.echo(to_json(_change_json("removed", done)))
        return
    typer.echo(printable(f"Removed {_what(done)} from {done.config}; its files were not "
                         "touched."))
