"""Memory sources: where a kind of memory file lives and how it parses into entries.

A source is one small class (docs/ARCHITECTURE.md, "Adding a source"): it finds its files
under one root folder (cheaply: a listing and a stat, no reads) and parses one file's text
into entries. Everything else is shared and cannot be forgotten by a source: reading (a
descriptor opened without following links), privacy redaction (`read_entries`), stamping
the source's name on its entries, the index, the watch and the ranker. A source declares
whether `--days` limits it (`windowed`) and whether its entries are a sequence that gives
neighbour context (`sequence`), and carries its own `label` for people.

A root is a folder of the workspace, or a folder outside it that the caller names in an
explicit allow-list (`check_roots`). Symlinks to files are followed only when they resolve
inside the source's root; a link to a folder below the root is never entered, whether a
walk meets it or a source names a path through it (`linked_folder`); only regular files
are read.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from datetime import date as Date
from pathlib import Path
from typing import NamedTuple, Protocol

from miniclaw.config import LONG_TERM_FILE, MEMORY_DIR
from miniclaw.errors import UsageError
from miniclaw.fs import platform
from miniclaw.fs.files import inside_workspace
from miniclaw.entries.entry import DAILY_NOTE, LONG_TERM, Entry

DAILY_NOTE_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")
#: What `sources add --name` accepts: a word to type after `--source`, print on one line
#: and keep as a JSON key; every built-in source and kind is named so.
SOURCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SOURCE_NAME_RULE = ("1 to 64 letters (A-Z, a-z), digits, '.', '_' or '-', starting with a "
                    "letter or digit")


def daily_note_date(filename: str) -> Date | None:
    """The date a daily note's file name gives, or None when it is not `YYYY-MM-DD.md`."""
    if not DAILY_NOTE_NAME.match(filename):
        return None
    try:
        return Date.fromisoformat(filename[:10])
    except ValueError:
        return None


class SourceFile(NamedTuple):
    """A file a source found: its display path and what `os.stat` said of it."""

    source: str
    path: str  # display path: workspace-relative, or the named root + root-relative path
    absolute: str
    size: int
    mtime_ns: int
    inode: int
    day: Date | None = None  # the date the file stands for, for windowed sources
    root: str | None = None  # the source's root folder when outside the workspace

    @property
    def signature(self) -> tuple[int, int, int]:
        """What must stay the same for the file's entries to be unchanged."""
        return (self.size, self.mtime_ns, self.inode)


class MemorySource(Protocol):
    name: str
    label: str  # for people: "Daily Note"
    #: True when `--days` limits it (daily notes); MEMORY.md is always searched.
    windowed: bool
    #: True when its entries are a sequence (neighbour context applies): daily notes.
    sequence: bool

    def root_path(self, workspace: Path) -> Path:
        """The folder all of its files are under."""

    def folders(self, workspace: Path) -> list[Path]:
        """Every folder its files may appear in (watched for changes by the index)."""

    def files(self, workspace: Path) -> list[SourceFile]:
        """Its files, cheaply: a listing and a stat, no reads."""

    def file(self, workspace: Path, absolute: str) -> SourceFile | None:
        """Its file at that absolute path, or None when it is not there (or not its own)."""

    def path_of(self, workspace: Path, absolute: str) -> str | None:
        """The display path a file of its own at that place has, or None when it is not."""

    def parse(self, text: str, path: str) -> list[Entry]:
        """Entries of one file's text (already redacted by the caller, `read_entries`)."""


def stat_in_workspace(path: str, workspace: Path | str) -> os.stat_result | None:
    """The stat of a regular file; a symlink is followed only when it stays in the workspace
    (or the source's root, passed as `workspace`). A file its folder does not let us look
    at (no search permission) is None too, and `listing` is told of the folder."""
    try:
        try:
            st = os.lstat(path)
        except OSError as exc:
            _could_not_list(os.path.dirname(path), exc)
            raise
        if stat.S_ISLNK(st.st_mode):
            if not inside_workspace(path, workspace):
                return None
            st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def linked_folder(root: str | os.PathLike[str], relative: str) -> bool:
    """Whether a folder on the way from the root to a file (root-relative, forward
    slashes) is a link, or cannot be looked at: what a walk never enters. A source that
    builds a path (EF Memory's `.memory/events.jsonl`) checked only its last step, so a
    `.memory` linked out of the root was read."""
    folder = os.fspath(root)
    for part in relative.split("/")[:-1]:
        folder = os.path.join(folder, part)
        try:
            if stat.S_ISLNK(os.lstat(folder).st_mode):
                return True
        except (OSError, ValueError):
            return True
    return False


