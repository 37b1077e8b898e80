"""ChatSession: one conversation between the user, their memory and a model.

A user turn goes, in this order: into short-term memory, into the transcript, into a context
built for it (`ContextBuilder`), to the provider (all but the transcript without its
`<private>` parts: `privacy.visible_typed`), whose answer is written out as it streams;
tool calls the model makes are carried out through the store and shown; the answer then goes
into short-term memory and the transcript. When the provider fails, the user's turn is
already in the transcript, an `error` record follows it, and the session goes on.

Slash commands act on memory directly and are not messages: /remember, /note, /search,
/context, /help, /exit. The session writes to the two streams it is given (`out` for
answers and command output, `err` for errors) and reads nothing: the terminal is
`chat.console`'s business, so the session is tested with plain string buffers.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TextIO

from miniclaw.chat.providers import ChatRequest, Provider, ToolCall
from miniclaw.chat.tools import SEARCH_LIMIT, WriteBudget, offered_tools, run_tool
from miniclaw.chat.transcript import Transcript, new_session_id
from miniclaw.context import DEFAULT_BUDGET, Context, ContextBuilder
from miniclaw.errors import MiniclawError, ProviderError, UsageError
from miniclaw.search.hints import describe
from miniclaw.entries.privacy import visible_typed
from miniclaw.search.scoring import AUTO_MODE
from miniclaw.text import is_utf8

# The chat's words for what a search hid or could try (hints.py): its own command, no flags.
CHAT_WORDING = {
    "older": "{count} older {matches} beyond {days} days: /search --all QUERY includes them",
    "widen_days": "/search --all QUERY searches all history (only the last {days} days of "
                  "daily notes were searched)",
}
ENDINGS = ("exit", "quit")  # typed alone, they end the session as /exit does
MAX_TOOL_ROUNDS = 4  # a model that keeps calling tools is stopped after this many rounds

HELP = """\
Commands:
  /remember TEXT   save TEXT in long-term memory (memory/MEMORY.md); a fact already
                   there is not saved twice (/remember --force TEXT saves it anyway)
  /note TEXT       add TEXT to today's daily note (/note --force TEXT: even if known)
  /search QUERY    search memory: MEMORY.md and the last 30 days of notes
                   ("phrase", +must, -not, prefix*); /search --all QUERY: all history
  /forget CITATION remove a memory, e.g. /forget memory/2026-02-14.md:5
  /context         what the assistant saw for your last message
  /help            this list
  /exit            end the session (exit, quit or Ctrl-D too)
Anything else is a message to the assistant; start it with // to send a literal /.
Ctrl-C cancels the line being typed, or the answer being written."""


class _Output:
    """A text stream that remembers whether the cursor is at the start of a line."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.at_line_start = True

    def write(self, text: str) -> None:
        if text:
            self.stream.write(text)
            self.stream.flush()
            self.at_line_start = text.endswith("\n")

    def line(self, text: str) -> None:
        """`text` on a line of its own."""
        self.write(("" if self.at_line_start else "\n") + text + "\n")


