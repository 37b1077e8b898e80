"""Fixtures of the reliability suite (see support.py for the helpers)."""

from __future__ import annotations

import importlib
import logging
from pathlib import Path

import pytest

from tests.reliability.support import subprocess_env


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """Environment for `python -m miniclaw` subprocesses: home and cache inside tmp_path."""
    return subprocess_env(tmp_path)


@pytest.fixture(autouse=True)
def restore_cli_globals():
    """The root command adds a handler to the "miniclaw" logger and sets a debug flag:
    undo both after each test so CliRunner runs do not leak into one another."""
    app_module = importlib.import_module("miniclaw.cli.app")
    logger = logging.getLogger("miniclaw")
    saved = (list(logger.handlers), logger.propagate, logger.level, dict(app_module._state))
    yield
    logger.handlers[:] = saved[0]
    logger.propagate, logger.level = saved[1], saved[2]
    app_module._state.clear()
    app_module._state.update(saved[3])
