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


def same_in(text: str, raw_text: str, parse: Callable[[str], list[Entry]],
            replacing: Entry | None = None) -> Entry | None:
    """The entry of a file (`raw_text`, decoded; `parse` gives its entries, private parts
    removed) that holds the same fact as `text` (already `check_text`), or None. The file is
    parsed only when it may hold one (`similar.may_hold_same`: its key words are there).
    `replacing`: the entry the text supersedes, which it may well be a near copy of."""
    if not may_hold(text, raw_text):
        return None
    return same_among(text, parse(raw_text), replacing)


def may_hold(text: str, raw_text: str) -> bool:
    """Whether a file's text may hold the fact at all (`similar.may_hold_same`); a quick
    test before parsing it or comparing its entries."""
    from miniclaw.entries import similar

    return bool(text and raw_text) and similar.may_hold_same(text, raw_text)


def same_among(text: str, entries: list[Entry], replacing: Entry | None = None) -> Entry | None:
    """The first of `entries` (private parts removed) that holds the fact, or None."""
    from miniclaw.entries import similar

    if replacing is not None:
        entries = [e for e in entries if (e.path, e.text) != (replacing.path, replacing.text)]
    found = similar.find_same(text, [entry.text for entry in entries])
    return None if found is None else entries[found]


# -- superseding -------------------------------------------------------------------------------


async def superseded_target(store, citation: str) -> Entry:
    """The entry `--supersedes CITATION` names, checked before anything is written: it
    exists in MEMORY.md or a daily note (`forget.find`: not in a private block, not in a file
    private as a whole), is not superseded already (a chain is followed from its newest fact,
    so no loop can form), and its file can be written. UsageError (or the read-only file's
    MemoryFileError) else."""
    from miniclaw.errors import UsageError
    from miniclaw.store import forget

    try:
        old = await forget.find(store, citation, to_forget=True)
    except UsageError as exc:
        raise UsageError(f"cannot supersede {citation}: {exc}") from None
    if old.meta.get("superseded_by"):
        raise UsageError(f"{old.citation} is superseded already (by "
                         f"{old.meta['superseded_by']}): supersede that one instead; nothing "
                         "was written")
    _check_writable(store, old.path)
    return old


def _check_writable(store, rel: str) -> None:
    """A read-only file is refused before the new fact is written (`files.open_for_write`
    says so, as for any add)."""
    import os

    from miniclaw.fs import files

    fd, _, _, created = files.open_for_write(store.workspace / rel, store.workspace, rel)
    os.close(fd)
    if created:
        os.unlink(store.workspace / rel)


def check_not_itself(old: Entry, text: str) -> None:
    """The new text may not be the fact it supersedes in other words (nothing would change;
    a near copy may: it corrects a detail)."""
    from miniclaw.entries import similar
    from miniclaw.errors import UsageError

    if similar.fold(old.text) == similar.fold(text):
        raise UsageError(f"the new text says what {old.citation} says: nothing to supersede "
                         "(edit it with `miniclaw memory edit`); nothing was written")


def mark_superseded(store, old: Entry, new: Entry, shifted_by: int = 0) -> tuple[Entry, Entry]:
    """Mark `old` superseded by `new` in its file, under the memory lock the caller holds:
    the `@superseded-by` annotation after its lines and annotations, through the atomic
    rewrite; refused, changing nothing, when the file no longer holds `old` where it was
    (`shifted_by`: lines an add just inserted above it) or another entry would change.
    Returns `old` as it was found and `new` where it is now (one line down when the mark
    went above it)."""
    from miniclaw.entries.parsing import parse_annotation, split_lines, superseded_line
    from miniclaw.errors import MemoryFileError
    from miniclaw.fs import files
    from miniclaw.store import forget

    found: list[Entry] = []

    def make(raw: bytes) -> bytes:
        text, _ = files.decode(raw, old.path)
        parse = forget._parser(store, old.path)
        before = parse(text, old.path)
        here = [e for e in before if e.text == old.text and e.category == old.category
                and e.line_start in (old.line_start, old.line_start + shifted_by)]
        if len(here) != 1:
            raise MemoryFileError(f"{old.citation} changed while the new fact was written: "
                                  f"it is not marked superseded (the new fact is {new.ref})",
                                  path=old.path)
        target = here[0]
        lines = split_lines(text)
        after = target.line_end  # 0-based index of the line after the entry's text
        while after < len(lines) and parse_annotation(lines[after]):
            after += 1
        newline = b"\r\n" if b"\r\n" in raw[: raw.find(b"\n") + 1] else b"\n"
        physical = raw.split(b"\n")
        moved = new
        if new.path == old.path and new.line_start > after:
            moved = new._replace(line_start=new.line_start + 1, line_end=new.line_end + 1)
        marker = superseded_line(moved.ref, store.today()).encode() + (
            b"\r" if newline == b"\r\n" else b"")
        data = b"\n".join(physical[:after] + [marker] + physical[after:])
        now = parse(files.decode(data, old.path)[0], old.path)
        keys = [(e.text, e.date, e.time, e.category, e.tags) for e in now]
        if keys != [(e.text, e.date, e.time, e.category, e.tags) for e in before] or not any(
                e.line_start == target.line_start and e.meta.get("superseded_by") == moved.ref
                for e in now):
            raise MemoryFileError(f"cannot mark {target.citation} superseded alone: a private "
                                  "block or an annotation runs past it; edit the file by hand "
                                  "(miniclaw memory edit)", path=old.path)
        found.extend((target, moved))
        shifted.extend(e for e in before if e.line_start > after)
        return data

    shifted: list[Entry] = []
    files.rewrite_bytes(store.workspace / old.path, store.workspace, old.path, make)
    forget.note_shifted(store, shifted)  # a bare citation of a moved entry is checked
    return found[0], found[1]


def superseded_by_known(store, known: Entry, old: Entry | None) -> Added:
    """The answer when the fact is remembered already (`known`): with `--supersedes`, the
    old entry is marked superseded by the one that holds it, unless that one is itself
    superseded (a loop could form: refused) or is the old entry."""
    from miniclaw.errors import UsageError

    if old is None:
        return Added(known, False, known)
    if known.path == old.path and known.line_start == old.line_start:
        raise UsageError(f"the new text says what {old.citation} says: nothing to supersede; "
                         "nothing was written")
    if known.meta.get("superseded_by"):
        raise UsageError(f"the new text is remembered already at {known.citation}, which is "
                         f"superseded by {known.meta['superseded_by']}: supersede with that "
                         "fact, or add this one with --force; nothing was written")
    old, known = mark_superseded(store, old, known)
    return Added(known, False, known, old)


async def with_successors(store, found):
    """Search results whose superseded entries also say what replaced them: the text of
    the entry their `superseded_by` ref names, as the file holds it now (private parts
    removed by the parser), in `meta["superseded_by_text"]`; left out when that entry is
    gone (forgotten since)."""
    import dataclasses

    from miniclaw.errors import MiniclawError
    from miniclaw.store import forget

    results = []
    for hit in found.results:
        ref = hit.meta.get("superseded_by")
        if ref:
            try:
                successor = await forget.find(store, str(ref))
            except MiniclawError:
                successor = None
            if successor is not None:
                hit = dataclasses.replace(hit, meta={**hit.meta, "superseded_by_text":
                                                     successor.text})
        results.append(hit)
    return dataclasses.replace(found, results=results)
