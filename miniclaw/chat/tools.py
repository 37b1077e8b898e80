"""The memory tools a model may call: `write_memory` and `search_memory`.

`TOOLS` is what the model is told (OpenAI function schemas); `run_tool` carries a call out
through the `MemoryStore` and returns two texts: what the model gets back, and one line for
the person, saying what was written or searched. A bad call (unknown tool, arguments that are
not JSON, empty text) is answered to the model as an error it can correct, never raised:
the conversation goes on, and the person sees the failure in the shown line. Search results
are the parser's entries: no private text.

A model can also write without end (one was seen making 190 `write_memory` calls in a turn,
pushing MEMORY.md past what the index reads): a `WriteBudget` caps the writes per turn and
per session, and one write's size; a write past a cap is refused to the model like any
other bad call. Anything a front end runs tools for (the chat, an MCP server) keeps one.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from miniclaw.errors import MiniclawError, UsageError

SEARCH_LIMIT = 5
MAX_WRITES_PER_TURN = 10  # a turn rarely has more than two or three things worth keeping
MAX_WRITES_PER_SESSION = 100
MAX_WRITE_CHARS = 4000  # one memory is a sentence or a paragraph, not a document

TOOLS = [
    {"type": "function", "function": {
        "name": "write_memory",
        "description": "Save something worth remembering to the user's memory files. "
                       "kind long_term: lasting facts, preferences and decisions (MEMORY.md); "
                       "kind daily: what happened today (today's daily note).",
        "parameters": {"type": "object", "properties": {
            "content": {"type": "string",
                        "description": "The memory, one self-contained sentence."},
            "kind": {"type": "string", "enum": ["long_term", "daily"]},
        }, "required": ["content", "kind"]},
    }},
    {"type": "function", "function": {
        "name": "search_memory",
        "description": "Search the user's memory files (MEMORY.md and all daily notes) and "
                       "get the best matches with their citations.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "A few words to look for."},
        }, "required": ["query"]},
    }},
]


class WriteBudget:
    """How many more memory writes a model may make in this turn and in this session."""

    def __init__(self, per_turn: int = MAX_WRITES_PER_TURN,
                 per_session: int = MAX_WRITES_PER_SESSION) -> None:
        self.per_turn, self.per_session = per_turn, per_session
        self.in_turn = self.in_session = 0

    def new_turn(self) -> None:
        self.in_turn = 0

    def spend(self) -> None:
        """Count one write, or raise `UsageError` when a cap is reached (nothing counted)."""
        if self.in_session >= self.per_session:
            raise UsageError(f"this session already wrote {self.per_session} memories, the "
                             "most one session may; the user can add more with /remember")
        if self.in_turn >= self.per_turn:
            raise UsageError(f"already {self.per_turn} memories written in this turn, the most "
                             "one turn may; save only what matters most")
        self.in_turn += 1
        self.in_session += 1


class ToolOutcome(NamedTuple):
    result: str  # sent back to the model
    shown: str  # one line for the person


async def run_tool(store, name: str, arguments: str,
                   writes: WriteBudget | None = None) -> ToolOutcome:
    """Carry out one tool call; every failure is answered, never raised. Without a
    `WriteBudget` (a one-off call) the caps start afresh."""
    writes = writes if writes is not None else WriteBudget()
    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return _refused(name, "the arguments are not valid JSON")
    if not isinstance(args, dict):
        return _refused(name, "the arguments must be a JSON object")
    try:
        if name == "write_memory":
            return await _write(store, args, writes)
        if name == "search_memory":
            return await _search(store, args)
    except MiniclawError as exc:  # empty text, a cap, a damaged file, an index that fails
        return _refused(name, str(exc))
    return _refused(name, f"there is no tool called {name!r}; use write_memory or search_memory")


def _refused(name: str, why: str) -> ToolOutcome:
    return ToolOutcome(f"error: {why}", f"[{name} failed: {why}]")


async def _write(store, args: dict, writes: WriteBudget) -> ToolOutcome:
    content, kind = args.get("content"), args.get("kind", "daily")
    if not isinstance(content, str):
        raise UsageError("content must be a string")
    if len(content) > MAX_WRITE_CHARS:
        raise UsageError(f"content is {len(content)} characters long; one memory may have "
                         f"{MAX_WRITE_CHARS} at most: save the gist")
    if kind not in ("long_term", "daily"):
        raise UsageError(f"kind must be long_term or daily, not {kind!r}")
    writes.spend()
    if kind == "long_term":
        entry = await store.add_long_term(content)
    else:
        entry = await store.add_daily_note(content)
    if entry is None:  # all of it inside <private>: written, but invisible by design
        return ToolOutcome("saved (private: it will not show in searches)",
                           "[remembered privately]")
    where = "long-term memory" if kind == "long_term" else "today's note"
    return ToolOutcome(f"saved at {entry.citation}",
                       f"[remembered in {where}, {entry.citation}: {' '.join(entry.text.split())}]")


async def _search(store, args: dict) -> ToolOutcome:
    from miniclaw.context import as_query

    query = args.get("query")
    if not isinstance(query, str):
        raise UsageError("query must be a string")
    found = await store.search(as_query(query), limit=SEARCH_LIMIT, days=None)
    lines = [f"[{hit.citation}, {hit.date.isoformat() if hit.date else 'undated'}] "
             f"{' '.join(hit.content.split())}" for hit in found.results]
    result = "\n".join(lines) if lines else "no memories matched"
    if found.corrections:
        from miniclaw.memory.results import describe_corrections

        result = f"Searched instead: {describe_corrections(found.corrections)}\n{result}"
    return ToolOutcome(result, f'[searched memory for "{query}": {len(lines)} found]')
