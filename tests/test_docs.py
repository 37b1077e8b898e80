"""The docs stay true: the README's Quickstart is two commands and CI runs the second one;
on the README and on every docs/*.md page, the commands and options the examples use exist,
each command is in a table, the links lead somewhere, an example that shows an error gives
that error when run, and a block marked REPLAYED prints what it shows when run again on the
demo's workspace (days, times, session ids and absolute paths aside)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]


def read(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def quickstart_commands() -> list[str]:
    section = re.search(r"^## Quickstart\n(.*?)^## ", read(README), re.S | re.M).group(1)
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


def root_command():
    from typer.main import get_command

    from miniclaw.cli import app

    return get_command(app)


def leaves(group, path=()):
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from leaves(command, (*path, name))
        else:
            yield " ".join((*path, name))


def table_commands(page: Path) -> list[str]:
    """The commands a page's tables name in their first column: `| `miniclaw memory add TEXT` |`."""
    return re.findall(r"^\| `miniclaw ([a-z_ ]+?)(?: [A-Z\[(-].*?)?` \|", read(page), re.M)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_cli_command_a_table_names_exists(page):
    root = root_command()
    for words in table_commands(page):
        command = root
        for word in words.split():
            command = command.commands[word]  # KeyError: the page names a missing command
        assert command.help


def test_every_command_is_in_a_table():
    named = {words for page in PAGES for words in table_commands(page)}
    assert sorted(leaves(root_command())) == sorted(named & set(leaves(root_command())))


# -- the examples: `$ miniclaw ...` lines in fenced blocks, each followed by its output -------

def blocks(page: Path) -> list[str]:
    return re.findall(r"^```[a-z]*\n(.*?)^```", read(page), re.S | re.M)


def examples(block: str) -> list[tuple[str, list[str]]]:
    """Each `$ command` line of a block with the output lines shown under it."""
    found: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            found.append((line[2:], []))
        elif found:
            found[-1][1].append(line)
    return found


class Run:
    """A shell line of an example as miniclaw sees it: env, argv after `miniclaw`, stdin."""

    def __init__(self, line: str):
        line = line.strip()
        shown_exit = re.sub(r";\s*echo \"exit \$\?\"$", "", line)
        self.echoes_exit = shown_exit != line  # the output ends with `exit N`
        line = shown_exit
        self.stdin = ""
        piped = re.match(r"echo (\"[^\"]*\"|'[^']*') \| (.*)$", line)
        if piped:
            self.stdin = shlex.split(piped.group(1))[0] + "\n"
            line = piped.group(2)
        line = line.replace(" < /dev/null", "")
        words = shlex.split(line)
        self.env = {}
        while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
            key, value = words.pop(0).split("=", 1)
            self.env[key] = value
        self.argv = words[1:] if words and words[0] == "miniclaw" else None


def runs(page: Path):
    for block in blocks(page):
        for line, output in examples(block):
            run = Run(line)
            if run.argv is not None:
                yield line, run, output


PAGES_WITH_EXAMPLES = [page for page in PAGES if any(runs(page))]


def option(command, name: str):
    for param in command.params:
        if param.param_type_name == "option" and name in (*param.opts, *param.secondary_opts):
            return param
    return None


@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES, ids=page_id)
def test_examples_use_commands_and_options_that_exist(page):
    root = root_command()
    for line, run, _ in runs(page):
        command, args = root, list(run.argv)
        while args:
            word = args.pop(0)
            if word.startswith("-") and word != "-" and not word.startswith(('"', "'")):
                name = word.split("=", 1)[0]
                if name == "--help":
                    continue
                param = option(command, name)
                assert param is not None, f"{page_id(page)}: `{line}`: no option {name}"
                if not (param.is_flag or param.count) and "=" not in word:
                    args.pop(0)  # its value
            elif hasattr(command, "commands"):
                assert word in command.commands, f"{page_id(page)}: `{line}`: no command {word}"
                command = command.commands[word]
        assert not hasattr(command, "commands"), f"{page_id(page)}: `{line}` names a group"


def _path_free(text: str) -> str:
    """Absolute paths differ between the machine an example ran on and this test's."""
    return re.sub(r"(?<![\w.])/[^\s:]*", "<path>", text.strip())


def error_blocks():
    """(page, block) for each block with an example whose whole output is one `Error:` line."""
    for page in PAGES_WITH_EXAMPLES:
        for block in blocks(page):
            for line, output in examples(block):
                shown = [text for text in output if text.strip()]
                if Run(line).argv is not None and len(shown) == 1 and shown[0].startswith("Error:"):
                    yield pytest.param(page, block, id=f"{page_id(page)}:{line[:40]}")
                    break