def _tree(root: Path) -> Iterator[tuple[str, str, list[tuple[os.DirEntry, bool]]]]:
    """Each folder of a source's tree, top-down, subfolders in name order: (its path, its
    path relative to `root` ending in "/", its entries with whether each is a folder, a
    link to one too). Hidden folders (`.git`, `.obsidian`) and links are not entered, nor
    folders deeper than `MAX_FOLDER_DEPTH` (`_within_depth`). A loop, not recursion, so no
    tree is too deep for Python (os.walk recursed: ~1,000 folders)."""
    todo = [(os.fspath(root), "", 0)]
    while todo:
        folder, relative, depth = todo.pop()
        try:
            with os.scandir(folder) as listed:
                entries = list(listed)
        except OSError as exc:
            _could_not_list(folder, exc)
            continue
        marked = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            marked.append((entry, is_dir))
        yield folder, relative, marked
        deeper = sorted((e.name for e, is_dir in marked if is_dir and not e.name.startswith(".")
                         and not e.is_symlink()), reverse=True)
        todo += [(os.path.join(folder, sub), f"{relative}{sub}/", depth + 1) for sub in deeper
                 if _within_depth(os.path.join(folder, sub), depth)]


class FileSource:
    """A source of files under one root folder. A new format subclasses it with `name`,
    `label`, `root` (workspace-relative, or absolute / `~` for a folder outside it, which
    the caller must allow), `recursive`, `owns()` and `parse()`; `day()` when windowed."""

    name = ""
    label = ""
    windowed = False
    sequence = False
    root = MEMORY_DIR
    recursive = False

    def __init__(self, **settings: object) -> None:
        """Settings override the class's: `NotesSource(root="~/notes", name="notes")`."""
        for key, value in settings.items():
            if key not in ("name", "label", "root", "recursive"):
                raise UsageError(f"a memory source has no setting {key!r}: use name, label, "
                                 "root or recursive")
            if not isinstance(value, bool if key == "recursive" else str) or value == "":
                raise UsageError(f"the memory source setting {key!r} must be "
                                 f"{'true or false' if key == 'recursive' else 'a non-empty string'}")
            setattr(self, key, value)

    def owns(self, relative: str) -> bool:
        """Whether the file at that root-relative path (forward slashes) is its own."""
        raise NotImplementedError

    def day(self, relative: str) -> Date | None:
        """The date a file stands for (windowed sources)."""
        return None

    def parse(self, text: str, path: str) -> list[Entry]:
        raise NotImplementedError

    # -- shared: where files are and what they are called ----------------------------

    def root_path(self, workspace: Path) -> Path:
        root = Path(os.path.expanduser(self.root))
        return root if root.is_absolute() else Path(workspace) / root

    def _layout(self, workspace: Path) -> tuple[str, str, Path | None]:
        """(root, display prefix, link root when outside the workspace), worked out once per
        workspace: resolving links costs a few system calls, and `file()` runs per file."""
        cache = self.__dict__.setdefault("_layouts", {})
        key = os.fspath(workspace)
        if key not in cache:
            root = self.root_path(workspace)
            configured = Path(os.path.expanduser(self.root))
            # A folder of the workspace stays one when it is a link (memory/ may be a synced
            # folder elsewhere); an absolute root is inside only when it really is.
            part = not configured.is_absolute() and not os.path.normpath(configured).startswith("..")
            if part or inside_workspace(root, workspace):
                prefix = os.path.relpath(root, workspace).replace(os.sep, "/")
                cache[key] = (str(root), prefix, None)
            else:  # named as the configuration names it, so paths stay readable
                cache[key] = (str(root), str(self.root).rstrip("/") or "/", root)
        return cache[key]

    def outside(self, workspace: Path) -> bool:
        return self._layout(workspace)[2] is not None

    def link_root(self, workspace: Path) -> Path:
        """Where its symlinks may point: the workspace, or its own root when outside it."""
        return self._layout(workspace)[2] or Path(workspace)

    def _display(self, workspace: Path, relative: str) -> str:
        prefix = self._layout(workspace)[1]
        return relative if prefix == "." else f"{prefix}/{relative}"

    def folders(self, workspace: Path) -> list[Path]:
        root = self.root_path(workspace)
        if not self.recursive:
            return [root]
        return [Path(folder) for folder, _, _ in self._walk(root)]

    @staticmethod
    def _walk(root: Path):
        """os.walk (top-down, links to folders listed, not entered) over `_tree`."""
        for folder, _, marked in _tree(root):
            yield (folder, sorted(e.name for e, is_dir in marked
                                  if is_dir and not e.name.startswith(".")),
                   [e.name for e, is_dir in marked if not is_dir])

    def files(self, workspace: Path) -> list[SourceFile]:
        if self.recursive and type(self).file is FileSource.file:
            return self._tree_files(workspace)
        root = self.root_path(workspace)
        found = []
        for folder, _, names in self._walk(root) if self.recursive else [(str(root), [], _list(root))]:
            for name in names:
                source_file = self.file(workspace, os.path.join(folder, name))
                if source_file is not None:
                    found.append(source_file)
        return found

    def _tree_files(self, workspace: Path) -> list[SourceFile]:
        """`files()` of a recursive source, as `file()` finds each (same folders as `_walk`,
        same files and order): one `scandir` per folder, relative paths built as it goes,
        rather than two `relpath` and an `lstat` of each folder per file, which made a
        store of a few dozen files cost a search a millisecond or more."""
        root, prefix, outside = self._layout(workspace)
        lead, shown_root = ("" if prefix == "." else f"{prefix}/"), (str(outside) if outside else None)
        found: list[SourceFile] = []

        for folder, relative, marked in _tree(root):
            for entry, is_dir in marked:
                if is_dir:
                    continue
                name = relative + entry.name
                if not self.owns(name):
                    continue
                if entry.is_symlink():  # followed only within its bounds: `file()` decides
                    source_file = self.file(workspace, entry.path)
                    if source_file is not None:
                        found.append(source_file)
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError as exc:  # listed but not searchable (`chmod a-x`)
                    _could_not_list(folder, exc)
                    continue
                if stat.S_ISREG(st.st_mode):
                    found.append(SourceFile(self.name, lead + name, entry.path, st.st_size,
                                            st.st_mtime_ns, st.st_ino, self.day(name),
                                            shown_root))
        return found

    def path_of(self, workspace: Path, absolute: str) -> str | None:
        root = self._layout(workspace)[0]
        relative = os.path.relpath(absolute, root).replace(os.sep, "/")
        if relative.startswith("../") or relative in (".", "..") or os.path.isabs(relative):
            return None
        if not self.recursive and "/" in relative:
            return None
        return self._display(workspace, relative) if self.owns(relative) else None

    def file(self, workspace: Path, absolute: str) -> SourceFile | None:
        path = self.path_of(workspace, absolute)
        if path is None:
            return None
        root, _, outside = self._layout(workspace)
        relative = os.path.relpath(absolute, root).replace(os.sep, "/")
        if "/" in relative and linked_folder(root, relative):
            return None
        st = stat_in_workspace(absolute, outside or workspace)
        if st is None:
            return None
        return SourceFile(self.name, path, absolute, st.st_size, st.st_mtime_ns, st.st_ino,
                          self.day(relative), str(outside) if outside else None)


