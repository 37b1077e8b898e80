"""`memory tidy --suggest`: ask a model which daily-note facts belong in MEMORY.md.

The model sees numbered daily-note entries (private text is already gone: entries come
through the parsers, and each is passed through `visible_typed` again before it is sent)
and MEMORY.md's entries, and answers with JSON naming entries by number. An answer that
is not that JSON is an error, never a guess. Nothing is written here: with `--apply`, each
accepted proposal goes through `MemoryStore.add_long_term`, the normal add path.

`complete(messages) -> str` is the caller's: the CLI passes the configured chat provider
(floor 9), so this floor stays below it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import NamedTuple

from miniclaw.entries.entry import Entry
from miniclaw.errors import ProviderError

MAX_NOTES = 200  # the newest daily-note entries shown to the model
MAX_NOTE_CHARS = 600  # of each, so a long note does not crowd out the rest
MAX_MEMORY = 200  # MEMORY.md entries shown, so the model does not propose what is there

PROMPT = """You help a person keep their long-term memory file (MEMORY.md) tidy.
Below are numbered entries from their daily notes, and what MEMORY.md holds already.
Pick the daily-note entries that state a durable fact worth keeping long term: a
preference, a relationship, a decision, a standing plan, a stable fact about the person or
their work. Leave out one-off events, chatter, and anything MEMORY.md already says.
Answer with JSON only, no prose: {"proposals": [{"id": <number>, "text": "<the fact, one
line, as it should read in MEMORY.md>", "reason": "<a few words>"}]}. An empty list is fine."""


class Proposal(NamedTuple):
    """A daily-note entry the model proposes for MEMORY.md, as the text to add."""

    entry: Entry
    text: str
    reason: str

    def to_dict(self) -> dict:
        return {"text": self.text, "reason": self.reason, "from": self.entry.to_dict()}


def messages(notes: list[Entry], memory: list[Entry]) -> list[dict]:
    from miniclaw.entries.privacy import visible_typed

    shown = "\n".join(f"[{i}] {' '.join(visible_typed(e.text).split())[:MAX_NOTE_CHARS]}"
                      for i, e in enumerate(notes, 1))
    kept = "\n".join(f"- {' '.join(visible_typed(e.text).split())[:MAX_NOTE_CHARS]}"
                     for e in memory) or "(empty)"
    return [{"role": "system", "content": PROMPT},
            {"role": "user", "content": f"Daily-note entries:\n{shown}\n\nMEMORY.md:\n{kept}"}]


def proposals(answer: str, notes: list[Entry]) -> list[Proposal]:
    """The proposals in a model's answer, or ProviderError when it is not the JSON asked
    for (a code fence around it is fine; an unknown number is left out)."""
    from miniclaw.entries.privacy import visible_typed

    found = re.search(r"\{.*\}", answer, re.DOTALL)
    try:
        data = json.loads(found.group()) if found else None
    except (json.JSONDecodeError, RecursionError):
        data = None
    items = data.get("proposals") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ProviderError("the model's answer was not the JSON list of proposals it was "
                            "asked for; nothing was proposed or written")
    out, seen = [], set()
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), int):
            continue
        number = item["id"]
        if not 1 <= number <= len(notes) or number in seen:
            continue
        seen.add(number)
        entry = notes[number - 1]
        text = item.get("text") if isinstance(item.get("text"), str) else ""
        text = " ".join(visible_typed(text).split()) or entry.text
        reason = item.get("reason") if isinstance(item.get("reason"), str) else ""
        out.append(Proposal(entry, text, " ".join(reason.split())[:200]))
    return out


async def suggest(store, complete: Callable[[list[dict]], Awaitable[str]], *,
                  days: int | None = None, limit: int | None = None) -> list[Proposal]:
    """The model's proposals among the daily notes in scope (newest `MAX_NOTES`)."""
    from miniclaw.entries.entry import LONG_TERM
    from miniclaw.tidy.report import entries_in_scope, when

    entries, _ = await entries_in_scope(store, days)
    memory = [e for e in entries if e.source == LONG_TERM]
    kept = {" ".join(e.text.casefold().split()) for e in memory}
    notes = sorted((e for e in entries if e.source != LONG_TERM
                    and " ".join(e.text.casefold().split()) not in kept), key=when)
    notes = notes[-MAX_NOTES:]
    if not notes:
        return []
    found = proposals(await complete(messages(notes, memory[-MAX_MEMORY:])), notes)
    return found[:limit]


class Added(NamedTuple):
    """What `--suggest --apply` did with one proposal: the entry added, the entry that
    holds the fact already (the add door: nothing written), or why not."""

    proposal: Proposal
    added: Entry | None = None
    refused: str | None = None
    duplicate_of: Entry | None = None

    def to_dict(self) -> dict:
        return {**self.proposal.to_dict(), "added": self.added.to_dict() if self.added else None,
                **({"refused": self.refused} if self.refused else {}),
                **({"duplicate_of": self.duplicate_of.to_dict()} if self.duplicate_of else {})}


async def add(store, found: list[Proposal],
              ask: Callable[[Proposal], str] | None = None) -> list[Added]:
    """Add each proposal `ask` accepts ("y"; "n" skips, "q" stops; no `ask`: all) to
    MEMORY.md through the normal add path (`MemoryStore.add`: its door refuses a fact
    MEMORY.md holds already), with its note's category and tags."""
    from miniclaw.errors import MiniclawError

    done = []
    for proposal in found:
        answer = ask(proposal) if ask else "y"
        if answer == "q":
            break
        if answer != "y":
            done.append(Added(proposal))
            continue
        try:
            result = await store.add(proposal.text, long=True, category=proposal.entry.category,
                                     tags=proposal.entry.tags)
        except MiniclawError as exc:
            done.append(Added(proposal, refused=str(exc)))
        else:
            done.append(Added(proposal, result.entry if result.written else None,
                              duplicate_of=None if result.written else result.duplicate_of))
    return done
