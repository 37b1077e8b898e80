"""Superseding (issue 36): a newer fact marks the old one, which stays, hidden from search."""

from __future__ import annotations

import errno
import os
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miniclaw.entries.parsing import (parse_annotation, parse_daily_note, parse_long_term,
                                      superseded_line, superseded_meta)
from miniclaw.errors import MemoryFileError, UsageError
from miniclaw.memory import MemoryStore
from miniclaw.store import forget
from tests.conftest import NOW, write


def memory(workspace: Path) -> str:
    return (workspace / "memory/MEMORY.md").read_text()


def snapshot(workspace: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((workspace / "memory").glob("*.md"))}


async def test_supersedes_marks_the_old_fact_and_search_hides_it(store, workspace):
    old = (await store.add("Sam lives in Oslo", long=True)).entry
    added = await store.add("Sam moved to Bergen", long=True, supersedes=old.ref)
    assert added.written and added.superseded.text == "Sam lives in Oslo"
    text = memory(workspace)
    assert "- Sam lives in Oslo" in text  # nothing deleted
    assert f"<!-- @superseded-by: {added.entry.ref} on 2026-02-14 -->" in text
    entries = parse_long_term(text, "memory/MEMORY.md")
    assert entries[0].meta["superseded_by"] == added.entry.ref == entries[1].ref
    found = await store.search("Sam", days=None)
    assert [hit.content for hit in found.results] == ["Sam moved to Bergen"]
    every = await store.search("Sam", days=None, all_versions=True)
    by = {hit.content: hit.meta for hit in every.results}
    assert by["Sam lives in Oslo"]["superseded_by"] == added.entry.ref
    assert by["Sam lives in Oslo"]["superseded_by_text"] == "Sam moved to Bergen"


async def test_a_daily_fact_may_supersede_a_long_term_one(store, workspace):
    old = (await store.add("Atlas ships in May", long=True)).entry
    added = await store.add("Atlas slipped to June", supersedes=old.citation)
    assert added.entry.path == "memory/2026-02-14.md"
    assert parse_long_term(memory(workspace), "x")[0].meta["superseded_by"] == added.entry.ref


async def test_a_near_copy_may_supersede_its_original(store, workspace):
    old = (await store.add("Met Sam at the harbour")).entry
    added = await store.add("Met Sam at the harbour cafe", supersedes=old.ref)
    assert added.written
    note = parse_daily_note((workspace / "memory/2026-02-14.md").read_text(),
                            "memory/2026-02-14.md", None)
    assert note[0].meta["superseded_by"] == added.entry.ref == note[1].ref


async def test_the_mark_round_trips_through_forget(store, workspace):
    old = (await store.add("Sam lives in Oslo", long=True, category="person")).entry
    added = await store.add("Sam moved to Bergen", long=True, supersedes=old.ref)
    marked = await forget.find(store, old.ref)
    assert marked.meta["superseded_by"] == added.entry.ref and marked.category == "person"
    await forget.forget(store, [marked])
    text = memory(workspace)
    assert "Oslo" not in text and "superseded-by" not in text and "- Sam moved to Bergen" in text


@pytest.mark.parametrize("citation, message", [
    ("memory/MEMORY.md:40", "no memory starts at memory/MEMORY.md:40"),
    ("memory/MEMORY.md:5", "no memory starts at memory/MEMORY.md:5"),  # in a private block
    ("memory/2026-02-10.md:5", "no memory starts at"),  # a file private as a whole
    ("notes/todo.md:1", "is not a memory file miniclaw writes"),
    ("not a citation", "is not a citation"),
])
async def test_bad_citations_are_usage_errors_and_write_nothing(store, workspace, citation,
                                                                message):
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-01\n<private>\n- pin 4471\n"
                                         "</private>\n- Sam lives in Oslo\n")
    write(workspace, "memory/2026-02-10.md", "---\nprivate: true\n---\n\nsecret plan zanzibar\n")
    before = snapshot(workspace)
    with pytest.raises(UsageError, match=message) as raised:
        await store.add("Sam moved to Bergen", long=True, supersedes=citation)
    assert "4471" not in str(raised.value) and "zanzibar" not in str(raised.value)
    assert snapshot(workspace) == before


