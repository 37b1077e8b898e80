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


@pytest.mark.parametrize("path", sorted(_commands()), ids=" ".join)
def test_an_example_is_a_line_of_its_own_never_wrapped(runner: CliRunner, path):
    """`Example: miniclaw --workspace ./demo` on one line and `init` on the next: the
    example ran on inside a wrapped paragraph, cut where the terminal's width fell, so it
    could not be copied as it was shown."""
    text = runner.invoke(app, [*path, "--help"], terminal_width=80).output
    assert "Example" in text, text  # every command's help ends with an example
    if "Examples:" in text:
        return  # a block, one per line (above)
    [line] = [line for line in text.splitlines() if "Example" in line]
    assert line.startswith("  Example: miniclaw ") or line.startswith("  Example (") or \
        line.startswith("  Example: EDITOR="), text
    after = text.split(line, 1)[1]
    assert after.startswith("\n\n") or after.strip() == "" or after.startswith("\n  Time zone"), text
