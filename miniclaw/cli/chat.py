"""`miniclaw chat`: talk with the assistant, its memory in the prompt.

The command resolves the settings (flags over MINICLAW_LLM_* over config.json), then hands
the terminal to `chat.console` (or, with --once, answers one message through `run`). The
chat package, and httpx with it, is imported only here, inside the command.
"""


import sys
from typing import Annotated

import typer

from miniclaw.cli.app import command_app, run, workspace_of

chat_app = command_app()

BudgetOption = Annotated[int, typer.Option(
    "--budget", "-b", metavar="TOKENS", help="Token budget of the context (200-32000), estimated conservatively.")]
ModeOption = Annotated[str, typer.Option("--mode", metavar="[auto|bm25|hybrid|vector|keyword]", help="How memory is searched: auto (the best available: hybrid when the embedding model is installed, else bm25), or a mode of memory rank's --mode.")]


@chat_app.command("chat")
def chat(
    ctx: typer.Context,
    once: Annotated[str | None, typer.Option("--once", metavar="MESSAGE", help="Answer this one message on stdout and exit.", show_default=False)] = None,
    provider: Annotated[str | None, typer.Option("--provider", metavar="[echo|openai]", help="echo (offline, the default with no server) or openai.", show_default=False)] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", metavar="URL", help="An OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1 [env MINICLAW_LLM_BASE_URL].", show_default=False)] = None,
    model: Annotated[str | None, typer.Option("--model", metavar="NAME", help="The model name the server knows [env MINICLAW_LLM_MODEL].", show_default=False)] = None,
    budget: BudgetOption = 4000,
    mode: ModeOption = "auto",
    connect_timeout: Annotated[float | None, typer.Option("--connect-timeout", metavar="SECONDS", help="Seconds to wait for a connection [default: 5].", show_default=False)] = None,
    read_timeout: Annotated[float | None, typer.Option("--read-timeout", metavar="SECONDS", help="Longest silence while the model answers, in seconds [default: 120].", show_default=False)] = None,
    deadline: Annotated[float | None, typer.Option("--deadline", metavar="SECONDS", help="With --once: seconds for the whole answer [default: 300].", show_default=False)] = None,
) -> None:
    """Chat with the assistant; each message is answered with the memories relevant to it.

    Commands in the chat (and in --once): /remember TEXT, /note TEXT, /search QUERY,
    /forget CITATION, /context, /help, /exit; //text sends /text to the model. Ctrl-C
    cancels the line or the answer, Ctrl-D leaves. Works line by line from a pipe too (exit
    code 1 when a turn failed). With no model server configured, the echo provider
    answers offline with what memory holds. The conversation is saved in
    sessions/<session-id>.jsonl in the workspace.

    \b
    Example: miniclaw chat --base-url http://127.0.0.1:11434/v1 --model llama3.2
    """
    from miniclaw.config import llm_settings
    from miniclaw.context import check_budget
    from miniclaw.errors import UsageError
    from miniclaw.search.scoring import check_mode

    check_budget(budget)
    mode = check_mode(mode)  # an unknown mode is a usage error before the session starts
    if once is not None and not once.strip():
        raise UsageError("--once needs a message to answer")
    settings = llm_settings(provider=provider, base_url=base_url, model=model,
                            connect_timeout=connect_timeout, read_timeout=read_timeout,
                            deadline=deadline)
    workspace = workspace_of(ctx)

    async def open_session():
        from miniclaw.chat.loop import CHAT_WORDING, ChatSession
        from miniclaw.chat.providers import make_provider
        from miniclaw.cli.render import Printable, Style, search_text

        # Everything the chat prints (a model's answer above all) is made printable on its
        # way out; so /search in the chat is not coloured (its codes would be removed too).
        return ChatSession.open(workspace, make_provider(settings), out=Printable(sys.stdout),
                                err=Printable(sys.stderr), budget=budget, mode=mode,
                                format_search=lambda found: search_text(found, Style(False), CHAT_WORDING))

    if once is not None:
        async def answer_once() -> None:
            session = await open_session()
            try:  # a /command is run, not sent to the model (`//` sends a literal /)
                await session.act(once.strip(), deadline=settings.deadline)
            finally:
                await session.aclose()

        run(answer_once())
        return
    from miniclaw.chat.console import run_console

    if hasattr(sys.stdin, "reconfigure"):  # a line that is not UTF-8 is refused, not fatal
        sys.stdin.reconfigure(errors="surrogateescape")

    raise typer.Exit(run_console(open_session, stdin=sys.stdin, stdout=sys.stdout,
                                 stderr=sys.stderr, interactive=sys.stdin.isatty()))
