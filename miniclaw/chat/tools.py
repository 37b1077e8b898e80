"""The memory tools the chat's model may call, in the chat's form: `search_memory` and
`add_memory` of the shared layer (`miniclaw.memory_tools`, which also serves the MCP server).

`offered_tools(store)` is what the model is told (OpenAI function schemas, the workspace's
sources in search_memory; `TOOLS` for the built-in ones); `run_tool` carries a call out
and returns two texts: what the model gets back, and one line for the person, saying what was
written or searched. A bad call (unknown tool, arguments that are not JSON, empty text, a
write past a cap) is answered to the model as an error it can correct, never raised: the
conversation goes on, and the person sees the failure in the shown line.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from miniclaw.errors import MiniclawError
from miniclaw.memory_tools import (ADD, FORGET, MAX_WRITE_CHARS,  # noqa: F401
                                   MAX_WRITES_PER_SESSION, MAX_WRITES_PER_TURN, SEARCH,
                                   SEARCH_LIMIT, MemoryTools, WriteBudget, openai_function)
from miniclaw.search.scoring import AUTO_MODE

TOOLS = [openai_function(ADD), openai_function(SEARCH)]  # with the built-in sources
_OFFERED = {SEARCH.name, ADD.name}
_OLD_NAMES = {"write_memory": ADD.name}  # what the chat called add_memory before


def offered_tools(store, *, confirmed: bool) -> list[dict]:
    """What the model is told: add_memory and search_memory (its sources the workspace's,
    those config.json adds included), and forget_memory only in a chat where the person
    confirms each removal."""
    tools = [openai_function(ADD), openai_function(MemoryTools(store).spec(SEARCH.name))]
    return tools + [openai_function(FORGET)] if confirmed else tools


class ToolOutcome(NamedTuple):
    result: str  # sent back to the model
    shown: str  # one line for the person


async def run_tool(store, name: str, arguments: str,
                   writes: WriteBudget | None = None, confirm=None,
                   mode: str = AUTO_MODE) -> ToolOutcome:
    """Carry out one tool call; every failure is answered, never raised. Without a
    `WriteBudget` (a one-off call) the caps start afresh; without `confirm` (a coroutine
    asking the person about an entry) forget_memory is not offered; `mode` is
    search_memory's when the model names none (the best available)."""
    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return _refused(name, "the arguments are not valid JSON")
    tool = _OLD_NAMES.get(name, name)
    offered = _OFFERED | {FORGET.name} if confirm is not None else _OFFERED
    if tool not in offered:
        return _refused(name, f"there is no tool called {name!r}; use "
                              f"{' or '.join(sorted(offered))}")
    try:
        result = await MemoryTools(store, writes=writes, confirm=confirm,
                                   mode=mode).call(tool, args)
    except MiniclawError as exc:  # bad arguments, a cap, a damaged file, a failing index
        return _refused(name, str(exc))
    if tool == FORGET.name:
        entry = result["entry"]
        return ToolOutcome(f"forgot {entry['citation']}", f"[forgot {entry['citation']}: "
                                                         f"{' '.join(entry['content'].split())}]")
    return _added(args, result) if tool == ADD.name else _found(result)


def _refused(name: str, why: str) -> ToolOutcome:
    from miniclaw.entries.privacy import visible_typed

    why = visible_typed(why)  # it may quote the arguments: never their private part
    return ToolOutcome(f"error: {why}", f"[{name} failed: {why}]")


def _added(args: dict, result: dict) -> ToolOutcome:
    entry = result["entry"]
    if not result["saved"]:  # the fact is there already: the model is told where
        return ToolOutcome(f"already remembered at {entry['citation']}: not saved again",
                           f"[already remembered at {entry['citation']}: "
                           f"{' '.join(entry['content'].split())}]")
    if entry is None:  # all of it inside <private>: written, but invisible by design
        return ToolOutcome("saved (private: it will not show in searches)",
                           "[remembered privately]")
    where = "long-term memory" if args.get("kind") == "long_term" else "today's note"
    return ToolOutcome(f"saved at {entry['citation']}",
                       f"[remembered in {where}, {entry['citation']}: "
                       f"{' '.join(entry['content'].split())}]")


def _found(result: dict) -> ToolOutcome:
    lines = [f"[{hit['ref']}, {hit['date'] or 'undated'}] {' '.join(hit['content'].split())}"
             for hit in result["results"]]
    text = "\n".join(lines) if lines else "no memories matched"
    if result["corrections"]:  # the model must know the memories are about another word
        from miniclaw.search.results import describe_corrections

        used = tuple((c["from"], c["to"]) for c in result["corrections"])
        text = f"Searched instead: {describe_corrections(used)}\n{text}"
    return ToolOutcome(text, f'[searched memory for "{result["query"]}": {len(lines)} found]')
