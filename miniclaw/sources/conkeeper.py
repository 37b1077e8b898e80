"""ConKeeper's memory (`.claude/memory/` of a project, `~/.claude/memory/`) as a source.

The format (/work/shared/formats/FORMATS.md, section 1): every `*.md` under the root,
`sessions/` only when asked (`sessions: true`) and only files changed in the last 30 days,
as ConKeeper's `--sessions` does. Entries: a bullet or paragraph with the
`<!-- @category -->`/`<!-- @tag -->` lines right after it; an ADR (`decisions/ADR-NNN-*.md`)
and a session summary give one entry per `#`/`##` section. Dates, in order: the entry's own
stamp (hook lines), the ADR's `**Date:**`, the session file's name, the file's footer.
A superseded ADR's entries carry `meta["adr_status"] == "Superseded"`.

Privacy is ConKeeper's (`redact`), on top of miniclaw's (`sources.read_entries` applies
both): what either hides is hidden.
"""

from __future__ import annotations

import re
import time
from datetime import date as Date
from pathlib import Path

from miniclaw.errors import UsageError
from miniclaw.entries.entry import Entry
from miniclaw.sources.base import FileSource, SourceFile
from miniclaw.text import LazyPattern

SESSION_DAYS = 30  # ConKeeper's `--sessions` searches session files changed this recently

# Privacy, as ConKeeper's hooks/lib-privacy.sh reads it.
_FRONT_PRIVATE = LazyPattern(r"""^\s*private:\s*(['"]?)true\1\s*$""", re.IGNORECASE)
_OPEN = LazyPattern(r"^\s*<private>")
_CLOSE = LazyPattern(r"^\s*</private>")

_ADR_FILE = LazyPattern(r"(?:^|/)ADR-\d+[^/]*\.md$")
_HEADING = LazyPattern(r"^(#{1,2})[ \t]+(.*?)[ \t#]*$")
_STATUS = LazyPattern(r"\*\*Status:\*\*[ \t]*([^|*\n]*?)[ \t]*(?:\||$)")
_ADR_DATE = LazyPattern(r"\*\*Date:\*\*[ \t]*(\d{4}-\d{2}-\d{2})")
_ADR_NAME = LazyPattern(r"\bADR-\d+\b")
_FOOTER = LazyPattern(r"^\*(?:Session|Last updated):[ \t]*(\d{4}-\d{2}-\d{2})[^*]*\*[ \t]*$")
_OTHER_FOOTER = LazyPattern(r"^\*Session duration:[^*]*\*[ \t]*$")
_COMMENT = LazyPattern(r"^[ \t]*<!--(?![ \t]*@(?:category|tag)[ \t]*:).*-->[ \t]*$", re.IGNORECASE)
_STAMP = LazyPattern(r"^[-*+][ \t]+\*\*(?:(\d{4}-\d{2}-\d{2})[ \t]+)?(\d{2}:\d{2}:\d{2})\*\*")
_FENCE = LazyPattern(r"^[ \t]*(?:```|~~~)[\w+-]*[ \t]*$")  # a fence line: no words of its own
_TABLE_RULE = LazyPattern(r"^[ \t]*\|[ \t:|-]*-[ \t:|-]*$")
_NAME_DATE = LazyPattern(r"^(\d{4}-\d{2}-\d{2})")


def redact(text: str) -> str:
    """ConKeeper's privacy and miniclaw's tags, both read on the text as written: a line
    either hides is hidden. ConKeeper's: a file whose front matter (line 1 `---`, the line
    in lines 2-20 before the next `---`) says `private: true` in any case or quotes is hidden
    whole; a line starting (after blanks) with `<private>` opens a block to the first line
    starting with `</private>` (both tag lines hidden; unclosed: to the end; code fences do
    not matter). Front matter that is not private becomes empty lines too (metadata, not
    memories), in place of miniclaw's reading of it (which hides `private: trueish`).
    miniclaw's tags are read on the whole file first, front matter included, as in every
    format: a `<private>` opened in the front matter (`title: Notes <private>`) hides the
    body up to its `</private>`. Hidden lines become empty, so line numbers stay those of
    the file."""
    from miniclaw.entries.privacy import without_tags

    if "private" not in text.lower() and not text.startswith(("---", "\ufeff---")):
        return text
    lines = [line.removesuffix("\r") for line in text.removeprefix("\ufeff").split("\n")]
    front = 0
    if lines[0] == "---":
        for number, line in enumerate(lines[1:], 1):
            if number < 20 and _FRONT_PRIVATE.match(line):
                return "\n".join("" for _ in lines)
            if line == "---":
                front = number + 1
                break
    hidden, block = set(), False
    for number, line in enumerate(lines):
        if not block and _OPEN.match(line):
            block = True
        if block:
            hidden.add(number)
            block = not _CLOSE.match(line)
    mine = without_tags(lines)  # miniclaw's tags, nesting and all, on the whole file
    return "\n".join("" if number in hidden or number < front else line
                     for number, line in enumerate(mine))


def _day(text: str | None) -> Date | None:
    try:
        return Date.fromisoformat(text) if text else None
    except ValueError:
        return None


def _session_cutoff() -> float:
    """The modification time (ns) before which a session file is too old to search."""
    return (time.time() - SESSION_DAYS * 86400) * 1e9


def _is_session(relative: str) -> bool:
    return relative.startswith("sessions/") or "/sessions/" in relative


