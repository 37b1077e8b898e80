"""The search index is a cache that stays exactly right, private, and rebuildable."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sqlite3
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import date as Date
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniclaw.memory import MemoryStore
from miniclaw.index.database import index_format
from miniclaw.fs.files import decode
from miniclaw.entries.parsing import parse_daily_note, parse_long_term
from miniclaw.sources.base import daily_note_date
from miniclaw.entries.tokenizer import counted_index_terms, index_terms, tokenize
from tests.conftest import NOW, daily_note, long_term, write

ROOT = Path(__file__).resolve().parents[2]

# Eight five-letter words with distinct stems: a same-size edit swaps one for another.
VOCAB = ["apple", "bread", "cloud", "dingo", "eagle", "flute", "grape", "house"]
_VOCAB_WORD = re.compile(rb"\b(?:" + b"|".join(w.encode() for w in VOCAB) + rb")\b")
DAYS = ["2026-02-10", "2026-02-11", "2026-02-12", "2025-12-31"]
FILES = ["MEMORY.md"] + [f"{day}.md" for day in DAYS]


# -- helpers -------------------------------------------------------------------------------

def fresh_entries(workspace: Path) -> list:
    """Every entry of the workspace by parsing its files now, without the index."""
    entries = []
    memory = workspace / "memory"
    for path in sorted(memory.iterdir()) if memory.is_dir() else []:
        rel = f"memory/{path.name}"
        if path.name == "MEMORY.md":
            entries += parse_long_term(decode(path.read_bytes(), rel)[0], rel)
        elif daily_note_date(path.name) is not None:
            entries += parse_daily_note(decode(path.read_bytes(), rel)[0], rel,
                                        daily_note_date(path.name))
    return entries


def expected_hits(entries: list, word: str) -> set[tuple]:
    [term] = tokenize(word)
    return {(e.path, e.line_start, e.line_end, e.text) for e in entries
            if term in tokenize(e.text)}


async def assert_index_matches_files(store: MemoryStore, workspace: Path, words=VOCAB,
                                     days: int | None = None) -> None:
    """Keyword search for each word finds exactly the entries a fresh parse says hold it."""
    entries = fresh_entries(workspace)
    if days is not None:
        first = NOW.date().toordinal() - days + 1
        entries = [e for e in entries
                   if e.source != "daily_note" or e.date.toordinal() >= first]
    for word in words:
        expected = expected_hits(entries, word)
        found = await store.search(word, limit=20, days=days, mode="keyword")
        if found.corrections:
            # The word matched nothing in the index, so the spelling fallback searched a
            # near word instead: right only if no entry in the files holds the word.
            assert not expected_hits(fresh_entries(workspace), word), (word, days)
            continue
        got = {(h.path, h.line_start, h.line_end, h.content) for h in found.results}
        assert found.total == len(expected), (word, days)
        if len(expected) <= 20:
            assert got == expected, (word, days)
        else:
            assert got <= expected, (word, days)
        assert all(h.score == 1.0 for h in found.results)
    if days is None:  # the stored vocabulary is exactly the terms of the files' entries
        with sqlite3.connect(store.index.path) as conn:
            stored = {row[0] for row in conn.execute("SELECT term FROM terms")}
        assert stored == {t for e in fresh_entries(workspace) for t in index_terms(e.text)}


async def snapshot(store: MemoryStore, words=VOCAB) -> dict:
    out = {}
    for word in words:
        found = await store.search(word, limit=20, days=None)
        out[word] = (found.total, [(h.path, h.line_start, h.content, round(h.score, 9))
                                   for h in found.results])
    return out


def sample_workspace(workspace: Path) -> None:
    write(workspace, "memory/MEMORY.md",
          "# Memory\n\n## 2026-02-01\n- apple bread (added at 2026-02-01T08:00:00Z)\n"
          "- cloud dingo\n\n## Projects\n- eagle flute apple\n")
    write(workspace, "memory/2026-02-12.md",
          "# Daily Note - 2026-02-12\n\n## 09:00:00 UTC\n\ngrape house apple\n\n---\n\n"
          "## 10:00:00 UTC\n\nbread cloud\n")
    write(workspace, "memory/2025-12-31.md",
          "# Daily Note - 2025-12-31\n\n## 23:00:00 UTC\n\ndingo eagle\n")


def index_bytes(path: Path) -> bytes:
    data = b""
    for suffix in ("", "-wal"):
        part = Path(f"{path}{suffix}")
        if part.exists():
            data += part.read_bytes()
    return data


def checkpoint(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        conn.close()


# -- the index equals a fresh parse after any sequence of edits ----------------------------

_words = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4)
_file = st.sampled_from(FILES)
_ops = st.one_of(
    st.tuples(st.just("append"), _file, _words, st.booleans()),
    st.tuples(st.just("edit_same_size"), _file, st.integers(0, 50), st.sampled_from(VOCAB),
              st.booleans()),
    st.tuples(st.just("insert_line"), _file, st.integers(0, 50), _words),
    st.tuples(st.just("delete_line"), _file, st.integers(0, 50)),
    st.tuples(st.just("delete"), _file),
    st.tuples(st.just("rename"), _file, st.sampled_from(DAYS)),
    st.tuples(st.just("truncate"), _file, st.floats(0.0, 1.0)),
    st.tuples(st.just("touch"), _file, st.integers(-100_000, 100)),
)


class Clock:
    def __init__(self) -> None:
        self.seconds = 0

    def next(self) -> str:
        self.seconds += 1
        return time.strftime("%H:%M:%S", time.gmtime(self.seconds))


async def apply(op: tuple, store: MemoryStore, workspace: Path, clock: Clock) -> None:
    kind, name = op[0], op[1]
    path = workspace / "memory" / name
    if kind == "append":
        words, through_api = op[2], op[3]
        text = " ".join(words)
        if through_api and name == "MEMORY.md":
            await store.add_long_term(text)
        elif through_api:
            day = daily_note_date(name)
            hh, mm, ss = (int(x) for x in clock.next().split(":"))
            await store.add_daily_note(text, when=datetime(day.year, day.month, day.day, hh, mm,
                                                           ss, tzinfo=timezone.utc))
        elif name == "MEMORY.md":
            if not path.exists():
                path.write_text("# Memory\n\n## 2026-02-13\n")
            with open(path, "a") as handle:
                handle.write(f"- {text}\n")
        else:
            if not path.exists():
                path.write_text(f"# Daily Note - {name[:-3]}\n")
            with open(path, "a") as handle:
                handle.write(f"\n## {clock.next()} UTC\n\n{text}\n")
        return
    if not path.exists():
        return
    if kind == "edit_same_size":
        index, word, keep_mtime = op[2], op[3], op[4]
        before = os.stat(path)
        data = path.read_bytes()
        spots = [m.start() for m in _VOCAB_WORD.finditer(data)]
        if not spots:
            return
        with open(path, "r+b") as handle:  # in place: same inode, same size
            handle.seek(spots[index % len(spots)])
            handle.write(word.encode())
        # An edit in the same clock tick keeps the mtime: simulate it when that is plausible.
        if keep_mtime and time.time_ns() - before.st_mtime_ns < 1_000_000_000:
            os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    elif kind in ("insert_line", "delete_line"):
        lines = path.read_text(encoding="utf-8", errors="surrogateescape").split("\n")
        at = op[2] % (len(lines) + 1)
        if kind == "insert_line":
            lines.insert(at, " ".join(op[3]))
        elif at < len(lines):
            del lines[at]
        path.write_text("\n".join(lines), encoding="utf-8", errors="surrogateescape")
    elif kind == "delete":
        path.unlink()
    elif kind == "rename":
        if name != "MEMORY.md":
            os.replace(path, workspace / "memory" / f"{op[2]}.md")
    elif kind == "truncate":
        os.truncate(path, int(os.path.getsize(path) * op[2]))
    elif kind == "touch":
        moment = time.time_ns() + op[2] * 1_000_000_000
        os.utime(path, ns=(moment, moment))


@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(_ops, min_size=1, max_size=12))
def test_index_matches_a_fresh_parse_after_random_edits(ops):
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        sample_workspace(ws)

        async def run():
            async with MemoryStore(ws, index_path=Path(tmp) / "cache" / "index.sqlite3",
                                   now=lambda: NOW) as store:
                clock = Clock()
                await assert_index_matches_files(store, ws)
                for op in ops:
                    await apply(op, store, ws, clock)
                    await assert_index_matches_files(store, ws, days=30)
                    await assert_index_matches_files(store, ws)
                    assert (await store.index_status()).up_to_date

        asyncio.run(run())


async def test_same_size_edit_in_the_same_tick_is_seen(store, workspace):
    path = write(workspace, "memory/2026-02-12.md",
                 "# Daily Note - 2026-02-12\n\n## 09:00:00 UTC\n\napple bread\n")
    assert len(await store.search_memories("apple")) == 1
    before = os.stat(path)
    path.write_text(path.read_text().replace("apple", "grape"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime
    assert os.stat(path).st_size == before.st_size
    assert await store.search_memories("apple") == []
    assert [h.content for h in await store.search_memories("grape")] == ["grape bread"]


async def test_same_size_edit_in_place_with_same_mtime_is_seen_twice(store, workspace):
    path = write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-12\n- apple\n")
    mtime = os.stat(path).st_mtime_ns
    for old, new in (("apple", "bread"), ("bread", "cloud")):
        await store.search_memories("apple")
        with open(path, "r+b") as handle:
            data = handle.read()
            handle.seek(data.index(old.encode()))
            handle.write(new.encode())
        os.utime(path, ns=(mtime, mtime))
        assert [h.content for h in await store.search_memories(new)] == [new]


async def test_renamed_note_is_found_under_its_new_date(store, workspace):
    write(workspace, "memory/2026-02-10.md",
          "# Daily Note - 2026-02-10\n\n## 09:00:00 UTC\n\napple\n")
    await store.search_memories("apple")
    os.rename(workspace / "memory/2026-02-10.md", workspace / "memory/2026-02-12.md")
    [hit] = await store.search_memories("apple")
    assert (hit.path, hit.date) == ("memory/2026-02-12.md", Date(2026, 2, 12))


async def test_deleted_file_entries_disappear(store, workspace):
    sample_workspace(workspace)
    await store.search_memories("grape")
    (workspace / "memory/2026-02-12.md").unlink()
    assert await store.search_memories("grape", days=None) == []


async def test_line_inserted_above_an_entry_moves_its_line_numbers(store, workspace):
    path = write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-12\n- apple\n")
    await store.search_memories("apple")
    path.write_text("# Memory\n\nintro line\n\n## 2026-02-12\n- apple\n")
    [hit] = await store.search_memories("apple")
    assert (hit.line_start, hit.line_end) == (6, 6)


# -- deleting, damaging and versioning the index -------------------------------------------

async def test_deleted_index_is_rebuilt_silently_with_same_results(workspace, caplog):
    sample_workspace(workspace)
    async with MemoryStore(workspace, now=lambda: NOW) as first:
        before = await snapshot(first)
        path = first.index.path
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    caplog.set_level(logging.WARNING, logger="miniclaw")
    async with MemoryStore(workspace, now=lambda: NOW) as second:
        assert await snapshot(second) == before
    assert path.exists()
    assert [r for r in caplog.records if r.name == "miniclaw"] == []


_DELETE_WHILE_OPEN = textwrap.dedent("""
    import asyncio, json, logging, sys
    from datetime import datetime, timezone
    from pathlib import Path
    from miniclaw.memory import MemoryStore
    logging.basicConfig(level=logging.WARNING)
    ws = Path(sys.argv[1])
    NOW = datetime(2026, 2, 14, 9, 12, 3, tzinfo=timezone.utc)
    async def main():
        wrong = []
        async with MemoryStore(ws, now=lambda: NOW) as store:
            await store.search_memories("apple", days=None)
            await asyncio.gather(*(store.search_memories("apple") for _ in range(2)))
            store.index.path.unlink()  # the user clears the cache while the store is open
            for i in range(10):
                await store.add_daily_note(f"apple newcomer{i}",
                                           when=datetime(2026, 2, 13, 8, i, tzinfo=timezone.utc))
                # Several searches at once, as a chat loop and its tools may run them.
                # keyword mode: exactly the entries holding the word (bm25 adds neighbours)
                found = await asyncio.gather(*(store.search_memories(f"newcomer{i}",
                                                                     mode="keyword")
                                               for _ in range(6)))
                got = [[h.content for h in hits] for hits in found]
                if got != [[f"apple newcomer{i}"]] * 6:
                    wrong.append(got)
        print(json.dumps(wrong[:3]))
    asyncio.run(main())