class ChatSession:
    def __init__(self, store, provider: Provider, transcript: Transcript, *,
                 out: TextIO, err: TextIO, format_search: Callable[[object], str],
                 budget: int = DEFAULT_BUDGET,
                 confirm: Callable[[object], Awaitable[bool]] | None = None,
                 mode: str = AUTO_MODE) -> None:
        self.store = store
        self.provider = provider
        self.transcript = transcript
        # Every search of the session (context, /search, the model's) ranks in `mode`: the
        # best available by default; the model loads once, at the first (semantic/model.py).
        self.mode = mode
        self.builder = ContextBuilder(store, mode=mode)
        self.vectors_said = False  # the vectors' progress is said once a session
        self.degraded_said = False  # so is a mode asked for that cannot run
        self.budget = budget
        self.last_context: Context | None = None
        self.writes = WriteBudget()  # the model's memory writes, capped per turn and session
        self._out, self._err = _Output(out), _Output(err)
        self._format_search = format_search
        self.confirm = confirm  # asks the person before the model forgets; None: no one to ask
        self.failed = False  # a turn failed (a piped chat then exits 1)
        self._said: list[str] = []  # the answer streamed so far in this turn

    @classmethod
    def open(cls, workspace: Path, provider: Provider, **options) -> ChatSession:
        """A new session on a workspace, with a fresh session id and transcript."""
        from miniclaw.config import SESSIONS_DIR
        from miniclaw.memory import MemoryStore

        store = MemoryStore(workspace)
        store.require_workspace()
        transcript = Transcript(store.workspace / SESSIONS_DIR, new_session_id(store.now()))
        # The running chat, as Claude Code names its own: left out of recalls (its own words
        # are its history, not memories), here and in the tools it starts.
        os.environ["MINICLAW_SESSION_ID"] = transcript.session_id
        return cls(store, provider, transcript, **options)

    async def aclose(self) -> None:
        try:
            await self.provider.aclose()
        finally:
            self.transcript.close()
            self.store.close()

    # -- one line of input ---------------------------------------------------------------

    async def handle(self, line: str) -> bool:
        """Act on one line the user typed; False when the session should end. An error is
        reported on `err`, remembered in `failed`, and the session goes on."""
        text = line.strip()
        if not text:
            return True
        try:
            return await self.act(text)
        except MiniclawError as exc:
            self.failed = True
            from miniclaw.entries.privacy import visible_typed

            self._err.line(f"Error: {visible_typed(str(exc))}")  # it may quote private text
        return True

    async def act(self, text: str, *, deadline: float | None = None) -> bool:
        """Run a /command or answer a message (`//...` is a message starting with `/`);
        False after /exit (or `exit`, `quit` alone). Raises the `MiniclawError` of a failed turn."""
        if not is_utf8(text):
            raise UsageError("that line is not valid UTF-8 text (check the terminal's "
                             "encoding); nothing was done with it")
        if text.startswith("/") and not text.startswith("//"):
            return await self._command(text)
        if text.lower() in ENDINGS:  # what people type to leave a prompt: not a message
            return False
        await self.ask(text[1:] if text.startswith("//") else text, deadline=deadline)
        return True

    async def _command(self, text: str) -> bool:
        name, _, arg = text[1:].partition(" ")
        name, arg = name.lower(), arg.strip()
        if name in ("exit", "quit"):
            return False
        if name == "help":
            self._out.line(HELP)
        elif name == "context":
            self._out.line(self._context_text())
        elif name in ("remember", "note", "search", "forget") and not arg:
            what = {"search": "QUERY", "forget": "CITATION"}.get(name, "TEXT")
            raise UsageError(f"/{name} needs text: /{name} {what}")
        elif name in ("remember", "note"):
            force, _, rest = arg.partition(" ")
            force = force == "--force" and bool(rest.strip())
            added = await self.store.add(rest.strip() if force else arg,
                                         long=name == "remember", force=force)
            entry = added.entry
            if not added.written:
                self._out.line(f"Already remembered: {entry.citation} (/{name} --force TEXT "
                               "adds it again)")
            elif name == "remember":
                self._out.line(f"Remembered in long-term memory: {entry.ref}" if entry else
                               "Remembered (all of it is private, so it will not show in "
                               "searches).")
            else:
                self._out.line(f"Noted in today's daily note: {entry.ref}" if entry else
                               "Noted (all of it is private, so it will not show in searches).")
        elif name == "search":  # the window of every search (`SearchOptions.days`), or --all
            every, _, rest = arg.partition(" ")
            if every == "--all" and not rest.strip():
                raise UsageError("/search --all needs text: /search --all QUERY")
            found = await (self.store.search(rest.strip(), limit=SEARCH_LIMIT, days=None,
                                             mode=self.mode) if every == "--all" else
                           self.store.search(arg, limit=SEARCH_LIMIT, mode=self.mode))
            found = _without_running(found)
            for warning in found.warnings:  # a damaged file, vectors still to come: said
                self._err.line(f"Warning: {describe(warning)}")
            self._out.line(self._format_search(found))
        elif name == "forget":  # the person typed the citation: that is the confirmation
            from miniclaw.store import forget

            entry = await forget.find(self.store, arg)
            await forget.forget(self.store, [entry])
            self._out.line(f"Forgot {entry.citation}: {' '.join(entry.text.split())}")
        else:
            raise UsageError(f"there is no command /{name}: /help lists them")
        return True

    def _context_text(self) -> str:
        context = self.last_context
        if context is None:
            return "No message yet: /context shows what the assistant saw for your last one."
        from miniclaw.text import plural

        counts = {name: len(context.items(name)) for name in ("memories", "notes", "history")}
        footer = (f"(about {context.tokens} of {context.budget} tokens, "
                  f"estimated: {plural(counts['memories'], 'memory', 'memories')}, "
                  f"{plural(counts['notes'], 'note entry', 'note entries')}, "
                  f"{plural(counts['history'], 'earlier turn')})")
        if context.mode:  # which mode ranked the memories (what `auto` chose), and vectors
            vectors = f"; {describe(context.vectors)}" if context.vectors else ""
            footer += f"\n(memories ranked by {context.mode}{vectors})"
        return f"{context.render()}\n\n{footer}"

    # -- a message to the model ----------------------------------------------------------

    async def ask(self, text: str, *, deadline: float | None = None) -> str:
        """Answer one message, streaming the answer to `out`; returns the whole answer.

        The message's `<private>` parts stay in the transcript (the person's own file, as a
        memory file keeps them) and go nowhere else: not to the model, the context's search,
        the prompt or short-term memory. A message that is all private is a `UsageError`.

        Raises `ProviderError` when the model cannot answer, or not within `deadline`
        seconds (and any `MiniclawError` of building the context or carrying out a tool),
        after recording it.
        """
        visible = visible_typed(text)  # what the model, the prompt and the history get
        if not visible:
            raise UsageError("all of that message is private (inside a private tag): nothing was "
                             "sent to the assistant")
        self.store.short_term.add("user", visible)
        await self._record("user", text)  # the person's own file keeps it as typed
        self.writes.new_turn()
        self._said = []
        try:
            timer = asyncio.timeout(deadline)
            try:
                async with timer:
                    answer = await self._answer(visible)
            except TimeoutError:
                if not timer.expired():
                    raise
                raise ProviderError(f"no whole answer within {deadline:g} s (the deadline; "
                                    "raise it with --deadline or \"deadline\" in "
                                    "config.json)") from None
        except MiniclawError as exc:
            await self._record("error", str(exc))
            if not self._out.at_line_start:
                self._out.write("\n")
            raise
        except asyncio.CancelledError:  # Ctrl-C: keep what was said, marked as cut short
            partial = "".join(self._said)
            self.store.short_term.add("assistant", partial + " [interrupted]")
            await asyncio.shield(self._record("assistant", partial, interrupted=True))
            if not self._out.at_line_start:
                self._out.write("\n")
            raise
        self.store.short_term.add("assistant", answer)
        await self._record("assistant", answer,
                           **({"recall": True} if getattr(self.provider, "recalls", False) else {}))
        return answer

    async def _answer(self, text: str) -> str:
        context = await self.builder.build(text, budget_tokens=self.budget)
        self.last_context = context
        if context.degraded and not self.degraded_said:  # the mode asked for cannot run
            self.degraded_said = True
            self._err.line(f"({describe(context.degraded)})")
        if context.vectors and not self.vectors_said:  # for the person, not in the prompt
            self.vectors_said = True
            self._err.line(f"({describe(context.vectors)})")
        messages = [{"role": "system", "content": context.render()},
                    {"role": "user", "content": text}]
        parts: list[str] = []
        for _ in range(MAX_TOOL_ROUNDS + 1):
            said: list[str] = []
            calls: list[ToolCall] = []
            tools = offered_tools(self.store, confirmed=self.confirm is not None)
            async for event in self.provider.stream(ChatRequest(messages, tools, context)):
                if isinstance(event, ToolCall):
                    calls.append(event)
                else:
                    said.append(event)
                    self._said.append(event)
                    self._out.write(event)
            parts += said
            if not calls:
                break
            messages.append({"role": "assistant", "content": "".join(said) or None,
                             "tool_calls": [{"id": c.id, "type": "function", "function": {
                                 "name": c.name, "arguments": c.arguments}} for c in calls]})
            for call in calls:
                outcome = await run_tool(self.store, call.name, call.arguments, self.writes,
                                         self.confirm, self.mode)
                self._out.line(outcome.shown)
                messages.append({"role": "tool", "tool_call_id": call.id,
                                 "content": outcome.result})
                self.store.short_term.add("tool", outcome.shown)
                await self._record("tool", outcome.shown)
        else:
            self._err.line(f"(stopped: the model was still calling tools after "
                           f"{MAX_TOOL_ROUNDS} rounds)")
        if not self._out.at_line_start:
            self._out.write("\n")
        return "".join(parts)

    async def _record(self, role: str, content: str, **marks: bool) -> None:
        await self.transcript.append(role, content, self.store.now(), **marks)


def _without_running(found):
    """/search's results less this very conversation's messages (already on screen)."""
    from dataclasses import replace

    from miniclaw.sources.transcripts import not_running

    kept = not_running(found.results)
    return found if len(kept) == len(found.results) else replace(found, results=kept)
