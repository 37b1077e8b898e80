"""A memory source defined here, outside miniclaw, plugs in with no edit to any miniclaw
module: indexed, searched, watched and redacted, under a root outside the workspace that
the caller allows (issue 12, item 1)."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miniclaw.errors import UsageError
from miniclaw.memory import MemoryStore
from miniclaw.entries.entry import Entry
from miniclaw.sources.base import SOURCES, FileSource
from tests.conftest import NOW

SECRET = "zanzibarquokka"


class TextNotes(FileSource):
    """Plain `.txt` notes in nested folders: one entry per paragraph, the folder as metadata.
    It does not redact anything itself: shared code must."""

    name = "text_notes"
    label = "Text Note"
    recursive = True

    def owns(self, relative: str) -> bool:
        return relative.endswith(".txt")

    def parse(self, text: str, path: str) -> list[Entry]:
        folder = path.rsplit("/", 2)[-2]
        entries, start, para = [], 0, []
        for number, line in enumerate(text.split("\n") + [""], 1):
            if line.strip():
                start = start or number
                para.append(line.strip())
            elif para:
                entries.append(Entry(" ".join(para), "", path, start, number - 1,
                                     meta={"folder": folder}))
                start, para = 0, []
        return entries


def _notes(tmp_path: Path) -> Path:
    root = tmp_path / "outside" / "notes"
    (root / "trips").mkdir(parents=True)
    (root / "a.txt").write_text("The brass lantern hangs in the hall.\n", encoding="utf-8")
    (root / "trips" / "b.txt").write_text(
        f"Packed the lantern oil.\n\nThe safe code is <private>{SECRET}</private> here.\n"
        f"<private>\n{SECRET} whole lines too\n</private>\n", encoding="utf-8")
    return root


def _store(workspace: Path, root: Path) -> MemoryStore:
    return MemoryStore(workspace, now=lambda: NOW, sources=(*SOURCES, TextNotes(root=str(root))),
                       roots=[root])


async def test_an_outside_source_is_indexed_searched_and_redacted(workspace, tmp_path):
    root = _notes(tmp_path)
    (workspace / "memory" / "MEMORY.md").write_text("# Memory\n\n## 2026-02-10\n- a lantern\n")
    async with _store(workspace, root) as store:
        found = await store.search_memories("lantern", days=None)
        assert {(h.source, h.path) for h in found} == {
            ("long_term", "memory/MEMORY.md"), ("text_notes", f"{root}/a.txt"),
            ("text_notes", f"{root}/trips/b.txt")}
        assert [h.content for h in await store.search_memories("safe code")] == [
            "The safe code is  here."]
        assert await store.search_memories(SECRET) == []
        only = await store.search_memories("lantern", sources=["text_notes"])
        assert {h.source for h in only} == {"text_notes"} and len(only) == 2
        index = store.index.path
    assert SECRET.encode() not in index.read_bytes()
    with sqlite3.connect(index) as conn:
        metas = {path: meta for path, meta in conn.execute(
            "SELECT path, meta FROM entries WHERE source = 'text_notes'")}
    assert json.loads(metas[f"{root}/trips/b.txt"]) == {"folder": "trips"}


async def test_a_root_outside_the_workspace_must_be_allowed(workspace, tmp_path):
    root = _notes(tmp_path)
    store = MemoryStore(workspace, sources=(*SOURCES, TextNotes(root=str(root))))
    with pytest.raises(UsageError, match="outside the workspace"):
        await store.search_memories("lantern")
    store.close()


async def test_edits_under_every_source_folder_are_seen_through_the_watch(workspace, tmp_path,
                                                                          monkeypatch):
    root = _notes(tmp_path)
    async with _store(workspace, root) as store:
        for _ in range(3):  # from the second search on, the store watches every folder
            assert await store.search_memories("lantern")
        assert store.index._watch is not None and store.index._watch.active
        scans = []
        monkeypatch.setattr(TextNotes, "files", lambda self, ws: scans.append(1) or [])
        (root / "trips" / "b.txt").write_text("Bought a kayak paddle.\n", encoding="utf-8")
        (root / "c.txt").write_text("A new kayak trip.\n", encoding="utf-8")
        (workspace / "memory" / "MEMORY.md").write_text("# Memory\n\n## 2026-02-10\n- kayak\n")
        found = await store.search_memories("kayak", days=None)
        assert {h.path for h in found} == {f"{root}/trips/b.txt", f"{root}/c.txt",
                                          "memory/MEMORY.md"}
        assert scans == []  # the watch said what changed: no folder was listed again
        (root / "c.txt").unlink()
        assert {h.path for h in await store.search_memories("kayak", days=None)} == {
            f"{root}/trips/b.txt", "memory/MEMORY.md"}


def _note(workspace: Path, day: str, text: str) -> Path:
    path = workspace / "memory" / f"{day}.md"
    path.write_text(f"# {day}\n\n## 09:00:00 UTC\n{text}\n", encoding="utf-8")
    return path


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root reads a chmod 000 file")
async def test_an_unreadable_note_is_a_warning_and_the_others_are_found(store, workspace):
    _note(workspace, "2026-02-12", "walnut bread")
    locked = _note(workspace, "2026-02-13", "walnut cake")
    locked.chmod(0)
    try:
        found = await store.search_memories("walnut")
        assert [h.content for h in found] == ["walnut bread"]
        assert store.index.warnings() == [
            "cannot read memory/2026-02-13.md: Permission denied; it is not searched until "
            "it can be read"]
        locked.chmod(0o644)
        assert len(await store.search_memories("walnut")) == 2  # seen once readable
        assert store.index.warnings() == []
    finally:
        locked.chmod(0o644)


async def test_a_note_the_system_refuses_to_open_is_a_warning(store, workspace, monkeypatch):
    """The same as root runs it: the operating system (the boundary) refuses one open."""
    from miniclaw.fs import files

    _note(workspace, "2026-02-12", "walnut bread")
    _note(workspace, "2026-02-13", "walnut cake")
    real_open = files.open_regular
    refused = {"on": True}

    def open_regular(path, *args, **kwargs):
        if refused["on"] and str(path).endswith("2026-02-13.md"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(files, "open_regular", open_regular)
    found = await store.search_memories("walnut")
    assert [h.content for h in found] == ["walnut bread"]
    assert store.index.warnings() == [(
        "memory/2026-02-13.md",
        "cannot read memory/2026-02-13.md: Permission denied; it is not searched until it can "
        "be read")]
    results = await store.search("walnut")  # and the search returns it, as data
    assert [(w.kind, w.params["path"]) for w in results.warnings] == [("file", "memory/2026-02-13.md")]
    refused["on"] = False  # permissions fixed: the file is read again (it was kept racy)
    assert len(await store.search_memories("walnut")) == 2
    assert store.index.warnings() == []


def configure_text_notes(home: Path, workspace: Path, root: Path) -> Path:
    """A MINICLAW_HOME whose config.json gives `workspace` the built-in sources and a
    TextNotes source (this module's class) under `root`, allowed."""
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"workspaces": {str(workspace): {
        "sources": ["long_term", "daily_note",
                    {"class": "tests.sources.test_plugin_sources:TextNotes", "root": str(root)}],
        "roots": [str(root)]}}}), encoding="utf-8")
    return home


