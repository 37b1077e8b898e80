"""`miniclaw index ...`: the search index cache as a whole (`memory index` updates one)."""

from typing import Annotated

import typer

from miniclaw.cli.app import FormatOption, JsonOption, group_app, output_format

index_app = group_app("index", "Look after the search index cache (one file per workspace).")


@index_app.command("prune")
def prune(
    dry_run: Annotated[bool, typer.Option("--dry-run", "-n", help="Only list what would be removed.")] = False,
    output: FormatOption = None,
    json_out: JsonOption = False,
) -> None:
    """Remove index files whose workspace folder is gone (deleted or moved).

    An index is only a cache: a workspace that comes back is indexed again on its first
    search.

    \b
    Example: miniclaw index prune --dry-run
    """
    json_out = output_format(output, json_out) == "json"
    from miniclaw.cli.render import plural, printable, to_json
    from miniclaw.config import cache_dir
    from miniclaw.index import prune as pruning

    found = pruning.orphans()
    if not dry_run:
        for orphan in found:
            pruning.remove(orphan)
    total = sum(o.size_bytes for o in found)
    if json_out:
        typer.echo(to_json({"cache": str(cache_dir()), "dry_run": dry_run,
                            "removed" if not dry_run else "would_remove": [
                                {"path": str(o.path), "workspace": o.workspace,
                                 "bytes": o.size_bytes} for o in found],
                            "bytes": total}))
        return
    verb = "Would remove" if dry_run else "Removed"
    for orphan in found:
        typer.echo(printable(f"  {orphan.path.name}  (workspace {orphan.workspace} is gone)"))
    typer.echo(f"{verb} {plural(len(found), 'index file')} ({total // 1024} KB) "
               f"from {printable(str(cache_dir()))}.")
