"""ContextBuilder: what the assistant sees of its memory for one message, within a budget.

`await ContextBuilder(store).build(message, budget_tokens=4000)` returns a `Context`: Markdown
sections that render to the system prompt, and the same parts for programs.

Sections, in the order they are filled (the priority) and rendered:

1. identity: SOUL.md, AGENTS.md, USER.md, TOOLS.md from the workspace, each within 8% of the
   budget (at least 40 tokens, so that small budgets keep a cut of each; at most 800): who
   the assistant is and who it talks to;
2. memories: the entries the ranker finds most relevant to the message (mode `auto`, the best
   available: hybrid when the embedding model is installed, else bm25; `mode=` chooses; over
   MEMORY.md, every daily note and the other sources, all history: relevance, not age,
   decides; recent days have their own section), best first, each with its citation
   `path:line` and date; 30%; as many as fit (the ranker is asked for as many as the budget
   could hold). A semantic search embeds only a few new memories each time (the rest come
   later, `miniclaw memory index`): how far along that is (`Context.vectors`) is for the
   person, never in the prompt;
3. notes: today's and yesterday's daily notes (days of the `timezone` setting, UTC by
   default), newest day first, 15%; when they do not all fit, the newest entries are kept;
4. history: the short-term conversation, newest turn first, in what is left (23% of the
   budget and more), rendered oldest first so it reads as a conversation. The message itself
   is left out: it is sent as the user's turn.

The budget flows: a part may take its share plus whatever the parts before it left unused,
less only what the parts after it need of their own shares (when notes and history are short,
memories take the room). An item that does not fit whole is cut (marked with …) when at least
32 tokens are left in its room, and then the section is full. A memory appears once: a
daily-note entry that is also a ranked memory is only in `memories`.

Invariants: `estimate_tokens(context.render()) <= budget`; the same files, clock and message
(and, when the mode is semantic, the same vectors in the index: each search computes a few
more until all are there) give the same rendered text; no private text, because memories come from the parser's entries,
identity files go through the same redaction (`miniclaw.entries.privacy`), and the message
loses its `<private>` parts before anything reads it (`visible_typed`: what `Context.message`
holds and the memories are searched for), as the turns do in short-term memory.

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

from miniclaw.dates import ZONE_LEAD_DAYS, zone_name
from miniclaw.errors import QueryError, UsageError
from miniclaw.entries.entry import Entry
from miniclaw.search.hints import SearchWarning
from miniclaw.search.options import DEFAULT_DAYS
from miniclaw.search.results import RankedMemory, describe_corrections
from miniclaw.search.scoring import AUTO_MODE
from miniclaw.store.short_term import Turn
from miniclaw.tokens import estimate_tokens

log = logging.getLogger("miniclaw")

MIN_BUDGET, MAX_BUDGET, DEFAULT_BUDGET = 200, 32_000, 4_000
IDENTITY_FILES = ("SOUL.md", "AGENTS.md", "USER.md", "TOOLS.md")
IDENTITY_SHARE, IDENTITY_MIN, IDENTITY_MAX = 0.08, 40, 800  # per file
MEMORIES_SHARE = 0.30
NOTES_SHARE = 0.15
HISTORY_SHARE = 1 - len(IDENTITY_FILES) * IDENTITY_SHARE - MEMORIES_SHARE - NOTES_SHARE
MEMORY_FIRST_ASK = 8  # memories asked of the ranker; 4 times more while all of them fit
MEMORY_TOKENS = 20  # about the least a memory costs with its citation: the most to ask for
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
    source: str | None = None  # long_term | daily_note | a configured source | identity | user | assistant | tool
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
    corrections: tuple[tuple[str, str], ...] = ()  # (typed, searched instead) for memories
    mode: str | None = None  # the mode the memories were ranked by (what `auto` chose)
    vectors: SearchWarning | None = None  # while some memories have no vector (hints.py)
    degraded: SearchWarning | None = None  # the mode asked for could not run (hints.py)
    older: int = 0  # memories of notes before the `days` window that would have been here
    days: int | None = None  # the window, when it hid some (`SearchResults.older`)

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
        return {"message": self.message, "budget": self.budget, "mode": self.mode,
                "tokens": estimate_tokens(prompt),
                "corrections": [{"from": typed, "to": used} for typed, used in self.corrections],
                "sections": [s.to_dict() for s in self.sections], "prompt": prompt,
                **({"degraded": self.degraded.to_dict()} if self.degraded else {}),
                **({"older": {"count": self.older, "days": self.days}} if self.older else {})}


def check_budget(budget: int) -> int:
    valid = isinstance(budget, int) and not isinstance(budget, bool)
    if not valid or not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise UsageError(f"the context budget must be between {MIN_BUDGET} and {MAX_BUDGET} "
                         f"tokens, not {budget!r}")
    return budget


# -- building ------------------------------------------------------------------------------


class ContextBuilder:
    """Builds the `Context` for a message from a `MemoryStore` (see the module docstring)."""

    def __init__(self, store, *, memory_limit: int | None = None,
                 memory_days: int | None = DEFAULT_DAYS, mode: str = AUTO_MODE) -> None:
        self.store = store
        self.memory_limit = memory_limit  # None: as many as the budget could hold
        # The search's window, as everywhere (`SearchOptions.days`): daily notes of the last
        # 30 days, and a count of the older ones it hid; None: all history. MEMORY.md is
        # always searched.
        self.memory_days = memory_days
        self.mode = mode  # the ranking mode (memory/scoring): the best available by default

    async def build(self, message: str, *, budget_tokens: int = DEFAULT_BUDGET) -> Context:
        from miniclaw.entries.privacy import visible_typed

        check_budget(budget_tokens)
        typed, message = message, visible_typed(message)  # never searched, echoed or sent
        if not message.strip():  # the chat never sends one: a context for nothing is a mistake
            raise UsageError("the message is empty once its private parts are removed (private "
                             "text is never used): give the message to build the context for"
                             if typed.strip() else
                             "the message is empty: give the message to build the context for")
        self.store.require_workspace()
        today = self.store.today()
        zone = zone_name(self.store.zone)
        # a note dated after today (written where the zone was ahead) is as recent as today's
        ahead = await asyncio.to_thread(lambda: tuple(
            day for n in range(ZONE_LEAD_DAYS, 0, -1)
            if self.store.has_note(day := today + timedelta(days=n))))
        days = (*ahead, today, today - timedelta(days=1))
        limit = self.memory_limit or MEMORY_FIRST_ASK
        identity, memories, *notes = await asyncio.gather(
            self._identity(), self._memories(message, limit),
            *(self.store.read_day(day) for day in days))
        for warning in memories.warnings:  # once per prompt, for the person running it
            if warning.kind == "file":  # (vectors: `Context.vectors`, shown by the caller)
                log.warning("%s", warning.params["message"])
        # a fact superseded since (`memory add --supersedes`) is not today's truth
        notes = [[e for e in day if not e.meta.get("superseded_by")] for day in notes]
        history = _history(self.store.short_term.recent(), message)
        most = self.memory_limit or max(budget_tokens // MEMORY_TOKENS, 1)
        while True:  # ask for more memories while all that were found fit
            context = assemble(message, budget_tokens, identity, memories.results,
                               list(zip(days, notes)), history, today, memories.corrections,
                               zone)
            kept = context.items("memories")
            if len(memories.results) < limit or limit >= most or len(kept) < limit:
                return context._replace(mode=memories.mode, vectors=memories.vectors,
                                        degraded=memories.degraded, older=memories.older,
                                        days=self.memory_days if memories.older else None)
            limit = min(limit * 4, most)
            memories = await self._memories(message, limit)

    async def _identity(self) -> list[tuple[str, str]]:
        """(file name, visible text) of each identity file that has some."""
        from miniclaw.fs.files import (NotMemoryFileError, OutsideWorkspaceError, decode,
                                       read_bytes_async)
        from miniclaw.entries.parsing import split_lines
        from miniclaw.entries.privacy import redact_lines

        found = []
        for name in IDENTITY_FILES:
            # As memory files (aiofiles, the same open): no link out of the workspace,
            # regular files, 16 MB at most.
            try:
                raw = await read_bytes_async(self.store.workspace / name, self.store.workspace,
                                             name)
            except (OutsideWorkspaceError, NotMemoryFileError) as exc:
                log.warning("%s; not used", exc)
                continue
            if raw is None:
                continue
            text, warning = decode(raw, name, memory_file=False)
            if warning:
                log.warning("%s", warning)
            visible = "\n".join(redact_lines(split_lines(text))).strip()
            visible = re.sub(r"\n{3,}", "\n\n", visible)  # hidden blocks leave blank runs
            if visible:
                found.append((name, visible))
        return found

    async def _memories(self, message: str, limit: int) -> _Found:
        from miniclaw.search.ranker import SearchOptions

        query = as_query(message)
        if not query:
            return _Found([], ())
        try:
            found = await self.store.ranker().search(
                query, SearchOptions(limit=limit, days=self.memory_days, excerpts=False,
                                     mode=self.mode))
        except QueryError:  # prose with no searchable word in it ("?!", only stop words)
            return _Found([], ())
        self.store.showing(found.results)  # the citations the prompt quotes (store/shown.py)
        from miniclaw.sources.transcripts import not_running

        vectors = next((w for w in found.warnings if w.kind == "vectors"), None)
        return _Found(not_running(found.results), found.corrections, found.warnings,
                      found.mode, vectors, found.degraded, found.older)


class _Found(NamedTuple):
    results: list[RankedMemory]
    corrections: tuple[tuple[str, str], ...]
    warnings: tuple = ()  # hints.SearchWarning: files the search could not use as it should
    mode: str | None = None  # the mode that ran
    vectors: SearchWarning | None = None  # how many texts have a vector, while not all
    degraded: SearchWarning | None = None  # the mode asked for could not run
    older: int = 0  # matches of notes before the window (`SearchResults.older`)


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
        room = self.share - self.spent - (0 if self.items else self.heading_cost)
        if self.full or (room < MIN_CUT and _fewest_tokens(content) > room):
            self.left_out += 1  # (the estimate of a long text costs milliseconds)
            return False
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


def _fewest_tokens(text: str) -> float:
    """A lower bound of `estimate_tokens` for any block holding `text`: every character but
    a space costs at least a third of a token."""
    return (len(text) - text.count(" ")) / 3


def _item(block: str, content: str, **fields) -> ContextItem:
    return ContextItem(block, _cost(block), content, **fields)


def _indent(text: str) -> str:
    """Continuation lines of a list item, indented so Markdown keeps them in the item."""
    return text.replace("\n", "\n  ")


def _day_label(day: Date, today: Date) -> str:
    if day > today:  # written where the zone was ahead (travel, a second machine)
        return "Today, in a zone ahead"
    if day == today:
        return "Today"
    return "Yesterday" if day == today - timedelta(days=1) else day.isoformat()


def _memory_item(hit: RankedMemory, body: str) -> ContextItem:
    day = hit.date.isoformat() if hit.date else "undated"
    if hit.meta.get("session"):  # a past message: which conversation, when, who said it
        day = (f"{day} {hit.time or ''}".rstrip() + f", session {hit.meta['session']}, "
               f"{hit.meta.get('role', '')}".rstrip(", "))
    return _item(f"- [{hit.citation}, {day}] {_indent(body)}", body,
                 citation=hit.citation, date=hit.date, time=hit.time, source=hit.source)


def _note_item(entry: Entry, body: str, zone: str = "UTC") -> ContextItem:
    # A header's time is the clock of the note's zone: named only when that is UTC.
    stamp = f"{entry.time}{' UTC' if zone == 'UTC' else ''} " if entry.time else ""
    return _item(f"- {stamp}[{entry.citation}] {_indent(body)}", body, citation=entry.citation,
                 date=entry.date, time=entry.time, source=entry.source)


def _turn_item(turn: Turn, body: str) -> ContextItem:
    return _item(f"**{turn.role}:** {_indent(body)}", body, source=turn.role)


def _notes_heading(title: str, day: Date, today: Date, path: str) -> str:
    return f"{title}## {_day_label(day, today)}, {day.isoformat()} ({path})\n"


def _notes_sections(notes: list[tuple[Date, list[Entry]]], today: Date,
                    shown: set[tuple[str, int]], room: int,
                    zone: str = "UTC") -> list[ContextSection]:
    """Today's then yesterday's entries not already `shown`, newest first while they fit in
    `room`; each day a section, shown in file order."""
    sections, title = [], "# Recent daily notes\n\n"
    for day, entries in notes:
        fresh = [e for e in entries if (e.path, e.line_start) not in shown]
        if not fresh:
            continue
        section = _Section("notes", _notes_heading(title, day, today, fresh[0].path), room)
        for entry in reversed(fresh):
            section.offer(entry.text, lambda body, entry=entry: _note_item(entry, body, zone))
        done = section.done(reverse=True)
        if done is not None:
            sections.append(done)
            room -= done.tokens
            title = ""
    return sections


def _history_section(history: Sequence[Turn], room: int) -> ContextSection | None:
    """The newest turns while they fit in `room`, shown oldest first."""
    section = _Section("history", "# Conversation so far\n", room)
    for turn in reversed(history):
        if not section.offer(turn.content, lambda body, turn=turn: _turn_item(turn, body)) \
                or section.full:
            break  # an older turn after a missing one would read as a non sequitur
    section.left_out = len(history) - len(section.items)
    return section.done(reverse=True)


def assemble(message: str, budget: int, identity: Iterable[tuple[str, str]],
             memories: Iterable[RankedMemory], notes: Iterable[tuple[Date, list[Entry]]],
             history: Sequence[Turn], today: Date,
             corrections: tuple[tuple[str, str], ...] = (), zone: str = "UTC") -> Context:
    """Fit the candidates into the budget by priority (the module docstring's rules)."""
    check_budget(budget)
    left = budget
    sections: list[ContextSection] = []

    def add(done: ContextSection | None) -> int:
        nonlocal left
        if done is None:
            return 0
        sections.append(done)
        left -= done.tokens
        return done.tokens

    notes = sorted(notes, key=lambda pair: pair[0], reverse=True)  # today's first
    # What notes and history would take of their own shares: room the parts before them
    # may use only when they have less to show.
    notes_need = sum(s.tokens for s in _notes_sections(notes, today, set(),
                                                       int(budget * NOTES_SHARE)))
    history_need = getattr(_history_section(history, int(budget * HISTORY_SHARE)), "tokens", 0)
    carried = 0  # what the parts before left unused of their shares

    # 1. identity: each file its own section, under the file's own title.
    file_cap = min(max(int(budget * IDENTITY_SHARE), IDENTITY_MIN), IDENTITY_MAX)
    identity = list(identity)
    for name, text in identity:
        section = _Section("identity", "", min(file_cap, left))
        section.offer(text, lambda body, name=name: _item(body, body, citation=name,
                                                          source="identity"))
        carried += file_cap - add(section.done())
    carried += file_cap * (len(IDENTITY_FILES) - len(identity))

    # 2. memories, best first: their share, what identity left, and what notes and history
    # do not need.
    shown: set[tuple[str, int]] = set()
    heading = "# Relevant memories (cite as [path:line])\n"
    if corrections:  # the words the memories were found for are not all the message's
        heading += f"\nSearched instead: {describe_corrections(corrections)}\n"
    share = int(budget * MEMORIES_SHARE) + max(carried, 0)
    section = _Section("memories", heading,
                       min(left, max(share, left - notes_need - history_need)))
    for hit in memories:
        if section.offer(hit.content, lambda body, hit=hit: _memory_item(hit, body)):
            shown.add((hit.path, hit.line_start))
    add(section.done())

    # 3. daily notes: all that is left but what history needs; 4. the conversation: the rest.
    room = min(left, max(int(budget * NOTES_SHARE), left - history_need))
    for done in _notes_sections(notes, today, shown, room, zone):
        add(done)
    add(_history_section(history, left))
    return Context(message, budget, tuple(sections), tuple(corrections))
