"""Shared fixtures: every test runs with HOME, the cache and MINICLAW_* inside tmp_path.

`workspace` is a real workspace folder (with memory/) and `store` a MemoryStore on it whose
clock is fixed at NOW, so dates and the 30-day window are deterministic.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

NOW = datetime(2026, 2, 14, 9, 12, 3, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    for name in ("MINICLAW_HOME", "MINICLAW_WORKSPACE", "MINICLAW_INDEX", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    return ws


@pytest.fixture
def store(workspace: Path):
    from miniclaw.memory import MemoryStore

    memory = MemoryStore(workspace, now=lambda: NOW)
    yield memory
    memory.close()


def write(workspace: Path, rel: str, text: str) -> Path:
    """Write a memory file as a person would, with an editor."""
    path = workspace / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
