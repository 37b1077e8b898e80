"""The add door: a fact already remembered is not written again.

Every write path (the CLI, the chat's /remember and /note, the models' `add_memory`, MCP,
the Python API) goes through `MemoryStore.add`, which calls `same_in` under the memory
folder's lock, on the bytes it is about to write to: two processes adding one fact at once
write it once. What is compared (`entries.similar.is_same_fact`: equal after folding case,
punctuation and Markdown, or a near copy) is the entries' text as the parser gives it,
private parts removed, and the new text with its private parts removed (`check_text`):
private text never takes part, and a text that is private as a whole is not checked.

Where a fact is looked for: a long-term add looks in MEMORY.md; a daily note add in today's
note and in MEMORY.md (a lasting fact noted again today is known already). Earlier notes are
a log of days: "Met Sam" on Monday and on Tuesday are two events, not one fact; and a fact
of a note may be promoted to MEMORY.md with --long.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from miniclaw.entries.entry import Entry


class Added(NamedTuple):
    """What an add did: `entry` is the entry written (None when all of its text was
    private), or, when `written` is False, the entry that already holds the fact
    (`duplicate_of`, the same). `superseded`: the entry it marked superseded, if asked."""

    entry: Entry | None
    written: bool
    duplicate_of: Entry | None = None
    superseded: Entry | None = None

    def to_dict(self) -> dict:
        """The JSON of `memory add --json` (docs/cli.md: `added` as before, the rest added)."""
        out = {"added": self.entry.to_dict() if self.written and self.entry else None,
               "written": self.written}
        if self.duplicate_of is not None:
            out["duplicate_of"] = self.duplicate_of.to_dict()
        if self.superseded is not None:
            out["superseded"] = self.superseded.to_dict()
        return out


class Found(Exception):
    """Raised inside a file write's `make` to leave the file as it is: the fact is there."""

    def __init__(self, entry: Entry) -> None:
        super().__init__(entry.citation)
        self.entry = entry


def check_text(body: str) -> str:
    """The new text as compared: its private parts removed (empty: nothing to check)."""
    from miniclaw.entries.privacy import visible_text

    return visible_text(body).strip()


def same_in(text: str, raw_text: str, parse: Callable[[str], list[Entry]]) -> Entry | None:
    """The entry of a file (`raw_text`, decoded; `parse` gives its entries, private parts
    removed) that holds the same fact as `text` (already `check_text`), or None. The file is
    parsed only when it may hold one (`similar.may_hold_same`: its key words are there)."""
    from miniclaw.entries import similar

    if not text or not raw_text or not similar.may_hold_same(text, raw_text):
        return None
    entries = parse(raw_text)
    found = similar.find_same(text, [entry.text for entry in entries])
    return None if found is None else entries[found]
