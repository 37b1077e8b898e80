"""EF Memory stores (lagameon/EFM): a project's `.memory/events.jsonl` as a source.

One JSON object per line; updates and deprecations are appended, so the LAST line per
`id` wins and a winning `deprecated: true` hides the entry. Blank lines, git conflict
markers, lines that are not JSON objects and lines without an id are skipped; the file then
carries a warning that counts them by line number (never their text). A line whose fields
are not of their JSON type (`severity` a list, `content` a string: `_SHAPE`) is damaged
too: it is skipped, never the reason a search fails. Privacy applies to each record on its
own (`line_records`, `privacy.visible_record`): the tags hide what they enclose in the
entry's strings, and an unclosed `<private>` the rest of that entry (fail closed), never a
later line; an entry that only mentions the tag is kept, less what the tag hides. Drafts
(`.memory/drafts/`) and compaction archives (`.memory/archive/`) are never read. The root
is the project folder (source paths in entries are relative to it).

Each entry's text is its title, rule, implication and content (what EFM's search reads);
`Entry.meta` holds id, classification (`Hard`/`Soft`), severity (S1-S3 or None), type,
title, rule, implication, source (list), last_verified, created_at and content. At equal
relevance the ranker puts Hard S1 before Hard S2, S3, Soft (`priority`); a relevance
never changes. What a result shows beyond that (`notes`: `[Stale?]` after 90 days
without verification by the store's clock, `[Source may be outdated]` when a cited file is
gone) is worked out when it is shown, since a cited file can go without the store changing.
"""

from __future__ import annotations

import json
import os
import re
from datetime import date as Date
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from miniclaw.entries.entry import CATEGORY_PATTERN, TAG_PATTERN, Entry
from miniclaw.sources.base import FileSource, SourceFile
from miniclaw.text import LazyPattern

EVENTS = ".memory/events.jsonl"
STALE_DAYS = 90  # EFM's verify.staleness_threshold_days
UNDATED_AGE = 999  # EFM: an unparseable created_at counts as this many days old
#: A query matching more than this many entries is too broad to show whole: EFM's skill
#: dumps what it finds; miniclaw shows the top results and asks for narrower terms.
BROAD_MATCHES = 20
_CONFLICT = LazyPattern(r"^(<{7}|={7}|>{7})(\s|$)")
# Sources EFM checks for existence: `path:L1-L2`, `path#Heading:L1-L2`, `path::function`;
# `commit <hex>`, `PR #12` and free text are not files.
_NOT_A_FILE = LazyPattern(r"^(commit\s+[0-9a-f]{7,40}|PR\s*#\d+)$", re.IGNORECASE)
_SEVERITY_ORDER = {"S1": 0, "S2": 1, "S3": 2}
# The JSON type of each field an entry is read from (null or absent is always allowed).
_SHAPE = {**dict.fromkeys(("type", "classification", "severity", "title", "rule",
                           "implication", "created_at", "last_verified"), str),
          **dict.fromkeys(("content", "source", "tags"), list), "deprecated": bool}