@pytest.mark.parametrize(("page", "block"), list(error_blocks()))
def test_an_example_error_is_the_error_miniclaw_gives(page, block, tmp_path):
    """The block is replayed in a new workspace (`demo-workspace`, and the default one), by
    `python -m miniclaw`: its commands before the error set up what the error needs."""
    env = {**os.environ, "NO_COLOR": "1"}
    miniclaw = [sys.executable, "-m", "miniclaw"]
    for workspace in (["--workspace", "demo-workspace"], []):
        subprocess.run([*miniclaw, *workspace, "init"], cwd=tmp_path, env=env, check=True,
                       capture_output=True)
    for line, output in examples(block):
        run = Run(line)
        if run.argv is None:
            continue
        done = subprocess.run([*miniclaw, *run.argv], cwd=tmp_path, env={**env, **run.env},
                              input=run.stdin, capture_output=True, text=True, timeout=60)
        shown = [text for text in output if text.strip()]
        if len(shown) == 1 and shown[0].startswith("Error:"):
            assert done.returncode != 0, line
            assert _path_free(done.stderr) == _path_free(shown[0]), line


# -- examples replayed whole on the demo's workspace ------------------------------------------

REPLAYED = "<!-- tests/test_docs.py replays this block on the demo's workspace -->"


def replayed_blocks():
    for page in PAGES:
        pattern = re.escape(REPLAYED) + r"\n```[a-z]*\n(.*?)^```"
        for number, block in enumerate(re.findall(pattern, read(page), re.S | re.M), 1):
            yield pytest.param(block, id=f"{page_id(page)}:{number}")


def demo_adds() -> list[list[str]]:
    """The `memory add` commands of scripts/demo.sh, as argv after `miniclaw`."""
    adds = []
    for line in (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8").splitlines():
        if line.startswith('run "$miniclaw"') and " memory add " in line:
            words = shlex.split(line)[2:]
            adds.append(["demo-workspace" if word == "$ws" else word for word in words])
    assert adds, "scripts/demo.sh adds no memory"
    return adds


def _comparable(text: str) -> str:
    """What an example shows that does not depend on the day, the clock or the machine: days,
    times and session ids replaced, absolute paths too; and the suggestion of --mode hybrid,
    which shows only where the optional embedding model is installed."""
    lines = [line for line in text.strip().splitlines() if "--mode hybrid: it finds" not in line]
    text = "\n".join(lines)
    text = re.sub(r"\d{8}-\d{6}-[0-9a-f]{6}", "<session>", text)
    text = re.sub(r"\d{4}-\d{2}-\d{2}", "<day>", text)
    text = re.sub(r"\d{2}:\d{2}:\d{2}", "<time>", text)
    return _path_free(text)


@pytest.mark.parametrize("block", list(replayed_blocks()))
def test_a_replayed_example_shows_what_miniclaw_prints(block, tmp_path):
    """The workspace is the demo's (scripts/demo.sh), less the adds the block itself shows;
    then each command of the block runs (`python -m miniclaw`) and prints what the page says:
    stdout, then stderr (and `exit N` where the line echoes it)."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("MINICLAW_LLM_", "MINICLAW_TIMEZONE"))}
    env["NO_COLOR"] = "1"
    miniclaw = [sys.executable, "-m", "miniclaw"]
    lines = [(Run(line), output) for line, output in examples(block)]
    shown = [run.argv for run, _ in lines]
    for argv in [["--workspace", "demo-workspace", "init"],
                 *(add for add in demo_adds() if add not in shown)]:
        subprocess.run([*miniclaw, *argv], cwd=tmp_path, env=env, check=True, capture_output=True)
    for run, output in lines:
        assert run.argv is not None, "a replayed block runs miniclaw only"
        done = subprocess.run([*miniclaw, *run.argv], cwd=tmp_path, env={**env, **run.env},
                              input=run.stdin, capture_output=True, text=True, timeout=120)
        printed = done.stdout + done.stderr + (f"exit {done.returncode}\n" if run.echoes_exit else "")
        assert _comparable(printed) == _comparable("\n".join(output)), run.argv


# -- links -------------------------------------------------------------------------------------

def anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"^```.*?^```", "", read(page), flags=re.S | re.M)
    headings = re.findall(r"^#+ (.*)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_links_lead_to_a_file_and_heading_that_exist(page):
    for target in re.findall(r"\]\(([^)\s]+)\)", read(page)):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page_id(page)}: {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in anchors(linked), f"{page_id(page)}: {target}"
