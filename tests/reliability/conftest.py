"""Fixtures of the reliability suite (see support.py for the helpers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.support import subprocess_env


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """Environment for `python -m miniclaw` subprocesses: home and cache inside tmp_path."""
    return subprocess_env(tmp_path)
