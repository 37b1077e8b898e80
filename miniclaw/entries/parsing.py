"""Parsing memory Markdown into entries: a pure function of the text.

Two layouts (docs/ARCHITECTURE.md): MEMORY.md, whose entries are the bullets and paragraphs under
`## YYYY-MM-DD` headers (other `##` headings start undated sections), and daily notes, whose
entries are `## HH:MM:SS UTC` (or `+HH:MM`) sections dated by the file name (lines outside
any section are split into bullets and paragraphs as MEMORY.md's are). Readers accept hand-edited
files: CRLF, a BOM (stripped by the decoder), the older repeated `# Daily Note` title,
multi-line bullets, two spaces after `added at`, a missing `(added at ...)` suffix.

Invariants: private text and front matter are removed first, in shared code
(`sources.read_entries`, which `parse_long_term`/`parse_daily_note` go through), so no entry
can carry it and no parser needs to remember it; the parsers know no source name (the
calling source passes its own); line numbers are 1-based, inclusive, and count physical lines of the file; an entry's
text is what the writer was given (see `writing.normalize_text`), unescaped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from datetime import date as Date

from miniclaw.entries.entry import (CATEGORY_PATTERN, DAILY_NOTE, LONG_TERM, NO_META,
                                    TAG_PATTERN, Entry, Meta)

HEADING = re.compile(r"^(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
# `## 09:12:03 UTC` or, in a workspace with another time zone, `## 18:12:03 +09:00`.
_TIMEHEADING = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\s*(?:UTC|[+-]\d{2}:\d{2}))?$",
                          re.IGNORECASE)
_BULLET = re.compile(r"^(?:[-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$")
# From the line's last "(" (the suffix holds no other parenthesis), matched there rather
# than searched for: most lines of MEMORY.md end with one.
_ADDED_AT = re.compile(r"\(added at\s+([^()]*?)\s*\)[ \t]*$", re.IGNORECASE)
_ADDED_TIME = re.compile(r"T(\d{2}):(\d{2}):(\d{2})")
_ANNOTATION = re.compile(r"^<!--\s*@(category|tag|superseded-by)\s*:\s*(.*?)\s*-->$",
                         re.IGNORECASE)
# `<!-- @superseded-by: memory/MEMORY.md:9#3fa9c2 on 2026-11-29 -->`: the entry is kept, and
# the ref (with the text's mark, so it is found after the file shifts) names what replaced it.
SUPERSEDED = re.compile(r"^(?P<ref>[^\s#<>]+:\d+(?:-\d+)?#[0-9a-f]{6})"
                        r"(?:\s+on\s+(?P<day>\d{4}-\d{2}-\d{2}))?$")
_SEPARATOR = re.compile(r"^ {0,3}(?:-[ \t]*){3,}$")
# A line of user text the reader could take for structure (a heading, a `---` separator, an
# annotation), after any backslashes: the writer adds one backslash, the reader removes it.
_STRUCTURE = re.compile(r"^(\s*)(\\*)(#|<!--|---|(?:-[ \t]*){3,}$)")


def split_lines(text: str) -> list[str]:
    """Physical lines, as an editor numbers them: split on LF, drop a CR before it."""
    lines = text.removeprefix("\ufeff").split("\n")
    if "\r" not in text:
        return lines
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def parse_annotation(line: str) -> tuple[str, str] | None:
    """`("category", "decision")` or `("tag", "travel")` for a valid annotation line, else None."""
    if "<!--" not in line:
        return None
    match = _ANNOTATION.match(line.strip())
    if not match:
        return None
    kind, value = match.group(1).lower(), match.group(2).strip()
    if kind == "superseded-by":
        return (kind, value) if SUPERSEDED.match(value) else None
    value = value.lower()
    pattern = CATEGORY_PATTERN if kind == "category" else TAG_PATTERN
    return (kind, value) if pattern.match(value) else None


def superseded_meta(value: str) -> dict[str, str]:
    """An entry's `meta` from a valid `@superseded-by` value: `superseded_by` (the ref of
    the entry that replaced it) and `superseded_on` (the day, when written)."""
    match = SUPERSEDED.match(value)
    meta = {"superseded_by": match["ref"]}
    if match["day"]:
        meta["superseded_on"] = match["day"]
    return meta


def superseded_line(ref: str, day: Date) -> str:
    """The annotation that marks an entry superseded (`superseded_meta` reads it back)."""
    return f"<!-- @superseded-by: {ref} on {day.isoformat()} -->"


def _to_date(text: str) -> Date | None:
    match = _DATE.match(text.strip())
    if not match:
        return None
    try:
        return Date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        return None


def escape_line(line: str) -> str:
    """User text made safe to write: one backslash before anything that looks like structure."""
    match = _STRUCTURE.match(line)
    return line if match is None else f"{match.group(1)}\\{line[match.end(1):]}"


def _unescape(line: str) -> str:
    match = _STRUCTURE.match(line)
    if match is None or not match.group(2):
        return line
    return line[: match.end(1)] + line[match.end(1) + 1 :]


class _Item:
    """An entry being collected: its lines, where it is, and the annotations that follow it."""

    __slots__ = ("lines", "numbers", "pending", "bullet", "date", "time", "category", "tags",
                 "meta")

    def __init__(self, start: int, first: str, *, bullet: bool, date: Date | None,
                 time: str | None = None) -> None:
        self.lines = [first]
        self.numbers = [start]  # the physical line number of each line
        self.pending: list[int] = []  # blank lines seen since the last text line
        self.bullet = bullet
        self.date = date
        self.time = time
        self.category: str | None = None
        self.tags: dict[str, None] = {}  # each tag once, in order (a list test per tag was
        # quadratic in an entry's tags)
        self.meta: dict[str, str] | None = None  # what superseded it (`superseded_meta`)

    @property
    def blank_run(self) -> int:
        return len(self.pending)

    def blank(self, number: int) -> None:
        self.pending.append(number)

    def add(self, number: int, text: str) -> None:
        self.lines.extend([""] * len(self.pending))
        self.numbers.extend(self.pending)
        self.pending = []
        self.lines.append(text)
        self.numbers.append(number)

    def annotate(self, kind: str, value: str) -> None:
        if kind == "category":
            self.category = value  # the last one wins
        elif kind == "superseded-by":
            self.meta = superseded_meta(value)  # the last one wins
        else:
            self.tags[value] = None

    def entry(self, source: str, path: str) -> Entry | None:
        """The finished entry, or None when no visible text is left."""
        lines = self.lines
        first, last = 0, len(lines) - 1
        while first <= last and (not lines[first] or lines[first].isspace()):
            first += 1
        if first > last:
            return None
        while not lines[last] or lines[last].isspace():
            last -= 1
        if first == last:  # most entries: one line
            line = lines[first]
            body = _unescape(line) if "\\" in line else line
        else:
            body = "\n".join((_unescape(line) if "\\" in line else line).rstrip()
                             for line in lines[first : last + 1])
        return Entry(body.strip(), source, path, self.numbers[first], self.numbers[last],
                     self.date, self.time, self.category, tuple(self.tags),
                     Meta(self.meta) if self.meta else NO_META)


def _split_added_at(item: _Item) -> None:
    """Move a trailing `(added at ...)` suffix from the item's text to its time."""
    last = item.lines[-1]
    start = last.rfind("(")
    suffix = _ADDED_AT.match(last, start) if start >= 0 else None
    if suffix:
        item.lines[-1] = last[: suffix.start()].rstrip(" \t")
        found = _ADDED_TIME.search(suffix.group(1))
        item.time = ":".join(found.groups()) if found else None


