"""The index by composition: the file layer never calls up, an operation syncs once at its
start and then only reads, a replaced index file restarts the whole operation, and
`memory status` only reads."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from miniclaw.memory import MemoryStore
from miniclaw.index.database import IndexDatabase, IndexReplaced
from miniclaw.index.search_index import SearchIndex
from miniclaw.search.ranker import MemoryRanker
from tests.conftest import NOW, daily_note, long_term, write
from tests.reliability.support import cli, subprocess_env

NOTE = daily_note("2026-02-12", ["apple crumble", "bread and apple"], ["09:00:00", "10:00:00"])


def test_the_file_layer_knows_nothing_of_the_index_above_it():
    assert not issubclass(SearchIndex, IndexDatabase)
    assert not any("refresh" in name or "sync" in name for name in vars(IndexDatabase))


async def test_reads_never_sync_a_replaced_index(store, workspace):
    write(workspace, "memory/2026-02-12.md", NOTE)
    await store.search_memories("apple", days=None)
    path = store.index.path
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with pytest.raises(IndexReplaced):
        store.index.warnings()  # a read: it reports the new file, never fills it
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM files").fetchone()[0] == 0


async def test_an_index_replaced_mid_search_restarts_the_search_once(workspace, monkeypatch):
    write(workspace, "memory/2026-02-12.md", NOTE)
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-01", ["apple tree in the yard"])))
    async with MemoryStore(workspace, now=lambda: NOW) as store:
        before = [(h.path, h.line_start, h.content)
                  for h in await store.search_memories("apple", days=None)]
        syncs, deleted = [], []
        refresh, search_source = SearchIndex.refresh, MemoryRanker._search_source

        def counting_refresh(self, **kwargs):
            syncs.append(1)
            return refresh(self, **kwargs)

        def deleting_search_source(self, *args):
            if not deleted:  # after the sync, before the reads: another process clears it
                deleted.append(1)
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{self.index.path}{suffix}").unlink(missing_ok=True)
            return search_source(self, *args)

        monkeypatch.setattr(SearchIndex, "refresh", counting_refresh)
        monkeypatch.setattr(MemoryRanker, "_search_source", deleting_search_source)
        after = [(h.path, h.line_start, h.content)
                 for h in await store.search_memories("apple", days=None)]
    assert after == before
    assert len(syncs) == 2  # the whole search again, from its sync


# -- `memory status` only reads ------------------------------------------------------------

def _state(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under `folder`: its mtime and bytes."""
    return {str(p): (p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_status_after_an_edit_in_a_new_process_says_out_of_date_and_writes_nothing(tmp_path):
    env = subprocess_env(tmp_path)
    ws = tmp_path / "ws"
    note = write(ws, "memory/2026-02-12.md", NOTE)
    assert cli(env, "--workspace", str(ws), "memory", "index").returncode == 0
    cache = Path(env["XDG_CACHE_HOME"])
    with open(note, "a") as handle:
        handle.write("\n---\n\n## 11:00:00 UTC\n\ncloud\n")
    before = _state(cache)
    assert any(name.endswith(".sqlite3") for name in before)

    done = cli(env, "--workspace", str(ws), "memory", "status", "--json")

    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["up_to_date"] is False
    assert status["stale_files"] == ["memory/2026-02-12.md"]
    assert status["files_indexed"] == 1 and status["entries"] == 2
    assert _state(cache) == before  # no byte, no mtime, no -wal or -shm changed or added


def test_status_without_an_index_creates_none(tmp_path):
    env = subprocess_env(tmp_path)
    ws = tmp_path / "ws"
    write(ws, "memory/2026-02-12.md", NOTE)
    cache = Path(env["XDG_CACHE_HOME"])

    done = cli(env, "--workspace", str(ws), "memory", "status", "--json")

    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert (status["index_exists"], status["up_to_date"]) == (False, False)
    assert status["stale_files"] == ["memory/2026-02-12.md"]
    assert not cache.exists() or _state(cache) == {}


@pytest.mark.parametrize("damage", ["another format", "not a database"])
def test_status_of_an_index_it_cannot_use_reports_it_stale_and_leaves_it(tmp_path, damage):
    env = subprocess_env(tmp_path)
    ws = tmp_path / "ws"
    write(ws, "memory/2026-02-12.md", NOTE)
    assert cli(env, "--workspace", str(ws), "memory", "index").returncode == 0
    [index] = [p for p in Path(env["XDG_CACHE_HOME"]).rglob("*.sqlite3")]
    if damage == "another format":
        conn = sqlite3.connect(index)
        conn.execute("PRAGMA user_version = 7")
        conn.close()
    else:
        index.write_bytes(b"\x00garbage" * 1000)
    before = _state(index.parent)

    done = cli(env, "--workspace", str(ws), "memory", "status", "--json")

    assert done.returncode == 0 and done.stderr == "", done.stderr
    status = json.loads(done.stdout)
    assert status["stale_files"] == ["memory/2026-02-12.md"] and not status["up_to_date"]
    assert _state(index.parent) == before