def test_the_configuration_names_a_workspace_sources_and_roots(workspace, tmp_path,
                                                               isolated_home):
    """End to end through the CLI: config.json lists this workspace's sources (a class from
    this module) and allows their root; a search in a new process finds and labels them."""
    root = _notes(tmp_path)
    home = configure_text_notes(tmp_path / "mchome", workspace, root)
    env = {**os.environ, "MINICLAW_HOME": str(home), "MINICLAW_WORKSPACE": str(workspace),
           "PYTHONPATH": str(Path(__file__).parents[2])}
    run = subprocess.run([sys.executable, "-m", "miniclaw", "memory", "rank", "-q", "lantern",
                          "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)["results"]
    assert {(r["source"], r["path"]) for r in results} == {
        ("text_notes", f"{root}/a.txt"), ("text_notes", f"{root}/trips/b.txt")}
    shown = subprocess.run([sys.executable, "-m", "miniclaw", "memory", "rank", "-q", "lantern"],
                           env=env, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and SECRET not in shown.stdout + shown.stderr


def test_a_root_the_configuration_does_not_allow_is_an_error(workspace, tmp_path):
    root = _notes(tmp_path)
    home = tmp_path / "mchome"
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"workspaces": {str(workspace): {
        "sources": [{"class": "tests.sources.test_plugin_sources:TextNotes",
                     "root": str(root)}]}}}), encoding="utf-8")
    env = {**os.environ, "MINICLAW_HOME": str(home), "MINICLAW_WORKSPACE": str(workspace),
           "PYTHONPATH": str(Path(__file__).parents[2])}
    run = subprocess.run([sys.executable, "-m", "miniclaw", "memory", "rank", "-q", "lantern"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.startswith("Error: ") and "outside the workspace" in run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""


async def test_a_new_subfolder_under_a_watched_root_is_searched(workspace, tmp_path):
    root = _notes(tmp_path)
    async with _store(workspace, root) as store:
        for _ in range(3):
            assert await store.search_memories("lantern")
        assert store.index._watch is not None and store.index._watch.active
        (root / "trips" / "2026").mkdir()
        (root / "trips" / "2026" / "d.txt").write_text("A quince orchard.\n", encoding="utf-8")
        found = await store.search_memories("quince")
        assert [h.path for h in found] == [f"{root}/trips/2026/d.txt"]
        (root / "trips" / "2026" / "d.txt").write_text("A medlar orchard.\n", encoding="utf-8")
        assert [h.content for h in await store.search_memories("medlar")] == ["A medlar orchard."]


class JsonLines(FileSource):
    """One record per JSON line: its text may spell a tag with escapes (`\\u003c`), which
    no scan of the file's lines sees; the shared code redacts each record too."""

    name = "jsonl"
    root = "logs"

    def owns(self, relative: str) -> bool:
        return relative.endswith(".jsonl")

    def parse(self, text: str, path: str) -> list[Entry]:
        return [Entry(json.loads(line)["text"], "", path, number, number,
                      meta={"role": json.loads(line)["role"]})
                for number, line in enumerate(text.split("\n"), 1) if line.strip()]


async def test_each_record_is_redacted_after_a_source_decodes_it(workspace):
    (workspace / "logs").mkdir()
    (workspace / "logs" / "chat.jsonl").write_text(
        '{"role": "user", "text": "my pin is \\u003cprivate\\u003e' + SECRET
        + '\\u003c/private\\u003e ok"}\n{"role": "user", "text": "all \\u003cprivate\\u003e'
        + SECRET + '\\u003c/private\\u003e"}\n', encoding="utf-8")
    async with MemoryStore(workspace, now=lambda: NOW, sources=(*SOURCES, JsonLines())) as store:
        found = await store.search_memories("pin")
        assert [(h.content, h.path) for h in found] == [("my pin is  ok", "logs/chat.jsonl")]
        assert await store.search_memories(SECRET) == []
        with sqlite3.connect(store.index.path) as conn:
            rows = conn.execute("SELECT content, meta FROM entries WHERE source = 'jsonl'").fetchall()
    assert rows == [("my pin is  ok", '{"role": "user"}'), ("all", '{"role": "user"}')]


_WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma", " ", "\n", "\n\n", "-", "#"]),
                  max_size=30).map("".join)


@given(before=_WORDS, inside=_WORDS, after=_WORDS)
def test_no_private_text_comes_out_of_a_source_that_does_not_redact(before, inside, after):
    from miniclaw.sources.base import read_entries

    text = f"{before}<private>{inside}{SECRET}{inside}</private>{after}"
    entries = read_entries(TextNotes(), text, "notes/x/a.txt")
    assert all(SECRET not in entry.text for entry in entries)
    assert all(entry.source == "text_notes" for entry in entries)


def test_entries_with_metadata_stay_hashable_and_read_only():
    from miniclaw.sources.base import read_entries

    entries = read_entries(JsonLines(), '{"role": "tool", "text": "ran ls"}\n', "logs/a.jsonl")
    assert [(e.text, e.source, dict(e.meta)) for e in entries] == [
        ("ran ls", "jsonl", {"role": "tool"})]
    assert len({*entries, *entries}) == 1
    with pytest.raises(TypeError):
        entries[0].meta["role"] = "user"
    assert entries[0].to_dict()["meta"] == {"role": "tool"}


async def test_a_relative_root_that_leaves_the_workspace_must_be_allowed(workspace, tmp_path):
    root = _notes(tmp_path)
    escaping = TextNotes(root="../outside/notes")
    store = MemoryStore(workspace, sources=(*SOURCES, escaping))
    with pytest.raises(UsageError, match="outside the workspace"):
        await store.search_memories("lantern")
    store.close()
    async with MemoryStore(workspace, sources=(*SOURCES, TextNotes(root="../outside/notes")),
                           roots=[root]) as allowed:
        found = await allowed.search_memories("lantern")
    assert {h.path for h in found} == {"../outside/notes/a.txt", "../outside/notes/trips/b.txt"}


async def test_a_built_in_source_reads_another_root_when_configured(workspace, tmp_path):
    """Daily notes kept in a journal folder outside the workspace: same format, own root."""
    from miniclaw.sources.base import DailyNoteSource, LongTermSource

    journal = tmp_path / "journal"
    journal.mkdir()
    _note(workspace, "2026-02-12", "fig jam")  # in memory/: not this store's source
    (journal / "2026-02-13.md").write_text("# x\n\n## 09:00:00 UTC\nfig tart\n", encoding="utf-8")
    async with MemoryStore(workspace, now=lambda: NOW, roots=[journal],
                           sources=(LongTermSource(), DailyNoteSource(root=str(journal)))) as store:
        found = await store.search_memories("fig")
    assert [(h.path, h.source, h.date.isoformat()) for h in found] == [
        (f"{journal}/2026-02-13.md", "daily_note", "2026-02-13")]


@pytest.mark.parametrize("module", ["miniclaw.sources.transcripts", "miniclaw.sources.claude_code",
                                    "miniclaw.sources.conkeeper", "miniclaw.sources.mnemonic",
                                    "miniclaw.sources.ef_memory"])
def test_a_source_kind_imports_first_in_a_new_process(module):
    """The default sources include the transcripts source: importing a kind's module before
    sources/base.py (a script that uses only `kept_text`) once failed on the import cycle."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr


async def test_a_file_two_sources_find_is_the_firsts_through_the_watch_too(workspace, tmp_path):
    """Two sources over one folder (nested roots): a long-lived store searches, and a file
    written while it watches is indexed once, as the first source's; before, the index's
    one row per path failed the search ("UNIQUE constraint failed: files.path")."""
    root = _notes(tmp_path)
    wide = TextNotes(root=str(root.parent), name="wide")
    async with MemoryStore(workspace, now=lambda: NOW, roots=[root.parent],
                           sources=(*SOURCES, TextNotes(root=str(root)), wide)) as store:
        for _ in range(3):  # from the second search on, the store watches every folder
            found = await store.search("lantern")
            assert {(h.source, h.path) for h in found.results} == {
                ("text_notes", f"{root}/a.txt"), ("text_notes", f"{root}/trips/b.txt")}
            [warning] = found.warnings
            assert warning.params["message"].startswith(
                f"the sources 'text_notes' and 'wide' both read {root}/a.txt: ")
        assert store.index._watch is not None and store.index._watch.active
        (root / "trips" / "c.txt").write_text("A kayak by the lantern.\n", encoding="utf-8")
        found = await store.search("kayak")
        assert [(h.source, h.path) for h in found.results] == [
            ("text_notes", f"{root}/trips/c.txt")]


async def test_a_folder_two_sources_reach_by_other_spellings_is_read_once_by_a_long_lived_store(
        workspace, tmp_path):
    """One folder through a link (and the link's name sorts after the folder's): the watch
    has one descriptor for both names and reported a new file under the link's, which only
    the second source knows, so a chat or MCP server read it as that source's. Such folders
    are not watched: every search looks at every file, as a one-shot command does."""
    root = _notes(tmp_path)
    link = tmp_path / "zlink"
    link.symlink_to(root.parent)
    wide = TextNotes(root=str(link), name="wide")
    async with MemoryStore(workspace, now=lambda: NOW, roots=[root, link],
                           sources=(*SOURCES, TextNotes(root=str(root)), wide)) as store:
        for _ in range(3):  # from the second search on, a store watches what it can
            found = await store.search("lantern")
            assert {(h.source, h.path) for h in found.results} == {
                ("text_notes", f"{root}/a.txt"), ("text_notes", f"{root}/trips/b.txt")}
        assert store.index._watch is None
        (root / "trips" / "c.txt").write_text("A kayak by the lantern.\n", encoding="utf-8")
        found = await store.search("kayak")
        assert [(h.source, h.path) for h in found.results] == [
            ("text_notes", f"{root}/trips/c.txt")]
