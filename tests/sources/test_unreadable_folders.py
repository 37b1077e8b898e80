"""A folder that cannot be listed (permissions), or a configured root that is gone, is a
warning naming the folder, once, on every surface that shows an unreadable file's warning
(search, memory rank, sessions search, context, memory index), and `memory status` does not
call the index up to date; its files are left out of results and out of the index (never
served from it: their text may have been made private since), and read again once the
folder can be. `doctor` says a folder that is there but cannot be read needs permissions,
not mounting.

The folder is made unreadable at the operating system's boundary (`tests.denied`), as
`chmod 000` does to a user who is not root, so these run as root too; the same through a
real chmod, as a user who is not root, is `tests/reliability/test_unreadable_folders.py`.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miniclaw.cli import app
from miniclaw.memory import MemoryStore
from miniclaw.search.sessions import search_sessions
from miniclaw.sources.base import SOURCES
from miniclaw.sources.conkeeper import ConKeeperSource
from tests.conftest import NOW, daily_note, write
from tests.denied import DeniedFolder

FOLDER_WARNING = ("cannot read the folder {}: Permission denied; the memory files in it are "
                  "not searched until it can be read")


def _memories(workspace: Path) -> None:
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-10\n- zebra stripes are unique\n"
          "- <private>zebra pin 4321</private>\n")
    write(workspace, "memory/2026-02-13.md",
          daily_note("2026-02-13", ["Saw a zebra at the park"], ["09:00:00"]))


def _transcript(workspace: Path) -> None:
    write(workspace, "sessions/s1.jsonl", json.dumps(
        {"role": "user", "content": "tell me about the kestrel nesting season",
         "timestamp": "2026-02-13T09:00:00Z", "session_id": "s1"}) + "\n")


def _indexed_paths(store: MemoryStore) -> set[str]:
    with sqlite3.connect(store.index.path) as conn:
        return {path for (path,) in conn.execute("SELECT path FROM entries")}


async def test_an_unreadable_memory_folder_is_one_warning_and_its_files_come_back(
        store, workspace, monkeypatch):
    _memories(workspace)
    assert len(await store.search_memories("zebra")) == 2
    denied = DeniedFolder(monkeypatch, workspace / "memory")

    found = await store.search("zebra")
    assert found.results == []
    # Once, though two sources (MEMORY.md, the daily notes) read the folder; as data.
    assert [w.to_dict() for w in found.warnings] == [
        {"kind": "file", "path": "memory/", "message": FOLDER_WARNING.format("memory/")}]
    assert store.index.warnings() == [("memory/", FOLDER_WARNING.format("memory/"))]

    denied.lift()  # chmod back: read again, and no warning left
    found = await store.search("zebra")
    assert len(found.results) == 2 and found.warnings == ()


async def test_what_an_unreadable_folder_held_is_not_served_from_the_index(
        store, workspace, monkeypatch):
    """Privacy: its entries leave the index (text that cannot be read again may have been
    made private since), so no search, spelling fix or warning shows any of it."""
    _memories(workspace)
    await store.search("zebra")
    assert _indexed_paths(store) == {"memory/MEMORY.md", "memory/2026-02-13.md"}
    DeniedFolder(monkeypatch, workspace / "memory")

    found = await store.search("zebrq stripes")  # a typo of an indexed word: no fix to it
    assert found.results == [] and found.corrections == ()
    assert _indexed_paths(store) == set()
    said = json.dumps([w.to_dict() for w in found.warnings])
    assert "zebra" not in said


async def test_an_unreadable_sessions_folder_is_a_warning_of_sessions_search(
        store, workspace, monkeypatch):
    _memories(workspace)
    _transcript(workspace)
    assert (await search_sessions(store, "kestrel")).total == 1
    DeniedFolder(monkeypatch, workspace / "sessions")

    found = await search_sessions(store, "kestrel")
    assert found.sessions == []
    assert found.to_dict()["warnings"] == [
        {"kind": "file", "path": "sessions/", "message": FOLDER_WARNING.format("sessions/")}]
    assert len(await store.search_memories("zebra")) == 2  # memory/ is searched as before


async def test_a_folder_inside_a_source_is_named_and_the_rest_is_searched(
        workspace, tmp_path, monkeypatch):
    root = tmp_path / "app" / ".claude" / "memory"
    write(root, "patterns.md", "# Patterns\n- the heron uses snake_case\n")
    write(root, "decisions/adr-1.md", "# ADR 1\n- the heron ships in May\n")
    store = MemoryStore(workspace, sources=(*SOURCES, ConKeeperSource(root=str(root), name="app")),
                        roots=[str(root)], now=lambda: NOW)
    try:
        assert len(await store.search_memories("heron", days=None)) == 2
        DeniedFolder(monkeypatch, root / "decisions")
        found = await store.search("heron", days=None)
        assert [hit.path for hit in found.results] == [f"{root}/patterns.md"]
        assert [(w.params["path"], w.params["message"]) for w in found.warnings] == [
            (f"{root}/decisions/", FOLDER_WARNING.format(f"{root}/decisions/"))]
    finally:
        store.close()


async def test_a_configured_root_that_is_gone_is_one_warning_naming_the_source(
        workspace, tmp_path):
    root = tmp_path / "app" / ".claude" / "memory"
    for name in ("a.md", "b.md", "c.md"):
        write(root, name, f"# {name}\n- the osprey returns in March ({name})\n")
    store = MemoryStore(workspace, sources=(*SOURCES, ConKeeperSource(root=str(root), name="app")),
                        roots=[str(root)], now=lambda: NOW)
    try:
        assert len(await store.search_memories("osprey", days=None)) == 3
        root.parent.rename(tmp_path / "app" / ".claude-moved")  # moved away, or unmounted
        found = await store.search("osprey", days=None)
        assert found.results == []
        assert [w.to_dict() for w in found.warnings] == [{  # once, not once per file
            "kind": "file", "path": str(root),
            "message": f"the source 'app' reads {root}, which is not there (moved, renamed or "
                       "not mounted): its memories are not searched until it is back"}]
        (tmp_path / "app" / ".claude-moved").rename(root.parent)
        found = await store.search("osprey", days=None)
        assert len(found.results) == 3 and found.warnings == ()
    finally:
        store.close()


def test_a_missing_folder_of_the_workspace_is_no_warning(workspace):
    """sessions/ before the first chat, memory/ of a new workspace: nothing to say."""
    from miniclaw.sources.base import listing

    for source in SOURCES:
        assert listing(source, workspace / "nowhere") == ([], [])
        assert listing(source, workspace) == ([], [])


async def test_status_does_not_call_an_index_with_an_unreadable_folder_up_to_date(
        store, workspace, monkeypatch):
    _memories(workspace)
    await store.search("zebra")
    DeniedFolder(monkeypatch, workspace / "memory")
    status = await store.index_status()
    assert not status.up_to_date
    assert status.unreadable == (("memory/", FOLDER_WARNING.format("memory/")),)
    assert status.missing_files == ()  # not known to be deleted: their folder is reported


# -- the command line ---------------------------------------------------------------------


def _cli(workspace: Path, *args: str):
    return CliRunner().invoke(app, ["--workspace", str(workspace), *args])


def _warning_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


def test_search_json_names_the_folder_on_stderr_and_in_warnings(workspace, monkeypatch):
    _memories(workspace)
    assert json.loads(_cli(workspace, "search", "zebra", "--all", "--json").stdout)["total"] == 2
    DeniedFolder(monkeypatch, workspace / "memory")
    for command in (["search", "zebra", "--json"], ["memory", "rank", "-q", "zebra", "--json"]):
        done = _cli(workspace, *command)
        assert done.exit_code == 0, done.stderr
        data = json.loads(done.stdout)
        assert data["total"] == 0
        assert data["warnings"] == [{"kind": "file", "path": "memory/",
                                     "message": FOLDER_WARNING.format("memory/")}]
        assert _warning_lines(done.stderr) == [f"Warning: {FOLDER_WARNING.format('memory/')}"]


def test_sessions_search_warns_of_an_unreadable_sessions_folder(workspace, monkeypatch):
    _memories(workspace)
    _transcript(workspace)
    assert "kestrel" in _cli(workspace, "sessions", "search", "kestrel").stdout
    DeniedFolder(monkeypatch, workspace / "sessions")
    done = _cli(workspace, "sessions", "search", "kestrel")
    assert done.exit_code == 0
    assert done.stdout.strip() == "No conversation matches 'kestrel'."
    assert _warning_lines(done.stderr) == [f"Warning: {FOLDER_WARNING.format('sessions/')}"]
    data = json.loads(_cli(workspace, "sessions", "search", "kestrel", "--json").stdout)
    assert [w["path"] for w in data["warnings"]] == ["sessions/"]


def test_context_warns_of_an_unreadable_folder(workspace, monkeypatch):
    _memories(workspace)
    _transcript(workspace)
    DeniedFolder(monkeypatch, workspace / "sessions")
    done = _cli(workspace, "context", "kestrel zebra")
    assert done.exit_code == 0, done.stderr
    assert f"Warning: {FOLDER_WARNING.format('sessions/')}" in _warning_lines(done.stderr)


def test_memory_status_with_an_unreadable_folder_is_not_up_to_date(workspace, monkeypatch):
    _memories(workspace)
    _cli(workspace, "memory", "index")
    DeniedFolder(monkeypatch, workspace / "memory")
    text = _cli(workspace, "memory", "status").stdout
    assert "up to date" not in text
    assert "State:    not known: 1 folder could not be listed (below)" in text
    assert FOLDER_WARNING.format("memory/") in text and "deleted:" not in text
    data = json.loads(_cli(workspace, "memory", "status", "--json").stdout)
    assert data["up_to_date"] is False and data["missing_files"] == []
    assert data["unreadable_folders"] == [{"path": "memory/",
                                           "message": FOLDER_WARNING.format("memory/")}]


def test_memory_index_says_the_files_are_left_out_not_deleted(workspace, monkeypatch):
    _memories(workspace)
    _cli(workspace, "memory", "index")
    denied = DeniedFolder(monkeypatch, workspace / "memory")
    done = _cli(workspace, "memory", "index")
    assert done.exit_code == 0
    assert ("0 deleted files dropped, 2 files in a folder that cannot be read left out."
            in done.stdout)
    assert _warning_lines(done.stderr) == [f"Warning: {FOLDER_WARNING.format('memory/')}"]
    denied.lift()
    data = json.loads(_cli(workspace, "memory", "index", "--json").stdout)
    assert data["files_parsed"] == 2 and data["files_left_out"] == 0


def test_memory_recent_warns_of_an_unreadable_folder(workspace, monkeypatch):
    """It said "no daily notes" and nothing else, as if the notes were gone (`memory read`
    names the file it cannot read: an error)."""
    _memories(workspace)
    DeniedFolder(monkeypatch, workspace / "memory")
    done = _cli(workspace, "memory", "recent", "-d", "36500")
    assert done.exit_code == 0 and done.stdout == "No daily notes in the last 36500 days.\n"
    assert _warning_lines(done.stderr) == [f"Warning: {FOLDER_WARNING.format('memory/')}"]
    done = _cli(workspace, "memory", "read", "--date", "2026-02-13")
    assert (done.exit_code, done.stderr) == (
        1, "Error: cannot read memory/2026-02-13.md: Permission denied\n")


async def test_the_files_listed_for_mcp_resources_warn_of_an_unreadable_folder(
        store, workspace, monkeypatch, caplog):
    """`source_files` (the MCP server's resources/list) left the folder out in silence."""
    _memories(workspace)
    assert len(await store.source_files()) == 2
    DeniedFolder(monkeypatch, workspace / "memory")
    with caplog.at_level("WARNING", logger="miniclaw"):
        assert await store.source_files() == []
    assert [r.getMessage() for r in caplog.records] == [FOLDER_WARNING.format("memory/")]


# -- doctor ---------------------------------------------------------------------------------


def test_doctor_says_an_unreadable_sessions_folder_needs_permissions(workspace, monkeypatch):
    from miniclaw import doctor

    _memories(workspace)
    _transcript(workspace)
    assert _cli(workspace, "memory", "index").exit_code == 0
    DeniedFolder(monkeypatch, workspace / "sessions")
    report = doctor.examine(workspace)
    [finding] = [f for f in report.findings if f.check == "sources"]
    assert finding.severity == "error"
    assert finding.message == "the source 'transcripts': cannot read its folder: Permission denied"
    assert f"chmod u+rwx {workspace / 'sessions'}" in finding.fix
    assert "mount" not in finding.fix
    # Its transcript is not called changed or gone: the folder is the finding.
    assert [f for f in report.findings if f.check == "index"] == []


@pytest.mark.parametrize("gone", [True, False])
def test_doctor_tells_a_gone_root_from_an_unreadable_one(workspace, tmp_path, monkeypatch,
                                                         isolated_home, gone):
    from miniclaw import doctor

    root = tmp_path / "app" / ".claude" / "memory"
    write(root, "patterns.md", "# Patterns\n- the heron uses snake_case\n")
    (isolated_home / ".miniclaw").mkdir()
    (isolated_home / ".miniclaw" / "config.json").write_text(json.dumps({"workspaces": {
        str(workspace): {"sources": ["long_term", "daily_note",
                                     {"kind": "conkeeper", "root": str(root), "name": "app"}]}}}))
    if gone:
        root.parent.rename(tmp_path / "app" / "moved")
    else:
        DeniedFolder(monkeypatch, root)
    [finding] = [f for f in doctor.examine(workspace).findings if f.check == "sources"]
    if gone:
        assert "not reachable" in finding.message and "mount or create it" in finding.fix
    else:
        assert finding.message == "the source 'app': cannot read its folder: Permission denied"
        assert f"chmod u+rx {root}" in finding.fix and "mount" not in finding.fix