""")


def test_index_deleted_while_store_is_open_keeps_results_right(workspace, isolated_home):
    # In a subprocess: a crash must fail this test, not the whole run.
    sample_workspace(workspace)
    done = subprocess.run([sys.executable, "-c", _DELETE_WHILE_OPEN, str(workspace)],
                          env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == []
    assert "WARNING" not in done.stderr


async def test_only_main_index_file_deleted_is_rebuilt_with_same_results(workspace):
    sample_workspace(workspace)
    first = MemoryStore(workspace, now=lambda: NOW)
    before = await snapshot(first)
    path = first.index.path
    path.unlink()  # -wal and -shm left behind, as `rm index.sqlite3` would
    first.close()
    async with MemoryStore(workspace, now=lambda: NOW) as second:
        assert await snapshot(second) == before


def _damaged(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "miniclaw" and r.levelno == logging.WARNING]


def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(max(path.stat().st_size, 8192)))


def _corrupt_pages(path: Path) -> None:
    checkpoint(path)
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    assert len(data) > page  # more than one page: the header page is kept intact
    data[page:] = b"\xa5" * (len(data) - page)
    path.write_bytes(bytes(data))


def _old_version(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


@pytest.mark.parametrize(("damage", "word"), [(_garbage, "damaged"),
                                              (_corrupt_pages, "damaged"),
                                              (_old_version, "format")])
async def test_a_damaged_or_old_index_is_rebuilt_with_a_warning(workspace, caplog, damage, word):
    sample_workspace(workspace)
    async with MemoryStore(workspace, now=lambda: NOW) as first:
        before = await snapshot(first)
        path = first.index.path
    damage(path)
    caplog.set_level(logging.WARNING, logger="miniclaw")
    async with MemoryStore(workspace, now=lambda: NOW) as second:
        assert await snapshot(second) == before
    assert any(word in message for message in _damaged(caplog))
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == index_format()
    conn.close()


async def index_of_an_older_version(workspace: Path, *statements: str) -> Path:
    """The sample workspace's index, changed by `statements`, marked as an older format."""
    sample_workspace(workspace)
    async with MemoryStore(workspace, now=lambda: NOW) as first:
        await first.search_memories("apple")
        path = first.index.path
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    return path


async def test_old_version_index_content_is_not_trusted(workspace, caplog):
    await index_of_an_older_version(workspace, "UPDATE entries SET content = 'stale ' || content")
    async with MemoryStore(workspace, now=lambda: NOW) as second:
        found = await second.search_memories("apple", days=None)
    assert found and not any(h.content.startswith("stale") for h in found)


