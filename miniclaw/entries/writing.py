"""Formatting new entries in the on-disk formats: pure functions from text to bytes.

The writer's promise is the reader's: what `format_*` writes, `parsing` reads back with the
same text (after `normalize_text`), date and time. Existing bytes are never re-encoded: new
lines are spliced into the raw file, so a hand-edited file keeps its line endings, its BOM
and even bytes that are not valid UTF-8.
"""

from __future__ import annotations

from datetime import date as Date
from datetime import datetime

from miniclaw.dates import utc_offset
from miniclaw.entries.parsing import HEADING, escape_line, split_lines
from miniclaw.entries.privacy import front_matter_end, redact_lines

LONG_TERM_TITLE = "# Memory"


def normalize_text(text: str) -> str:
    """Memory text as it is stored: LF line ends, no trailing spaces, no blank edges."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip()


def annotation_lines(category: str | None, tags: tuple[str, ...] | list[str]) -> list[str]:
    lines = [f"<!-- @category: {category} -->"] if category else []
    return lines + [f"<!-- @tag: {tag} -->" for tag in tags]


def long_term_item(text: str, added_at: datetime, category: str | None = None,
                   tags: tuple[str, ...] = ()) -> list[str]:
    """The lines of one MEMORY.md bullet: `- text (added at 2026-02-14T09:12:03Z)`, or with
    the offset (`2026-02-14T18:12:03+09:00`) when `added_at` is not at UTC."""
    lines = [escape_line(line) for line in normalize_text(text).split("\n")]
    offset = utc_offset(added_at)
    stamp = added_at.strftime("%Y-%m-%dT%H:%M:%S") + ("Z" if offset == "UTC" else offset)
    lines[-1] = f"{lines[-1]} (added at {stamp})"  # after escaping: the reader strips it first
    body = ["- " + lines[0]] + [("  " + line) if line else "" for line in lines[1:]]
    return body + annotation_lines(category, tags)


def daily_entry(text: str, when: datetime, category: str | None = None,
                tags: tuple[str, ...] = ()) -> list[str]:
    """The lines of one daily-note section: `## HH:MM:SS UTC` (or `## HH:MM:SS +09:00` when
    `when` is not at UTC), a blank line, the text."""
    lines = [escape_line(line) for line in normalize_text(text).split("\n")]
    heading = when.strftime("## %H:%M:%S ") + utc_offset(when)
    return [heading, ""] + lines + annotation_lines(category, tags)


def _newline(raw: bytes) -> bytes:
    """The file's own line ending: CRLF when its first line ends so, else LF."""
    first = raw.find(b"\n")
    return b"\r\n" if first > 0 and raw[first - 1 : first] == b"\r" else b"\n"


def _encode(lines: list[str], newline: bytes) -> bytes:
    return b"".join(line.encode("utf-8") + newline for line in lines)


def append_daily(raw: bytes, day: Date, entry_lines: list[str]) -> bytes:
    """What to append to a daily note (`raw` is its current content, maybe empty)."""
    newline = _newline(raw)
    if not raw.strip():
        return _encode([f"# Daily Note - {day.isoformat()}", ""] + entry_lines, newline)
    lead = b"" if raw.endswith(b"\n") else newline
    separator = [""] if _would_close_front_matter(raw) else ["", "---", ""]
    return lead + _encode(separator + entry_lines, newline)


def _would_close_front_matter(raw: bytes) -> bool:
    """True when the note opens with `---` never closed and a `---` appended now would turn
    the text between into front matter, hiding it; the time heading alone separates then."""
    if not raw.lstrip(b"\xef\xbb\xbf \t").startswith(b"---"):
        return False
    lines = split_lines(raw.decode("utf-8", "replace"))
    return not front_matter_end(lines) and front_matter_end(lines + ["", "---"]) > 0


def insert_long_term(raw: bytes, today: Date, item_lines: list[str]) -> tuple[bytes, int]:
    """MEMORY.md with the item added under today's `## YYYY-MM-DD` header, and the item's
    first line number.

    The item goes after the last line of today's section; when the header is missing (or
    hidden inside a private block or the front matter) a new one is added at the end.
    """
    newline = _newline(raw)
    if not raw.strip():
        return _encode([LONG_TERM_TITLE, "", f"## {today.isoformat()}"] + item_lines, newline), 4
    physical = raw.split(b"\n")  # keeps each line's own bytes, CR included
    decoded = split_lines(raw.decode("utf-8", "replace"))
    visible = redact_lines(decoded)
    for i in range(front_matter_end(decoded)):  # a `## date` there is YAML, not a header
        visible[i] = ""
    header = f"## {today.isoformat()}"
    section_end = None  # index of the line after today's last non-blank line
    inside = False
    for i, line in enumerate(visible):
        heading = HEADING.match(line)
        if heading and len(heading.group(1)) <= 2:
            if inside:
                break
            inside = line.strip() == header
            if inside:
                section_end = i + 1
            continue
        if inside and decoded[i].strip():  # hidden lines too: never split a private block
            section_end = i + 1
    body = _encode(item_lines, newline)
    if section_end is None:
        ends_clean = raw.endswith(b"\n")
        lines_before = len(physical) - 1 if ends_clean else len(physical)
        lead = b"" if ends_clean else newline
        return raw + lead + _encode(["", header], newline) + body, lines_before + 3
    before = b"\n".join(physical[:section_end])
    after = b"\n".join(physical[section_end:])
    if section_end == len(physical):  # today's section runs to the end, no final newline
        return before + newline + body, section_end + 1
    return before + b"\n" + body + after, section_end + 1
