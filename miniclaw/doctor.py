"""`miniclaw doctor`: one report of everything that can be wrong with a workspace's memory.

Each check returns `Finding`s (severity, what it concerns, what to do), never raises for
what it finds: a damaged index or an unreachable server is a finding, not an error. The
checks only read: the index is opened read-only (`immutable` when it has no WAL, so not
even a -shm file appears) and no file of the workspace is opened to write. `fix()` does
only what cannot lose data: it rebuilds the index (a cache) and removes the leftover
temporary files of our own writers (under the memory folder's write lock, so never one a
writer still owns); it never touches a memory file.

Severities: `info` (worth knowing; still healthy), `warning` (something is skipped, hidden
or about to fail), `error` (something does not work).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path

from miniclaw import config
from miniclaw.fs import platform

# A configured EF Memory store (by kind or class) gets its startup check.

SEVERITIES = ("info", "warning", "error")
MODEL_TIMEOUT_S = 2.0
EMBED_TIMEOUT_S = 10.0  # a local server may load its embedding model at the first request
MCP_PACKAGE = "mcp"  # what `miniclaw mcp` imports (cli/mcp.py)
WAL_WARN_BYTES = 64 * 1024 * 1024  # a WAL this large means checkpoints keep failing


@dataclass(frozen=True)
class Finding:
    severity: str  # one of SEVERITIES
    check: str  # workspace, file, index, model, mcp, sources
    path: str | None  # the file or URL it concerns (workspace-relative for memory files)
    message: str
    fix: str  # what to do about it

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class Report:
    workspace: str
    findings: list[Finding] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)  # what was looked at, one line each
    fixed: list[str] = field(default_factory=list)  # what --fix did

    @property
    def healthy(self) -> bool:
        return all(f.severity == "info" for f in self.findings)

    def to_dict(self) -> dict[str, object]:
        return {"workspace": self.workspace, "healthy": self.healthy,
                "findings": [f.to_dict() for f in self.findings],
                "checked": self.checked, "fixed": self.fixed}


def examine(workspace: Path, *, cwd: Path | None = None) -> Report:
    """Run every check (read-only) and return the report."""
    report = Report(str(workspace))
    usable = _check_workspace(workspace, report)
    settings = _load_settings(report)
    sources = _configured_sources(workspace, report, settings is not None)
    if usable:
        _check_files(workspace, report, sources)
        _check_source_files(workspace, report, sources)
    _check_index(workspace, report, usable, sources)
    if settings is not None:
        _check_model(report)
    _check_search(report)
    if settings is not None:
        _check_embedder(workspace, report)
    _check_mcp(report, cwd or Path.cwd())
    order = {name: i for i, name in enumerate(SEVERITIES)}
    report.findings.sort(key=lambda f: -order[f.severity])
    return report


# -- the workspace and its files -----------------------------------------------------------

def _check_workspace(workspace: Path, report: Report) -> bool:
    memory = workspace / config.MEMORY_DIR
    if not workspace.is_dir():
        report.findings.append(Finding("error", "workspace", str(workspace),
                                       "there is no workspace here",
                                       "run `miniclaw init`, or pass the right --workspace"))
        return False
    if not memory.is_dir():
        report.findings.append(Finding("error", "workspace", config.MEMORY_DIR,
                                       "the workspace has no memory/ folder",
                                       "run `miniclaw init` in it"))
        return False
    return True


def _configured_sources(workspace: Path, report: Report, readable: bool) -> tuple:
    """The sources config.json gives the workspace (as a search would build them); a
    configuration a search would refuse is an error finding, and the built-in ones are
    checked instead."""
    from miniclaw.errors import UsageError
    from miniclaw.sources.base import SOURCES, check_roots, configured_sources, shown_name

    if not readable:  # config.json itself is the finding already
        return SOURCES
    try:
        sources, roots = configured_sources(workspace)
        check_roots(sources, workspace, roots)
    except UsageError as exc:
        report.findings.append(Finding("error", "sources", str(config.config_path()), str(exc),
                                       'fix the workspace\'s "sources" in config.json, or '
                                       "`miniclaw sources remove NAME`"))
        return SOURCES
    report.checked.append(f"sources: {', '.join(shown_name(source.name) for source in sources)}")
    _check_source_names(workspace, report)
    return sources


def _check_source_names(workspace: Path, report: Report) -> None:
    """A name config.json gives a source by hand that `sources add` would refuse (a
    newline, an escape, spaces, a leading `-`): still searched, but it garbles listings and
    is hard to give to --source."""
    from miniclaw.sources.base import SOURCE_NAME_RULE, name_problem, shown_name

    for item in config.workspace_settings(workspace).get("sources") or []:
        if isinstance(item, dict) and "name" in item and name_problem(item["name"]):
            report.findings.append(Finding(
                "warning", "sources", str(config.config_path()),
                f"the source name {shown_name(item['name'])} is not a simple name: it garbles "
                "listings and is hard to give to --source",
                f'rename it in config.json ("name": {SOURCE_NAME_RULE})'))


def _in_memory_folder(source, workspace: Path) -> bool:
    return source.root_path(workspace) == workspace / config.MEMORY_DIR


def _check_files(workspace: Path, report: Report, sources: tuple) -> None:
    from miniclaw.sources.base import SOURCES

    inside = [source for source in sources if _in_memory_folder(source, workspace)]
    memory = workspace / config.MEMORY_DIR
    try:
        names = sorted(os.listdir(memory))
    except OSError as exc:
        report.findings.append(Finding("error", "workspace", config.MEMORY_DIR,
                                       f"cannot list memory/: {exc.strerror or exc}",
                                       _readable_fix(memory, writes=True)))
        return
    count = 0
    from miniclaw.fs.files import leftovers

    ours = {path.name for path in leftovers(memory)}  # proved ours: never a user's own .tmp
    for name in names:
        rel = f"{config.MEMORY_DIR}/{name}"
        if name in ours:
            report.findings.append(Finding(
                "warning", "file", rel,
                "a leftover temporary file of an interrupted write (a full copy of a note, "
                "private parts included)", "`miniclaw doctor --fix` removes it"))
        elif any(source.owns(name) for source in inside):
            count += 1
            report.findings.extend(_check_file(memory / name, workspace, rel))
        elif left_out := next((s for s in SOURCES if _in_memory_folder(s, workspace)
                               and s.owns(name)), None):  # a built-in source removed
            report.findings.append(Finding(
                "info", "file", rel, f"not searched: the workspace's sources leave out "
                f"{left_out.name}", f"`miniclaw sources add {left_out.name}` searches it again"))
        elif name.endswith(".md"):
            report.findings.append(Finding(
                "info", "file", rel, "not searched: only MEMORY.md and YYYY-MM-DD.md are "
                "memory files", "rename it to a day's date (YYYY-MM-DD.md) to search it"))
    report.checked.append(f"workspace {workspace}: {count} memory file{'s' * (count != 1)}")


def _check_source_files(workspace: Path, report: Report, sources: tuple) -> None:
    """Each other source: its root reachable, its files checked as memory files are, and
    none read by two sources (the index keeps a file once: the second never finds it)."""
    from miniclaw.sources.base import (folder_problem, listing, read_twice,
                                       read_twice_warnings, root_outside_workspace)

    every: list = []  # the files each source reads, in the sources' order
    shown_as: dict[str, str] = {}
    for source in sources:
        if _in_memory_folder(source, workspace):  # checked by `_check_files`
            every += source.files(workspace)
            shown_as[source.name] = str(source.root_path(workspace))
            continue
        root = source.root_path(workspace)
        shown = str(getattr(source, "root", None) or root)
        inside = not root_outside_workspace(source, workspace)
        problem = folder_problem(root)
        if problem is not None and problem[0] == "missing" and inside:
            # a folder of the workspace made on first use (sessions/ at the first chat)
            report.checked.append(f"source {source.name} {shown}: no folder yet")
            continue
        if problem is not None and problem[0] == "unreadable":  # there, but not ours to list
            report.findings.append(Finding(
                "error", "sources", shown, f"the source {source.name!r}: cannot read its "
                f"folder: {problem[1]}", _readable_fix(root, writes=inside)))
            continue
        if problem is not None:
            report.findings.append(Finding(
                "error", "sources", shown, f"the source {source.name!r}: its root folder is "
                f"not reachable ({problem[0]})",
                f"mount or create it, or `miniclaw sources remove {source.name}`"))
            continue
        too_wide = _too_wide(source, workspace)
        if too_wide:  # a hand-edited config.json (`sources add` refuses it): not walked here
            report.findings.append(Finding(
                "warning", "sources", shown, f"the source {source.name!r}: its root {too_wide}; "
                "every search lists every file of its kind there",
                f"`miniclaw sources remove {source.name}`, then add the folder its memory "
                "lives in"))
            continue
        found, unlisted = listing(source, workspace)
        for folder, _ in unlisted:  # a folder inside it (the root was checked above)
            report.findings.append(Finding(
                "warning", "sources", folder, f"the source {source.name!r}: cannot read the "
                f"folder {folder}: its memory files are not searched",
                _readable_fix(folder, writes=inside)))
        every += found
        shown_as[source.name] = shown
        link_root = source.link_root(workspace) if hasattr(source, "link_root") else workspace
        for source_file in found:
            report.findings.extend(_check_file(Path(source_file.absolute), link_root,
                                               source_file.path,
                                               records=getattr(source, "line_records", False)))
        health = getattr(source, "health", None)  # a format's own check (EF Memory's startup)
        if health is not None:
            severity, message, fix_it = health(workspace)
            report.findings.append(Finding(severity, "sources", shown, message, fix_it))
        report.checked.append(f"source {source.name} {shown}: {len(found)} "
                              f"file{'s' * (len(found) != 1)}")
    for _, _, second, said in read_twice_warnings(read_twice(every)):  # one per pair
        report.findings.append(Finding("warning", "sources", shown_as[second], said,
                                       f"`miniclaw sources remove {second}`"))


def _readable_fix(folder: Path | str, *, writes: bool) -> str:
    """What makes a folder that exists but cannot be listed usable: its permissions (or its
    owner), not mounting or creating it."""
    mode = "u+rwx" if writes else "u+rx"
    return (f"let your user read it: `chmod {mode} {folder}` (or `chown` it to your user if "
            "another one owns it)")


def _check_file(path: Path, workspace: Path, rel: str, *, records: bool = False) -> list[Finding]:
    """What may keep one memory file from being read, or hide part of it. `records`: a file
    of one JSON record per line (another tool's store, a transcript), whose tags apply per
    record: an unclosed one hides the rest of its record only, nothing to fix in the file."""
    from miniclaw.fs import files
    from miniclaw.entries.parsing import split_lines
    from miniclaw.entries.privacy import front_matter_warning, unclosed_private_line

    def finding(severity: str, message: str, fix: str) -> Finding:
        return Finding(severity, "file", rel, message, fix)

    try:
        raw = files.read_bytes(path, workspace, rel)
    except files.OutsideWorkspaceError:
        return [finding("warning", "skipped: a symlink out of the workspace",
                        "copy the file into memory/ instead of linking to it")]
    except files.NotMemoryFileError as exc:
        return [finding("warning", f"skipped: {str(exc).removeprefix(rel + ' is ')}",
                        "replace it with a regular file under 16 MB (split a large one)")]
    except files.MemoryFileError as exc:
        return [finding("error", f"unreadable: {str(exc).rpartition(': ')[2]}",
                        "make it readable (chmod u+rw)")]
    if raw is None:
        return []
    found = []
    if len(raw) > files.NEAR_LIMIT_BYTES:
        found.append(finding("warning", f"{len(raw) / 1048576:.1f} MB, near the "
                             f"{files.MAX_FILE_BYTES // 1048576} MB limit of a searchable file",
                             "split it into smaller files before adds are refused"))
    text, warning = files.decode(raw, rel, memory_file=False)
    if warning:  # not UTF-8, or NUL bytes: the decoder's words name the byte
        found.append(finding("warning", warning.removeprefix(f"{rel} is "),
                             "save it as UTF-8 in your editor"))
    if not text:
        return found
    hidden = front_matter_warning(text, rel)
    if hidden:
        found.append(finding("warning", hidden.removeprefix(f"{rel}: "),
                             "move the notes below the closing --- (or remove the block)"))
    lines = split_lines(text)
    opened = None if records else unclosed_private_line(lines)
    if opened is not None:
        found.append(finding("warning", f"the <private> on line {opened} is never closed: "
                             "everything after it is hidden and new notes are refused",
                             "add </private> where the private part ends"))
    return found


# -- the index -----------------------------------------------------------------------------

def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _check_index(workspace: Path, report: Report, usable: bool, sources: tuple) -> None:
    """The index file: its place, format, integrity, owner and staleness. Its `checked`
    line (size and WAL) only when none of that is a warning or an error."""
    before = len(report.findings)
    line = _check_index_file(workspace, report, usable, sources)
    if line and all(f.severity == "info" for f in report.findings[before:]):
        report.checked.append(line)


def _check_index_file(workspace: Path, report: Report, usable: bool,
                      sources: tuple) -> str | None:
    from miniclaw.errors import UsageError
    from miniclaw.fs import files
    from miniclaw.index import index_file

    path = config.index_path(workspace)
    shown = str(path)

    def finding(severity: str, message: str, fix: str) -> None:
        report.findings.append(Finding(severity, "index", shown, message, fix))

    # Returns its `checked` line (after an error: nothing, the finding says it all).
    try:
        st = index_file.check_place(path, str(workspace))
    except UsageError as exc:
        finding("error", str(exc), "set MINICLAW_INDEX to a file outside the workspace")
        return
    if st is None:
        if usable:
            finding("info", "not built yet: the first search builds it",
                    "`miniclaw memory index` (or `miniclaw doctor --fix`) builds it now")
        return f"index {shown}: not built yet"
    wal = _size(f"{path}-wal")
    line = f"index {shown}: {_human(st.st_size)}, WAL {_human(wal)}"
    try:  # checked as a regular file above, but it may be swapped for a FIFO since
        header = files.read_head(path, 100, shown) or b""
    except (OSError, files.MemoryFileError) as exc:
        finding("error", f"cannot be read: {getattr(exc, 'strerror', None) or exc}",
                "set MINICLAW_INDEX to a regular file you can read")
        return
    if header and not header.startswith(b"SQLite format 3\x00"):
        finding("error", "not an SQLite file: miniclaw will not use it",
                "delete it if it is a damaged index, or set MINICLAW_INDEX to another file")
        return
    if header and int.from_bytes(header[68:72], "big") not in (0, index_file.APPLICATION_ID):
        finding("error", "another program's database: miniclaw will not use it",
                "set MINICLAW_INDEX to another file")
        return
    if wal > WAL_WARN_BYTES:
        finding("warning", f"its WAL holds {_human(wal)}: another process may keep it from "
                "being emptied", "close long-running miniclaw processes, then "
                "`miniclaw doctor --fix` rebuilds the index")
    try:
        conn = _open_read_only(path, wal)
    except sqlite3.Error as exc:
        finding("error", f"cannot be opened: {exc}", "`miniclaw doctor --fix` rebuilds it")
        return
    try:
        _check_index_content(conn, workspace, finding, usable, sources)
    except sqlite3.Error as exc:
        finding("error", f"damaged: {exc}", "`miniclaw doctor --fix` rebuilds it (it is a cache)")
    finally:
        conn.close()
    return line


def _open_read_only(path: Path, wal: int) -> sqlite3.Connection:
    """A read-only connection; `immutable` when there is no WAL to read, so SQLite creates no
    -wal or -shm file beside it."""
    from urllib.parse import quote

    mode = "mode=ro" if os.path.exists(f"{path}-wal") else "immutable=1"
    return sqlite3.connect(f"file:{quote(str(path))}?{mode}", uri=True)


def _check_index_content(conn: sqlite3.Connection, workspace: Path, finding, usable: bool,
                         sources: tuple) -> None:
    from miniclaw.index.database import index_format

    problems = [line for row in conn.execute("PRAGMA integrity_check(5)")
                for line in str(row[0]).splitlines() if not line.startswith("***")]
    if problems != ["ok"]:
        finding("error", f"damaged (integrity check: {problems[0] if problems else '?'})",
                "`miniclaw doctor --fix` rebuilds it (it is a cache)")
        return
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version != index_format():
        finding("info", f"format {version}, this miniclaw uses {index_format()}: the next "
                "search rebuilds it", "`miniclaw doctor --fix` rebuilds it now")
        return
    owner = conn.execute("SELECT value FROM meta WHERE key = 'workspace'").fetchone()
    if owner is not None and owner[0] != os.path.realpath(workspace):
        finding("error", f"it belongs to the workspace {owner[0]}",
                "set MINICLAW_INDEX to another file (or delete that one: it is a cache)")
        return
    if usable:
        stale = _stale_files(conn, workspace, sources)
        if stale:
            finding("info", f"{len(stale)} file{'s' * (len(stale) != 1)} changed since indexed "
                    f"({', '.join(stale[:3])}{', ...' if len(stale) > 3 else ''}): the next "
                    "search updates it", "`miniclaw memory index` updates it now")


def _stale_files(conn: sqlite3.Connection, workspace: Path, sources: tuple) -> list[str]:
    """Files new, changed or gone since the index last saw them (as `SearchIndex.status`),
    over every source the workspace searches."""
    known = {row[0]: tuple(row[1:]) for row in
             conn.execute("SELECT path, size, mtime_ns, inode, source FROM files")}
    from miniclaw.sources.base import in_unlisted, listing, read_once

    every, unlisted = [], []
    for source in sources:
        if _too_wide(source, workspace):  # its own finding; listing `/` took minutes
            known = {p: row for p, row in known.items() if row[-1] != source.name}
            continue
        found, folders = listing(source, workspace)
        every += found
        unlisted += folders
    from miniclaw.fs import files

    read = {f.path: f for f in read_once(every)[0]}
    disk = {p: (*f.signature, f.source) for p, f in read.items()}  # read by another source: stale
    changed = [files.shown_name(read[p].absolute, p) for p, signature in disk.items()
               if known.get(p) != signature]
    # A file in a folder that cannot be listed is not known to be gone: the folder is a
    # finding of its own (`_check_files`, `_check_source_files`).
    return sorted(changed + [p for p in known if p not in disk and not in_unlisted(p, unlisted)])


def _too_wide(source, workspace: Path) -> str | None:
    """What is wrong with a source's root that is too wide to be walked (`/`, the home
    folder, one holding it or the workspace: `source_config.root_problem`), or None."""
    from miniclaw.sources.config import root_problem
    from miniclaw.sources.base import root_outside_workspace

    if not root_outside_workspace(source, workspace):
        return None
    return root_problem(source.root_path(workspace), workspace)


def _human(size: int) -> str:
    for unit in ("B", "KB", "MB"):
        if size < 1024 or unit == "MB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"  # pragma: no cover


# -- settings, sources and the model server ------------------------------------------------

def _load_settings(report: Report) -> dict | None:
    from miniclaw.errors import UsageError

    try:
        settings = config.load_config(warn=False)
    except UsageError as exc:
        report.findings.append(Finding("error", "settings", str(config.config_path()),
                                       str(exc), "fix or remove the file"))
        return None
    # A key no setting reads (a typo) is a finding, counted, in the JSON; not also a
    # `Warning:` line on stderr from each later read of config.json.
    for setting in config.claim_unknown_settings(settings):
        report.findings.append(Finding(
            "warning", "settings", str(config.config_path()),
            f"unknown setting {setting.key!r} is ignored",
            f"did you mean {setting.meant!r}? rename it in config.json" if setting.meant else
            f"remove it, or use a known setting ({', '.join(setting.known)})"))
    try:
        from miniclaw.dates import zone_name

        report.checked.append(f"time zone: {zone_name(config.time_zone())}")
    except UsageError as exc:
        report.findings.append(Finding("error", "settings", str(config.config_path()),
                                       str(exc), "set timezone to an IANA name, or remove it"))
    return settings


def _check_model(report: Report) -> None:
    from miniclaw.errors import UsageError

    try:
        settings = config.llm_settings()
    except UsageError as exc:
        report.findings.append(Finding("error", "model", str(config.config_path()), str(exc),
                                       "fix the setting (flag, MINICLAW_LLM_* or config.json)"))
        return
    if settings.provider != "openai":
        report.checked.append("model server: none configured (the chat answers with echo)")
        return
    url = settings.base_url.rstrip("/") + "/models"
    problem = model_listed(url, settings.model, settings.api_key)
    if problem is not None:  # the finding alone: "checked" lists only what passed
        severity, message, fix = problem
        report.findings.append(Finding(severity, "model", settings.base_url, message, fix))
        return
    report.checked.append(f"model server {settings.base_url}: model {settings.model}")


def _check_search(report: Report) -> None:
    """Which mode `auto` (the chat's, the context's, the MCP server's) runs here, and why:
    the embedding model is loaded to find out (memory/scoring: `best_available`)."""
    from miniclaw.errors import UsageError
    from miniclaw.search.scoring import best_available

    try:
        mode, why = best_available()
    except UsageError:  # a bad embedder setting: its own finding (`_check_embedder`)
        return
    report.checked.append(f"search: auto runs {mode}: {why}")


def _check_embedder(workspace: Path, report: Report) -> None:
    """Which model embeds memories (the configured embedder; a server is asked for one
    vector, within EMBED_TIMEOUT_S), and how many indexed entries have no vector of it yet."""
    from miniclaw.errors import ModelUnavailable, UsageError
    from miniclaw.semantic import embedders

    try:
        chosen = embedders.settings()
    except UsageError as exc:
        report.findings.append(Finding("error", "embedder", str(config.config_path()), str(exc),
                                       "fix the setting (MINICLAW_EMBEDDER_* or config.json)"))
        return
    ok, why = embedders.available()
    if not ok:
        if chosen.kind != "bundled":  # the bundled model's absence: `search` says it
            report.findings.append(Finding("warning", "embedder", None, why,
                                           "install it, or remove \"embedder\" from config.json"))
        return
    if chosen.kind == "openai":
        chosen = chosen._replace(timeout=min(chosen.timeout, EMBED_TIMEOUT_S))
    embedder = embedders._made(chosen)
    try:
        if chosen.kind == "openai":  # asked now, whatever this process learnt before
            embedder.fetch(["dimension"])
        identity = embedder.identity  # a library's model: loaded now
    except ModelUnavailable as exc:
        report.findings.append(Finding("error", "embedder", chosen.base_url, str(exc),
                                       "start the server (or check base_url, model and the "
                                       "API key): hybrid searches run bm25 meanwhile"))
        return
    line = f"embedder: {embedder.label}, {embedder.dim} numbers a vector"
    path = config.index_path(workspace)
    try:
        conn = _open_read_only(path, _size(f"{path}-wal")) if path.is_file() else None
    except sqlite3.Error:
        conn = None
    if conn is not None:
        try:
            lacking, others = _vectors_lacking(conn, identity)
        except sqlite3.Error:  # a damaged index: the index check says so
            lacking = None
        finally:
            conn.close()
        if lacking is not None:
            line += f"; {lacking} entr{'y' if lacking == 1 else 'ies'} without a vector"
            if lacking:
                line += " (`miniclaw memory index` computes them)"
            if others:
                line += f"; vectors of {others} other model{'s' * (others != 1)} kept, unused"
    report.checked.append(line)


def _vectors_lacking(conn: sqlite3.Connection, kind: str) -> tuple[int, int]:
    """(entries whose text has no vector of `kind`, other kinds of vectors stored)."""
    lacking = conn.execute("SELECT COUNT(*) FROM entries e WHERE NOT EXISTS (SELECT 1 FROM "
                           "derived d WHERE d.kind = ? AND d.hash = e.hash)", (kind,)).fetchone()
    others = conn.execute("SELECT COUNT(DISTINCT kind) FROM derived WHERE kind != ?",
                          (kind,)).fetchone()
    return lacking[0], others[0]


def model_listed(url: str, model: str, api_key: str | None) -> tuple[str, str, str] | None:
    """None when the server at `url` (its /models) answers within MODEL_TIMEOUT_S and lists
    `model`; else (severity, message, fix)."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(timeout=MODEL_TIMEOUT_S) as client:
            response = client.get(url, headers=headers)
    except httpx.TimeoutException:
        return ("error", f"no answer within {MODEL_TIMEOUT_S:.0f} s",
                "start the server, or check base_url")
    except httpx.HTTPError as exc:
        reason = "connection refused" if isinstance(exc, httpx.ConnectError) else type(exc).__name__
        return ("error", f"not reachable: {reason}", "start the server, or check base_url")
    if response.status_code != 200:
        return ("error", f"{url} answered HTTP {response.status_code}",
                "check base_url and the API key")
    try:
        listed = [item.get("id") for item in response.json().get("data", [])
                  if isinstance(item, dict)]
    except (ValueError, AttributeError, TypeError):
        return ("warning", f"{url} did not answer with a model list",
                "check that base_url is an OpenAI-compatible API (ending in /v1)")
    if model not in listed and f"{model}:latest" not in listed:
        shown = ", ".join(str(name) for name in listed[:5]) or "none"
        return ("warning", f"the model {model!r} is not listed (it lists: {shown})",
                "pull the model, or set model to one the server lists")
    return None


# -- MCP registration ----------------------------------------------------------------------

def claude_config_files(cwd: Path) -> list[Path]:
    """Where Claude Code keeps MCP servers: ~/.claude.json (user and local scope) and the
    project's .mcp.json."""
    return [Path.home() / ".claude.json", cwd / ".mcp.json"]


def _servers(data: object, cwd: Path) -> list[dict]:
    """The MCP server definitions of one config file (and of this project in ~/.claude.json)."""
    if not isinstance(data, dict):
        return []
    tables = [data.get("mcpServers")]
    projects = data.get("projects")
    if isinstance(projects, dict):
        tables.append((projects.get(str(cwd)) or {}).get("mcpServers"))
    return [server | {"name": name} for table in tables if isinstance(table, dict)
            for name, server in table.items() if isinstance(server, dict)]


def _check_mcp(report: Report, cwd: Path) -> None:
    from miniclaw.errors import UsageError

    looked = claude_config_files(cwd)
    registered = []
    for path in looked:
        try:  # the shared safe open: a FIFO or a link to /dev/zero there is a finding
            text = config.settings_text(path, capped=False)  # Claude Code's: any size
            if text is None:
                continue
            data = config.parse_settings(text, path)
        except UsageError as exc:
            report.findings.append(Finding("warning", "mcp", str(path),
                                           str(exc).removeprefix(f"{path} "),
                                           "fix the file (Claude Code reads it too)"))
            continue
        for server in _servers(data, cwd):
            words = [server.get("command")] + list(server.get("args") or [])
            if server["name"] == "miniclaw" or any(
                    isinstance(w, str) and Path(w).name == "miniclaw" for w in words):
                registered.append((path, server))
    where = ", ".join(str(path) for path in looked)
    if not registered:
        missing = _mcp_missing()  # only here: a registered server is started and asked instead
        report.findings.append(Finding(
            "info", "mcp", None, f"miniclaw is not registered with Claude Code (looked in {where})",
            (f"{missing}, then " if missing else "") + "claude mcp add miniclaw -- miniclaw mcp"))
        return
    problems = 0
    for path, server in registered:
        finding = _server_problem(path, server, cwd)
        if finding is not None:
            problems += 1
            report.findings.append(finding)
    if not problems:  # one that cannot start is the finding alone, not also "registered"
        report.checked.append(f"MCP: registered in {registered[0][0]} (looked in {where})")


def _server_problem(path: Path, server: dict, cwd: Path) -> Finding | None:
    """Why the registered server would not work in Claude Code, or None: its definition is
    malformed, its command cannot be found, or, started as Claude Code starts it, it does not
    answer MCP's `initialize` (a missing mcp package in *its* Python, a bad argument...)."""
    command, args, env = server.get("command"), server.get("args", []), server.get("env", {})
    name = server["name"]
    if not (isinstance(command, str) and command and isinstance(args, list)
            and all(isinstance(a, str) for a in args) and isinstance(env, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
        return Finding("error", "mcp", str(path), f"the server {name!r} is malformed: "
                       "`command` must be a string, `args` a list of strings and `env` an "
                       "object of strings", "register it again: claude mcp remove "
                       f"{name} && claude mcp add {name} -- miniclaw mcp")
    problem = _command_problem(command, cwd)
    if problem is not None:
        return Finding("warning", "mcp", str(path),
                       f"the server {name!r} runs {command!r}, {problem[0]}", problem[1])
    why = _probe_server([command, *args], env, cwd)
    if why is None:
        return None
    import shlex

    return Finding("error", "mcp", str(path), f"the server {name!r} ({shlex.join([command, *args])}) "
                   f"does not start: {why}", "run that command in a terminal to see why and fix "
                   "that (Claude Code starts it the same way)")


MCP_PROBE_TIMEOUT_S = 10.0
MCP_PROBE_GRACE_S = 1.0
PROBE_ENV = "MINICLAW_MCP_PROBE"  # mcp_server.PROBE_ENV (not imported: it imports the SDK):
# the server skips its warm-up (index refresh, model load), so the check stays read-only
_INITIALIZE = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05",'
    '"capabilities":{},"clientInfo":{"name":"miniclaw-doctor","version":"1"}}}\n')


def _probe_server(argv: list[str], env: dict, cwd: Path) -> str | None:
    """Start the server (own session, so its children end with it), send one `initialize`
    request and wait for the answer: None when it answers, else why not (its first stderr
    line, private parts removed and bounded). stdin is then closed and the process ended,
    killed after a grace period: none is left behind."""
    import json
    import subprocess
    import threading

    try:
        proc = subprocess.Popen(argv, cwd=cwd, env={**os.environ, **env, PROBE_ENV: "1"}, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as exc:
        return exc.strerror or str(exc)
    answer: list[bytes] = []
    errors = bytearray()

    def read_answer() -> None:
        for line in proc.stdout:  # skip what is not the answer (a log line on stdout...)
            with contextlib.suppress(ValueError):
                if json.loads(line).get("id") == 1:
                    answer.append(line)
                    return
        # EOF: the server stopped

    def read_errors() -> None:  # keep the start, drain the rest so the server never blocks
        for chunk in iter(lambda: proc.stderr.read1(4096), b""):
            if len(errors) < 4096:
                errors.extend(chunk[:4096 - len(errors)])

    readers = [threading.Thread(target=f, daemon=True) for f in (read_answer, read_errors)]
    for reader in readers:
        reader.start()
    with contextlib.suppress(OSError):
        proc.stdin.write(_INITIALIZE.encode())
        proc.stdin.flush()
    readers[0].join(MCP_PROBE_TIMEOUT_S)
    answered = bool(answer) and b'"result"' in answer[0]
    with contextlib.suppress(OSError):
        proc.stdin.close()
    try:
        proc.wait(MCP_PROBE_GRACE_S)
    except subprocess.TimeoutExpired:
        for hard in (False, True):
            with contextlib.suppress(OSError):
                platform.end_group(proc, hard)
            try:
                proc.wait(MCP_PROBE_GRACE_S)
                break
            except subprocess.TimeoutExpired:
                continue
    with contextlib.suppress(OSError):  # its children, if any, go with it
        platform.end_group(proc, True)
    for reader in readers:
        reader.join(MCP_PROBE_GRACE_S)
    for pipe in (proc.stdout, proc.stderr):
        with contextlib.suppress(OSError):
            pipe.close()
    if answered:
        return None
    return _first_line(bytes(errors)) or (
        f"it exited with status {proc.returncode}" if proc.returncode and proc.returncode > 0
        else f"no answer to `initialize` within {MCP_PROBE_TIMEOUT_S:g} s")


def _first_line(data: bytes) -> str:
    """The first non-empty line a server wrote on stderr, as the user may see it: no private
    part (it may echo user text), no control character (colours), at most 200 characters."""
    import re

    from miniclaw.entries.privacy import visible_typed

    lines = [re.sub(r"\x1b\[[0-9;]*[A-Za-z]|[\x00-\x1f\x7f]", "", line).strip()
             for line in data.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    if lines and lines[0].startswith("Traceback"):  # a crash: its last line says what
        lines.reverse()
    for line in lines[:1]:
        line = visible_typed(line)
        return line if len(line) <= 200 else line[:199] + "…"
    return ""


def _mcp_missing() -> str | None:
    """The command that installs the mcp extra when `miniclaw mcp` could not import its SDK
    here (looked for, not imported: the SDK takes a second to load), else None."""
    import importlib.util

    try:
        if importlib.util.find_spec(MCP_PACKAGE) is not None:
            return None
    except (ImportError, ValueError):  # a broken install counts as none
        pass
    from miniclaw.install import install_command

    return install_command("mcp")


def _command_problem(command: str, cwd: Path) -> tuple[str, str] | None:
    """Why Claude Code could not start an MCP server's `command` (what is wrong, what to
    do), or None. A path (it holds a `/`; a relative one from the project's folder) must be
    an executable file; a bare name must be on PATH."""
    import shutil

    if os.sep not in command:
        return None if shutil.which(command) else ("which is not on PATH",
                                                  "give the full path to it")
    path = cwd / command  # an absolute `command` stays as it is
    if not path.exists():
        return ("which does not exist", "give the path of the miniclaw command (`which "
                "miniclaw` prints it), or reinstall miniclaw there")
    if not (path.is_file() and os.access(path, os.X_OK)):
        return ("which is not an executable file", "give the path of the miniclaw command "
                "(`which miniclaw` prints it)")
    return None


# -- fixing --------------------------------------------------------------------------------

def fix(workspace: Path, report: Report) -> list[str]:
    """Do what cannot lose data for the findings of `report`; returns what was done."""
    done = []
    temps = [f.path for f in report.findings if f.check == "file" and f.path
             and f.message.startswith("a leftover temporary file")]
    if temps:
        done.extend(_remove_temp_files(workspace, temps))
    index = [f for f in report.findings if f.check == "index"]
    if (workspace / config.MEMORY_DIR).is_dir() and index:
        done.extend(_rebuild_index(workspace, index))
    return done


def _remove_temp_files(workspace: Path, temps: list[str]) -> list[str]:
    """Remove the leftover temp files the report listed, under the write lock (no writer
    owns one then), each proved ours again there (`files.leftovers`)."""
    from miniclaw.fs import files

    done = []
    memory = workspace / config.MEMORY_DIR
    with files.locked(memory):
        for path in files.leftovers(memory):
            rel = f"{config.MEMORY_DIR}/{path.name}"
            if rel in temps:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    done.append(f"removed {rel}")
    return done


def _rebuild_index(workspace: Path, findings: list[Finding]) -> list[str]:
    """Rebuild the index; a damaged or foreign-format file is deleted first (only when
    `index_file` proves it is miniclaw's: another program's file is never touched)."""
    import asyncio

    from miniclaw.errors import MiniclawError
    from miniclaw.memory import MemoryStore

    if any(f.severity == "error" and f.message.startswith(("it belongs", "another program",
                                                            "not an SQLite", "the search index"))
           for f in findings):
        return []  # not ours to delete: the finding says what to do
    path = config.index_path(workspace)
    damaged = any(f.message.startswith(("damaged", "cannot be opened")) for f in findings)
    if damaged and not _provably_ours(path):
        return [f"left {path} alone: it is damaged, but nothing proves it is miniclaw's "
                "index; delete it yourself if it is"]
    if damaged:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{path}{suffix}")

    async def rebuild():
        async with MemoryStore(workspace) as store:
            return await store.rebuild_index()

    try:
        report = asyncio.run(rebuild())
    except MiniclawError as exc:
        return [f"could not rebuild the index: {exc}"]
    deleted = "deleted the damaged index and " if damaged else ""
    return [f"{deleted}rebuilt the index {path} ({report.files_parsed} file"
            f"{'s' * (report.files_parsed != 1)})"]


def _provably_ours(path: Path) -> bool:
    """In miniclaw's cache folder, or carrying miniclaw's application id in its header."""
    from miniclaw.fs import files
    from miniclaw.index import index_file

    if path.parent == config.cache_dir():
        return True
    try:
        header = files.read_head(path, 100) or b""
    except (OSError, files.MemoryFileError):  # a FIFO is not ours
        return False
    return int.from_bytes(header[68:72], "big") == index_file.APPLICATION_ID
