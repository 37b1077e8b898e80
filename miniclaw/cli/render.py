"""Rendering results for people (text, coloured on a terminal) and programs (JSON).

The one place that turns library objects into output; commands never format by hand.
JSON output is the object of docs/ARCHITECTURE.md and nothing else on stdout.

Text for people goes through `printable` wherever it holds text miniclaw did not write (memory
text, excerpts, paths, queries, a model's answer, error messages): a memory file or a model
could otherwise set the terminal's title, write to its clipboard (OSC 52) or move its cursor.
JSON needs no such care (it escapes control characters) beyond being valid UTF-8.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date as Date

from miniclaw.text import plural, printable, utf8
from miniclaw.entries.entry import Entry
from miniclaw.sources.base import source_label, source_windowed


class Printable:
    """A text stream that passes on only `printable` text (the chat's terminal)."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(printable(text))

    def flush(self) -> None:
        self.stream.flush()


class Style:
    """ANSI styles from colorama, or nothing when colour is off."""

    def __init__(self, color: bool) -> None:
        self.color = color
        if color:
            from colorama import Fore
            from colorama import Style as S

            self._codes = {"bold": S.BRIGHT, "dim": S.DIM, "cyan": Fore.CYAN,
                           "green": Fore.GREEN, "yellow": Fore.YELLOW, "reset": S.RESET_ALL}

    def __call__(self, text: str, *styles: str) -> str:
        """`text`, made printable, in these styles."""
        text = printable(text)
        if not self.color or not styles:
            return text
        return "".join(self._codes[s] for s in styles) + text + self._codes["reset"]

    def highlight(self, text: str, spans: Iterable[tuple[int, int]]) -> str:
        if not self.color:
            return printable(text)
        out, pos = [], 0
        for start, end in sorted(spans):
            if start < pos:
                continue
            out.append(printable(text[pos:start]))
            out.append(self(text[start:end], "bold", "yellow"))
            pos = end
        out.append(printable(text[pos:]))
        return "".join(out)


def format_score(score: float) -> str:
    return str(int(score)) if float(score).is_integer() else f"{score:.2f}"


def to_json(payload: dict) -> str:
    import json  # only --json output needs it

    # Lone surrogates (bytes that were not UTF-8) cannot be written as UTF-8: U+FFFD instead.
    return utf8(json.dumps(payload, ensure_ascii=False, indent=2))


# The hints in the CLI's own terms, its flags (the kinds are in search/hints.py); the kinds
# not named here read as hints.WORDING.
CLI_WORDING = {
    "widen_days": "search all history with --all (only the last {days} days of daily notes "
                  "were searched)",
    "drop_requirement": "drop a requirement (+word, --require, \"phrase\"): every result must "
                        "hold all of them",
    "drop_filter": "drop --{filter} {value}: no memory has it",
    "by_meaning": "--mode hybrid: it finds memories by meaning, without the query's words",
    "narrow_category": "--category {category} (found among these results)",
    "narrow_tag": "--tag {tag} (found among these results)",
    "older": "{count} older {matches} beyond {days} days: add --all to include them",
}


def search_json(found) -> str:
    return to_json(found.to_dict(CLI_WORDING))


def suggestions(found, wording=CLI_WORDING, older: str | None = None) -> list[str]:
    """The hints of a search in words: the CLI's flags by default, plain words with `{}`
    (less "widen the window" when the `older` line above says it with a count)."""
    from miniclaw.search.hints import describe

    return [describe(hint, wording) for hint in found.hints
            if not (older and hint.kind == "widen_days")]


def warning_lines(found) -> list[str]:
    """`Warning: ...` for each file the search could not use as it should (for stderr)."""
    from miniclaw.search.hints import describe

    return [printable(f"Warning: {describe(warning)}") for warning in found.warnings]


def _corrections(found) -> str:
    from miniclaw.search.results import describe_corrections

    return describe_corrections(found.corrections)


def _explanation(hit) -> str:
    return " + ".join(f"{part} {value:.2f}" for part, value in hit.explanation)


def search_text(found, style: Style, wording=CLI_WORDING) -> str:
    chosen = f"  [auto: {found.mode}]" if found.auto else ""  # the best available: which
    lines = [style(f'Search Results for: "{found.query}"{chosen}', "bold"), ""]
    if found.degraded:  # the mode that ran, visibly: `[bm25] ⚠ no embedding model installed`
        from miniclaw.search.hints import describe

        lines += [style(printable(describe(found.degraded)), "yellow"), ""]
    if found.corrections:
        lines += [printable(f"Searched instead: {_corrections(found)}"), ""]
    older = found.older_line(wording)  # what the window hid, said (issue 39)
    if not found.results:
        lines += ["No memories matched."] + ([older] if older else []) + ["Suggestions:"]
        lines += [printable(f"  - {hint}") for hint in suggestions(found, wording, older)]
        return "\n".join(lines)
    for rank, hit in enumerate(found.results, 1):
        day = hit.date.isoformat() if hit.date else "undated"
        label = source_label(hit.source)
        lines.append(f"{rank}. " + style(f"[Score: {format_score(hit.score)}]", "green")
                     + printable(f" {day} ({label})"))
        lines.append("   " + style.highlight(hit.excerpt, hit.highlights))
        lines.append("   " + style(hit.ref, "dim"))  # with its mark: what forget/edit take
        if hit.meta.get("superseded_by"):  # shown with --all-versions: said, and by what
            lines.append("   " + style(printable(superseded_line(hit.meta)), "yellow"))
        if hit.explanation:
            lines.append("   " + style(f"why: {_explanation(hit)}", "dim"))
        lines.append("")
    lines.append(f"Found {plural(found.total, 'relevant memory', 'relevant memories')} "
                 f"(showing top {len(found.results)})")
    if older:
        lines.append(older)
    return "\n".join(lines)


def superseded_line(meta) -> str:
    """`superseded by memory/MEMORY.md:9#3fa9c2 on 2026-11-29: "Sam moved to Bergen"`."""
    line = f"superseded by {meta['superseded_by']}"
    if meta.get("superseded_on"):
        line += f" on {meta['superseded_on']}"
    if meta.get("superseded_by_text"):
        line += f': "{" ".join(str(meta["superseded_by_text"]).split())}"'
    return line


def search_markdown(found) -> str:
    """Results grouped by file, for agents that read Markdown: each entry's category
    comment, then `**Line N:** text`, and a count at the end (ConKeeper's search shape)."""
    lines = [f'## Results for: "{found.query}"', "", ""]
    if found.corrections:
        lines += [f"_Searched instead: {_corrections(found)}_", ""]
    by_file: dict[str, list] = {}
    for hit in found.results:
        by_file.setdefault(hit.path, []).append(hit)
    for path, hits in by_file.items():
        lines += [f"### {path}", ""]
        for hit in hits:
            if hit.category:
                lines.append(f"<!-- @category: {hit.category} -->")
            text = " ".join(hit.content.split())
            lines.append(f"**Line {hit.line_start}:** {text}")  # the entry's first line
            if hit.meta.get("superseded_by"):
                lines.append(f"_{superseded_line(hit.meta)}_")
            if hit.explanation:
                lines.append(f"_why: {_explanation(hit)}_")
            lines.append("")
    if not found.results:
        lines += ["No matches.", ""] + [f"- {hint}" for hint in suggestions(found)] + [""]
    noun = "match" if len(found.results) == 1 else "matches"
    files = "file" if len(by_file) == 1 else "files"
    lines.append("---")
    lines.append(f"Found {len(found.results)} {noun} across {len(by_file)} {files}.")
    if found.older:
        lines.append(found.older_line(CLI_WORDING))
    return printable("\n".join(lines))


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else "" for line in text.split("\n"))