async def test_a_format_change_drops_tables_this_version_does_not_know(workspace):
    """Another miniclaw version may have left a table behind holding words; once they are
    private, no table may still hold them."""
    path = await index_of_an_older_version(
        workspace, "CREATE TABLE other_version_terms (term TEXT)",
        "INSERT INTO other_version_terms VALUES ('zqsecretwordzq')",
        "CREATE VIEW other_version_view AS SELECT term FROM other_version_terms")
    async with MemoryStore(workspace, now=lambda: NOW) as second:
        assert await second.search_memories("apple", days=None)
    checkpoint(path)
    conn = sqlite3.connect(path)
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert not {"other_version_terms", "other_version_view"} & names
    assert b"zqsecretwordzq" not in index_bytes(path)


async def test_a_file_dated_far_ahead_is_not_read_again_by_every_search(store, workspace):
    """Beyond the clock skew of synced machines a future mtime is not racy: else each search
    would re-read the file until that date."""
    path = write(workspace, "memory/2026-02-12.md",
                 "# Daily Note - 2026-02-12\n\n## 09:00:00 UTC\n\napple bread\n")
    far = time.time_ns() + 3 * 365 * 86_400 * 1_000_000_000
    os.utime(path, ns=(far, far))
    assert (await store.refresh_index()).files_parsed == 1
    assert (await store.refresh_index()).files_parsed == 0
    path.write_text(path.read_text().replace("apple", "grape"))  # an edit here: mtime is now
    assert [h.content for h in await store.search_memories("grape")] == ["grape bread"]


async def test_index_is_never_written_inside_the_workspace(store, workspace):
    sample_workspace(workspace)
    before = sorted(p.relative_to(workspace) for p in workspace.rglob("*"))
    await store.search_memories("apple")
    await store.rebuild_index()
    after = sorted(p.relative_to(workspace) for p in workspace.rglob("*"))
    assert after == before
    assert workspace not in store.index.path.parents


async def test_index_lives_under_xdg_cache_miniclaw(store, workspace, isolated_home):
    sample_workspace(workspace)
    await store.search_memories("apple")
    path = store.index.path
    assert path.parent == isolated_home / ".cache" / "miniclaw"
    assert path.exists()


async def test_miniclaw_index_env_overrides_the_path(workspace, tmp_path, monkeypatch,
                                                     isolated_home):
    sample_workspace(workspace)
    custom = tmp_path / "elsewhere" / "my-index.sqlite3"
    monkeypatch.setenv("MINICLAW_INDEX", str(custom))
    async with MemoryStore(workspace, now=lambda: NOW) as store:
        found = await store.search_memories("apple", days=None)
        assert store.index.path == custom
    assert found
    assert custom.exists()
    assert not (isolated_home / ".cache" / "miniclaw").exists()


async def test_index_file_is_private_to_the_user(store, workspace):
    sample_workspace(workspace)
    await store.search_memories("apple")
    for suffix in ("", "-wal", "-shm"):
        part = Path(f"{store.index.path}{suffix}")
        if part.exists():
            assert stat.S_IMODE(part.stat().st_mode) == 0o600, suffix


async def test_index_folder_is_private_to_the_user(store, workspace):
    sample_workspace(workspace)
    await store.search_memories("apple")
    assert stat.S_IMODE(store.index.path.parent.stat().st_mode) == 0o700


async def test_two_workspaces_get_two_index_files(tmp_path):
    paths = []
    for name in ("one", "two"):
        ws = tmp_path / name
        write(ws, "memory/MEMORY.md", f"# Memory\n\n- {name} apple\n")
        async with MemoryStore(ws, now=lambda: NOW) as store:
            [hit] = await store.search_memories("apple")
            assert hit.content == f"{name} apple"
            paths.append(store.index.path)
    assert paths[0] != paths[1]


# -- no private text in the index ----------------------------------------------------------

SECRET = "zanzibarquokka"


async def test_private_text_never_reaches_the_index_bytes(store, workspace):
    write(workspace, "memory/MEMORY.md",
          f"# Memory\n\n## 2026-02-12\n- apple public\n<private>\n- {SECRET}block apple\n"
          f"</private>\n- bread <private>{SECRET}inline</private> visible\n")
    write(workspace, "memory/2026-02-12.md",
          f"---\nprivate: true\n---\n# Daily Note - 2026-02-12\n\n## 09:00:00 UTC\n\n"
          f"{SECRET}front apple\n")
    write(workspace, "memory/2026-02-11.md",
          f"# Daily Note - 2026-02-11\n\n## 09:00:00 UTC\n\napple <private>{SECRET}note"
          f"</private> cloud\n")
    found = await store.search_memories("apple bread cloud", limit=20)
    assert found
    assert all(SECRET not in h.content for h in found)
    assert SECRET.encode() not in index_bytes(store.index.path)
    checkpoint(store.index.path)
    assert SECRET.encode() not in index_bytes(store.index.path)


async def test_text_made_private_later_is_wiped_from_the_index_file(store, workspace):
    path = write(workspace, "memory/MEMORY.md",
                 f"# Memory\n\n## 2026-02-12\n- apple {SECRET} once public\n- bread\n")
    assert await store.search_memories(SECRET)
    checkpoint(store.index.path)
    assert SECRET.encode() in store.index.path.read_bytes()  # the test can see it when there
    path.write_text(f"# Memory\n\n## 2026-02-12\n<private>\n- apple {SECRET} once public\n"
                    "</private>\n- bread\n")
    assert await store.search_memories(SECRET) == []
    checkpoint(store.index.path)
    assert SECRET.encode() not in store.index.path.read_bytes()
    assert SECRET.encode() not in index_bytes(store.index.path)


async def test_deleted_file_text_is_wiped_from_the_index_file(store, workspace):
    path = write(workspace, "memory/2026-02-12.md",
                 f"# Daily Note - 2026-02-12\n\n## 09:00:00 UTC\n\napple {SECRET}\n")
    assert await store.search_memories(SECRET)
    path.unlink()
    assert await store.search_memories("apple") == []
    checkpoint(store.index.path)
    assert SECRET.encode() not in index_bytes(store.index.path)


# -- status and rebuild --------------------------------------------------------------------

async def test_status_reports_an_edited_file_as_stale(store, workspace):
    sample_workspace(workspace)
    await store.search_memories("apple", days=None)
    with open(workspace / "memory/2026-02-12.md", "a") as handle:
        handle.write("\n---\n\n## 11:00:00 UTC\n\ncloud\n")
    status = await store.index_status()
    assert status.stale_files == ("memory/2026-02-12.md",)
    assert not status.up_to_date


async def test_status_reports_a_new_file_as_stale(store, workspace):
    sample_workspace(workspace)
    await store.search_memories("apple", days=None)
    write(workspace, "memory/2026-02-13.md", "# Daily Note - 2026-02-13\n\n## 08:00:00 UTC\n\nx\n")
    assert (await store.index_status()).stale_files == ("memory/2026-02-13.md",)


async def test_status_reports_a_deleted_file_as_missing(store, workspace):
    sample_workspace(workspace)
    await store.search_memories("apple", days=None)
    (workspace / "memory/2025-12-31.md").unlink()
    status = await store.index_status()
    assert status.missing_files == ("memory/2025-12-31.md",)
    assert not status.up_to_date


async def test_status_is_up_to_date_after_a_search(store, workspace):
    sample_workspace(workspace)
    await store.search_memories("apple", days=None)
    with open(workspace / "memory/2026-02-12.md", "a") as handle:
        handle.write("\n---\n\n## 11:00:00 UTC\n\ncloud\n")
    await store.search_memories("cloud", days=None)
    status = await store.index_status()
    assert status.up_to_date
    assert (status.files, status.entries) == (3, len(fresh_entries(workspace)))


async def test_rebuild_gives_the_same_results(store, workspace):
    sample_workspace(workspace)
    before = await snapshot(store)
    report = await store.rebuild_index()
    assert report.files_parsed == 3
    assert await snapshot(store) == before


