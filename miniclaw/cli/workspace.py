"""`miniclaw init`: create a workspace from the template, never overwriting a file."""


from typing import Annotated

import typer

from miniclaw.cli.app import FormatOption, JsonOption, command_app, output_format, workspace_of

init_app = command_app()


@init_app.command("init")
def init(
    ctx: typer.Context,
    output: FormatOption = None,
    json_out: JsonOption = False,
) -> None:
    """Create the workspace (identity files and memory/MEMORY.md) where it is missing.

    Existing files are never overwritten.

    \b
    Example: miniclaw --workspace ./demo init
    """
    json_out = output_format(output, json_out) == "json"
    from miniclaw.workspace import init_workspace

    workspace = workspace_of(ctx)
    results = init_workspace(workspace)
    if json_out:
        from miniclaw.cli.render import to_json

        typer.echo(to_json({"workspace": str(workspace), "files": [
            {"path": rel, "created": created} for rel, created in results]}))
        return
    for rel, created in results:
        typer.echo(f"  {'created' if created else 'kept   '}  {rel}")
    from miniclaw.cli.render import plural

    made = sum(created for _, created in results)
    typer.echo(f"Workspace ready at {workspace} ({plural(made, 'file')} created, "
               f"{len(results) - made} already there).")
