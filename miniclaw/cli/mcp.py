"""`miniclaw mcp`: serve the memory to coding agents over MCP (stdio)."""


from typing import Annotated

import typer

from miniclaw.cli.app import command_app, workspace_of
from miniclaw.cli.chat import ModeOption

mcp_app = command_app()


@mcp_app.command("mcp")
def mcp_command(
    ctx: typer.Context,
    read_only: Annotated[bool, typer.Option("--read-only", help="Refuse every write: add_memory is not offered.")] = False,
    mode: ModeOption = "auto",
) -> None:
    """Serve memory to coding agents (Claude Code, Cursor, Codex...) over the Model Context
    Protocol on stdin/stdout, until the client closes it.

    Tools: search_memory, add_memory, read_memory, get_context, memory_status; the memory
    files as resources. Needs the mcp extra (`miniclaw doctor` gives the command).

    \b
    Example (Claude Code): claude mcp add miniclaw -- miniclaw -w ~/notes mcp
    """
    from miniclaw.errors import MiniclawError
    from miniclaw.interrupts import ctrl_c_waits
    from miniclaw.search.scoring import check_mode

    mode = check_mode(mode)  # an unknown mode is a usage error before serving
    workspace = workspace_of(ctx)
    try:
        with ctrl_c_waits(then_raise=True):  # an import cut by Ctrl-C was a traceback
            from miniclaw.mcp.server import serve  # the SDK is imported here and nowhere else
    except ImportError as exc:
        if exc.name is None or exc.name.split(".")[0] not in ("mcp", "mcp_types"):
            raise
        from miniclaw.install import install_command

        raise MiniclawError("the MCP server needs the mcp package: "
                            f"{install_command('mcp')}") from None
    serve(workspace, read_only=read_only, mode=mode)