async def test_rebuild_after_edits_matches_a_fresh_parse(store, workspace):
    sample_workspace(workspace)
    await snapshot(store)
    with open(workspace / "memory/MEMORY.md", "a") as handle:
        handle.write("- grape house\n")
    await store.rebuild_index()
    await assert_index_matches_files(store, workspace)


# -- two processes -------------------------------------------------------------------------

_WRITER = textwrap.dedent("""
    import asyncio, sys
    from miniclaw.memory import MemoryStore
    ws, count, done = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    async def main():
        async with MemoryStore(ws) as store:
            for i in range(count):
                await store.add_daily_note(f"marker entry{i} written by the writer")
                if i % 3 == 0:  # refresh the index from this process too
                    await store.search_memories("marker", days=None, limit=20)
    try:
        asyncio.run(main())
    finally:
        open(done, "w").close()
""")

_SEARCHER = textwrap.dedent("""
    import asyncio, json, os, sys
    from pathlib import Path
    from miniclaw.memory import MemoryStore
    from miniclaw.entries.tokenizer import tokenize
    ws, count, done = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    problems, rounds = [], 0
    async def check(store):
        global rounds
        rounds += 1
        found = await store.search("marker", days=None, limit=20, mode="keyword")
        if len(found.results) != min(20, found.total):
            problems.append(f"{len(found.results)} results for total {found.total}")
        for hit in found.results:
            lines = (ws / hit.path).read_text().split("\\n")
            if "marker" not in tokenize(hit.content) or hit.score != 1.0:
                problems.append(f"bad hit {hit!r}")
            elif lines[hit.line_start - 1] != hit.content:
                problems.append(f"line {hit.line_start} of {hit.path} is not {hit.content!r}")
    async def main():
        async with MemoryStore(ws) as store:
            while not os.path.exists(done) or rounds < 5:
                await check(store)
            await check(store)
            missing = [i for i in range(count)
                       if [h.content for h in await store.search_memories(
                           f"entry{i}", days=None, mode="keyword")]
                       != [f"marker entry{i} written by the writer"]]
        print(json.dumps({"problems": problems[:5], "missing": missing, "rounds": rounds}))
    asyncio.run(main())
""")


_OTHER_PROCESS = textwrap.dedent("""
    import asyncio, sys
    from miniclaw.memory import MemoryStore
    async def main():
        async with MemoryStore(sys.argv[1]) as store:
            await store.add_long_term(sys.argv[2])
            await store.search_memories("apple", days=None)
    asyncio.run(main())
""")

_HOLDER = textwrap.dedent("""
    import asyncio, json, logging, os, subprocess, sys
    from miniclaw.memory import MemoryStore
    logging.basicConfig(level=logging.WARNING)
    ws, other = sys.argv[1], sys.argv[2]
    async def main():
        wrong, vanished = [], []
        async with MemoryStore(ws) as store:
            # A long-lived store (the chat loop) that has searched, some searches at once.
            await asyncio.gather(*(store.search_memories("apple", days=None) for _ in range(4)))
            for i in range(5):
                # Another miniclaw (a CLI call) adds a memory and searches, then exits.
                subprocess.run([sys.executable, "-c", other, ws, f"apple from other {i}"],
                               check=True)
                # SQLite deletes -wal/-shm only when it sees no other user of the index: if
                # they are gone while this store is open, this process's locks were lost.
                vanished += [s for s in ("-wal", "-shm")
                             if not os.path.exists(f"{store.index.path}{s}")]
                got = sorted(h.content for h in await store.search_memories("apple", limit=20))
                want = sorted(["apple pie"] + [f"apple from other {n}" for n in range(i + 1)])
                if got != want:
                    wrong.append(got)
        print(json.dumps({"wrong": wrong, "vanished": vanished}))
    asyncio.run(main())
""")


