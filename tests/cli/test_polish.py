"""Issue 18, polish: shell completion, help with examples and choices, status naming its
workspace, a warning for unknown config keys, and `index prune`."""

from __future__ import annotations

import json
import os
import shutil
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miniclaw.cli import app
from tests.cli.test_cli import run
from tests.conftest import write


def complete(words: str, *, cword: int) -> list[str]:
    """What bash completion offers for `words` (a real process, as the shell runs it)."""
    env = {**os.environ, "_MINICLAW_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(cword)}
    proc = subprocess.run([sys.executable, "-m", "miniclaw"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_bash_completion_offers_commands_and_options():
    assert complete("miniclaw mem", cword=1) == ["memory"]
    assert "forget" in complete("miniclaw memory ", cword=2)
    assert "--since" in complete("miniclaw search --si", cword=2)


def test_show_completion_prints_a_script():
    """As typed at a bash prompt: Typer finds the shell among the process's parents, so the
    command runs under a real bash (pytest's own parents may hold none, e.g. under setsid)."""
    command = f"{shlex.quote(sys.executable)} -m miniclaw --show-completion; exit $?"
    proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "_MINICLAW_COMPLETE=complete_bash" in proc.stdout


def test_root_help_has_examples(runner: CliRunner):
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "Examples:\n    miniclaw init" in result.stdout
    assert "--install-completion" in result.stdout
    for command in ("search", "index", "memory", "chat"):
        assert f"\n  {command} " in result.stdout


def test_help_lists_the_choices(runner: CliRunner):
    result = runner.invoke(app, ["search", "--help"])
    for choices in ("[text|json|markdown|ef|mnemonic]", "[bm25|hybrid|vector|keyword|auto]"):
        assert choices in result.stdout
    # sources are configurable, so the help names the built-in ones and where others come from
    flat = " ".join(result.stdout.split())
    assert "(long_term, daily_note, transcripts, or one config.json adds)" in flat


def test_status_names_its_workspace(runner: CliRunner, workspace: Path):
    text = run(runner, workspace, "memory", "status")
    assert text.stdout.splitlines()[0] == f"Workspace: {workspace}"
    data = json.loads(run(runner, workspace, "memory", "status", "--json").stdout)
    assert data["workspace"] == str(workspace)


def test_unknown_config_keys_are_warned_about(runner: CliRunner, workspace: Path,
                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    write(tmp_path / "mh", "config.json", '{"llm": {"modle": "x"}, "timezon": "UTC"}')
    monkeypatch.setenv("MINICLAW_HOME", str(tmp_path / "mh"))
    result = run(runner, workspace, "chat", "--once", "hello")
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert len(warnings) == 2
    assert "unknown setting 'llm.modle' is ignored (did you mean 'model'?)" in warnings[0]
    assert "unknown setting 'timezon' is ignored (did you mean 'timezone'?)" in warnings[1]


def test_a_workspace_setting_misspelt_is_warned_about(runner: CliRunner, workspace: Path,
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`"source": [...]` in a workspace's object was ignored in silence: every built-in
    source was searched and the one configured never was."""
    config = {"workspaces": {str(workspace): {"source": ["long_term"], "roots": []},
                             "~/other": {"sources": ["daily_note"], "rots": []}}}
    write(tmp_path / "mh", "config.json", json.dumps(config))
    monkeypatch.setenv("MINICLAW_HOME", str(tmp_path / "mh"))
    result = run(runner, workspace, "search", "anything")
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert len(warnings) == 2, result.stderr
    assert (f"unknown setting 'workspaces[{json.dumps(str(workspace))}].source' is ignored "
            "(did you mean 'sources'?)") in warnings[0]
    assert """unknown setting 'workspaces["~/other"].rots' is ignored (did you mean 'roots'?)""" \
        in warnings[1]


def test_known_config_keys_are_not_warned_about(runner: CliRunner, workspace: Path,
                                                tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    write(tmp_path / "mh", "config.json", '{"llm": {"provider": "echo", "deadline": 30}}')
    monkeypatch.setenv("MINICLAW_HOME", str(tmp_path / "mh"))
    result = run(runner, workspace, "chat", "--once", "hello")
    assert result.exit_code == 0 and "Warning" not in result.stderr


def test_index_prune_removes_only_indexes_of_gone_workspaces(runner: CliRunner, tmp_path: Path,
                                                            isolated_home: Path):
    kept, gone = tmp_path / "kept", tmp_path / "gone"
    for ws in (kept, gone):
        assert run(runner, ws, "init").exit_code == 0
        run(runner, ws, "memory", "add", "a kayak note")
        assert run(runner, ws, "search", "kayak").exit_code == 0
    cache = isolated_home / ".cache" / "miniclaw"
    stranger = cache / "notes.sqlite3"
    stranger.write_bytes(b"not ours at all")
    shutil.rmtree(gone)
    before = sorted(p.name for p in cache.iterdir())

    dry = run(runner, kept, "index", "prune", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.stderr
    report = json.loads(dry.stdout)
    assert [o["workspace"] for o in report["would_remove"]] == [str(gone)]
    assert sorted(p.name for p in cache.iterdir()) == before

    done = run(runner, kept, "index", "prune")
    assert done.exit_code == 0, done.stderr
    assert "Removed 1 index file" in done.stdout
    left = sorted(p.name for p in cache.iterdir())
    assert not any(name.startswith("gone-") for name in left)
    assert any(name.startswith("kept-") for name in left) and "notes.sqlite3" in left
    assert run(runner, kept, "search", "kayak").exit_code == 0  # the live index still works
    again = json.loads(run(runner, kept, "index", "prune", "--json").stdout)
    assert again["removed"] == []


def test_index_prune_passes_over_a_fifo_or_a_folder_named_like_an_index(tmp_path: Path,
                                                                        isolated_home: Path):
    """Issue 38: prune opened every *.sqlite3 of the cache folder with a plain open(): a
    FIFO there (or as an index's -wal) hung it for ever. A real process, with a timeout."""
    runner = CliRunner()
    kept, gone = tmp_path / "kept", tmp_path / "gone"
    for ws in (kept, gone):
        assert run(runner, ws, "init").exit_code == 0
        run(runner, ws, "memory", "add", "a kayak note")
        assert run(runner, ws, "search", "kayak").exit_code == 0
    cache = isolated_home / ".cache" / "miniclaw"
    os.mkfifo(cache / "pipe.sqlite3")
    kept_index = next(cache.glob("kept-*.sqlite3"))
    os.mkfifo(f"{kept_index}-wal.sqlite3")  # a FIFO named like a WAL, and one as a WAL:
    other = cache / "other.sqlite3"
    shutil.copy(kept_index, other)
    os.mkfifo(f"{other}-wal")
    (cache / "folder.sqlite3").mkdir()
    shutil.rmtree(gone)
    done = subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", str(kept), "index",
                           "prune", "--json"], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert [o["workspace"] for o in json.loads(done.stdout)["removed"]] == [str(gone)]
    assert (cache / "pipe.sqlite3").exists() and (cache / "folder.sqlite3").is_dir()
    assert other.exists() and kept_index.exists()


@pytest.mark.parametrize("command", [("search",), ("memory", "rank"), ("sessions", "search"),
                                     ("context",)])
def test_a_query_that_starts_with_a_minus_word_is_shown_how_to_give_it(
        runner: CliRunner, workspace: Path, command):
    """`-draft` reads as options (-d raft) to the parser: the error says to put the query
    after --, quoted, and that way it is a search."""
    from tests.cli.test_cli import assert_usage_error

    line = assert_usage_error(run(runner, workspace, *command, "-draft", "notes"))
    assert f'miniclaw {" ".join(command)} -- "-draft ..."' in line
    if command != ("context",):
        assert run(runner, workspace, *command, "--", "-draft notes").exit_code == 0


def test_an_unknown_option_of_a_command_without_a_query_gets_no_query_hint(
        runner: CliRunner, workspace: Path):
    from tests.cli.test_cli import assert_usage_error

    assert assert_usage_error(run(runner, workspace, "doctor", "-xyz")) == \
        "Error: No such option: -x"