def _visible_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, text): the caller removed front matter and private parts."""
    return enumerate(split_lines(text), 1)


def parse_long_term(text: str, path: str) -> list[Entry]:
    """The entries a reader gets from a MEMORY.md-style file (redacted, stamped)."""
    return redacted_entries(LONG_TERM, lambda visible: long_term_entries(visible, path, LONG_TERM),
                            text)


def parse_daily_note(text: str, path: str, day: Date | None) -> list[Entry]:
    """The entries a reader gets from a daily note dated `day` (redacted, stamped)."""
    return redacted_entries(
        DAILY_NOTE, lambda visible: daily_note_entries(visible, path, day, DAILY_NOTE), text)


def long_term_entries(text: str, path: str, source: str = "") -> list[Entry]:
    """Entries of a MEMORY.md-style file: bullets and paragraphs, dated by `## YYYY-MM-DD`.
    `source`: the name the calling source stamps (building each entry once)."""
    return _entries(_bullet_items(_visible_lines(text)), source, path)


def _entries(items: list[_Item], source: str, path: str) -> list[Entry]:
    entries = []
    for found in items:
        entry = found.entry(source, path)
        if entry is not None:
            entries.append(entry)
    return entries


def _bullet_items(lines: Iterable[tuple[int, str]], day: Date | None = None) -> list[_Item]:
    """MEMORY.md's items: one per bullet or paragraph, dated by `## YYYY-MM-DD` headers, or
    all by `day` when given (the loose lines of a daily note)."""
    items: list[_Item] = []
    section_date: Date | None = day
    item: _Item | None = None  # the item being collected
    labelled: _Item | None = None  # the item that an annotation on this line would label

    for number, line in lines:
        indent = len(line) - len(line.lstrip())
        annotation = parse_annotation(line) if indent < 2 else None
        if annotation:
            item = None
            if labelled is not None:
                labelled.annotate(*annotation)
            continue
        heading = HEADING.match(line)
        if heading:
            item = labelled = None
            level = len(heading.group(1))
            if level <= 2 and day is None:
                section_date = _to_date(heading.group(2) or "") if level == 2 else None
            continue
        if not line.strip():
            if item is not None and item.bullet:
                item.blank(number)
            else:
                item = None
            continue
        bullet = _BULLET.match(line) if indent < 2 else None
        if bullet:  # before separators: "- --" is a bullet here, whatever Markdown says
            item = _Item(number, bullet.group(1) or "", bullet=True, date=section_date)
        elif _SEPARATOR.match(line):
            item = labelled = None
            continue
        elif item is not None and item.bullet and indent >= 2:
            item.add(number, line[2:])  # an indented continuation
        elif item is not None and not item.blank_run:
            item.add(number, line.strip() if item.bullet else line)  # a lazy continuation
        else:
            item = _Item(number, line, bullet=False, date=section_date)
        if item is not labelled:
            items.append(item)
            labelled = item
    for found in items:
        _split_added_at(found)
    return items


def daily_note_entries(text: str, path: str, day: Date | None, source: str = "") -> list[Entry]:
    """Entries of a daily note: one per `## HH:MM:SS UTC` section, dated by the file name.

    Other `##` headings also start an entry (their text is its first line); `# ...` titles,
    repeated or not, and `---` separators are structure, not content. Lines outside any
    `##` section (a hand-written note of bullets) are split as MEMORY.md is: one entry per
    bullet or paragraph, so each is cited and shown on its own.
    """
    items: list[_Item] = []
    item: _Item | None = None
    loose: list[tuple[int, str]] = []  # lines outside any section, not yet split

    for number, line in _visible_lines(text):
        if item is None:
            section = HEADING.match(line) if line[:2] == "##" else None
            if section is None or len(section.group(1)) != 2:
                loose.append((number, line))
                continue
        if loose:
            items.extend(_bullet_items(loose, day))
            loose = []
        if not line or line.isspace():
            if item is not None:
                item.pending.append(number)
            continue
        first = line[0]
        annotation = (parse_annotation(line) if "<!--" in line
                      and (first != " " or line[1:2] != " ") else None)
        if annotation:
            if item is not None:
                item.annotate(*annotation)
            continue
        heading = HEADING.match(line) if first == "#" else None
        if heading and len(heading.group(1)) <= 2:
            item = None
            if len(heading.group(1)) == 2:
                title = heading.group(2) or ""
                clock = _TIMEHEADING.match(title.strip())
                if clock:
                    hh, mm, ss = clock.group(1), clock.group(2), clock.group(3) or "00"
                    item = _Item(number, "", bullet=False, date=day, time=f"{int(hh):02d}:{mm}:{ss}")
                else:
                    item = _Item(number, title, bullet=False, date=day)
                items.append(item)
            continue
        if (first == "-" or first == " ") and _SEPARATOR.match(line):
            item = None
            continue
        if item is None:
            item = _Item(number, line, bullet=False, date=day)
            items.append(item)
        else:
            item.add(number, line)
    items.extend(_bullet_items(loose, day))
    return _entries(items, source, path)


def redacted_entries(name: str, parse: Callable[[str], list[Entry]], text: str,
                     redact: Callable[[str], str] | None = None, **visibility: bool) -> list[Entry]:
    """`read_entries` for a parse function: `parse(visible text)`, records redacted, stamped.
    `redact`: a format's own privacy rules (lines it hides become empty), applied to the raw
    text first; it must keep hiding what miniclaw's tags hide (see `sources/conkeeper.py`).
    `visibility` as `sources.base._visibility` gives it."""
    from miniclaw.entries.privacy import may_hold_private, visible_text

    entries = parse(visible_text(redact(text) if redact else text, **visibility))
    # Every record is checked again: a format may spell a tag the file does not show, with
    # any of its characters escaped (JSON's `\u0070` for `p`: no `<`, no "private" in the
    # line). `may_hold_private` answers most texts with two scans in C. An entry is made
    # again only when something changed (one tuple, not one per change: a transcript's
    # entries all get their source's name and a read-only `Meta`).
    make = Entry._make
    out = []
    for entry in entries:
        clean, meta = entry.text, entry.meta
        if may_hold_private(clean):
            clean = visible_text(clean).strip()
            if not clean:
                continue
        if meta and not _plain(meta.values(), may_hold_private):  # its values too
            meta = {key: _redacted(value) for key, value in meta.items()}
        if meta and type(meta) is not Meta:  # a plain dict: made read-only and hashable
            meta = Meta(meta)
        if clean is not entry.text or meta is not entry.meta or entry.source != name:
            fields = [clean, name, *entry[2:]]
            fields[_META] = meta
            entry = make(fields)
        out.append(entry)
    return out


_META = Entry._fields.index("meta")


def _plain(values: Iterable[object], may_hold_private: Callable[[str], bool]) -> bool:
    """Whether `_redacted` would keep each metadata value as it is: no text, or text that
    cannot hold a tag or open front matter (most values: a session id, a role, a time)."""
    for value in values:
        if isinstance(value, str):
            if "---" in value or may_hold_private(value):
                return False
        elif isinstance(value, (list, dict)):
            return False
    return True


def _redacted(value: object) -> object:
    """A metadata value (JSON) with private parts of its strings removed."""
    from miniclaw.entries.privacy import visible_text

    if isinstance(value, str):
        return visible_text(value).strip()
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    return value
