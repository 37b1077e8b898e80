"""Shared fixtures: every test runs with HOME, the cache and MINICLAW_* inside tmp_path.

`workspace` is a real workspace folder (with memory/) and `store` a MemoryStore on it whose
clock is fixed at NOW, so dates and the 30-day window are deterministic.

Hypothesis draws the same examples on every run (a seed per test), so a run passes or fails
the same way everywhere. To hunt for new failing examples, run with
`MINICLAW_HYPOTHESIS=explore` (new random examples each run).
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import settings

# No deadline: a test's speed is a benchmark's business, not a unit test's, and on a shared
# 2-core machine a first example (imports, a cold cache) took 0.5 s under load and failed
# the default 200 ms deadline as "flaky" though nothing was wrong.
settings.register_profile("deterministic", derandomize=True, database=None, deadline=None)
settings.register_profile("explore", derandomize=False, database=None, print_blob=True,
                          deadline=None)
settings.load_profile(os.environ.get("MINICLAW_HYPOTHESIS", "deterministic"))

NOW = datetime(2026, 2, 14, 9, 12, 3, tzinfo=timezone.utc)

# A run started in the background without job control (`pytest ... &` in a script) inherits
# Ctrl-C ignored, and so would every miniclaw process the tests start: the tests that press
# Ctrl-C (tests/chat, tests/reliability) then saw no effect, or not, depending on the order
# the tests ran in. They stand for a person at a terminal, where Ctrl-C is live.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_sessionstart(session: pytest.Session) -> None:
    """miniclaw's byte-code written once, as an installed package has it. The suite starts
    hundreds of miniclaw processes, and with PYTHONDONTWRITEBYTECODE set (as on a fresh
    machine here) each compiled the package from source again. Once, by the main process
    (pytest-xdist's workers have `workerinput`)."""
    if hasattr(session.config, "workerinput"):
        return
    import compileall

    import miniclaw

    compileall.compile_dir(Path(miniclaw.__file__).parent, quiet=2)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    for name in ("MINICLAW_HOME", "MINICLAW_WORKSPACE", "MINICLAW_INDEX", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture(autouse=True)
def restore_cli_globals():
    """The root command adds a handler to the "miniclaw" logger and sets a debug flag:
    undo both after each test so CliRunner runs do not leak into one another."""
    app_module = importlib.import_module("miniclaw.cli.app")  # `miniclaw.cli.app` is shadowed
    logger = logging.getLogger("miniclaw")
    saved = (list(logger.handlers), logger.propagate, logger.level, dict(app_module._state))
    yield
    logger.handlers[:] = saved[0]
    logger.propagate, logger.level = saved[1], saved[2]
    app_module._state.clear()
    app_module._state.update(saved[3])


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


def long_term(*sections: tuple[str, list[str]]) -> str:
    """MEMORY.md text: (heading, bullets); a bullet may carry annotation lines after it."""
    out = ["# Memory\n"]
    for header, bullets in sections:
        out.append(f"\n## {header}\n")
        out.extend(f"- {b}\n" for b in bullets)
    return "".join(out)


def daily_note(day: str, texts, times) -> str:
    """A daily note as miniclaw writes it: one `## HH:MM:SS UTC` section per text."""
    parts = [f"# Daily Note - {day}\n"]
    for i, (when, text) in enumerate(zip(times, texts)):
        if i:
            parts.append("\n---\n")
        parts.append(f"\n## {when} UTC\n\n{text}\n")
    return "".join(parts)


def write(workspace: Path, rel: str, text: str) -> Path:
    """Write a memory file as a person would, with an editor."""
    path = workspace / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
