"""Issue 18, forgetting and fixing: `memory forget CITATION | -q QUERY` and `memory edit`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from miniclaw.errors import MiniclawError, UsageError
from tests.cli.test_cli import assert_usage_error, run, snapshot
from tests.conftest import write

NOTE = """# Daily Note - 2026-02-14

## 09:00:00 UTC

Booked the kayak for Saturday

---

## 10:00:00 UTC

Wifi password is <private>hunter2</private> now rotated
<!-- @category: decision -->
<!-- @tag: home -->

---

## 11:00:00 UTC

Lunch with Sam about the atlas budget
"""

LONG = """# Memory

## 2026-02-01
- Prefers dark roast coffee (added at 2026-02-01T08:00:00Z)
- Old wifi password is <private>hunter2</private> gone (added at 2026-02-01T08:01:00Z)
<!-- @category: fact -->
- Allergic to peanuts (added at 2026-02-01T08:02:00Z)
"""


@pytest.fixture
def notes(workspace: Path) -> Path:
    write(workspace, "memory/2026-02-14.md", NOTE)
    write(workspace, "memory/MEMORY.md", LONG)
    return workspace


def entries(runner: CliRunner, ws: Path, *args: str) -> list[dict]:
    result = run(runner, ws, "memory", "read", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["entries"]


def test_forget_a_cited_daily_entry_removes_its_section_only(runner: CliRunner, notes: Path):
    path = notes / "memory/2026-02-14.md"
    path.chmod(0o640)
    result = run(runner, notes, "memory", "forget", "memory/2026-02-14.md:11", "--yes")
    assert result.exit_code == 0, result.stderr
    assert "Forgot 1 memory: memory/2026-02-14.md:11" in result.stdout
    assert "hunter2" not in result.stdout
    assert path.read_text() == NOTE.replace(
        "## 10:00:00 UTC\n\nWifi password is <private>hunter2</private> now rotated\n"
        "<!-- @category: decision -->\n<!-- @tag: home -->\n\n---\n\n", "")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    left = [e["content"] for e in entries(runner, notes, "--date", "2026-02-14")]
    assert left == ["Booked the kayak for Saturday", "Lunch with Sam about the atlas budget"]


def test_forget_the_last_section_takes_its_separator(runner: CliRunner, notes: Path):
    result = run(runner, notes, "memory", "forget", "memory/2026-02-14.md:19", "--yes")
    assert result.exit_code == 0, result.stderr
    text = (notes / "memory/2026-02-14.md").read_text()
    assert text.endswith("<!-- @tag: home -->\n")
    assert "atlas" not in text


def test_forget_a_long_term_bullet_with_its_annotation(runner: CliRunner, notes: Path):
    result = run(runner, notes, "memory", "forget", "memory/MEMORY.md:5", "--yes", "--json")
    assert result.exit_code == 0, result.stderr
    gone = json.loads(result.stdout)["forgotten"]
    assert [g["content"] for g in gone] == ["Old wifi password is  gone"]
    assert (notes / "memory/MEMORY.md").read_text() == LONG.replace(
        "- Old wifi password is <private>hunter2</private> gone (added at "
        "2026-02-01T08:01:00Z)\n<!-- @category: fact -->\n", "")


def test_forget_by_query_shows_then_removes_the_best_match(runner: CliRunner, notes: Path):
    result = run(runner, notes, "memory", "forget", "-q", "peanuts", "--yes")
    assert result.exit_code == 0, result.stderr
    assert "Allergic to peanuts" in result.stdout  # what it removes is shown
    assert "peanuts" not in (notes / "memory/MEMORY.md").read_text()
    after = run(runner, notes, "search", "peanuts", "--all", "--json")  # the index follows
    assert json.loads(after.stdout)["results"] == []


def test_forget_without_yes_off_a_terminal_refuses(runner: CliRunner, notes: Path):
    before = snapshot(notes)
    line = assert_usage_error(run(runner, notes, "memory", "forget", "memory/MEMORY.md:4"))
    assert "--yes" in line
    assert snapshot(notes) == before


@pytest.mark.parametrize("args", [
    ["memory/MEMORY.md:6"],  # an annotation line, not the start of an entry
    ["memory/MEMORY.md:4-9"],  # the right start with the wrong end
    ["notes.md:1"], ["memory/MEMORY.md"], ["../memory/MEMORY.md:4"],
    [],  # neither a citation nor -q
    ["memory/MEMORY.md:4", "-q", "coffee"],  # both
])
def test_bad_citations_are_usage_errors(runner: CliRunner, notes: Path, args):
    before = snapshot(notes)
    assert_usage_error(run(runner, notes, "memory", "forget", *args, "--yes"))
    assert snapshot(notes) == before


def test_forget_refuses_when_the_file_changed_since_the_citation(notes: Path):
    from miniclaw.memory import MemoryStore
    from miniclaw.store.forget import find, forget

    async def scenario():
        async with MemoryStore(notes) as store:
            cited = await find(store, "memory/MEMORY.md:4")
            path = notes / "memory/MEMORY.md"
            # Someone edits the file: line 4 now holds another memory.
            path.write_text(LONG.replace("- Prefers dark roast", "- Prefers green tea"))
            changed = path.read_bytes()
            with pytest.raises(UsageError, match="changed since it was cited"):
                await forget(store, [cited])
            assert path.read_bytes() == changed

    asyncio.run(scenario())


def test_edit_opens_the_editor_at_the_cited_line(runner: CliRunner, notes: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch):
    record = tmp_path / "argv.json"
    editor = tmp_path / "editor.py"
    editor.write_text(f"import json, sys\nopen({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    monkeypatch.delenv("VISUAL", raising=False)
    result = run(runner, notes, "memory", "edit", "memory/2026-02-14.md:19")
    assert result.exit_code == 0, result.stderr
    assert json.loads(record.read_text()) == ["+19", str(notes / "memory/2026-02-14.md")]


def test_edit_without_an_editor_is_a_usage_error(runner: CliRunner, notes: Path,
                                                 monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    assert "$EDITOR" in assert_usage_error(run(runner, notes, "memory", "edit", "memory/MEMORY.md:4"))


# -- forgetting never reveals private text ------------------------------------------------

_PIECES = st.sampled_from([
    "- alpha fact", "- beta <private>secret one</private> fact", "- gamma <private>secret",
    "secret two</private> delta", "<!-- @category: fact -->", "", "## 2026-02-01",
    "## 09:00:00 UTC", "---", "plain paragraph", "  - indented secret?</private>",
    "<private>", "</private>", "epsilon <private>secret three",
])


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_PIECES, max_size=14), daily=st.booleans())
def test_forgetting_any_entry_keeps_private_text_hidden(workspace: Path, lines, daily):
    """Whatever the file, forgetting one entry either refuses (nothing written) or leaves
    exactly the other entries, with no private text shown."""
    from miniclaw.memory import MemoryStore
    from miniclaw.store.forget import forget

    name = "memory/2026-02-14.md" if daily else "memory/MEMORY.md"
    text = "\n".join(lines) + "\n"
    path = workspace / name

    async def scenario():
        async with MemoryStore(workspace) as store:
            read = (lambda: store.read_day(__import__("datetime").date(2026, 2, 14))) if daily \
                else store.read_long_term
            for target in await read():
                path.write_text(text)
                before = await read()
                try:
                    await forget(store, [target])
                except MiniclawError:
                    assert path.read_text() == text
                    continue
                after = await read()
                assert len(after) == len(before) - 1
                assert not any("secret" in e.text for e in after if not any(
                    "secret" in b.text and b.text == e.text for b in before))

    asyncio.run(scenario())
    for stray in path.parent.glob(".*.tmp"):
        raise AssertionError(f"temporary file left: {stray}")


def test_forget_memory_tool_needs_someone_to_confirm_and_a_writable_server(notes: Path):
    from miniclaw.memory import MemoryStore
    from miniclaw.memory_tools import MemoryTools

    async def yes(entry) -> bool:
        return True

    async def scenario():
        async with MemoryStore(notes) as store:
            unattended = MemoryTools(store)
            assert "forget_memory" not in [s.name for s in unattended.specs()]
            with pytest.raises(UsageError, match="no user is here to confirm"):
                await unattended.call("forget_memory", {"citation": "memory/MEMORY.md:4"})
            read_only = MemoryTools(store, read_only=True, confirm=yes)
            assert "forget_memory" not in [s.name for s in read_only.specs()]
            with pytest.raises(UsageError, match="read-only"):
                await read_only.call("forget_memory", {"citation": "memory/MEMORY.md:4"})
            assert "dark roast" in (notes / "memory/MEMORY.md").read_text()
            confirmed = MemoryTools(store, confirm=yes)
            assert "forget_memory" in [s.name for s in confirmed.specs()]
            result = await confirmed.call("forget_memory", {"citation": "memory/MEMORY.md:4"})
            assert result["forgotten"] and result["entry"]["content"] == "Prefers dark roast coffee"
            assert "dark roast" not in (notes / "memory/MEMORY.md").read_text()

    asyncio.run(scenario())


def test_forget_at_a_terminal_asks_and_keeps_the_memory_on_no(notes: Path):
    """A real terminal (a pty): the memory is shown, `n` keeps it, `y` removes it."""
    import pty
    import select
    import subprocess

    def answer(reply: str) -> tuple[int, str]:
        master, slave = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-m", "miniclaw", "--workspace", str(notes),
                                 "memory", "forget", "memory/MEMORY.md:7"],
                                stdin=slave, stdout=slave, stderr=slave, close_fds=True)
        os.close(slave)
        seen = ""
        try:
            while "Forget 1 memory? [y/N]: " not in seen:
                ready, _, _ = select.select([master], [], [], 30)
                assert ready, seen
                seen += os.read(master, 4096).decode()
            os.write(master, reply.encode() + b"\r")
            code = proc.wait(30)
            with contextlib.suppress(OSError):
                while select.select([master], [], [], 0.5)[0]:
                    seen += os.read(master, 4096).decode()
        finally:
            proc.kill()
            os.close(master)
        return code, seen

    code, seen = answer("n")
    assert code == 1 and "Allergic to peanuts" in seen
    assert "peanuts" in (notes / "memory/MEMORY.md").read_text()
    code, seen = answer("y")
    assert code == 0 and "Forgot 1 memory: memory/MEMORY.md:7" in seen
    assert "peanuts" not in (notes / "memory/MEMORY.md").read_text()
