"""`miniclaw context`: print the system prompt the assistant would get for a message."""


import sys
from typing import Annotated

import typer

from miniclaw.cli.app import FormatOption, command_app, one_query, output_format, run, workspace_of
from miniclaw.cli.chat import BudgetOption, ModeOption

context_app = command_app()


@context_app.command("context")
def context(
    ctx: typer.Context,
    message: Annotated[str | None, typer.Argument(metavar="MESSAGE", help="The message to build the context for (or -q).", show_default=False)] = None,
    query: Annotated[str | None, typer.Option("--query", "-q", metavar="MESSAGE", help="The message, as an option (scripts that build it).", show_default=False)] = None,
    budget: BudgetOption = 4000,
    mode: ModeOption = "auto",
    output: FormatOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object (sections, items, token counts, prompt).")] = False,
) -> None:
    """Show what the assistant would see for a message: identity files, the memories
    relevant to it, today's and yesterday's notes, within a token budget.

    The prompt goes to stdout and a line of token counts to stderr.

    \b
    Example: miniclaw context "what did Sam approve?" --budget 1000
    """
    from miniclaw.cli.render import plural, printable, to_json
    from miniclaw.context import ContextBuilder, check_budget
    from miniclaw.memory import MemoryStore

    query = one_query(message, query, "context", "message")
    json_out = output_format(output, json_out) == "json"
    check_budget(budget)

    async def work():
        async with MemoryStore(workspace_of(ctx)) as store:
            return await ContextBuilder(store, mode=mode).build(query, budget_tokens=budget)

    built = run(work())
    if json_out:
        typer.echo(to_json(built.to_dict()))
        return
    typer.echo(printable(built.render()))
    counts = (f"{plural(len(built.items('identity')), 'identity file')}, "
              f"{plural(len(built.items('memories')), 'memory', 'memories')}, "
              f"{plural(len(built.items('notes')), 'note entry', 'note entries')}")
    from miniclaw.search.hints import describe

    if built.degraded:  # the mode asked for could not run: which ran, and why
        sys.stderr.write(printable(f"({describe(built.degraded)})") + "\n")
    if built.vectors:  # a semantic search ranked with the vectors it had: how far along
        sys.stderr.write(printable(f"({describe(built.vectors)})") + "\n")
    sys.stderr.write(f"(about {built.tokens} of {budget} tokens, estimated: {counts})\n")
    if built.older:  # what the window hid, said (the search's own line, issue 39)
        from miniclaw.search.hints import older

        sys.stderr.write(f"({describe(older(built.older, built.days))})\n")
