"""The workspace's configured sources, as people manage them (`miniclaw sources ...`):
what each is, and adding or removing one in config.json (`config.update_workspace_settings`
writes it atomically). Reading them for a search is `sources.configured_sources`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from miniclaw.errors import UsageError
from miniclaw.sources.base import (KINDS, SOURCE_NAMES, configured_sources, folder_problem,
                                   kind_class, name_problem, read_twice, source_named)


class ConfiguredSource(NamedTuple):
    name: str
    kind: str  # a kind of KINDS, "built-in", or the "module:Class" config.json names
    root: str  # as configured (workspace-relative for a folder of the workspace)
    reachable: bool  # its root is a folder that can be listed


class Change(NamedTuple):
    """What `add` or `remove` did: the item of config.json's "sources" (a built-in's name,
    or the source's object, as written), config.json's path, and the source as
    `describe` lists it (the same fields whatever the item's form)."""

    item: dict | str
    config: Path
    source: ConfiguredSource


def describe(workspace: Path) -> list[ConfiguredSource]:
    """Every source the workspace searches, in order (a config error is a UsageError)."""
    from miniclaw import config

    sources, _ = configured_sources(workspace)
    items = config.workspace_settings(workspace).get("sources") or list(SOURCE_NAMES)
    return [_described(source, item, workspace) for source, item in zip(sources, items)]


def _described(source, item: object, workspace: Path) -> ConfiguredSource:
    """A source and its item of config.json, as people read it."""
    kind = "built-in" if isinstance(item, str) else item.get("kind") or item.get("class")
    root = source.root_path(workspace)
    shown = getattr(source, "root", None) or str(root)
    return ConfiguredSource(source.name, str(kind), str(shown),
                            folder_problem(root) is None)


def add(workspace: Path, kind: str, root: str | None, name: str | None = None) -> Change:
    """Add a source of `kind` reading `root` (which must be a folder) to the workspace's
    sources, and its root to the allowed roots; or, without a root, a built-in source
    removed before (`long_term`, ...)."""
    from miniclaw import config

    if kind not in KINDS and kind not in SOURCE_NAMES:
        raise UsageError(f"unknown source kind {kind!r}: choose from {', '.join(KINDS)} (or, "
                         f"without a folder, a built-in source: {', '.join(SOURCE_NAMES)})")
    if root is None:
        if kind not in SOURCE_NAMES:
            raise UsageError(f"give the folder the {kind} memory lives in")
        if name is not None:
            raise UsageError(f"the built-in source {kind} keeps its name: add it without --name")
        item: dict | str = kind
        written = None
        new = source_named(kind)
    else:
        if kind not in KINDS:
            raise UsageError(f"{kind} is a built-in source: add it without a folder")
        if name is not None and (problem := name_problem(name)):  # before anything is done
            raise UsageError(problem)
        folder = Path(os.path.expanduser(root))
        if not folder.is_dir():
            raise UsageError(f"{root} is not a folder: give the folder the {kind} memory lives in")
        too_wide = root_problem(folder, workspace)
        if too_wide:
            raise UsageError(f"{root} {too_wide}: a source reads every {kind} file under its "
                             f"folder; give the folder the {kind} memory lives in")
        written = root if root.startswith("~") else _home_relative(str(folder.absolute()))
        item = {"kind": kind, "root": written, **({"name": name} if name is not None else {})}
        new = kind_class(kind)(root=written, name=name or kind)  # its own checks of settings

    def change(settings: dict) -> None:
        # The name is checked under the config lock, against what is there now: two adds of
        # one name at once must not both succeed.
        sources = configured_sources(workspace, settings)[0]
        if (name or kind) in [source.name for source in sources]:
            raise UsageError(f"the workspace already has a source named {name or kind!r}" + (
                "" if written is None else ": give this one another with --name"))
        shared = _shared_file(workspace, new, sources) or (
            _shared_folder(workspace, new, sources) if written is not None else None)
        if shared:
            raise UsageError(f"{shared[0]} is already searched as the source {shared[1]!r}: "
                             "choose a folder no other source reads, or `miniclaw sources "
                             f"remove {shared[1]}` first")
        settings["sources"] = [*(settings.get("sources") or SOURCE_NAMES), item]
        if written is not None and written not in settings.setdefault("roots", []):
            settings["roots"].append(written)

    path = config.update_workspace_settings(workspace, change)
    return Change(item, path, _described(new, item, workspace))


def root_problem(folder: str | os.PathLike[str], workspace: Path) -> str | None:
    """Why a folder (links resolved) is no source's root, or None: the file system's root
    or the home folder itself, or one holding either or the workspace (a source there
    reads miniclaw's own files, and `/` took a search 47 s to list). `sources add` refuses
    it; `doctor` warns of a config.json that holds one."""
    real = os.path.realpath(folder)
    home = os.path.realpath(os.path.expanduser("~"))
    if real == os.path.realpath(os.sep):
        return "is the root of the file system"
    if real == home:
        return "is your home folder itself"
    inside = os.path.realpath(workspace)
    if _holds(real, inside):
        which = "is the workspace" if real == inside else f"holds the workspace ({workspace})"
        return f"{which}, whose files miniclaw reads itself"
    if _holds(real, home):
        return f"holds your home folder ({home})"
    return None


def _holds(folder: str, path: str) -> bool:
    """Whether `path` is `folder` or under it (both real paths)."""
    return os.path.commonpath([folder, path]) == folder


def _shared_file(workspace: Path, new, sources) -> tuple[str, str] | None:
    """(a file, the source reading it) of the files `new` would read that a source reads
    already (`read_twice`)."""
    found = [f for source in (*sources, new) for f in source.files(workspace)]
    return next(((f.path, first) for f, first in read_twice(found) if f.source == new.name),
                None)


def _shared_folder(workspace: Path, new, sources) -> tuple[str, str] | None:
    """(a folder, the source reading it) when `new`'s root and another source's are one
    folder, or one holds the other and its source reads that deep (links resolved): a check
    by file passes an empty folder, and from its first file on every search warned that two
    sources read it (a transcripts source over the workspace's own sessions/)."""
    mine = os.path.realpath(new.root_path(workspace))
    for source in sources:
        theirs = os.path.realpath(source.root_path(workspace))
        if _reaches(theirs, mine, source) or _reaches(mine, theirs, new):
            return f"the folder {theirs}", source.name
    return None


def _reaches(outer: str, inner: str, source) -> bool:
    """Whether `source`, reading the folder `outer`, reads the folder `inner` too: the same
    folder, or one below it that a recursive source walks into (never a hidden one)."""
    if outer == inner:
        return True
    if not getattr(source, "recursive", True) or not _holds(outer, inner):
        return False
    return not any(part.startswith(".") for part in Path(os.path.relpath(inner, outer)).parts)


def holds_files(workspace: Path, name: str) -> bool:
    """Whether the source called `name` finds any file of its kind under its root: one
    that finds none was most likely given another folder than its memory's (said after an
    add, not refused: the store may be new)."""
    sources, _ = configured_sources(workspace)
    return any(source.files(workspace) for source in sources if source.name == name)


def _home_relative(path: str) -> str:
    """`~/x` for a folder under the home folder: config.json stays true when the home moves,
    and paths in results stay short."""
    home = os.path.expanduser("~")
    return "~" + path[len(home):] if home != "~" and path.startswith(home + os.sep) else path


def remove(workspace: Path, name: str) -> Change:
    """Remove the source called `name` from the workspace's sources (and its root from the
    allowed roots when no other source reads it)."""
    from miniclaw import config

    done: dict = {}  # what `change` removed, under the lock

    def change(settings: dict) -> None:
        # Which item goes is decided under the config lock, from what is there now: a change
        # made meanwhile by another process must not make this one pop the wrong item.
        sources = configured_sources(workspace, settings)[0]
        names = [source.name for source in sources]
        if name not in names:
            raise UsageError(f"the workspace has no source named {name!r}; its sources: "
                             f"{', '.join(names)}")
        if len(names) == 1:
            raise UsageError(f"{name!r} is the workspace's only source: add another first")
        items = list(settings.get("sources") or SOURCE_NAMES)
        item = done["item"] = items.pop(names.index(name))
        done["source"] = _described(sources[names.index(name)], item, workspace)
        settings["sources"] = items
        gone = item.get("root") if isinstance(item, dict) else None
        still = {item.get("root") for item in items if isinstance(item, dict)}
        if gone and gone not in still and gone in settings.get("roots", []):
            settings["roots"] = [root for root in settings["roots"] if root != gone]

    path = config.update_workspace_settings(workspace, change)
    return Change(done["item"], path, done["source"])