class ConKeeperSource(FileSource):
    """A ConKeeper memory folder: `{"kind": "conkeeper", "root": "~/app/.claude/memory"}`,
    with `"sessions": true` to search its session files too."""

    name = "conkeeper"
    label = "ConKeeper"
    root = ".claude/memory"
    recursive = True
    sessions = False

    def __init__(self, *, sessions: object = False, **settings: object) -> None:
        if not isinstance(sessions, bool):
            raise UsageError("the ConKeeper setting 'sessions' must be true or false")
        super().__init__(**settings)
        self.sessions = sessions

    redact = staticmethod(redact)

    def owns(self, relative: str) -> bool:
        return relative.endswith(".md") and (self.sessions or not _is_session(relative))

    def file(self, workspace: Path, absolute: str) -> SourceFile | None:
        found = super().file(workspace, absolute)
        return found if found is not None and self._recent(found, _session_cutoff()) else None

    def files(self, workspace: Path) -> list[SourceFile]:
        cutoff = _session_cutoff()
        return [found for found in self._tree_files(workspace) if self._recent(found, cutoff)]

    def _recent(self, found: SourceFile, cutoff: float) -> bool:
        """ConKeeper's 30-day rule for session files (any other file is kept)."""
        return found.mtime_ns >= cutoff or not _is_session(self._relative(found.path))

    def _relative(self, path: str) -> str:
        """The root-relative path of a display path (a folder named `sessions` above the
        root must not make every file a session)."""
        prefixes = [self.root.rstrip("/")] + [
            layout[1] for layout in self.__dict__.get("_layouts", {}).values()]
        for prefix in prefixes:
            if prefix not in (".", "") and path.startswith(prefix + "/"):
                return path[len(prefix) + 1:]
        return path

    def parse(self, text: str, path: str) -> list[Entry]:
        from miniclaw.entries.parsing import long_term_entries, split_lines

        lines = split_lines(text)
        day = None
        for line in lines:  # the footer: `*Session: YYYY-MM-DD*`, `*Last updated: ...*`
            footer = _FOOTER.match(line)
            if footer:
                day = _day(footer.group(1)) or day
        lines = ["" if _FOOTER.match(line) or _OTHER_FOOTER.match(line) or _COMMENT.match(line)
                 or _FENCE.match(line) else line for line in lines]
        relative = self._relative(path)
        name = relative.rsplit("/", 1)[-1]
        adr = _ADR_FILE.search(relative) is not None
        session = _is_session(relative) and not name.endswith("-observations.md")
        named = _NAME_DATE.match(name) if _is_session(relative) else None
        day = (_day(named.group(1)) if named else None) or day
        meta = {}
        if adr:
            found = _ADR_DATE.search("\n".join(lines))
            day = (_day(found.group(1)) if found else None) or day
            status = _adr_status(lines)
            meta = {"adr_status": status} if status else {}
        if adr or session:
            return _section_entries(lines, path, day, meta)
        entries = []
        for entry in _table_rows(long_term_entries("\n".join(lines), path), lines):
            stamp = _STAMP.match(lines[entry.line_start - 1])
            if stamp:
                entry = entry._replace(date=_day(stamp.group(1)) or day, time=stamp.group(2))
            else:
                entry = entry._replace(date=day)
            entries.append(entry)
        return entries


def _table_rows(entries: list[Entry], lines: list[str]) -> list[Entry]:
    """A Markdown table (ADR index, glossary) as one entry per row, its rule left out: each
    row is a record of its own, cited by its line."""
    out = []
    for entry in entries:
        rows = lines[entry.line_start - 1:entry.line_end]
        if len(rows) < 2 or not all(row.lstrip().startswith("|") for row in rows):
            out.append(entry)
            continue
        for number, row in enumerate(rows, entry.line_start):
            if not _TABLE_RULE.match(row):
                out.append(entry._replace(text=row.strip(), line_start=number, line_end=number))
    return out


def _adr_status(lines: list[str]) -> str | None:
    """`Superseded` when the ADR says so (its status, or a `## Superseded By` naming an
    ADR), else its `**Status:**` as written."""
    status = None
    for number, line in enumerate(lines):
        found = _STATUS.search(line)
        if found and status is None:
            status = found.group(1).strip() or None
        heading = _HEADING.match(line)
        if heading and heading.group(2).lower().startswith("superseded by"):
            following = [heading.group(2)] + [
                next_line for next_line in lines[number + 1:number + 4]
                if next_line.strip() and not _HEADING.match(next_line)][:1]
            if any(_ADR_NAME.search(text) for text in following):
                return "Superseded"
    if status and status.lower().startswith("superseded"):
        return "Superseded"
    return status


def _section_entries(lines: list[str], path: str, day: Date | None,
                     meta: dict[str, object]) -> list[Entry]:
    """One entry per `#`/`##` section: its heading's text and its lines, with the category
    and tags its annotation lines give."""
    from miniclaw.entries.parsing import parse_annotation

    entries: list[Entry] = []
    section: list[tuple[int, str]] = []
    category, tags = None, []

    def close() -> None:
        if len(section) > 1:  # a heading alone (a session's title) is no memory
            text = "\n".join(line.rstrip() for _, line in section).strip()
            if text:
                entries.append(Entry(text, "", path, section[0][0], section[-1][0], day,
                                     None, category, tuple(tags), meta))

    for number, line in enumerate(lines, 1):
        heading = _HEADING.match(line)
        if heading:
            close()
            section, category, tags = [(number, heading.group(2))], None, []
            continue
        annotation = parse_annotation(line)
        if annotation:
            kind, value = annotation
            if kind == "category":
                category = value
            elif value not in tags:
                tags.append(value)
            continue
        if line.strip() and line.strip() != "---":
            section.append((number, line))
    close()
    return entries