def entries_text(title: str, entries: list[Entry], style: Style, zone: str = "UTC") -> str:
    """A note or MEMORY.md for people; a time is named UTC only in a UTC workspace (else it
    is the clock of the `timezone` setting, as the note's header has it)."""
    lines = [style(title, "bold")]
    if not entries:
        lines.append("  (no entries)")
    for entry in entries:
        stamp = " ".join(x for x in (entry.date.isoformat() if entry.date and not source_windowed(entry.source) else "",
                                     f"{entry.time}{' UTC' * (zone == 'UTC')}" if entry.time else "") if x)
        meta = [entry.citation]
        if entry.category:
            meta.append(f"@{entry.category}")
        meta += [f"#{tag}" for tag in entry.tags]
        head = f"- {stamp + ' ' if stamp else ''}" + style("(" + ", ".join(meta) + ")", "dim")
        lines.append(head)
        lines.append(_indent(printable(entry.text), "    "))
        if entry.meta.get("superseded_by"):  # `memory read` shows every version, marked
            lines.append("    " + style(printable(superseded_line(entry.meta)), "yellow"))
    return "\n".join(lines)


def days_text(days: list[tuple[Date, list[Entry]]], style: Style, span: int,
              zone: str = "UTC") -> str:
    if not days:
        return f"No daily notes in the last {span} day{'s' if span != 1 else ''}."
    blocks = [entries_text(f"Daily Note {day.isoformat()} ({entries[0].path})", entries, style, zone)
              for day, entries in days]
    return "\n\n".join(blocks)