class EFMemorySource(FileSource):
    """A project's EF Memory: `EFMemorySource(root="~/code/project")`."""

    name = "ef_memory"
    label = "EF Memory"
    recursive = True  # its one file is in `.memory/`, a hidden folder: listed directly
    line_records = True  # privacy redacts each line (record) on its own

    def owns(self, relative: str) -> bool:
        return relative == EVENTS

    def folders(self, workspace: Path) -> list[Path]:
        return [self.root_path(workspace) / ".memory"]

    def files(self, workspace: Path) -> list[SourceFile]:
        found = self.file(workspace, os.path.join(self._layout(workspace)[0], EVENTS))
        return [found] if found else []

    def parse(self, text: str, path: str) -> list[Entry]:
        latest, _ = read_events(text)
        entries = []
        for number, event in latest.values():
            if event.get("deprecated") is True:
                continue
            entries.append(_entry(event, path, number))
        return sorted(entries, key=lambda entry: entry.line_start)

    def health(self, workspace: Path) -> tuple[str, str, str]:
        """`miniclaw doctor`'s finding for this store: EFM's startup check."""
        return doctor_finding(self.root_path(workspace))

    def warning(self, text: str, path: str) -> str | None:
        """Lines of the store that were skipped as damaged (by number: never their text)."""
        _, damaged = read_events(text)
        if not damaged:
            return None
        shown = ", ".join(map(str, damaged[:10])) + (", ..." if len(damaged) > 10 else "")
        return (f"{path}: {len(damaged)} damaged line{'s' if len(damaged) > 1 else ''} "
                f"skipped (line {shown}): not a JSON entry with an id and fields of their "
                "types")

    @staticmethod
    def priority(meta) -> int:
        """Order among entries of equal relevance: Hard S1, S2, S3, Hard without severity,
        then Soft the same way."""
        hard = meta.get("classification") == "Hard"
        severity = meta.get("severity")
        return (0 if hard else 4) + _SEVERITY_ORDER.get(severity if isinstance(severity, str)
                                                        else None, 3)

    def notes(self, meta, workspace: Path, today: Date) -> tuple[str, ...]:
        """What to say of an entry as it is shown: `[Stale?]`, `[Source may be outdated]`."""
        out = []
        if age_days(meta, today) > STALE_DAYS:
            out.append("[Stale?]")
        project = self.root_path(workspace)
        if any(not (project / cited).exists() for cited in cited_files(meta.get("source"))):
            out.append("[Source may be outdated]")
        return tuple(out)


def read_events(text: str) -> tuple[dict[str, tuple[int, dict]], list[int]]:
    """({id: (line number, event)} with the last line per id, damaged line numbers). Blank
    lines and git conflict markers are not damage (EFM skips them silently)."""
    latest: dict[str, tuple[int, dict]] = {}
    damaged = []
    for number, line in enumerate(text.split("\n"), 1):
        line = line.strip()
        if not line or _CONFLICT.match(line):
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            event = None
        if not isinstance(event, dict) or not isinstance(event.get("id"), str) or not event["id"] \
                or not _well_shaped(event):
            damaged.append(number)
            continue
        latest.pop(event["id"], None)  # keep file order of the winning lines
        latest[event["id"]] = (number, event)
    return latest, damaged


def _well_shaped(event: dict) -> bool:
    """Whether each field an entry is read from has its JSON type, or is null."""
    return all(isinstance(event.get(key), kind) or event.get(key) is None
               for key, kind in _SHAPE.items())


def _entry(event: dict, path: str, number: int) -> Entry:
    title, rule, implication = (_text(event.get(key)) for key in ("title", "rule", "implication"))
    content = [_text(item) for item in event.get("content") or [] if _text(item)] \
        if isinstance(event.get("content"), list) else []
    classification = "Hard" if str(event.get("classification", "")).lower() == "hard" else "Soft"
    severity = _text(event.get("severity"))
    severity = severity if severity in _SEVERITY_ORDER else None
    kind = _text(event.get("type")).lower()
    sources = [s for s in event.get("source") or [] if isinstance(s, str) and s.strip()] \
        if isinstance(event.get("source"), list) else []
    tags = [t for t in event.get("tags") or [] if isinstance(t, str)] \
        if isinstance(event.get("tags"), list) else []
    text = "\n".join(part for part in (title, rule, implication, *content) if part) or event["id"]
    meta = {"id": event["id"], "classification": classification, "severity": severity,
            "type": kind or None, "title": title or None, "rule": rule or None,
            "implication": implication or None, "source": sources,
            "last_verified": _text(event.get("last_verified")) or None,
            "created_at": _text(event.get("created_at")) or None, "content": content}
    day = _day(meta["last_verified"]) or _day(meta["created_at"])
    return Entry(text, "", path, number, number, day, None,
                 kind if CATEGORY_PATTERN.match(kind) else None,
                 tuple(dict.fromkeys(t.lower() for t in tags if TAG_PATTERN.match(t.lower()))),
                 meta)