async def test_an_already_superseded_fact_and_a_loop_are_refused(store, workspace):
    a = (await store.add("Sam lives in Oslo", long=True)).entry
    b = (await store.add("Sam moved to Bergen", long=True, supersedes=a.ref)).entry
    before = snapshot(workspace)
    with pytest.raises(UsageError, match="superseded already"):
        await store.add("Sam moved to Trondheim", long=True, supersedes=a.citation)
    # A supersedes B which supersedes A: the text of A, known and superseded, refused
    with pytest.raises(UsageError, match="which is superseded by"):
        await store.add("Sam lives in Oslo", long=True, supersedes=b.ref)
    with pytest.raises(UsageError, match="nothing to supersede"):
        await store.add("sam moved to bergen!", long=True, supersedes=b.ref)
    assert snapshot(workspace) == before


async def test_a_known_fact_supersedes_without_being_written_again(store, workspace):
    old = (await store.add("Standup at 9:30", long=True)).entry
    known = (await store.add("Standup moved to 10:00", long=True)).entry
    added = await store.add("standup moved to 10:00", long=True, supersedes=old.ref)
    assert not added.written and added.duplicate_of.text == known.text
    assert added.duplicate_of.line_start == known.line_start + 1  # the mark went above it
    entries = parse_long_term(memory(workspace), "memory/MEMORY.md")
    assert entries[0].meta["superseded_by"] == added.duplicate_of.ref == entries[1].ref
    assert memory(workspace).count("10:00") == 1


async def test_a_read_only_file_is_refused_before_anything_is_written(store, workspace,
                                                                      monkeypatch):
    old = (await store.add("Atlas ships in May")).entry
    before = snapshot(workspace)
    note = str(workspace / old.path)
    real_open = os.open

    def refusing(path, flags, *args, **kwargs):  # the file system's answer to a 0444 file
        if str(path).endswith(old.path.rsplit("/", 1)[1]) and flags & os.O_RDWR:
            raise PermissionError(errno.EACCES, "Permission denied", note)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing)
    with pytest.raises(MemoryFileError, match="is read-only"):
        await store.add("Atlas slipped to June", long=True, supersedes=old.ref)
    monkeypatch.undo()
    assert snapshot(workspace) == before


_REF = st.from_regex(r"\Amemory/[a-zA-Z0-9_.-]{1,20}\.md:[1-9][0-9]{0,4}#[0-9a-f]{6}\Z")


@given(_REF, st.dates(min_value=date(2000, 1, 1), max_value=date(2999, 12, 31)))
def test_the_marker_reads_back_what_was_written(ref, day):
    kind, value = parse_annotation(superseded_line(ref, day))
    assert kind == "superseded-by"
    assert superseded_meta(value) == {"superseded_by": ref, "superseded_on": day.isoformat()}


@given(st.text(max_size=80))
def test_any_annotation_line_parses_or_is_text_never_an_error(value):
    found = parse_annotation(f"<!-- @superseded-by: {value} -->")
    if found is not None:
        meta = superseded_meta(found[1])
        assert meta["superseded_by"] in value and "<" not in meta["superseded_by"]


@given(st.text(alphabet="ab \n-<>!@:#0123456789", max_size=120))
def test_a_file_with_markers_anywhere_parses(text):
    for entry in parse_long_term("# Memory\n\n## 2026-02-01\n" + text.replace("@", "<!-- @superseded-by: m.md:1#abcdef -->"), "x"):
        assert set(entry.meta) <= {"superseded_by", "superseded_on"}


async def test_the_prompt_leaves_a_superseded_note_out(store, workspace):
    from miniclaw.context import ContextBuilder

    old = (await store.add("Lunch with Dana at noon")).entry
    await store.add("Lunch with Dana moved to 1pm", supersedes=old.ref)
    built = await ContextBuilder(store).build("when is lunch with Dana?", budget_tokens=2000)
    prompt = built.render()
    assert "moved to 1pm" in prompt and "at noon" not in prompt
