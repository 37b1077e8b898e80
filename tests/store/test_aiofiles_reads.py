"""The store's and the context's whole-file reads go through aiofiles (issue 33), and keep
every guarantee of the shared open: a FIFO is refused without blocking, a symlink out of the
workspace is not followed, a link inside it is, the size cap holds. A spy on `aiofiles.open`
proves the reads took that path (the CLI-level FIFO and link tests in
tests/reliability/test_boundaries.py cover the same commands without saying how they read)."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import aiofiles
import pytest

from miniclaw.context import ContextBuilder
from miniclaw.fs import files
from miniclaw.memory import MemoryStore
from tests.conftest import NOW, write

TODAY = NOW.date()
SECRET = "zqoutsidezq"


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths aiofiles was asked to open (the real open still runs)."""
    seen: list[str] = []
    real = aiofiles.open

    def spy(path, *args, **kwargs):
        seen.append(Path(path).name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(aiofiles, "open", spy)
    return seen


@pytest.fixture
def log(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch):
    caplog.set_level(logging.WARNING, logger="miniclaw")
    monkeypatch.setattr(logging.getLogger("miniclaw"), "propagate", True)
    return caplog


def _outside(tmp_path: Path, name: str, text: str) -> Path:
    target = tmp_path / "outside" / name
    target.parent.mkdir(exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


async def test_a_fifo_named_like_a_note_or_identity_file_is_refused_without_blocking(
        workspace, opened, log):
    os.mkfifo(workspace / "memory/MEMORY.md")
    os.mkfifo(workspace / f"memory/{TODAY.isoformat()}.md")
    os.mkfifo(workspace / "SOUL.md")
    write(workspace, "USER.md", "# User\n\nlikes kayaks\n")
    async with MemoryStore(workspace, now=lambda: NOW) as store:
        # No writer ever opens these FIFOs: a blocking open would hang until the timeout.
        long, day = await asyncio.wait_for(
            asyncio.gather(store.read_long_term(), store.read_day(TODAY)), 10)
        identity = await asyncio.wait_for(ContextBuilder(store)._identity(), 10)
    assert long == [] and day == []
    assert identity == [("USER.md", "# User\n\nlikes kayaks")]
    assert {"MEMORY.md", f"{TODAY.isoformat()}.md", "SOUL.md", "USER.md"} <= set(opened)
    for name in ("MEMORY.md", f"{TODAY.isoformat()}.md", "SOUL.md"):
        assert any(name in m and "not a regular file" in m for m in log.messages), name


async def test_a_symlink_out_of_the_workspace_is_not_followed_one_inside_is(
        workspace, tmp_path, opened, log):
    (workspace / "memory/MEMORY.md").symlink_to(
        _outside(tmp_path, "memory.md", f"# Memory\n\n## 2026-02-01\n- {SECRET} fact\n"))
    (workspace / "USER.md").symlink_to(_outside(tmp_path, "user.md", f"{SECRET} user\n"))
    write(workspace, "notes/day.md", "# Daily Note\n\n## 09:00:00 UTC\n\ninside link note\n")
    (workspace / f"memory/{TODAY.isoformat()}.md").symlink_to("../notes/day.md")
    async with MemoryStore(workspace, now=lambda: NOW) as store:
        long = await store.read_long_term()
        day = await store.read_day(TODAY)
        identity = await ContextBuilder(store)._identity()
        listed = await store.read_file(f"memory/{TODAY.isoformat()}.md")
    assert long == [] and identity == []
    assert [e.text for e in day] == [e.text for e in listed] == ["inside link note"]
    assert {"MEMORY.md", "USER.md", f"{TODAY.isoformat()}.md"} <= set(opened)
    assert SECRET not in log.text
    for name in ("MEMORY.md", "USER.md"):
        assert any(name in m and "symlink out of the workspace" in m
                   for m in log.messages), name


async def test_the_cap_and_a_missing_file_read_as_the_thread_read_does(
        workspace, monkeypatch, opened):
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 64)
    big = write(workspace, "SOUL.md", "x" * 100)
    with pytest.raises(files.NotMemoryFileError, match="is over"):
        await files.read_bytes_async(big, workspace, "SOUL.md")
    assert await files.read_bytes_async(big, workspace, "SOUL.md", capped=False) == b"x" * 100
    assert await files.read_bytes_async(workspace / "none.md", workspace) is None
    assert opened == ["SOUL.md", "SOUL.md", "none.md"]