def entries_json(entries: list[Entry], key: str = "entries", **extra) -> str:
    return to_json({**extra, key: [e.to_dict() for e in entries]})


def _size(n: float) -> str:
    unit = "B"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            break
        n /= 1024
    return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"


def status_dict(status) -> dict:
    return {
        "index_path": status.path, "index_exists": status.exists,
        "index_bytes": status.size_bytes, "files_on_disk": status.files_on_disk,
        "files_indexed": status.files, "entries": status.entries, "terms": status.terms,
        "updated_at": status.updated_at, "up_to_date": status.up_to_date,
        "stale_files": list(status.stale_files), "missing_files": list(status.missing_files),
        "sources": [{"name": name, "files_on_disk": on_disk, "files_indexed": files,
                     "entries": entries} for name, on_disk, files, entries in status.by_source],
        "unreadable_folders": [{"path": path, "message": message}
                               for path, message in status.unreadable],
    }


def status_text(status, style: Style) -> str:
    if status.unreadable:  # what those folders hold is not known: neither is the state
        state = style(f"not known: {plural(len(status.unreadable), 'folder')} could not be "
                      "listed (below)", "yellow")
    elif status.up_to_date:
        state = style("up to date", "green")
    else:
        state = style(
            f"out of date: {len(status.stale_files)} new or changed file(s), "
            f"{len(status.missing_files)} deleted (the next search or `miniclaw memory index` "
            "updates it)", "yellow")
    lines = [
        f"Index:    {printable(str(status.path))} ({_size(status.size_bytes)})",
        f"Files:    {status.files_on_disk} on disk, {status.files} indexed",
        f"Entries:  {status.entries}",
        f"Terms:    {status.terms}",
        f"Updated:  {status.updated_at or 'never'}",
        f"State:    {state}",
    ]
    if status.by_source:
        lines.append("Sources:")
        for name, on_disk, files, entries in status.by_source:
            lines.append(printable(f"  {name}: {plural(entries, 'entry', 'entries')} in "
                                   f"{plural(files, 'file')} ({on_disk} on disk)"))
    for path in list(status.stale_files)[:10]:
        lines.append(printable(f"  changed: {path}"))
    for path in list(status.missing_files)[:10]:
        lines.append(printable(f"  deleted: {path}"))
    for _, message in status.unreadable:
        lines.append(printable(f"  {message}"))
    return "\n".join(lines)


def _tidy_entry(entry: Entry, style: Style, lead: str) -> list[str]:
    meta = [entry.ref, entry.date.isoformat() if entry.date else "undated"]
    if entry.category:
        meta.append(f"@{entry.category}")
    meta += [f"#{tag}" for tag in entry.tags]
    return [f"   {lead}" + style(" ".join(meta), "dim"), _indent(printable(entry.text), "       ")]


def tidy_cluster_text(number: int, cluster, style: Style) -> str:
    """One duplicate cluster: its score, then each entry (ref, date, annotations, text)."""
    lines = [style(f"{number}. {format_score(cluster.score)}  "
                   f"{plural(len(cluster.entries), 'entry', 'entries')}", "bold")]
    for entry in cluster.entries:
        lines += _tidy_entry(entry, style, "- ")
    return "\n".join(lines)


def tidy_text(report, style: Style) -> str:
    """The tidy report for people: duplicate clusters, then conflicts, best first."""
    scope = "all daily notes" if report.days is None else f"daily notes of the last {report.days} days"
    lines = [f"Compared {plural(report.entries, 'entry', 'entries')} in "
             f"{plural(report.files, 'file', 'files')} (MEMORY.md and {scope})."]
    if report.duplicates:
        lines += ["", style(f"Duplicates ({plural(len(report.duplicates), 'cluster', 'clusters')}, "
                            "best first; merge them with --apply):", "bold")]
        lines += [tidy_cluster_text(i, c, style) for i, c in enumerate(report.duplicates, 1)]
    else:
        lines.append("No duplicates.")
    if report.conflicts:
        lines += ["", style(f"Same subject, different values ({plural(len(report.conflicts), 'pair', 'pairs')}"
                            ", best first; --apply never changes them):", "bold")]
        for i, pair in enumerate(report.conflicts, 1):
            lines.append(style(f"{i}. {format_score(pair.score)}  {pair.reason}", "bold"))
            lines += _tidy_entry(pair.older, style, "older ") + _tidy_entry(pair.newer, style, "newer ")
    else:
        lines.append("No conflicting pairs.")
    return "\n".join(lines)
