"""Issue 18, polish: help that people read. A command with several examples lists them in an
`Examples:` block, one per line, rather than run together into one wrapped paragraph."""

from __future__ import annotations

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from miniclaw.cli import app


def _commands(group=None, path=()):
    group = group or get_command(app)
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name)


@pytest.mark.parametrize("path", sorted(_commands()), ids=" ".join)
def test_several_examples_are_one_per_line(runner: CliRunner, path):
    shown = runner.invoke(app, [*path, "--help"], terminal_width=80)
    assert shown.exit_code == 0, shown.output
    text = shown.output
    assert text.count("Example:") <= 1, text  # more than one: an Examples: block
    if "Examples:" in text:
        block = text.split("Examples:", 1)[1].split("\n\n", 1)[0].strip("\n").splitlines()
        assert len(block) >= 2 and all(line.startswith("    ") for line in block), text
