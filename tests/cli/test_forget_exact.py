"""Issues 37-39: a forget changes exactly the lines of the entry its citation named.

Issue 37: forgetting the last entry of a daily note took the `<private>` block that ends the
entry before it. Issue 39: a citation taken before the file shifted forgot another memory.
Issues 38/39: `forget -q` refused a whole batch for one transcript hit, and had no --dry-run.
"""

from __future__ import annotations

import asyncio
import json
from datetime import date as Date
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from miniclaw.errors import MiniclawError
from tests.cli.test_cli import run
from tests.cli.test_forget import entries


def _today_note(ws: Path) -> Path:
    (note,) = (ws / "memory").glob("2*.md")
    return note


def _search(runner: CliRunner, ws: Path, query: str) -> list[dict]:
    result = run(runner, ws, "search", query, "--all", "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["results"]


# -- issue 37: the lines of the entry, and no others ---------------------------------------


def test_forget_the_last_daily_entry_keeps_the_private_block_ending_the_one_before(
        runner: CliRunner, workspace: Path):
    dentist = "Dentist on Friday\n<private>\ninsurance number 12345\n</private>"
    assert run(runner, workspace, "memory", "add", dentist).exit_code == 0
    assert run(runner, workspace, "memory", "add", "Lunch with Sam on Thursday").exit_code == 0
    note = _today_note(workspace)
    before = note.read_text()
    (lunch,) = _search(runner, workspace, "lunch")
    result = run(runner, workspace, "memory", "forget", lunch["citation"], "--yes")
    assert result.exit_code == 0, result.stderr
    after = note.read_text()
    assert "insurance number 12345\n</private>\n" in after  # the dentist's private lines stay
    assert "Lunch" not in after
    assert after == before[: before.index("</private>\n") + len("</private>\n")]


def test_forget_a_daily_entry_keeps_the_private_block_after_its_separator(
        runner: CliRunner, workspace: Path):
    text = ("# Daily Note - 2026-02-14\n\n## 09:00:00 UTC\n\nKayak on Saturday\n\n---\n\n"
            "<private>\nloose secret\n</private>\n\n## 10:00:00 UTC\n\nLunch with Sam\n")
    note = workspace / "memory/2026-02-14.md"
    note.write_text(text)
    result = run(runner, workspace, "memory", "forget", "memory/2026-02-14.md:5", "--yes")
    assert result.exit_code == 0, result.stderr
    assert note.read_text() == ("# Daily Note - 2026-02-14\n\n<private>\nloose secret\n"
                                "</private>\n\n## 10:00:00 UTC\n\nLunch with Sam\n")


_POSITIONS = st.sampled_from([None, "start", "middle", "end"])


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sections=st.lists(st.tuples(_POSITIONS, st.booleans(), st.booleans()),
                         min_size=1, max_size=5),
       pick=st.integers(0, 4))
def test_forgetting_a_daily_entry_removes_its_section_and_nothing_else(workspace: Path,
                                                                        sections, pick):
    """Sections with a private block at their start, middle or end, tagged or not, with a
    private block between the separator and the next heading or not: forgetting one leaves
    every line of every other section, and every block outside a section, as it was."""
    from miniclaw.memory import MemoryStore
    from miniclaw.memory.forget import forget

    lines = ["# Daily Note - 2026-02-14", ""]
    own: list[list[str]] = []
    for i, (private, tagged, loose) in enumerate(sections):
        if i:
            lines += ["", "---", ""]
        if loose:
            lines += ["<private>", f"loose-{i}", "</private>", ""]
        block = ["<private>", f"secret-{i}", "</private>"]
        body = {None: [f"note-{i}"], "start": block + [f"note-{i}"],
                "middle": [f"note-{i}", *block, f"more-{i}"], "end": [f"note-{i}", *block]}
        section = [f"## {9 + i:02d}:00:00 UTC", "", *body[private]]
        section += [f"<!-- @tag: t{i} -->"] if tagged else []
        own.append(section)
        lines += section
    text = "\n".join(lines) + "\n"
    path = workspace / "memory/2026-02-14.md"
    path.write_text(text)
    target = pick % len(sections)

    async def scenario():
        async with MemoryStore(workspace) as store:
            before = await store.read_day(Date(2026, 2, 14))
            await forget(store, [before[target]])
            return before, await store.read_day(Date(2026, 2, 14))

    before, after = asyncio.run(scenario())
    kept = path.read_text().split("\n")
    assert [e.text for e in after] == [e.text for i, e in enumerate(before) if i != target]
    for i, section in enumerate(own):
        found = any(kept[j:j + len(section)] == section for j in range(len(kept)))
        assert found == (i != target), (i, target, text, kept)
    for i, (_, _, loose) in enumerate(sections):
        assert (f"loose-{i}" in kept) == loose
    assert f"secret-{target}" not in kept


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bullets=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=5),
       pick=st.integers(0, 4))
def test_forgetting_a_long_term_bullet_keeps_the_private_lines_of_the_others(workspace: Path,
                                                                              bullets, pick):
    """MEMORY.md bullets, each maybe followed by a private block and an annotation: a
    forget removes the bullet (with its annotation) and leaves the other bullets' lines."""
    from miniclaw.memory import MemoryStore
    from miniclaw.memory.forget import forget

    lines = ["# Memory", "", "## 2026-02-01"]
    for i, (private, tagged) in enumerate(bullets):
        lines.append(f"- fact-{i}")
        lines += ["<private>", f"secret-{i}", "</private>"] if private else []
        lines += [f"<!-- @tag: t{i} -->"] if tagged else []
    text = "\n".join(lines) + "\n"
    path = workspace / "memory/MEMORY.md"
    path.write_text(text)
    target = pick % len(bullets)

    async def scenario():
        async with MemoryStore(workspace) as store:
            before = await store.read_long_term()
            try:
                await forget(store, [before[target]])
            except MiniclawError:
                assert path.read_text() == text
            return await store.read_long_term()

    after = asyncio.run(scenario())
    kept = path.read_text().split("\n")
    for i, (private, _) in enumerate(bullets):
        if i != target:
            assert f"- fact-{i}" in kept
            assert (f"secret-{i}" in kept) == private
    assert f"- fact-{target}" not in kept or len(after) == len(bullets)
