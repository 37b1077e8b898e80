"""Fixtures for CLI tests: a CliRunner, and the CLI's process-wide settings put back."""

from __future__ import annotations

import logging

import pytest
from typer.testing import CliRunner


@pytest.fixture(autouse=True)
def restore_cli_globals():
    """The root command configures the "miniclaw" logger and a debug flag; undo it after."""
    import importlib

    app_module = importlib.import_module("miniclaw.cli.app")  # `miniclaw.cli.app` is shadowed

    logger = logging.getLogger("miniclaw")
    saved = (list(logger.handlers), logger.propagate, logger.level, dict(app_module._state))
    yield
    logger.handlers[:] = saved[0]
    logger.propagate, logger.level = saved[1], saved[2]
    app_module._state.clear()
    app_module._state.update(saved[3])


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()
