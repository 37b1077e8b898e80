"""The memory tools a model may call: `write_memory` and `search_memory`.

`TOOLS` is what the model is told (OpenAI function schemas); `run_tool` carries a call out
through the `MemoryStore` and returns two texts: what the model gets back, and one line for
the person, saying what was written or searched. A bad call (unknown tool, arguments that are
not JSON, empty text) is answered to the model as an error it can correct, never raised:
the conversation goes on, and the person sees the failure in the shown line. Search results
are the parser's entries: no private text.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from miniclaw.errors import MemoryFileError, UsageError

SEARCH_LIMIT = 5

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


class ToolOutcome(NamedTuple):
    result: str  # sent back to the model
    shown: str  # one line for the person


async def run_tool(store, name: str, arguments: str) -> ToolOutcome:
    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return _refused(name, "the arguments are not valid JSON")
    if not isinstance(args, dict):
        return _refused(name, "the arguments must be a JSON object")
    try:
        if name == "write_memory":
            return await _write(store, args)
        if name == "search_memory":
            return await _search(store, args)
    except (UsageError, MemoryFileError) as exc:  # empty text, no words, a damaged file
        return _refused(name, str(exc))
    return _refused(name, f"there is no tool called {name!r}; use write_memory or search_memory")


def _refused(name: str, why: str) -> ToolOutcome:
    return ToolOutcome(f"error: {why}", f"[{name} failed: {why}]")


async def _write(store, args: dict) -> ToolOutcome:
    content, kind = args.get("content"), args.get("kind", "daily")
    if not isinstance(content, str):
        raise UsageError("content must be a string")
    if kind == "long_term":
        entry = await store.add_long_term(content)
    elif kind == "daily":
        entry = await store.add_daily_note(content)
    else:
        raise UsageError(f"kind must be long_term or daily, not {kind!r}")
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