def test_other_process_using_the_index_does_not_break_an_open_store(workspace):
    # In a subprocess: a crash must fail this test, not the whole run.
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- apple pie\n")
    done = subprocess.run([sys.executable, "-c", _HOLDER, str(workspace), _OTHER_PROCESS],
                          env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "damaged" not in done.stderr
    assert json.loads(done.stdout) == {"wrong": [], "vanished": []}


@pytest.mark.slow
def test_writer_and_searcher_processes_do_not_interfere(workspace, tmp_path, isolated_home):
    count = 40
    done = tmp_path / "writer-done"
    env = {**os.environ, "HOME": str(isolated_home),
           "XDG_CACHE_HOME": str(isolated_home / ".cache"),
           "PYTHONPATH": str(ROOT)}
    searcher = subprocess.Popen([sys.executable, "-c", _SEARCHER, str(workspace), str(count),
                                 str(done)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(workspace), str(count),
                               str(done)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    w_out, w_err = writer.communicate(timeout=300)
    s_out, s_err = searcher.communicate(timeout=300)
    assert writer.returncode == 0, w_err
    assert searcher.returncode == 0, s_err
    assert "locked" not in w_err + s_err
    report = json.loads(s_out)
    assert report["problems"] == []
    assert report["missing"] == []
    assert report["rounds"] >= 5


async def test_rebuild_of_an_index_with_a_stored_fingerprint_reindexes_everything(workspace):
    # Files older than the racy window let the index store its fingerprint of them; a
    # rebuild must still read every file again, not trust that fingerprint.
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-01\n- apple pie\n")
    write(workspace, "memory/2026-02-10.md", "# Daily Note - 2026-02-10\n\n## 09:00:00 UTC\n\napple tart\n")
    for path in (workspace / "memory").iterdir():
        os.utime(path, (1_700_000_000, 1_700_000_000))
    async with MemoryStore(workspace, now=lambda: NOW) as store:
        before = await store.search_memories("apple", days=None, mode="keyword")
        await store.search_memories("apple", days=None, mode="keyword")  # fingerprint stored
        await store.rebuild_index()
        after = await store.search_memories("apple", days=None, mode="keyword")
    assert len(before) == 2
    assert after == before


# -- large refreshes: parsing ahead in a second thread, rows written in batches ---------------

def indexed_rows(index_file: Path) -> tuple[set, set]:
    """(entries, postings) as stored: (path, lines, date, time, text, length) and
    (path, first line, term, tf); no two entries at one place; every stored term has
    postings, every block holds as many as it says (none empty) and only its file's
    entries, and each entry's stored term ids are exactly the terms it has postings of."""
    from array import array

    with sqlite3.connect(index_file) as conn:
        assert conn.execute("SELECT COUNT(*) FROM terms WHERE id NOT IN"
                            " (SELECT term_id FROM blocks)").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM blocks WHERE term_id NOT IN"
                            " (SELECT id FROM terms)").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM blocks WHERE n < 1"
                            " OR n != json_array_length(postings)").fetchone()[0] == 0
        # CROSS JOIN: postings first (SQLite could otherwise read them all again per entry)
        assert conn.execute("SELECT COUNT(*) FROM term_postings p CROSS JOIN entries e"
                            " ON e.id = p.entry_id WHERE e.file_id != p.file_id").fetchone()[0] == 0
        held: dict[int, set] = {}
        for entry_id, term_id in conn.execute(
                "SELECT b.base + (j.value >> 10), b.term_id FROM blocks b, json_each(b.postings) j"):
            held.setdefault(entry_id, set()).add(term_id)
        for entry_id, blob in conn.execute("SELECT id, term_ids FROM entries"):
            ids = array("I")
            ids.frombytes(blob)
            assert sorted(ids) == sorted(held.pop(entry_id, ())), entry_id
        assert not held  # no postings of an entry that is gone
        assert conn.execute("SELECT COUNT(*) FROM (SELECT 1 FROM entries GROUP BY path,"
                            " line_start HAVING COUNT(*) > 1)").fetchone()[0] == 0  # stored once
        entries = set(conn.execute(
            "SELECT path, line_start, line_end, date, time, content, length FROM entries"))
        postings = set(conn.execute(
            "SELECT e.path, e.line_start, p.term, p.tf FROM term_postings p"
            " CROSS JOIN entries e ON e.id = p.entry_id"))
    return entries, postings


def parsed_rows(workspace: Path) -> tuple[set, set]:
    """What `indexed_rows` must give, from a fresh parse of the files."""
    from collections import Counter

    from miniclaw.entries.tokenizer import index_terms

    entries, postings = set(), set()
    for e in fresh_entries(workspace):
        terms = index_terms(e.text)
        entries.add((e.path, e.line_start, e.line_end, e.date.isoformat() if e.date else None,
                     e.time, e.text, len(terms)))
        postings |= {(e.path, e.line_start, term, tf) for term, tf in Counter(terms).items()}
    return entries, postings


def many_files_workspace(workspace: Path, notes: int = 40) -> None:
    """Enough files for the parse-ahead thread, with words repeated inside entries (tf > 1)."""
    write(workspace, "memory/MEMORY.md", long_term(
        ("2026-01-05", [f"{VOCAB[i % 8]} {VOCAB[i % 5]} {VOCAB[i % 8]} fact {i}"
                        for i in range(150)])))
    for n in range(notes):
        day = Date.fromordinal(NOW.date().toordinal() - n).isoformat()
        texts = [f"{VOCAB[(n + i) % 8]} and {VOCAB[i % 8]} again {VOCAB[(n + i) % 8]} {n}-{i}"
                 for i in range(10)]
        write(workspace, f"memory/{day}.md",
              daily_note(day, texts, [f"{9 + i:02d}:00:00" for i in range(10)]))


@pytest.mark.parametrize(("max_params", "ahead_bytes", "sorted_blocks"),
                         [(9000, 32 << 20, 100_000), (999, 1, 50), (13, 2000, 1)])
async def test_a_large_refresh_stores_exactly_what_the_files_hold(workspace, tmp_path,
                                                                   monkeypatch, max_params,
                                                                   ahead_bytes, sorted_blocks):
    """Many files take the parse-ahead path; batches of every size (a limit below one entry
    row's 13 values writes row by row), any read-ahead (1 byte: one file at a time) and
    blocks sorted in groups of any size must store the same rows as a fresh parse."""
    from miniclaw.index import sync

    monkeypatch.setattr(sync, "MAX_BATCH_PARAMS", max_params)
    monkeypatch.setattr(sync, "SORTED_BLOCKS", sorted_blocks)
    monkeypatch.setattr(sync, "PARSE_AHEAD_BYTES", ahead_bytes)
    many_files_workspace(workspace)
    index_file = tmp_path / "index.sqlite3"
    async with MemoryStore(workspace, index_path=index_file, now=lambda: NOW) as store:
        report = await store.refresh_index()
        assert report.files_parsed == 41 >= sync.PARSE_AHEAD_MIN_FILES
        assert indexed_rows(index_file) == parsed_rows(workspace)
        # Edit a third of the notes and delete one: an incremental refresh of many files.
        for n, path in enumerate(sorted((workspace / "memory").glob("2026-*.md"))):
            if n % 3 == 0:
                path.write_text(path.read_text().replace("again", "grape house"))
        next(iter(sorted((workspace / "memory").glob("2026-*.md")))).unlink()
        await store.refresh_index()
        assert indexed_rows(index_file) == parsed_rows(workspace)
        await assert_index_matches_files(store, workspace)


async def test_a_failure_while_parsing_ahead_leaves_the_index_as_it_was(workspace, tmp_path,
                                                                        monkeypatch):
    from miniclaw.index import sync

    many_files_workspace(workspace)
    index_file = tmp_path / "index.sqlite3"
    async with MemoryStore(workspace, index_path=index_file, now=lambda: NOW) as store:
        await store.refresh_index()
        before = indexed_rows(index_file)
        real_parse, calls = sync._parse, []

        def failing_parse(source, source_file, *rest):
            calls.append(source_file.path)
            if len(calls) == 20:
                raise OSError(5, "Input/output error", source_file.path)
            return real_parse(source, source_file, *rest)

        monkeypatch.setattr(sync, "_parse", failing_parse)
        for path in (workspace / "memory").glob("2026-*.md"):
            path.write_text(path.read_text().replace("again", "cloud"))
        with pytest.raises(OSError):
            await store.refresh_index()
        assert indexed_rows(index_file) == before  # rolled back, nothing half-written
        monkeypatch.setattr(sync, "_parse", real_parse)
        await store.refresh_index()
        assert indexed_rows(index_file) == parsed_rows(workspace)


def _third_store_fails(monkeypatch) -> None:
    """The sync's third file write fails as a full disk does (once: the disk is then
    freed)."""
    from miniclaw.index import sync

    real_store, stored = sync._store, []

    def failing_store(conn, parsed_file, *args):
        stored.append(parsed_file.file.path)
        if len(stored) == 3:
            raise OSError(28, "No space left on device")
        return real_store(conn, parsed_file, *args)

    monkeypatch.setattr(sync, "_store", failing_store)


async def test_a_failure_while_writing_stops_the_parse_thread(workspace, tmp_path, monkeypatch):
    """The parse thread must not go on reading every queued file after the writing thread
    failed (or was interrupted): it is stopped before the error leaves the refresh."""
    import threading

    from miniclaw.index import sync

    monkeypatch.setattr(sync, "PARSE_AHEAD_DEPTH", 4)
    many_files_workspace(workspace)
    parsed = []
    real_parse = sync._parse

    def counting_parse(source, source_file, *rest):
        parsed.append(source_file.path)
        return real_parse(source, source_file, *rest)

    monkeypatch.setattr(sync, "_parse", counting_parse)
    _third_store_fails(monkeypatch)
    async with MemoryStore(workspace, index_path=tmp_path / "index.sqlite3", now=lambda: NOW) as store:
        with pytest.raises(OSError):
            await store.refresh_index()
        assert not [t for t in threading.enumerate() if t.name.startswith("miniclaw-parse")]
        assert len(parsed) <= 3 + 4 + 1  # those written, those queued, the one in progress
        await store.refresh_index()
    assert indexed_rows(tmp_path / "index.sqlite3") == parsed_rows(workspace)


@pytest.fixture
def parse_workers(monkeypatch) -> list:
    """Every build of more than a byte parses in another process; the workers started."""
    from miniclaw.index import parse_worker
    from miniclaw.index import sync

    started = []

    class Recorded(parse_worker.ParseWorker):
        def __init__(self):
            self.answered = 0  # files the child parsed (not left to the writer)
            self.parts = 0  # parts of long transcripts it sent
            super().__init__()
            started.append(self)

        def next_result(self):
            found, finished = super().next_result()
            self.answered += finished and found is not parse_worker._GONE
            self.parts += not finished
            return found, finished

    monkeypatch.setattr(sync, "PARSE_PROCESS_BYTES", 1)
    monkeypatch.setattr(parse_worker, "ParseWorker", Recorded)
    return started


def rows_with_transcript(workspace: Path) -> tuple[set, set]:
    """`parsed_rows` and those of `sessions/s1.jsonl`, parsed whole."""
    from collections import Counter

    from miniclaw.sources.base import read_entries
    from miniclaw.sources.transcripts import TranscriptSource

    entries, postings = parsed_rows(workspace)
    path = "sessions/s1.jsonl"
    for e in read_entries(TranscriptSource(), (workspace / path).read_text(), path):
        terms = index_terms(e.text)
        entries.add((path, e.line_start, e.line_end, e.date.isoformat(), e.time, e.text,
                     len(terms)))
        postings |= {(path, e.line_start, term, tf) for term, tf in Counter(terms).items()}
    return entries, postings


def transcript_lines(n: int) -> str:
    return "".join(json.dumps({"role": "user" if i % 2 else "assistant",
                               "content": f"{VOCAB[i % 8]} and {VOCAB[i % 5]} message {i}",
                               "timestamp": "2026-01-02T10:00:00Z"}) + "\n" for i in range(n))


async def test_a_build_parsed_in_another_process_stores_what_the_files_hold(
        workspace, tmp_path, parse_workers, monkeypatch):
    """A large build reads, parses and tokenizes in a child process (`parse_worker`): the
    same rows as a fresh parse, transcripts' tails included (an append is then read alone),
    and the child is gone once the build ends. The child imports the parent's miniclaw, not
    one in the working folder."""
    decoy = tmp_path / "elsewhere" / "miniclaw"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("raise ImportError('another miniclaw')\n")
    monkeypatch.chdir(decoy.parent)
    many_files_workspace(workspace)
    write(workspace, "sessions/s1.jsonl", transcript_lines(30))
    index_file = tmp_path / "index.sqlite3"
    from miniclaw.index import parse_worker

    count = parse_worker.worker_count()
    assert count == min(2, os.cpu_count())  # two on CI's two cores: files answered out of order
    async with MemoryStore(workspace, index_path=index_file, now=lambda: NOW) as store:
        report = await store.refresh_index()
        assert report.files_parsed == 42 and len(parse_workers) == count
        assert sum(worker.answered for worker in parse_workers) == 42
        assert all(worker.proc.returncode is not None for worker in parse_workers)
        assert indexed_rows(index_file) == rows_with_transcript(workspace)
        with open(workspace / "sessions/s1.jsonl", "a", encoding="utf-8") as out:
            out.write(json.dumps({"role": "user", "content": "the appended kiwi message",
                                  "timestamp": "2026-01-02T11:00:00Z"}) + "\n")
        for path in sorted((workspace / "memory").glob("2026-*.md"))[::3]:
            path.write_text(path.read_text().replace("again", "grape house"))
        second = await store.refresh_index()
        assert len(parse_workers) == 2 * count
        assert sum(worker.answered for worker in parse_workers[count:]) == second.files_parsed
        assert indexed_rows(index_file) == rows_with_transcript(workspace)
        assert [h.content for h in await store.search_memories("kiwi")] == [
            "the appended kiwi message"]


@pytest.mark.parametrize("interpreter", ["/nonexistent/python", "/bin/false", ""])
async def test_a_parse_worker_that_cannot_run_leaves_the_parsing_to_the_writer(
        workspace, tmp_path, parse_workers, monkeypatch, interpreter):
    """No interpreter to start (or none known: embedded), or a child that stops at once:
    the build parses the files itself, with the same result."""
    from miniclaw.index import parse_worker

    monkeypatch.setattr(sys, "executable", interpreter)
    many_files_workspace(workspace)
    index_file = tmp_path / "index.sqlite3"
    async with MemoryStore(workspace, index_path=index_file, now=lambda: NOW) as store:
        report = await store.refresh_index()
    assert report.files_parsed == 41 and len(parse_workers) == parse_worker.worker_count()
    assert indexed_rows(index_file) == parsed_rows(workspace)


async def test_a_parse_worker_that_dies_halfway_leaves_its_files_to_the_writer(
        workspace, tmp_path, parse_workers, monkeypatch):
    """A child killed after its first answer (out of memory, say), with a second file
    still sent to it (every worker starts with two): the files it had not answered are
    parsed by the writer, the others by the workers still running; every file is stored
    once, as a fresh parse."""
    from miniclaw.index import parse_worker

    answer = parse_worker.ParseWorker.next_result

    def dying(self):
        if self is parse_workers[0] and self.answered >= 1:
            self.proc.kill()  # and what it had written but not yet read is lost with it
            return parse_worker._GONE, True
        return answer(self)

    monkeypatch.setattr(parse_worker.ParseWorker, "next_result", dying)
    many_files_workspace(workspace)
    index_file = tmp_path / "index.sqlite3"
    async with MemoryStore(workspace, index_path=index_file, now=lambda: NOW) as store:
        report = await store.refresh_index()
    assert report.files_parsed == 41 and parse_workers[0].answered == 1
    assert indexed_rows(index_file) == parsed_rows(workspace)


def _long_transcript(workspace: Path) -> None:
    """`sessions/s1.jsonl` over `appends.PART_BYTES` (two parts), a `<private>` block open
    across the cut, and a few notes."""
    from miniclaw.sources import appends

    write(workspace, "memory/MEMORY.md", long_term(("2026-01-05", ["kiwi orchard fact"])))
    text, n, size = [], 0, 0
    while size < appends.PART_BYTES + (1 << 20):  # messages of ~1 KB: ~9,000 of them
        words = " ".join(f"{VOCAB[(n + i) % 8]}{i % 10}" for i in range(120))  # tf 12
        text.append(json.dumps({"role": "user" if n % 2 else "assistant",
                                "content": f"message {n} {words}",
                                "timestamp": "2026-01-02T10:00:00Z"}) + "\n")
        size += len(text[-1])
        n += 1
    middle = len(text) // 2 + len(text) // 4  # about where the first part ends
    text[middle] = json.dumps({"role": "user", "content": "open <private> hidden kumquat",
                               "timestamp": "2026-01-02T10:00:00Z"}) + "\n"
    text[middle + 1] = json.dumps({"role": "user", "content": "still hidden </private> seen",
                                   "timestamp": "2026-01-02T10:00:00Z"}) + "\n"
    write(workspace, "sessions/s1.jsonl", "".join(text))


@pytest.mark.slow
async def test_a_long_transcript_is_parsed_by_a_worker_part_by_part(
        workspace, tmp_path, parse_workers):
    """A transcript over one part is parsed by a worker too, sent part by part as it is
    read (the writer stores one while the next is parsed), and stored as a fresh parse."""
    _long_transcript(workspace)
    index_file = tmp_path / "index.sqlite3"
    async with MemoryStore(workspace, index_path=index_file, now=lambda: NOW) as store:
        report = await store.refresh_index()
        assert report.files_parsed == 2
        assert sum(worker.parts for worker in parse_workers) == 3  # two parts, then the end
        assert not await store.search_memories("kumquat", days=None)
    assert indexed_rows(index_file) == rows_with_transcript(workspace)


@pytest.mark.slow
async def test_a_worker_that_dies_inside_a_long_transcript_is_followed_from_its_last_part(
        workspace, tmp_path, parse_workers, monkeypatch):
    """A transcript indexed, then grown by more than a part: the worker is killed once it
    has sent the first part of the growth. The writer stored that part and where it ended
    (`_Parsed.tail`), and reads the rest itself from there, not from the tail the build
    started with (which would store the first part twice)."""
    from miniclaw.index import parse_worker

    answer = parse_worker.ParseWorker.next_result
    killing = []

    def dying(self):
        if killing and self.parts:  # killed once it sent a part, the rest of its pipe lost
            self.proc.kill()
            return parse_worker._GONE, True
        return answer(self)

    monkeypatch.setattr(parse_worker.ParseWorker, "next_result", dying)
    _long_transcript(workspace)
    past = time.time_ns() - 3600 * 1_000_000_000  # MEMORY.md settled: not read again
    os.utime(workspace / "memory/MEMORY.md", ns=(past, past))
    path = workspace / "sessions/s1.jsonl"
    grown = path.read_text()
    start = transcript_lines(1000)  # over the 64 KB a tail's mark hashes: an append stays one
    path.write_text(start)
    index_file = tmp_path / "index.sqlite3"
    async with MemoryStore(workspace, index_path=index_file, now=lambda: NOW) as store:
        await store.refresh_index()
        path.write_text(start + grown)
        killing.append(True)
        report = await store.refresh_index()
        assert report.files_parsed == 1 and report.entries_removed == 0  # only appended to
        assert sum(worker.parts for worker in parse_workers[-2:]) == 1
    assert indexed_rows(index_file) == rows_with_transcript(workspace)


def _racing_lines(n: int, tag: str = "") -> str:
    return "".join(json.dumps({"role": "user" if i % 2 else "assistant",
                               "content": f"{tag}apple and pear message {i}",
                               "timestamp": "2026-01-02T10:00:00Z"}) + "\n" for i in range(n))


def _dying_after_a_part(monkeypatch, meanwhile) -> None:
    """Parse workers as the pool gives their answers, in this process: a transcript's first
    part is answered, then `meanwhile()` changes the file, then its worker is gone."""
    from miniclaw.sources import appends
    from miniclaw.index import parse_worker
    from miniclaw.index import sync

    class Pool:
        def __init__(self, count):
            pass

        def results(self, tasks):
            for index, args in enumerate(tasks):
                found = sync._parse_one(*args)
                if isinstance(found, sync._Parsed):
                    yield index, sync._with_blocks(found), True
                    continue
                yield index, sync._with_blocks(next(iter(found))), False
                meanwhile()
                yield index, parse_worker._GONE, True

        def close(self):
            pass

    monkeypatch.setattr(appends, "PART_BYTES", 1500)
    monkeypatch.setattr(sync, "PARSE_PROCESS_BYTES", 1)
    monkeypatch.setattr(parse_worker, "ParsePool", Pool)


def _transcript_rows(index_file) -> tuple[int, int, int]:
    """(entries of the transcript, their distinct places, entries of no file)."""
    with sqlite3.connect(index_file) as conn:
        count, places = conn.execute("SELECT COUNT(*), COUNT(DISTINCT line_start) FROM entries"
                                     " WHERE path = 'sessions/s1.jsonl'").fetchone()
        orphans = conn.execute("SELECT COUNT(*) FROM entries WHERE file_id NOT IN"
                               " (SELECT id FROM files)").fetchone()[0]
    return count, places, orphans


@pytest.mark.parametrize("change", ["deleted", "rewritten", "made private"])
async def test_a_transcript_that_changes_while_its_worker_dies_after_a_part_is_stored_as_it_is(
        workspace, tmp_path, monkeypatch, change):
    """A rewritten transcript is read whole, part by part; its worker dies after one part
    and the file changes again before the writer reads it on. The writer reads it again
    whole, compared with what that part stored: not the rows of before the sync (the part
    was stored twice, its rows outlived a deleted file, a text made private stayed found:
    review of 2026-11-27)."""
    def edited(secret: str) -> str:
        text = _racing_lines(60, "edited ").split("\n")
        text[3] = json.dumps({"role": "user", "content": secret,
                              "timestamp": "2026-01-02T10:00:00Z"})
        return "\n".join(text)

    path = write(workspace, "sessions/s1.jsonl", _racing_lines(60))
    index_file = tmp_path / "index.sqlite3"
    async with MemoryStore(workspace, index_path=index_file, now=lambda: NOW) as store:
        await store.refresh_index()
        path.write_text(edited("the kumquat orchard code is 4471"))
        later = {"deleted": path.unlink,
                 "rewritten": lambda: path.write_text(_racing_lines(60, "rewritten ")),
                 "made private": lambda: path.write_text(
                     edited("<private>the kumquat orchard code is 4471</private>"))}[change]
        _dying_after_a_part(monkeypatch, later)
        await store.refresh_index()
        assert not await store.search_memories("kumquat", days=None)
        if change == "rewritten":
            assert await store.search_memories("rewritten", days=None)
    # a message all private is left out
    expected = {"deleted": (0, 0, 0), "rewritten": (60, 60, 0), "made private": (59, 59, 0)}
    assert _transcript_rows(index_file) == expected[change]
    assert indexed_rows(index_file) == (
        parsed_rows(workspace) if change == "deleted" else rows_with_transcript(workspace))


async def test_a_failure_while_writing_stops_the_parse_worker(workspace, tmp_path,
                                                              parse_workers, monkeypatch):
    many_files_workspace(workspace)
    _third_store_fails(monkeypatch)
    index_file = tmp_path / "index.sqlite3"
    async with MemoryStore(workspace, index_path=index_file, now=lambda: NOW) as store:
        with pytest.raises(OSError):
            await store.refresh_index()
        assert all(w.proc.returncode is not None for w in parse_workers)  # stopped, waited for
        await store.refresh_index()
    assert indexed_rows(index_file) == parsed_rows(workspace)


async def test_same_size_edit_of_a_file_dated_in_the_future_is_seen(store, workspace):
    """A synced note from a machine whose clock is ahead: edited again within the same tick
    there, it comes back with the same size and the same (future) mtime."""
    path = write(workspace, "memory/2026-02-12.md",
                 "# Daily Note - 2026-02-12\n\n## 09:00:00 UTC\n\napple bread\n")
    ahead = time.time_ns() + 30 * 1_000_000_000
    os.utime(path, ns=(ahead, ahead))
    assert len(await store.search_memories("apple")) == 1
    path.write_text(path.read_text().replace("apple", "grape"))
    os.utime(path, ns=(ahead, ahead))
    assert await store.search_memories("apple") == []
    assert [h.content for h in await store.search_memories("grape")] == ["grape bread"]


# -- no deleted text left in the WAL, the postings or undecodable rows -----------------------

async def test_text_made_private_leaves_the_wal_of_a_long_lived_store(store, workspace):
    """A long-lived store (the chat loop) keeps the index open, so no one checkpoints the WAL
    for it: the frames written before the text became private must go anyway."""
    path = write(workspace, "memory/MEMORY.md",
                 f"# Memory\n\n## 2026-02-12\n- apple {SECRET} once public\n- bread\n")
    for _ in range(3):  # from the second search on, the store watches the folder
        assert await store.search_memories(SECRET)
    path.write_text(f"# Memory\n\n## 2026-02-12\n<private>\n- apple {SECRET} once public\n"
                    "</private>\n- bread\n")
    assert await store.search_memories(SECRET) == []
    index = store.index.path
    assert SECRET.encode() not in index.read_bytes()
    wal = Path(f"{index}-wal")
    assert not wal.exists() or SECRET.encode() not in wal.read_bytes()


def _tokenize_differently(text: str) -> tuple[list[str], list[int] | None, int]:
    """Another tokenizer's terms (an upgraded stemmer or Unicode data): not the same ones."""
    terms, frequencies, total = counted_index_terms(text)
    return [f"{term}x" for term in terms], frequencies, total


async def test_text_made_private_after_a_tokenizer_change_leaves_no_posting(store, workspace,
                                                                              monkeypatch):
    path = write(workspace, "memory/MEMORY.md",
                 f"# Memory\n\n## 2026-02-12\n- apple {SECRET} once public\n- bread\n")
    assert await store.search_memories(SECRET)
    monkeypatch.setattr("miniclaw.index.sync.counted_index_terms", _tokenize_differently)
    path.write_text(f"# Memory\n\n## 2026-02-12\n<private>\n- apple {SECRET} once public\n"
                    "</private>\n- bread\n")
    await store.refresh_index()
    with sqlite3.connect(store.index.path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM terms WHERE term = ?", (SECRET,)).fetchone() == (0,)
        orphans = conn.execute("SELECT COUNT(*) FROM term_postings WHERE entry_id NOT IN"
                               " (SELECT id FROM entries)").fetchone()[0]
    assert orphans == 0
    checkpoint(store.index.path)
    assert SECRET.encode() not in index_bytes(store.index.path)


async def test_a_change_of_the_tokenizers_environment_rebuilds_the_index(workspace, caplog,
                                                                          monkeypatch):
    import miniclaw.index.database as database

    sample_workspace(workspace)
    async with MemoryStore(workspace, now=lambda: NOW) as first:
        before = await snapshot(first)
    # A PyStemmer upgrade (its version is part of the index's format).
    monkeypatch.setattr("Stemmer.version", lambda: "99.0.0")
    database.index_format.cache_clear()
    caplog.set_level(logging.WARNING, logger="miniclaw")
    try:
        async with MemoryStore(workspace, now=lambda: NOW) as second:
            assert await snapshot(second) == before
            with sqlite3.connect(second.index.path) as conn:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
        assert version == database.index_format()
    finally:
        monkeypatch.undo()
        database.index_format.cache_clear()
    assert version != database.index_format()
    assert any("format" in message for message in _damaged(caplog))


async def test_a_term_counted_over_1023_times_in_an_entry_is_stored_as_1023(store, workspace):
    """A posting packs its term frequency in 10 bits (`sync.TF_BITS`): more is stored as
    1,023, where BM25 has long saturated; the entry is still found, and first."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-12\n"
          f"- {'apple ' * 1500}pie\n- an apple and a pear\n")
    hits = await store.search_memories("apple", days=None)
    assert [h.content[:11] for h in hits] == ["apple apple", "an apple an"]
    with sqlite3.connect(store.index.path) as conn:
        assert sorted(conn.execute("SELECT tf FROM term_postings WHERE term = 'appl'")) == [
            (1,), (1023,)]


_UNDECODABLE = [
    "UPDATE entries SET date = 'not a date' WHERE date IS NOT NULL",
    "UPDATE entries SET content = X'00ff'",
    "UPDATE entries SET content = CAST(X'ff' || CAST(content AS BLOB) AS TEXT)",
    "UPDATE entries SET line_start = 'one'",
    "UPDATE entries SET line_end = 9223372036854775807",
    "UPDATE entries SET tags = X'00'",
    "UPDATE entries SET time = 'noon' WHERE time IS NOT NULL",
    "UPDATE meta SET value = 'many' WHERE key = 'entries'",
    "UPDATE meta SET value = '-5' WHERE key = 'terms'",
    "UPDATE blocks SET postings = '[1025, 20' || postings",
]


def settled_sample_workspace(workspace: Path) -> None:
    """The sample workspace, written an hour ago: no file is racy, so a search reads the
    index's rows as they are, without parsing any file again."""
    sample_workspace(workspace)
    past = time.time_ns() - 3600 * 1_000_000_000
    for path in (workspace / "memory").iterdir():
        os.utime(path, ns=(past, past))


@pytest.mark.parametrize("statement", _UNDECODABLE)
async def test_rows_the_code_cannot_decode_are_damage_and_rebuilt(workspace, caplog, statement):
    settled_sample_workspace(workspace)
    async with MemoryStore(workspace, now=lambda: NOW) as first:
        before = await snapshot(first)
        path = first.index.path
    with sqlite3.connect(path) as conn:
        assert conn.execute(statement).rowcount > 0
    caplog.set_level(logging.WARNING, logger="miniclaw")
    async with MemoryStore(workspace, now=lambda: NOW) as second:
        assert await snapshot(second) == before
    assert any("damaged" in message for message in _damaged(caplog))
    assert not any("apple" in message for message in _damaged(caplog))  # no row's text


@pytest.mark.parametrize("statement", [
    *(f"UPDATE entries SET term_ids = {blob}" for blob in ("X'0102'", "X'ffffffff'", "'text'")),
    "UPDATE blocks SET postings = '[\"a\"]'",  # a posting that is not a number
    "UPDATE blocks SET postings = '[5120]'",  # an entry the term ids do not name
    "DELETE FROM blocks WHERE term_id = (SELECT id FROM terms WHERE term = 'appl')",
])
async def test_undecodable_term_ids_of_a_removed_entry_are_damage(store, workspace, caplog,
                                                                  statement):
    """Removing an entry reads its term ids and the blocks they name: what does not match
    is damage (rebuilt), never a posting left behind."""
    path = write(workspace, "memory/MEMORY.md",
                 f"# Memory\n\n## 2026-02-12\n- apple {SECRET}\n- bread\n")
    assert await store.search_memories(SECRET)
    with sqlite3.connect(store.index.path) as conn:
        conn.execute(statement)
    caplog.set_level(logging.WARNING, logger="miniclaw")
    path.write_text("# Memory\n\n## 2026-02-12\n- bread\n")
    assert [h.content for h in await store.search_memories("bread")] == ["bread"]
    assert any("damaged" in message for message in _damaged(caplog))
    checkpoint(store.index.path)
    assert SECRET.encode() not in index_bytes(store.index.path)


# -- what the indexer reads is what it opened: no link, no FIFO, the signature of the read ---

class _SwappedAfterScan:
    """The daily notes source, but each scan sees the note as `restore` leaves it, and
    `replace` runs right after: another process replacing the note between the indexer's
    last stat and its read."""

    def __init__(self, restore, replace) -> None:
        from miniclaw.sources.base import DailyNoteSource

        self._source, self._restore, self._replace = DailyNoteSource(), restore, replace
        source = self._source
        self.name, self.label, self.windowed, self.sequence = source.name, source.label, True, True
        self.root_path, self.folders, self.path_of = source.root_path, source.folders, source.path_of
        self.file, self.parse = source.file, source.parse

    def files(self, workspace: Path):
        self._restore()
        found = self._source.files(workspace)
        self._replace()
        return found


def _index_with_swap(workspace: Path, tmp_path: Path, restore, replace):
    from miniclaw.index.search_index import SearchIndex
    from miniclaw.sources.base import LongTermSource

    return SearchIndex(tmp_path / "index.sqlite3", workspace,
                       (LongTermSource(), _SwappedAfterScan(restore, replace)))


def _indexed_paths(index_file: Path) -> dict[str, tuple]:
    with sqlite3.connect(index_file) as conn:
        return {row[0]: row[1:] for row in conn.execute("SELECT path, size, mtime_ns, inode FROM files")}


NOTE = "# Daily Note - 2026-02-12\n\n## 09:00:00 UTC\n\napple bread\n"


@pytest.mark.parametrize("replacement", ["folder", "fifo", "link out", "link loop"])
def test_a_note_replaced_between_scan_and_read_is_skipped_like_a_deleted_one(
        workspace, tmp_path, replacement):
    note = workspace / "memory/2026-02-12.md"
    outside = tmp_path / "outside.md"
    outside.write_text(f"# Daily Note - 2026-02-12\n\n## 09:00:00 UTC\n\napple {SECRET}\n")

    def restore() -> None:
        if note.is_dir() and not note.is_symlink():
            note.rmdir()
        elif note.exists() or note.is_symlink():
            note.unlink()
        note.write_text(NOTE)

    def replace() -> None:
        note.unlink()
        if replacement == "folder":
            note.mkdir()
        elif replacement == "fifo":
            os.mkfifo(note)
        elif replacement == "link out":
            note.symlink_to(outside)
        else:
            note.symlink_to(note)

    index = _index_with_swap(workspace, tmp_path, restore, replace)
    try:
        index.refresh()  # no error, no hang
        assert "memory/2026-02-12.md" not in _indexed_paths(index.path)
    finally:
        index.close()
    checkpoint(index.path)
    assert SECRET.encode() not in index_bytes(index.path)


def test_a_note_changed_between_scan_and_read_is_indexed_with_what_was_read(workspace, tmp_path):
    note = workspace / "memory/2026-02-12.md"
    past = time.time_ns() - 3600 * 1_000_000_000

    def restore() -> None:
        note.write_text(NOTE)
        os.utime(note, ns=(past, past))

    def replace() -> None:
        with open(note, "a") as handle:
            handle.write("\n---\n\n## 10:00:00 UTC\n\ngrape\n")

    index = _index_with_swap(workspace, tmp_path, restore, replace)
    try:
        index.refresh()
        st = note.stat()
        assert _indexed_paths(index.path)["memory/2026-02-12.md"] == (
            st.st_size, st.st_mtime_ns, st.st_ino)
    finally:
        index.close()
