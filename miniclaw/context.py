"""ContextBuilder: what the assistant sees of its memory for one message, within a budget.

`await ContextBuilder(store).build(message, budget_tokens=4000)` returns a `Context`: Markdown
sections that render to the system prompt, and the same parts for programs.

Sections, in the order they are filled (the priority) and rendered:

1. identity: SOUL.md, AGENTS.md, USER.md, TOOLS.md from the workspace, each capped at 8% of
   the budget (and at most 800 tokens): who the assistant is and who it talks to;
2. memories: the entries the ranker finds most relevant to the message (bm25 over MEMORY.md
   and every daily note, all history: relevance, not age, decides; recent days have their
   own section), best first, each with its citation `path:line` and date; at most 30%;
3. notes: today's and yesterday's daily notes (UTC days), newest day first, at most 15%;
   when they do not all fit, the newest entries are kept;
4. history: the short-term conversation, newest turn first, as many as fit in what is left
   (at least 23% of the budget), rendered oldest first so it reads as a conversation. The
   message itself is left out: it is sent as the user's turn.

A section never takes more than its share, and what a section does not use goes to the next
ones. An item that does not fit whole is cut (marked with …) when at least 32 tokens are left
in its share, and then the section is full. A memory appears once: a daily-note entry that
is also a ranked memory is only in `memories`.

Invariants: `estimate_tokens(context.render()) <= budget`; the same files, clock and message
give the same rendered text; no private text, because memories come from the parser's entries
and identity files go through the same redaction (`miniclaw.memory.privacy`).

Tokens are estimated, not counted: no tokenizer is installed and none can be downloaded at
run time. See `miniclaw.tokens.estimate_tokens` for the rule and how far it errs.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable, Sequence
from datetime import date as Date
from datetime import timedelta
from typing import NamedTuple

from miniclaw.errors import QueryError, UsageError
from miniclaw.memory.entry import Entry
from miniclaw.memory.results import RankedMemory
from miniclaw.memory.short_term import Turn
from miniclaw.tokens import estimate_tokens

log = logging.getLogger("miniclaw")

MIN_BUDGET, MAX_BUDGET, DEFAULT_BUDGET = 200, 32_000, 4_000
IDENTITY_FILES = ("SOUL.md", "AGENTS.md", "USER.md", "TOOLS.md")
IDENTITY_SHARE, IDENTITY_MAX = 0.08, 800  # per file
MEMORIES_SHARE = 0.30
NOTES_SHARE = 0.15
MEMORY_CANDIDATES = 8  # ranked memories asked for; as many as fit are kept
MIN_CUT = 32  # an item is cut to fit only when at least this many tokens are left
QUERY_CHARS = 1000  # the ranker's limit on a query's length

def _cost(block: str) -> int:
    """What a block costs in the prompt, with the newline that joins it to the next."""
    return estimate_tokens(block) + 1


def cut_to_fit(text: str, fits) -> str | None:
    """The longest start of `text`, ended with " …", for which `fits(shorter)` holds (cut at
    a space when one is near the end); None when no start of it fits."""
    mark = " …"
    low, high = 0, len(text)  # binary search on the prefix length; every kept `low` fits
    while low < high:
        mid = (low + high + 1) // 2
        if fits(text[:mid].rstrip() + mark):
            low = mid
        else:
            high = mid - 1
    head = text[:low].rstrip()
    space = head.rfind(" ")
    if space > len(head) * 3 // 4 and fits(head[:space].rstrip() + mark):
        head = head[:space].rstrip()
    return head + mark if head and fits(head + mark) else None


# -- what a context holds ------------------------------------------------------------------


class ContextItem(NamedTuple):
    """One piece of a section: an identity file, a memory, a note entry or a turn."""

    block: str  # as rendered in the prompt (Markdown, may span lines)
    tokens: int  # its cost, with the newline after it
    content: str  # the text itself, without Markdown around it
    citation: str | None = None  # `path:line` for memories and notes, the file name for identity
    date: Date | None = None
    time: str | None = None  # HH:MM:SS UTC for note entries
    source: str | None = None  # long_term | daily_note | identity | user | assistant | tool
    cut: bool = False  # shortened to fit the budget

    def to_dict(self) -> dict:
        return {"source": self.source, "citation": self.citation,
                "date": self.date.isoformat() if self.date else None, "time": self.time,
                "content": self.content, "tokens": self.tokens, "cut": self.cut}


class ContextSection(NamedTuple):
    """A Markdown section of the prompt and what is in it."""

    name: str  # identity | memories | notes | history
    heading: str  # the lines before the items ("" for an identity file: it has its own title)
    items: tuple[ContextItem, ...]
    tokens: int  # heading and items
    left_out: int  # candidates that did not fit the budget

    def to_dict(self) -> dict:
        return {"name": self.name, "heading": self.heading, "tokens": self.tokens,
                "left_out": self.left_out,
                "items": [item.to_dict() for item in self.items]}


class Context(NamedTuple):
    """What the assistant sees for one message. `render()` is the system prompt."""

    message: str
    budget: int
    sections: tuple[ContextSection, ...]

    def render(self) -> str:
        """Sections apart by a blank line; in a section, its heading and items one per line."""
        return "\n\n".join(
            "\n".join(((s.heading,) if s.heading else ()) + tuple(i.block for i in s.items))
            for s in self.sections)

    def __str__(self) -> str:
        return self.render()

    @property
    def tokens(self) -> int:
        """The estimated tokens of the rendered prompt (never more than the budget)."""
        return estimate_tokens(self.render())

    def items(self, name: str) -> tuple[ContextItem, ...]:
        """The items of every section called `name` (identity and notes have several)."""
        return tuple(item for s in self.sections if s.name == name for item in s.items)

    def to_dict(self) -> dict:
        prompt = self.render()
        return {"message": self.message, "budget": self.budget,
                "tokens": estimate_tokens(prompt),
                "sections": [s.to_dict() for s in self.sections], "prompt": prompt}


def check_budget(budget: int) -> int:
    valid = isinstance(budget, int) and not isinstance(budget, bool)
    if not valid or not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise UsageError(f"the context budget must be between {MIN_BUDGET} and {MAX_BUDGET} "
                         f"tokens, not {budget!r}")
    return budget


# -- building ------------------------------------------------------------------------------


class ContextBuilder:
    """Builds the `Context` for a message from a `MemoryStore` (see the module docstring)."""

    def __init__(self, store, *, memory_limit: int = MEMORY_CANDIDATES,
                 memory_days: int | None = None) -> None:
        self.store = store
        self.memory_limit = memory_limit
        self.memory_days = memory_days  # None: all history (MEMORY.md is always searched)

    async def build(self, message: str, *, budget_tokens: int = DEFAULT_BUDGET) -> Context:
        check_budget(budget_tokens)
        self.store.require_workspace()
        today = self.store.today()
        days = (today, today - timedelta(days=1))
        identity, memories, *notes = await asyncio.gather(
            self._identity(), self._memories(message),
            *(self.store.read_day(day) for day in days))
        history = _history(self.store.short_term.recent(), message)
        return assemble(message, budget_tokens, identity, memories, list(zip(days, notes)),
                        history, today)

    async def _identity(self) -> list[tuple[str, str]]:
        """(file name, visible text) of each identity file that has some."""
        from miniclaw.memory.files import (NotMemoryFileError, OutsideWorkspaceError, decode,
                                           read_bytes)
        from miniclaw.memory.parsing import split_lines
        from miniclaw.memory.privacy import redact_lines

        def read() -> list[tuple[str, str]]:
            found = []
            for name in IDENTITY_FILES:
                # As memory files: no link out of the workspace, regular files, 16 MB at most.
                try:
                    raw = read_bytes(self.store.workspace / name, self.store.workspace, name)
                except (OutsideWorkspaceError, NotMemoryFileError) as exc:
                    log.warning("%s; not used", exc)
                    continue
                if raw is None:
                    continue
                text, warning = decode(raw, name)
                if warning:
                    log.warning("%s", warning)
                visible = "\n".join(redact_lines(split_lines(text))).strip()
                visible = re.sub(r"\n{3,}", "\n\n", visible)  # hidden blocks leave blank runs
                if visible:
                    found.append((name, visible))
            return found

        return await asyncio.to_thread(read)

    async def _memories(self, message: str) -> list[RankedMemory]:
        query = as_query(message)
        if not query:
            return []
        try:
            found = await self.store.search(query, limit=self.memory_limit, days=self.memory_days)
        except QueryError:  # prose with no searchable word in it ("?!", only stop words)
            return []
        return found.results


def as_query(message: str) -> str:
    """The message as plain words for the ranker: a chat message is prose, not the query
    language, so quotes, a leading +/- and a trailing * lose their meaning."""
    words = []
    for token in re.sub('["\u201c\u201d]', " ", message).split():
        word = token.lstrip("+-").rstrip("*")
        if word:
            words.append(word)
    query, length = [], 0
    for word in words:  # the ranker takes at most QUERY_CHARS characters
        length += len(word) + 1
        if length > QUERY_CHARS:
            break
        query.append(word)
    return " ".join(query)


def _history(turns: Sequence[Turn], message: str) -> list[Turn]:
    """The conversation before this message (the chat loop has already added it)."""
    turns = list(turns)
    if turns and turns[-1].role == "user" and turns[-1].content == message:
        turns.pop()
    return turns


# -- fitting (pure: no I/O, no clock) ------------------------------------------------------


class _Section:
    """A section being filled: items are added while they fit its share of the budget.

    It costs its heading (when it has items), one token for the blank line before it, and
    each item's block with its newline: by `estimate_tokens`'s subadditivity, an upper bound
    on what the rendered section adds to the prompt.
    """

    def __init__(self, name: str, heading: str, share: int) -> None:
        self.name, self.heading, self.share = name, heading, max(share, 0)
        self.items: list[ContextItem] = []
        self.spent = 0
        self.left_out = 0
        self.full = False
        self.heading_cost = (_cost(heading) if heading else 0) + 1

    def offer(self, content: str, make) -> bool:
        """Add `make(content)` if it fits, or `make(shorter content)` when enough room is
        left (the section is then full); False when nothing was added."""
        if self.full:
            self.left_out += 1
            return False
        room = self.share - self.spent - (0 if self.items else self.heading_cost)
        item = make(content)
        if item.tokens > room and room >= MIN_CUT:
            shorter = cut_to_fit(content, lambda text: make(text).tokens <= room)
            if shorter is not None:
                item = make(shorter)._replace(content=shorter, cut=True)
                self.full = True
        if item.tokens > room:
            self.left_out += 1
            return False
        if not self.items:
            self.spent += self.heading_cost
        self.items.append(item)
        self.spent += item.tokens
        return True

    def done(self, reverse: bool = False) -> ContextSection | None:
        """The section, its items in the order offered (or the reverse); None when empty."""
        if not self.items:
            return None
        items = tuple(reversed(self.items)) if reverse else tuple(self.items)
        return ContextSection(self.name, self.heading, items, self.spent, self.left_out)


def _item(block: str, content: str, **fields) -> ContextItem:
    return ContextItem(block, _cost(block), content, **fields)


def _indent(text: str) -> str:
    """Continuation lines of a list item, indented so Markdown keeps them in the item."""
    return text.replace("\n", "\n  ")


def _day_label(day: Date, today: Date) -> str:
    if day == today:
        return "Today"
    return "Yesterday" if day == today - timedelta(days=1) else day.isoformat()


def assemble(message: str, budget: int, identity: Iterable[tuple[str, str]],
             memories: Iterable[RankedMemory], notes: Iterable[tuple[Date, list[Entry]]],
             history: Sequence[Turn], today: Date) -> Context:
    """Fit the candidates into the budget by priority (the module docstring's rules)."""
    check_budget(budget)
    left = budget
    sections: list[ContextSection] = []

    def close(section: _Section, reverse: bool = False) -> int:
        nonlocal left
        done = section.done(reverse)
        if done is None:
            return 0
        sections.append(done)
        left -= done.tokens
        return done.tokens

    # 1. identity: each file its own section, under the file's own title.
    file_cap = min(int(budget * IDENTITY_SHARE), IDENTITY_MAX)
    for name, text in identity:
        section = _Section("identity", "", min(file_cap, left))
        section.offer(text, lambda body, name=name: _item(body, body, citation=name,
                                                          source="identity"))
        close(section)

    # 2. memories, best first.
    shown: set[tuple[str, int]] = set()
    section = _Section("memories", "# Relevant memories (cite as [path:line])\n",
                       min(int(budget * MEMORIES_SHARE), left))
    for hit in memories:
        def make(body: str, hit=hit) -> ContextItem:
            day = hit.date.isoformat() if hit.date else "undated"
            return _item(f"- [{hit.citation}, {day}] {_indent(body)}", body,
                         citation=hit.citation, date=hit.date, time=hit.time, source=hit.source)

        if section.offer(hit.content, make):
            shown.add((hit.path, hit.line_start))
    close(section)

    # 3. daily notes: today's then yesterday's, newest entries first while they fit; each
    # day is a section shown in file order.
    notes_left = min(int(budget * NOTES_SHARE), left)
    title = "# Recent daily notes\n\n"
    for day, entries in sorted(notes, key=lambda pair: pair[0], reverse=True):
        fresh = [e for e in entries if (e.path, e.line_start) not in shown]
        if not fresh:
            continue
        heading = f"{title}## {_day_label(day, today)}, {day.isoformat()} ({fresh[0].path})\n"
        section = _Section("notes", heading, notes_left)
        for entry in reversed(fresh):
            def make(body: str, entry=entry) -> ContextItem:
                stamp = f"{entry.time} UTC " if entry.time else ""
                return _item(f"- {stamp}[{entry.citation}] {_indent(body)}", body,
                             citation=entry.citation, date=entry.date, time=entry.time,
                             source=entry.source)

            section.offer(entry.text, make)
        spent = close(section, reverse=True)
        if spent:
            notes_left -= spent
            title = ""

    # 4. the conversation: newest turns first while they fit, shown oldest first.
    section = _Section("history", "# Conversation so far\n", left)
    for turn in reversed(history):
        def make(body: str, turn=turn) -> ContextItem:
            return _item(f"**{turn.role}:** {_indent(body)}", body, source=turn.role)

        if not section.offer(turn.content, make) or section.full:
            break  # an older turn after a missing one would read as a non sequitur
    section.left_out = len(history) - len(section.items)
    close(section, reverse=True)
    return Context(message, budget, tuple(sections))
