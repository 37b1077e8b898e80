"""The README stays true: its Quickstart is two commands and CI runs the second one."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quickstart_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## Quickstart\n(.*?)^## ", text, re.S | re.M).group(1)
    block = re.search(r"```[a-z]*\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def test_quickstart_is_exactly_two_commands():
    assert len(quickstart_commands()) == 2


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert quickstart_commands()[1] in ci


def test_demo_script_named_in_the_quickstart_exists():
    assert "scripts/demo.sh" in quickstart_commands()[0]
    assert (ROOT / "scripts" / "demo.sh").is_file()


def test_every_cli_command_in_the_readme_table_exists():
    from typer.main import get_command

    from miniclaw.cli import app

    root = get_command(app)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    named = re.findall(r"^\| `miniclaw ([a-z ]+?)(?: [A-Z\[-].*?)?` \|", text, re.M)
    assert len(named) == 15, named
    for words in named:
        command = root
        for word in words.split():
            command = command.commands[word]  # KeyError: the README names a missing command
        assert command.help
