"""`miniclaw sessions search QUERY`: past conversations (chat transcripts) grouped by session.

The library does the search (`search/sessions.py`); this module parses options and renders
text (the reference transcript search's layout), JSON or Markdown.
"""

from typing import Annotated

import typer

from miniclaw.cli.app import (JsonOption, MarkdownFormatOption, group_app, one_query,
                              output_format, run, workspace_of)

sessions_app = group_app(
    "sessions", "Search past conversations: miniclaw's chat transcripts and configured ones (Claude Code).")

_ROLES = {"user": "user", "assistant": "asst"}


@sessions_app.command("search")
def search(
    ctx: typer.Context,
    query_words: Annotated[str | None, typer.Argument(metavar="QUERY", help='Words (any may match), "a phrase", +must, -mustnot (or -q). One that starts with -mustnot goes after --: -- "-draft lisbon".', show_default=False)] = None,
    query: Annotated[str | None, typer.Option("--query", "-q", metavar="QUERY", help="The query, as an option (scripts that build it).", show_default=False)] = None,
    project: Annotated[str | None, typer.Option("--project", "-p", metavar="PATH", help="Only conversations held in this folder (or below it): Claude Code's record their folder, miniclaw's own chats none.", show_default=False)] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", help="How many sessions.")] = 10,
    messages: Annotated[int, typer.Option("--messages", "-m", metavar="M", help="How many messages per session.")] = 5,
    require: Annotated[list[str] | None, typer.Option("--require", metavar="WORDS", help="Words every message must hold; repeatable.", show_default=False)] = None,
    exclude: Annotated[list[str] | None, typer.Option("--exclude", metavar="WORDS", help="Words no message may hold; repeatable.", show_default=False)] = None,
    output: MarkdownFormatOption = None,
    json_out: JsonOption = False,
) -> None:
    """Find the conversations that talked about QUERY, best first.

    Each session shows its project, id, number of matching messages and latest time, then
    its best messages in time order ([user] / [asst]), long ones cut around the match.
    The running session (CLAUDE_SESSION_ID, MINICLAW_SESSION_ID) is left out.

    \b
    Example: miniclaw sessions search 'fork queue-operation' --project ~/code/miniclaw
    """
    from miniclaw.cli.render import to_json, warning_lines
    from miniclaw.memory import MemoryStore
    from miniclaw.search.sessions import search_sessions

    query = one_query(query_words, query, "sessions search")
    form = output_format(output, json_out, ("text", "json", "markdown"))

    async def work():
        async with MemoryStore(workspace_of(ctx)) as store:
            return await search_sessions(store, query, sessions=limit, messages=messages,
                                         project=project, require=tuple(require or ()),
                                         exclude=tuple(exclude or ()))

    found = run(work())
    for line in warning_lines(found):  # a transcript or folder that cannot be read
        typer.echo(line, err=True)
    if not found.sessions and (hint := _claude_code_hint(workspace_of(ctx))):
        typer.echo(hint, err=True)
    if form == "json":
        typer.echo(to_json(found.to_dict()))
    elif form == "markdown":
        typer.echo(sessions_markdown(found))
    else:
        typer.echo(sessions_text(found))


def _claude_code_hint(workspace) -> str | None:
    """When nothing was found: how to search Claude Code's conversations, if this machine
    has them and no source reads them (`sources add` is not obvious from "No match")."""
    import os

    from miniclaw.sources.base import configured_sources, kind_class

    projects = os.path.join(os.path.expanduser("~"), ".claude", "projects")
    if not os.path.isdir(projects):
        return None
    if any(isinstance(source, kind_class("claude_code"))
           for source in configured_sources(workspace)[0]):
        return None
    return ("Claude Code's conversations are not searched: `miniclaw sources add claude_code "
            "~/.claude/projects` adds them")


def _project(hit) -> str:
    import os

    project = hit.project or hit.source
    home = os.path.expanduser("~")
    if project == home or project.startswith(home.rstrip("/") + "/"):
        project = "~" + project[len(home.rstrip("/")):]
    return project


def _line(text: str) -> str:
    from miniclaw.text import printable

    return printable(text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t"))


def sessions_text(found) -> str:
    """The reference tool's layout: a header per session, `[user]`/`[asst]` lines,
    `... and K more matches`, and a closing count."""
    from miniclaw.search.sessions import snippet

    if not found.sessions:
        return f"No conversation matches {_line(found.query)!r}."
    blocks = []
    for hit in found.sessions:
        lines = [_line(f"{_project(hit)} | {hit.session} | {hit.matches} "
                       f"{'match' if hit.matches == 1 else 'matches'} | {hit.latest or '-'}")]
        for message in hit.messages:
            role = _ROLES.get(str(message.meta.get("role")), str(message.meta.get("role")))
            lines.append(f"[{role}] {_line(snippet(message))}")
        if hit.matches > len(hit.messages):
            more = hit.matches - len(hit.messages)
            lines.append(f"... and {more} more {'match' if more == 1 else 'matches'}")
        blocks.append("\n".join(lines))
    count, shown = max(found.total, len(found.sessions)), len(found.sessions)
    more = f" (showing top {shown})" if count > shown else ""
    return "\n\n".join(blocks) + (f"\n\n\nFound matches in {count} "
                                  f"{'session' if count == 1 else 'sessions'}{more}")


def sessions_markdown(found) -> str:
    from miniclaw.search.sessions import snippet
    from miniclaw.text import printable

    out = [f"# Conversations about: {printable(found.query)}", ""]
    if not found.sessions:
        out.append("No conversation matches.")
    for hit in found.sessions:
        out += [f"## {printable(_project(hit))} · `{printable(hit.session)}`", "",
                f"{hit.matches} {'match' if hit.matches == 1 else 'matches'}, latest "
                f"{printable(hit.latest or '-')}", ""]
        for message in hit.messages:
            role = printable(str(message.meta.get("role")))
            when = printable(str(message.meta.get("timestamp") or ""))
            text = printable(" ".join(snippet(message).split()))
            out.append(f"- **{role}** {when}: {text}")
        if hit.matches > len(hit.messages):
            out.append(f"- … and {hit.matches - len(hit.messages)} more")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