def _text(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _day(value: str | None) -> Date | None:
    """The date of an ISO 8601 stamp (`Z`, an offset or naive), or None."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).date()
    except ValueError:
        try:
            return Date.fromisoformat(value[:10])
        except ValueError:
            return None


def age_days(meta, today: Date) -> int:
    """Days since the entry was last verified (else created), EFM's way: an unreadable
    `created_at` counts as 999 days."""
    day = _day(meta.get("last_verified")) or _day(meta.get("created_at"))
    return UNDATED_AGE if day is None else (today - day).days


def cited_files(sources: object) -> list[str]:
    """The project-relative files an entry's `source` list cites (what EFM checks)."""
    out = []
    for source in sources if isinstance(sources, list) else []:
        source = source.strip() if isinstance(source, str) else ""
        if not source or _NOT_A_FILE.match(source) or " " in source:
            continue
        cited = re.split(r"::|#|:L\d", source, maxsplit=1)[0]
        if cited and not os.path.isabs(cited) and ".." not in cited.split("/"):
            out.append(cited)
    return out


def too_broad(total: int) -> bool:
    """Whether a query matched too many entries to be useful (`BROAD_MATCHES`)."""
    return total > BROAD_MATCHES


def result_notes(store, found) -> list[tuple[str, ...]]:
    """Each result's notes (`notes`), in order: empty for results of other sources. Read
    with the store's clock, so `[Stale?]` is relative to the store's today (injectable)."""
    by_name = {source.name: source for source in store.sources}
    today = store.today()
    return [by_name[hit.source].notes(hit.meta, store.workspace, today)
            if isinstance(by_name.get(hit.source), EFMemorySource) else ()
            for hit in found.results]


# -- the startup check (EFM's `pipeline_cli.py --startup`, read-only) -----------------------

DRAFT_EXPIRE_DAYS = 7  # EFM's v3.draft_auto_expire_days
COMPACTION_RATIO = 2.0  # lines per active entry from which EFM suggests compaction


class StartupCheck(NamedTuple):
    """EFM's startup counts for one store. miniclaw never deletes: drafts past 7 days are
    counted (`drafts_expired`), for EFM's own startup to remove. Every active entry is
    checked for cited files (EFM samples 10)."""

    total_entries: int
    pending_drafts: int
    drafts_expired: int
    oldest_draft_age_days: int | None
    stale_entries: int
    source_warnings: int
    waste_ratio: float
    merge_markers: int
    damaged_lines: int

    @property
    def healthy(self) -> bool:
        return not (self.pending_drafts or self.drafts_expired or self.stale_entries
                    or self.source_warnings or self.merge_markers or self.damaged_lines
                    or self.waste_ratio >= COMPACTION_RATIO)

    def hint(self) -> str:
        """EFM's one-line startup hint: `EF Memory: <part> / <part>`."""
        if self.healthy:
            return f"EF Memory: {self.total_entries} entries, all healthy"
        parts = []
        drafts = []
        if self.drafts_expired:
            drafts.append(f"{self.drafts_expired} drafts past {DRAFT_EXPIRE_DAYS} days "
                          "(EF Memory's startup deletes them)")
        if self.pending_drafts:
            drafts.append(f"{self.pending_drafts} pending (oldest: "
                          f"{self.oldest_draft_age_days}d, review: /memory-save)")
        if drafts:
            parts.append(", ".join(drafts))
        if self.source_warnings:
            parts.append(f"{self.source_warnings} source warnings")
        if self.stale_entries:
            parts.append(f"{self.stale_entries} stale entries (>{STALE_DAYS}d)")
        if self.merge_markers:
            parts.append(f"{self.merge_markers} merge conflict markers in events.jsonl")
        if self.damaged_lines:
            parts.append(f"{self.damaged_lines} damaged lines skipped")
        if self.waste_ratio >= COMPACTION_RATIO:
            parts.append(f"compaction suggested ({self.waste_ratio:.2f} lines per entry)")
        return "EF Memory: " + " / ".join(parts)


def startup_check(project: Path, now: datetime) -> StartupCheck:
    """The startup counts of the store in `project` (its `.memory/`), as of `now` (aware).
    Read as a search reads it: no folder link followed, a file link only within the
    project, regular files of bounded size (`files.read_bytes`): events.jsonl that is not
    to be read raises MiniclawError (doctor says so), a draft that is not is left out."""
    from miniclaw.entries.privacy import visible_text
    from miniclaw.sources.base import linked_folder

    from miniclaw.errors import UsageError
    from miniclaw.fs import files

    events = project / EVENTS
    if linked_folder(project, EVENTS):
        raise UsageError(f"{EVENTS} is reached through a folder link")
    raw = files.read_bytes(events, project, EVENTS)
    text = visible_text(files.decode(raw, EVENTS, memory_file=False)[0], per_line=True
                        ) if raw else ""
    latest, damaged = read_events(text)
    active = [_entry(event, str(events), number).meta for number, event in latest.values()
              if event.get("deprecated") is not True]
    lines = sum(1 for line in text.split("\n") if line.strip())
    drafts = [] if linked_folder(project, ".memory/drafts/x") else sorted(
        (project / ".memory/drafts").glob("*.json"))
    ages = sorted(age for age in (_draft_age(project, path, now) for path in drafts)
                  if age is not None)
    pending = [age for age in ages if age <= DRAFT_EXPIRE_DAYS]
    return StartupCheck(
        total_entries=len(active), pending_drafts=len(pending),
        drafts_expired=len(ages) - len(pending),
        oldest_draft_age_days=max(pending) if pending else None,
        stale_entries=sum(age_days(meta, now.date()) > STALE_DAYS for meta in active),
        source_warnings=sum(any(not (project / cited).exists()
                                for cited in cited_files(meta["source"])) for meta in active),
        waste_ratio=round(lines / len(active), 2) if active else 0.0,
        merge_markers=sum(bool(_CONFLICT.match(line.strip())) for line in text.split("\n")),
        damaged_lines=len(damaged))


def _read(project: Path, relative: str) -> str | None:
    """A file of the store as text ("" when it is not there; None when it is not to be
    read): through no folder link, a file link only within the project, a regular file (a
    FIFO would hang, a link to /dev/zero eat the memory) of at most the size a search reads."""
    from miniclaw.errors import MiniclawError
    from miniclaw.fs import files
    from miniclaw.sources.base import linked_folder

    if linked_folder(project, relative):
        return None
    try:
        raw = files.read_bytes(project / relative, project, relative)
    except MiniclawError:  # unreadable, a link out of the project, not a regular file
        return None
    return raw.decode("utf-8", "replace") if raw else ""


def _draft_age(project: Path, path: Path, now: datetime) -> int | None:
    """Whole days since a draft was captured (`_meta.capture_timestamp`; else its mtime);
    None for what is no draft (a FIFO, a device, a link out of the project: not read)."""
    text = _read(project, str(path.relative_to(project)))
    if text is None:
        return None
    try:
        stamp = json.loads(text)["_meta"]["capture_timestamp"]
        captured = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        if captured.tzinfo is None:
            captured = captured.replace(tzinfo=now.tzinfo)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        try:
            captured = datetime.fromtimestamp(path.stat().st_mtime, now.tzinfo)
        except OSError:
            return 0
    return (now - captured).days


def doctor_finding(project: Path) -> tuple[str, str, str]:
    """(severity, message, fix) of a configured store's startup check, for `miniclaw
    doctor`: info when healthy, else a warning with EFM's hint line."""
    from datetime import timezone

    from miniclaw.errors import MiniclawError

    try:
        check = startup_check(project, datetime.now(timezone.utc))
    except MiniclawError as exc:  # events.jsonl is a FIFO, a device, a link out, unreadable
        return ("warning", f"EF Memory: not checked: {exc}",
                f"make {EVENTS} a regular file in the project (not a link out of it)")
    if check.healthy:
        return "info", check.hint(), "nothing to do"
    return ("warning", check.hint(), "review drafts with /memory-save, re-verify stale "
            "entries and fix cited sources in EF Memory; resolve merge markers by hand")
