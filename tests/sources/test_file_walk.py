"""A recursive source lists its files with one `scandir` per folder (`FileSource._tree_files`):
the same files, paths, signatures and order as `file()` finds one by one, over real trees
with hidden folders, links in and out of bounds, files it does not own and unreadable
folders; and ConKeeper's 30-day rule for session files still holds in the listing."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniclaw.sources.base import FileSource
from miniclaw.sources.conkeeper import SESSION_DAYS, ConKeeperSource
from miniclaw.sources.mnemonic import MnemonicSource


class Notes(FileSource):
    name = "notes"
    recursive = True

    def owns(self, relative: str) -> bool:
        return relative.endswith(".md")


class NotesOneByOne(Notes):
    """The same source through the generic listing: a subclass whose `file()` is its own
    (it may narrow it) is listed file by file."""

    def file(self, workspace, absolute):
        return super().file(workspace, absolute)


def _tree(base: Path, outside: Path) -> Path:
    root = base / "notes"
    for folder in ("a/b/c", "z", ".hidden/deep", "sessions/old", "b"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for path in ("top.md", "a/one.md", "a/b/two.md", "a/b/c/three.md", "a/skip.txt",
                 "z/last.md", ".hidden/deep/secret.md", "sessions/old/s.md", "b/x.md",
                 ".dot.md"):
        (root / path).write_text(f"# {path}\n", encoding="utf-8")
    outside.mkdir()
    (outside / "far.md").write_text("far\n", encoding="utf-8")
    (root / "in-link.md").symlink_to(root / "a" / "one.md")  # inside the root: followed
    (root / "out-link.md").symlink_to(outside / "far.md")  # outside: left out
    (root / "dir-link").symlink_to(root / "a", target_is_directory=True)  # never entered
    (root / "dangling.md").symlink_to(root / "nowhere.md")
    (root / "folder.md").mkdir()  # a folder named like a file: not a file
    return root


@pytest.mark.parametrize("inside", [True, False])
def test_the_tree_listing_is_what_file_finds_one_by_one(tmp_path, inside):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    root = _tree(workspace if inside else tmp_path, tmp_path / "elsewhere")
    setting = "notes" if inside else str(root)
    fast, generic = Notes(root=setting), NotesOneByOne(root=setting)
    listed = fast.files(workspace)
    assert listed == generic.files(workspace)
    relative = sorted(f.path.removeprefix(fast._layout(workspace)[1] + "/") for f in listed)
    assert relative == [".dot.md", "a/b/c/three.md", "a/b/two.md", "a/one.md", "b/x.md",
                        "in-link.md", "sessions/old/s.md", "top.md", "z/last.md"]
    assert all(f == fast.file(workspace, f.absolute) for f in listed)


def test_an_unreadable_folder_is_skipped_like_the_walk_skips_it(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads every folder")
    root = _tree(tmp_path, tmp_path / "elsewhere")
    (root / "a").chmod(0)
    try:
        assert Notes(root=str(root)).files(tmp_path) == NotesOneByOne(root=str(root)).files(tmp_path)
    finally:
        (root / "a").chmod(0o755)


def test_a_missing_root_lists_nothing(tmp_path):
    assert Notes(root=str(tmp_path / "gone")).files(tmp_path) == []


_NAMES = st.sampled_from(["a", "b", "sessions", ".h", "x.md", "y.memory.md", "z.txt"])


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(paths=st.lists(st.lists(_NAMES, min_size=1, max_size=4), max_size=12))
def test_every_recursive_kind_lists_the_same_as_file_by_file(tmp_path_factory, paths):
    """Random trees: each recursive kind's listing is what `file()` says of each file
    (ConKeeper and mnemonic; the generic walk is the reference)."""
    base = tmp_path_factory.mktemp("tree")
    root = base / "root"
    root.mkdir()
    for parts in paths:
        target = root.joinpath(*parts)
        if any(p.exists() and not p.is_dir() for p in target.parents):
            continue
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("- a line\n", encoding="utf-8")
    for source in (ConKeeperSource(root=str(root)), MnemonicSource(root=str(root)),
                   Notes(root=str(root))):
        walked = [source.file(base, os.path.join(folder, name))
                  for folder, _, names in source._walk(root) for name in names]
        assert source.files(base) == [f for f in walked if f is not None], source.name


def test_conkeeper_lists_session_files_of_the_last_30_days_only(tmp_path):
    root = tmp_path / "memory"
    (root / "sessions").mkdir(parents=True)
    for name in ("new.md", "old.md"):
        (root / "sessions" / name).write_text("## Summary\n- done\n", encoding="utf-8")
    (root / "facts.md").write_text("- a fact\n", encoding="utf-8")
    old = time.time() - (SESSION_DAYS + 1) * 86400
    os.utime(root / "sessions" / "old.md", (old, old))
    os.utime(root / "facts.md", (old, old))  # not a session file: its age does not matter
    source = ConKeeperSource(root=str(root), sessions=True)
    listed = sorted(f.path.rsplit("memory/", 1)[1] for f in source.files(tmp_path))
    assert listed == ["facts.md", "sessions/new.md"]
    assert source.file(tmp_path, str(root / "sessions" / "old.md")) is None
    assert source.file(tmp_path, str(root / "sessions" / "new.md")) is not None