def _list(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError as exc:
        _could_not_list(folder, exc)
        return []


# -- folders a listing could not see into ------------------------------------------------

#: What listing a folder that is not there fails with: nothing to list, and nothing to say
#: (a source's root that is gone is `listing`'s to tell, once).
_ABSENT = frozenset({errno.ENOENT, errno.ENOTDIR})
#: Folders below a source's root, at most: deeper ones are left out, and named (`listing`).
MAX_FOLDER_DEPTH = 100
_TOO_DEEP = f"more than {MAX_FOLDER_DEPTH} folders deep"
#: The folders (absolute, with the system's words) `listing` is collecting, in this thread.
_UNLISTED: ContextVar[list[tuple[str, str]] | None] = ContextVar("miniclaw_unlisted",
                                                                  default=None)


def _could_not_list(folder: str | os.PathLike[str], exc: OSError) -> None:
    """Note, for `listing`, a folder whose files could not be seen (permissions, I/O): the
    shared listings (`_list`, `_tree_files`, `_walk`, `stat_in_workspace`, daily notes)
    call it rather than pass over the folder in silence. Outside `listing`, nothing."""
    found = _UNLISTED.get()
    if found is not None and exc.errno not in _ABSENT:
        found.append((os.fspath(folder), exc.strerror or str(exc)))


def _within_depth(folder: str, depth: int) -> bool:
    """Whether a subfolder of a folder `depth` below the root is walked; when not, it is
    noted for `listing` (its files are left out, as those of a folder it cannot list)."""
    if depth < MAX_FOLDER_DEPTH:
        return True
    found = _UNLISTED.get()
    if found is not None:
        found.append((folder, _TOO_DEEP))
    return False


def listing(source: MemorySource,
            workspace: Path) -> tuple[list[SourceFile], list[tuple[str, str]]]:
    """(a source's files, as `files()` lists them; (folder, warning) for each folder the
    listing could not see into): a folder that cannot be listed (permissions) anywhere in
    the source, and the root of a source outside the workspace that is not there (moved,
    not mounted; a folder of the workspace is made on first use, sessions/ at the first
    chat). The files in such a folder are missing from the list as if deleted: the index
    then drops their entries, as it empties an unreadable file's (text it cannot read again
    may have been made private since), and every search says which folder, by its display
    path (`memory/`), never once per file. Any source's root is checked here, so a source
    that lists in its own way still gets its unreadable or missing root said."""
    found_folders: list[tuple[str, str]] = []
    token = _UNLISTED.set(found_folders)
    try:
        found = one_name_each(source.files(workspace))
    finally:
        _UNLISTED.reset(token)
    if not found and not found_folders:  # nothing listed: a root that is not there?
        root = source.root_path(workspace)
        problem = folder_problem(root)
        if problem is not None and problem[0] == "unreadable":
            found_folders.append((os.fspath(root), problem[1]))
        elif problem is not None and root_outside_workspace(source, workspace):
            shown = _shown_folder(source, workspace, os.fspath(root)).rstrip("/")
            what = "not a folder" if problem[0] == "not a folder" else \
                "not there (moved, renamed or not mounted)"
            return found, [(shown, f"the source {source.name!r} reads {shown}, which is "
                                   f"{what}: its memories are not searched until it is back")]
    said: dict[str, str] = {}
    for folder, reason in found_folders:
        shown = _shown_folder(source, workspace, folder)
        said.setdefault(shown, f"the folder {shown} is {reason} in its source: the memory "
                               "files in it are not searched" if reason == _TOO_DEEP else
                               f"cannot read the folder {shown}: {reason}; the memory files "
                               "in it are not searched until it can be read")
    return found, list(said.items())


def one_name_each(files: list[SourceFile]) -> list[SourceFile]:
    """A source's files, each file once whatever its names: a link to another file of the
    root, or a hard link, is one file (by device and inode, `_identities`), kept under its
    own name (not a link), else the first name in order. Read under both, every search
    showed the same memory twice. The common case (no inode twice) costs one set."""
    if len({found.inode for found in files}) == len(files):
        return files
    chosen: dict[object, SourceFile] = {}
    for found, key in zip(files, _identities(files)):
        kept = chosen.get(key)
        if kept is None or (_is_link(kept.absolute), kept.path) > (_is_link(found.absolute),
                                                                   found.path):
            chosen[key] = found
    kept_ids = {id(found) for found in chosen.values()}
    return [found for found in files if id(found) in kept_ids]


def is_alias(path: str) -> bool:
    """Whether a file may be another name of a file listed under its own (a symlink, or a
    hard link): the index then lists the source again rather than trust one name."""
    try:
        st = os.lstat(path)
    except (OSError, ValueError):
        return False
    return stat.S_ISLNK(st.st_mode) or st.st_nlink > 1


def _is_link(path: str) -> bool:
    return os.path.islink(path)


def in_unlisted(path: str, folders: Iterable[tuple[str, str]]) -> bool:
    """Whether a file's display path is in one of `listing`'s (folder, warning) folders
    (a folder's display path ends in `/`, a gone root's does not): not known to be gone."""
    return any(path.startswith(folder if folder.endswith("/") else folder + "/")
               for folder, _ in folders)


def folder_problem(folder: str | os.PathLike[str]) -> tuple[str, str] | None:
    """Why a folder cannot be listed, or None when it can: ("missing", ...) when it is not
    there, ("not a folder", ...), or ("unreadable", the system's words: "Permission
    denied"). Listing it is the test (not `os.access`, which root and ACLs answer wrongly)."""
    try:
        with os.scandir(folder):
            return None
    except OSError as exc:
        words = exc.strerror or str(exc)
        if exc.errno == errno.ENOENT:
            return "missing", words
        return ("not a folder" if exc.errno == errno.ENOTDIR else "unreadable"), words


def root_outside_workspace(source: MemorySource, workspace: Path) -> bool:
    """Whether a source's root is outside the workspace (as `check_roots` decides it): a
    kind's own answer (`outside`), else where its root is."""
    outside = getattr(source, "outside", None)
    return outside(workspace) if outside else not inside_workspace(source.root_path(workspace),
                                                                   workspace)


def _shown_folder(source: MemorySource, workspace: Path, folder: str) -> str:
    """A folder as people read it, ending in `/`: under the source's root as its files'
    paths show it (`memory/`, `~/notes/trips/`), else workspace-relative, else absolute."""
    layout = getattr(source, "_layout", None)
    places = [layout(workspace)[:2]] if layout is not None else []
    places.append((os.fspath(workspace), "."))
    for root, prefix in places:
        relative = os.path.relpath(folder, root).replace(os.sep, "/")
        if relative != ".." and not relative.startswith("../") and not os.path.isabs(relative):
            if relative == ".":
                return f"{prefix.rstrip('/')}/"
            return f"{relative}/" if prefix == "." else f"{prefix.rstrip('/')}/{relative}/"
    return f"{folder.rstrip(os.sep)}/"


class LongTermSource(FileSource):
    """`memory/MEMORY.md`: curated facts, bullets under `## YYYY-MM-DD` headers."""

    name = LONG_TERM
    label = "Long-term Memory"
    sequence = False  # facts, not a conversation: no neighbour context

    def owns(self, relative: str) -> bool:
        return relative == LONG_TERM_FILE

    def files(self, workspace: Path) -> list[SourceFile]:
        found = self.file(workspace, os.path.join(self._layout(workspace)[0], LONG_TERM_FILE))
        return [found] if found else []

    def parse(self, text: str, path: str) -> list[Entry]:
        from miniclaw.entries.parsing import long_term_entries  # only when a file changed

        return long_term_entries(text, path, self.name)


class DailyNoteSource(FileSource):
    """`memory/YYYY-MM-DD.md`: one note per day (of the `timezone` setting), one entry per
    `## HH:MM:SS UTC` (or `+09:00`) section."""

    name = DAILY_NOTE
    label = "Daily Note"
    windowed = True
    sequence = True  # entries in the order written: neighbour context applies

    def owns(self, relative: str) -> bool:
        return daily_note_date(relative) is not None

    def day(self, relative: str) -> Date | None:
        return daily_note_date(relative)

    def files(self, workspace: Path) -> list[SourceFile]:
        # The hot path of a search without a watch (a stat per note): kept to the bare loop,
        # stat relative to the folder's descriptor so the path is not walked again each time.
        folder, prefix, outside = self._layout(workspace)
        lead, root = ("" if prefix == "." else f"{prefix}/"), (str(outside) if outside else None)
        found, fd = [], None
        try:  # where a folder cannot be opened (Windows), by its path
            fd = os.open(folder, os.O_RDONLY | platform.DIRECTORY) if platform.DIR_FD else None
            names = os.listdir(folder if fd is None else fd)
        except OSError as exc:
            if fd is not None:
                os.close(fd)
            _could_not_list(folder, exc)
            return []
        base = "" if fd is not None else folder + os.sep
        try:
            for name in names:
                if len(name) != 13 or not DAILY_NOTE_NAME.match(name):
                    continue
                try:
                    day = Date.fromisoformat(name[:10])
                    st = os.stat(base + name, dir_fd=fd, follow_symlinks=False)
                except ValueError:
                    continue
                except OSError as exc:  # listed but not searchable (`chmod a-x`)
                    _could_not_list(folder, exc)
                    continue
                if platform.is_link(st):
                    found_link = self.file(workspace, f"{folder}/{name}")
                    if found_link is not None:
                        found.append(found_link)
                elif stat.S_ISREG(st.st_mode):
                    found.append(SourceFile(self.name, lead + name, f"{folder}/{name}",
                                            st.st_size, st.st_mtime_ns, st.st_ino, day, root))
        finally:
            if fd is not None:
                os.close(fd)
        return found

    def parse(self, text: str, path: str) -> list[Entry]:
        from miniclaw.entries.parsing import daily_note_entries  # only when a file changed

        return daily_note_entries(text, path, daily_note_date(path.rsplit("/", 1)[-1]), self.name)


#: Source kinds config.json may name (`{"kind": "conkeeper", "root": "~/x/.claude/memory"}`):
#: kind -> "module:Class", imported only when a workspace configures it.
KINDS: dict[str, str] = {
    "conkeeper": "miniclaw.sources.conkeeper:ConKeeperSource",
    "mnemonic": "miniclaw.sources.mnemonic:MnemonicSource",
    "ef_memory": "miniclaw.sources.ef_memory:EFMemorySource",
    "transcripts": "miniclaw.sources.transcripts:TranscriptSource",
    "claude_code": "miniclaw.sources.claude_code:ClaudeCodeSource",
}


def _import_class(spec: str) -> type:
    """The class `module:Class` names, imported now."""
    import importlib

    module_name, _, class_name = spec.partition(":")
    return getattr(importlib.import_module(module_name), class_name)


# The default sources: the workspace's own files, then its transcripts, a kind named by its
# `KINDS` path like any other (sources/transcripts.py builds on FileSource: this module never
# imports a kind by name, so the two import no circle).
SOURCES: tuple[MemorySource, ...] = (LongTermSource(), DailyNoteSource(),
                                     _import_class(KINDS["transcripts"])())
SOURCE_NAMES = tuple(source.name for source in SOURCES)


def read_twice(files: Iterable[SourceFile]) -> list[tuple[SourceFile, str]]:
    """Each file found again by a later source, with the name of the first source reading
    it: the index keeps a file once, read by the first source (`read_once`); `sources add`
    refuses such a folder, `doctor` and every search warn of a config.json that does it.
    One file is one file however its path is spelled (`_identities`: a root through a
    link, `//tmp`): compared by spelling, such sources each read it, and every search
    showed it once per source."""
    files = list(files)
    first: dict[object, str] = {}
    return [(found, reader) for found, key in zip(files, _identities(files))
            if (reader := first.setdefault(key, found.source)) != found.source]


def _identities(files: list[SourceFile]) -> list[object]:
    """What tells the files apart: a file whose inode (as its source stat'ed it, links
    followed) no other file has is itself; files sharing an inode are compared by device
    and inode again (`os.stat`, the test of `os.path.samefile`: a hard link is the same
    file too), or by real path where the file system gives no inode."""
    seen: dict[int, int] = {}
    for found in files:
        seen[found.inode] = seen.get(found.inode, 0) + 1
    return [("inode", found.inode) if seen[found.inode] == 1 else _identity(found.absolute)
            for found in files]


def _identity(path: str) -> object:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        st = None
    if st is None or not st.st_ino:
        return ("path", os.path.realpath(path))
    return ("file", st.st_dev, st.st_ino)


def read_once(files: list[SourceFile]) -> tuple[list[SourceFile], list[tuple[SourceFile, str]]]:
    """(the files, each as the first source in the list found it; the ones left out, as
    `read_twice` gives them). Two sources over one file (a hand-edited config.json) made
    every search fail on the index's one row per file; now the first source in config
    order reads it, and `read_twice_warnings` says so."""
    if len({found.inode for found in files}) == len(files):  # the usual case: one pass
        return files, []
    twice = read_twice(files)
    dropped = {id(found) for found, _ in twice}
    return [found for found in files if id(found) not in dropped], twice


def read_twice_warnings(twice: Iterable[tuple[SourceFile, str]]) -> list[tuple[str, str, str, str]]:
    """(a shared file, the source reading it, the source left out, their warning), once per
    pair of sources, for `read_twice`'s list."""
    told: dict[tuple[str, str], str] = {}
    for shared, first in twice:  # the first path by name: the same whatever the listing
        pair = (first, shared.source)
        told[pair] = min(told.get(pair, shared.path), shared.path)
    return [(path, first, second, f"the sources {first!r} and {second!r} both read {path}: "
             f"the index keeps a file once, so it is searched as {first!r} only")
            for (first, second), path in told.items()]


def name_problem(name: object) -> str | None:
    """Why a source name breaks `SOURCE_NAME_RULE` (one line, the name shown escaped), or
    None when it keeps it."""
    if isinstance(name, str) and SOURCE_NAME.fullmatch(name):
        return None
    return f"the source name {shown_name(name)} is not allowed: a name is {SOURCE_NAME_RULE}"


def shown_name(name: object) -> str:
    """A source name as one line of text: as it is when it keeps the rule, else quoted
    with its controls escaped (`'a\\nb'`), cut after 40 characters."""
    if isinstance(name, str) and SOURCE_NAME.fullmatch(name):
        return name
    if isinstance(name, str) and len(name) > 40:
        return repr(name[:40]) + "..."
    return repr(name)


def source_named(name: str, sources: Sequence[MemorySource] = SOURCES) -> MemorySource:
    for source in sources:
        if source.name == name:
            return source
    raise KeyError(name)


def source_label(name: str, sources: Sequence[MemorySource] = SOURCES) -> str:
    """What people call a source's entries ("Daily Note"); its name when it has no label."""
    try:
        return source_named(name, sources).label or name
    except KeyError:
        return name


def source_windowed(name: str, sources: Sequence[MemorySource] = SOURCES) -> bool:
    """Whether a source's files stand for days (their title already gives the date)."""
    try:
        return source_named(name, sources).windowed
    except KeyError:
        return False


def check_roots(sources: Sequence[MemorySource], workspace: Path,
                allowed: Iterable[str | os.PathLike[str]] = ()) -> None:
    """UsageError unless every source's root is in the workspace or under an allowed root:
    miniclaw reads nothing outside the workspace that the caller did not name."""
    names = [source.name for source in sources]
    if len(set(names)) != len(names):
        raise UsageError(f"two memory sources share a name: {', '.join(names)}")
    roots = [Path(os.path.expanduser(root)).absolute() for root in allowed]
    for source in sources:
        root = source.root_path(workspace)
        outside = getattr(source, "outside", None)
        if not (outside(workspace) if outside else not inside_workspace(root, workspace)):
            continue
        # A root allowed by name needs no link resolved (a kind's root is allowed by being
        # configured): each `inside_workspace` resolves two paths, a dozen a search.
        if root not in roots and not any(inside_workspace(root, allowed_root)
                                         for allowed_root in roots):
            raise UsageError(f"the memory source {source.name!r} reads {root}, outside the "
                             "workspace: add that folder to the allowed roots (\"roots\" in "
                             "config.json) to search it")


def read_entries(source: MemorySource, text: str, path: str) -> list[Entry]:
    """A file's entries, as every reader gets them: private parts removed from the text
    before the source parses it, and again from each record (a format may encode a tag the
    line scan cannot see), each entry stamped with the source's name. The one place that
    calls `source.parse`, so no source can forget privacy."""
    from miniclaw.entries.parsing import redacted_entries

    return redacted_entries(source.name, lambda visible: source.parse(visible, path), text,
                            getattr(source, "redact", None), **_visibility(source))


def _visibility(source: MemorySource) -> dict[str, bool]:
    """How privacy reads a source's files: `reads_front_matter` (its metadata is its front
    matter, privacy still applies) and `line_records` (one record per line, JSON Lines: a
    `<private>` tag cannot span records, so each line is redacted on its own)."""
    return {"keep_front_matter": getattr(source, "reads_front_matter", False),
            "per_line": getattr(source, "line_records", False)}


def source_warning(source: MemorySource, text: str, path: str) -> str | None:
    """What a source says of a file it could not fully use (`warning(visible text, path)`,
    optional: EF Memory's damaged lines), from the visible text only, so no private part
    can reach the warning."""
    check = getattr(source, "warning", None)
    if check is None:
        return None
    from miniclaw.entries.privacy import visible_text

    return check(visible_text(text, **_visibility(source)), path)


def configured_sources(workspace: Path, settings: dict | None = None,
                       ) -> tuple[tuple[MemorySource, ...], tuple[str, ...]]:
    """(sources, allowed roots) config.json names for this workspace, else (SOURCES, ()).
    `settings`: the workspace's object of config.json, already read (under its lock).

    `{"workspaces": {"~/.miniclaw/workspace": {"sources": ["long_term", "daily_note",
    {"kind": "conkeeper", "root": "~/code/app/.claude/memory", "name": "app"},
    {"class": "my_notes:NotesSource", "root": "~/notes"}], "roots": ["~/notes"]}}}`: a
    built-in source by name, a kind of `KINDS` or a class by `module:Class`, with its
    settings. A configured kind's root is allowed by being configured."""
    from miniclaw import config

    settings = config.workspace_settings(workspace) if settings is None else settings
    listed = settings.get("sources")
    roots = settings.get("roots", [])
    where = f"{config.config_path()}: the workspace's"
    if not isinstance(roots, list) or not all(isinstance(r, str) and r for r in roots):
        raise UsageError(f'{where} "roots" must be a list of folders')
    if listed is None:
        return SOURCES, tuple(roots)
    if not isinstance(listed, list) or not listed:
        raise UsageError(f'{where} "sources" must be a non-empty list')
    sources = tuple(_configured(item, where) for item in listed)
    names = [source.name for source in sources]
    for name in names:
        if names.count(name) > 1:
            raise UsageError(f"{where} sources have two named {name!r}: give one a "
                             '"name" of its own')
    kind_roots = [item["root"] for item in listed if isinstance(item, dict) and "kind" in item]
    return sources, (*roots, *kind_roots)


def _configured(item: object, where: str) -> MemorySource:
    if isinstance(item, str):
        try:
            return source_named(item)
        except KeyError:
            raise UsageError(f"{where} source {item!r} is not built in; choose from "
                             f"{', '.join(SOURCE_NAMES)}, or name a kind or a class") from None
    if isinstance(item, dict) and "kind" in item:
        return _of_kind(item, where)
    if not isinstance(item, dict) or not isinstance(item.get("class"), str):
        raise UsageError(f'{where} sources must be names or objects like {{"kind": '
                         f'"conkeeper", "root": "~/x/.claude/memory"}} (kinds: '
                         f'{", ".join(KINDS)}) or {{"class": "module:Class", "root": "~/notes"}}')
    settings = dict(item)
    spec = settings.pop("class")
    fix = 'fix its "class" in config.json, or remove the source'
    try:
        cls = _import_class(spec)
    except Exception as exc:  # a module of the user's may fail in any way as it loads
        raise UsageError(f"{where} source class {spec!r} cannot be loaded "
                         f"({type(exc).__name__}: {exc}): {fix}") from None
    abstract = isinstance(cls, type) and issubclass(cls, FileSource) and (
        cls.owns is FileSource.owns or cls.parse is FileSource.parse)  # FileSource itself
    if abstract or not isinstance(cls, type) or not all(callable(getattr(cls, method, None))
                                                        for method in _SOURCE_METHODS):
        raise UsageError(f"{where} source class {spec!r} is not a memory source (a class with "
                         f"{', '.join(_SOURCE_METHODS)}, like a subclass of "
                         f"miniclaw.sources.base.FileSource): {fix}")
    try:
        source = cls(**settings)
    except Exception as exc:  # its own checks of its settings, or a constructor's bug
        raise UsageError(f"{where} source class {spec!r} cannot be made from its settings "
                         f"({type(exc).__name__}: {exc}): {fix}") from None
    if not isinstance(getattr(source, "name", None), str) or not source.name:
        raise UsageError(f'{where} source class {spec!r} has no name: give it a "name"')
    return source


#: What a configured class must have to be searched (`MemorySource`).
_SOURCE_METHODS = ("root_path", "folders", "files", "file", "path_of", "parse")


def _of_kind(item: dict, where: str) -> MemorySource:
    """A source of a kind of `KINDS`, built from the item's settings; the item's own words
    in the error when the kind or a setting is refused."""
    import json

    settings = dict(item)
    kind, root = settings.pop("kind"), settings.get("root")
    shown = json.dumps(item, ensure_ascii=False)
    if not isinstance(kind, str) or kind not in KINDS:
        raise UsageError(f"{where} source {shown} has an unknown kind: choose from "
                         f"{', '.join(KINDS)}")
    if not isinstance(root, str) or not root.strip():
        raise UsageError(f'{where} source {shown} needs a "root" folder')
    settings.setdefault("name", kind)
    try:
        return kind_class(kind)(**settings)
    except UsageError as exc:
        raise UsageError(f"{where} source {shown}: {exc}") from None
    except TypeError as exc:  # a constructor that takes no such keyword
        raise UsageError(f"{where} source {shown}: {exc}") from None


def kind_class(kind: str) -> type:
    """The class of a source kind (`KINDS`), imported now."""
    return _import_class(KINDS[kind])
