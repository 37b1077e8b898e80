"""`miniclaw init`: create a workspace from the template, never overwriting a file."""


import typer

from miniclaw.cli.app import app, workspace_of


@app.command("init")
def init(ctx: typer.Context) -> None:
    """Create the workspace (identity files and memory/MEMORY.md) where it is missing.

    Existing files are never overwritten. Example: miniclaw --workspace ./demo init
    """
    from miniclaw.workspace import init_workspace

    workspace = workspace_of(ctx)
    results = init_workspace(workspace)
    for rel, created in results:
        typer.echo(f"  {'created' if created else 'kept   '}  {rel}")
    made = sum(created for _, created in results)
    typer.echo(f"Workspace ready at {workspace} ({made} file(s) created, "
               f"{len(results) - made} already there).")
