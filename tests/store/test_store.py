"""MemoryStore: adding and reading memories through the facade, on real files."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import stat
from datetime import date, datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniclaw.errors import MemoryFileError, UsageError, WorkspaceNotFoundError
from miniclaw.memory import MemoryStore
from miniclaw.entries.entry import DAILY_NOTE, LONG_TERM
from miniclaw.entries.parsing import parse_daily_note, parse_long_term
from tests.conftest import NOW, write

TODAY = NOW.date()


@pytest.fixture
def miniclaw_log(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch):
    """caplog for the "miniclaw" logger, even after a CLI run turned its propagation off."""
    logger = logging.getLogger("miniclaw")
    monkeypatch.setattr(logger, "propagate", True)
    caplog.set_level(logging.WARNING, logger="miniclaw")
    return caplog


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` and its bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def line_of(path: Path, number: int) -> str:
    return path.read_bytes().decode("utf-8", "replace").splitlines()[number - 1]


# -- adding -----------------------------------------------------------------------------


async def test_add_long_term_writes_the_story_format(store, workspace):
    entry = await store.add_long_term("Prefers dark roast coffee")
    assert (workspace / "memory/MEMORY.md").read_text() == (
        "# Memory\n\n## 2026-02-14\n- Prefers dark roast coffee (added at 2026-02-14T09:12:03Z)\n")
    assert entry.text == "Prefers dark roast coffee"
    assert (entry.source, entry.path, entry.line_start, entry.line_end) == (
        LONG_TERM, "memory/MEMORY.md", 4, 4)
    assert (entry.date, entry.time) == (TODAY, "09:12:03")


async def test_add_long_term_returns_the_entry_the_reader_sees(store, workspace):
    await store.add_long_term("first")
    added = await store.add_long_term("second\nover two lines", category="decision",
                                      tags=["Atlas", "db"])
    entries = await store.read_long_term()
    assert entries[-1] == added
    assert (added.category, added.tags) == ("decision", ("atlas", "db"))
    assert (added.line_start, added.line_end) == (5, 6)
    assert line_of(workspace / "memory/MEMORY.md", added.line_start) == "- second"


async def test_add_long_term_to_a_hand_written_file_goes_under_todays_header(store, workspace):
    write(workspace, "memory/MEMORY.md",
          "# Memory\n\n## 2026-02-14\n- mine\n\n## Preferences\n- tea\n")
    added = await store.add_long_term("new")
    assert added.line_start == 5
    texts = [(e.text, e.date) for e in await store.read_long_term()]
    assert texts == [("mine", TODAY), ("new", TODAY), ("tea", None)]


async def test_add_daily_note_creates_the_note_with_title(store, workspace):
    entry = await store.add_daily_note("Met Sam about the Atlas budget.")
    assert (workspace / "memory/2026-02-14.md").read_text() == (
        "# Daily Note - 2026-02-14\n\n## 09:12:03 UTC\n\nMet Sam about the Atlas budget.\n")
    assert (entry.source, entry.path, entry.date, entry.time) == (
        DAILY_NOTE, "memory/2026-02-14.md", TODAY, "09:12:03")
    assert (entry.line_start, entry.line_end) == (5, 5)


async def test_add_daily_note_appends_with_separator(store, workspace):
    await store.add_daily_note("one")
    second = await store.add_daily_note("two\nthree")
    assert (second.line_start, second.line_end) == (11, 12)
    path = workspace / "memory/2026-02-14.md"
    assert line_of(path, 7) == "---"
    assert line_of(path, second.line_start) == "two"
    assert [e.text for e in await store.read_day(TODAY)] == ["one", "two\nthree"]


async def test_add_daily_note_with_when_uses_that_utc_day(store, workspace):
    when = datetime(2026, 2, 10, 23, 30, 0, tzinfo=timezone.utc)
    entry = await store.add_daily_note("late", when=when)
    assert (entry.path, entry.date, entry.time) == ("memory/2026-02-10.md", date(2026, 2, 10), "23:30:00")
    assert (workspace / "memory/2026-02-10.md").exists()


async def test_add_daily_note_converts_a_non_utc_when_to_utc(store, workspace):
    from datetime import timedelta

    when = datetime(2026, 2, 11, 1, 0, 0, tzinfo=timezone(timedelta(hours=5)))
    entry = await store.add_daily_note("converted", when=when)
    assert (entry.date, entry.time) == (date(2026, 2, 10), "20:00:00")


async def test_add_daily_note_with_category_and_tags(store):
    entry = await store.add_daily_note("chose X", category="Decision", tags=["a", "a", "b"])
    assert (entry.category, entry.tags) == ("decision", ("a", "b"))
    assert (await store.read_day(TODAY))[0] == entry


async def test_returned_line_numbers_match_the_file(store, workspace):
    write(workspace, "memory/2026-02-14.md",
          "# Daily Note - 2026-02-14\n\n## 08:00:00 UTC\n\nold\nnote\n")
    entry = await store.add_daily_note("fresh")
    lines = (workspace / "memory/2026-02-14.md").read_text().splitlines()
    assert lines[entry.line_start - 1] == "fresh"
    assert len(lines) == entry.line_end


# -- permissions ------------------------------------------------------------------------


async def test_new_memory_folder_is_0700_and_files_are_0600(tmp_path):
    from miniclaw.workspace import init_workspace

    ws = tmp_path / "fresh"
    init_workspace(ws)
    (ws / "memory/MEMORY.md").unlink()  # created by the writer below, not by init
    async with MemoryStore(ws, now=lambda: NOW) as memory:
        await memory.add_long_term("long")
        await memory.add_daily_note("daily")
    assert stat.S_IMODE((ws / "memory").stat().st_mode) == 0o700
    assert stat.S_IMODE((ws / "memory/MEMORY.md").stat().st_mode) == 0o600
    assert stat.S_IMODE((ws / "memory/2026-02-14.md").stat().st_mode) == 0o600


async def test_a_folder_without_memory_is_not_a_workspace_and_nothing_is_written(tmp_path):
    ws = tmp_path / "just-a-folder"
    ws.mkdir()
    async with MemoryStore(ws, now=lambda: NOW) as memory:
        with pytest.raises(WorkspaceNotFoundError, match="miniclaw init"):
            await memory.add_daily_note("stray note")
    assert list(ws.iterdir()) == []


async def test_rewrite_leaves_no_temporary_files(store, workspace):
    for n in range(3):
        await store.add_long_term(f"item {n}")
    assert sorted(p.name for p in (workspace / "memory").iterdir()) == ["MEMORY.md"]


# -- missing workspace ------------------------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda s: s.add_long_term("x"),
    lambda s: s.add_daily_note("x"),
    lambda s: s.read_long_term(),
    lambda s: s.read_day(TODAY),
    lambda s: s.read_recent(7),
    lambda s: s.search_memories("coffee"),
], ids=["add_long_term", "add_daily_note", "read_long_term", "read_day", "read_recent",
        "search_memories"])
async def test_missing_workspace_raises_and_mentions_init(tmp_path, call):
    missing = tmp_path / "nowhere"
    memory = MemoryStore(missing, now=lambda: NOW)
    try:
        with pytest.raises(WorkspaceNotFoundError, match="miniclaw init"):
            await call(memory)
    finally:
        memory.close()
    assert not missing.exists()


def test_workspace_not_found_is_a_usage_error():
    assert issubclass(WorkspaceNotFoundError, UsageError)


# -- bad input --------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\n", " \t\r\n "])
async def test_empty_text_is_rejected_and_nothing_is_written(store, workspace, text):
    with pytest.raises(UsageError):
        await store.add_long_term(text)
    with pytest.raises(UsageError):
        await store.add_daily_note(text)
    assert snapshot(workspace) == {}


@pytest.mark.parametrize("category", ["Two Words", "9lives", "-dash", "dé", "a_b", ""])
async def test_bad_category_is_rejected_and_nothing_is_written(store, workspace, category):
    with pytest.raises(UsageError):
        await store.add_long_term("text", category=category)
    with pytest.raises(UsageError):
        await store.add_daily_note("text", category=category)
    assert snapshot(workspace) == {}


@pytest.mark.parametrize("tag", ["two words", "", "-x", "_x", "a!b", "<private>"])
async def test_bad_tag_is_rejected_and_nothing_is_written(store, workspace, tag):
    with pytest.raises(UsageError):
        await store.add_long_term("text", tags=["ok", tag])
    with pytest.raises(UsageError):
        await store.add_daily_note("text", tags=[tag])
    assert snapshot(workspace) == {}


async def test_text_over_the_size_limit_is_rejected(store, workspace):
    from miniclaw.store.store import MAX_ENTRY_CHARS

    with pytest.raises(UsageError):
        await store.add_long_term("x" * (MAX_ENTRY_CHARS + 1))
    assert snapshot(workspace) == {}


# -- privacy-safe writing ---------------------------------------------------------------


async def test_unclosed_private_block_in_memory_file_refuses_the_write(store, workspace):
    path = workspace / "memory/MEMORY.md"
    path.write_bytes(b"# Memory\r\n\r\n<private>\r\nmy secret\r\n")
    before = path.read_bytes()
    with pytest.raises(MemoryFileError, match="private"):
        await store.add_long_term("would be swallowed")
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["MEMORY.md"]


async def test_unclosed_private_block_in_daily_note_refuses_the_append(store, workspace):
    path = workspace / "memory/2026-02-14.md"
    path.write_bytes(b"# Daily Note - 2026-02-14\n\n## 08:00:00 UTC\n\n<private>\nsecret\n")
    before = path.read_bytes()
    with pytest.raises(MemoryFileError, match="private"):
        await store.add_daily_note("would be swallowed")
    assert path.read_bytes() == before


async def test_closed_private_block_does_not_block_writing(store, workspace):
    write(workspace, "memory/MEMORY.md", "# Memory\n\n<private>\nsecret\n</private>\n")
    entry = await store.add_long_term("visible")
    assert entry is not None and entry.text == "visible"
    assert [e.text for e in await store.read_long_term()] == ["visible"]


async def test_read_never_returns_private_text(store, workspace):
    write(workspace, "memory/MEMORY.md",
          "## 2026-02-14\n- call <private>555-1234</private> Sam\n<private>\n- pin 9876\n</private>\n")
    write(workspace, "memory/2026-02-13.md", "---\nprivate: true\n---\n## 09:00:00 UTC\n\nsecretword\n")
    long_texts = " ".join(e.text for e in await store.read_long_term())
    assert "call  Sam" in long_texts
    assert "555" not in long_texts and "9876" not in long_texts
    assert await store.read_day(date(2026, 2, 13)) == []


# -- reading ----------------------------------------------------------------------------


async def test_read_long_term_of_missing_file_is_empty(store):
    assert await store.read_long_term() == []


async def test_read_day_without_a_note_is_empty(store):
    assert await store.read_day(date(2026, 1, 1)) == []


async def test_read_day_line_numbers_match_the_file(store, workspace):
    path = write(workspace, "memory/2026-02-12.md",
                 "# Daily Note - 2026-02-12\n\n## 08:00:00 UTC\n\nalpha\nbeta\n\n---\n\n"
                 "## 09:00:00 UTC\n\ngamma\n")
    entries = await store.read_day(date(2026, 2, 12))
    assert [(e.text, e.line_start, e.line_end) for e in entries] == [
        ("alpha\nbeta", 5, 6), ("gamma", 12, 12)]
    assert line_of(path, 12) == "gamma"


async def test_read_recent_is_newest_first_and_skips_empty_days(store, workspace):
    write(workspace, "memory/2026-02-14.md", "## 09:00:00 UTC\n\ntoday\n")
    write(workspace, "memory/2026-02-13.md", "# Daily Note - 2026-02-13\n")  # no entries
    write(workspace, "memory/2026-02-12.md", "## 09:00:00 UTC\n\ntwo days ago\n")
    write(workspace, "memory/2026-02-10.md", "## 09:00:00 UTC\n\nfour days ago\n")
    # written where the zone was a day ahead (issue 38): listed; a plan for next month is not
    write(workspace, "memory/2026-02-15.md", "## 09:00:00 UTC\n\ntomorrow here\n")
    write(workspace, "memory/2026-03-15.md", "## 09:00:00 UTC\n\nfuture\n")
    found = await store.read_recent(5)
    assert [(day, [e.text for e in entries]) for day, entries in found] == [
        (date(2026, 2, 15), ["tomorrow here"]),
        (date(2026, 2, 14), ["today"]),
        (date(2026, 2, 12), ["two days ago"]),
        (date(2026, 2, 10), ["four days ago"]),
    ]


async def test_read_recent_window_includes_today_and_stops_at_n_days(store, workspace):
    write(workspace, "memory/2026-02-14.md", "## 09:00:00 UTC\n\ntoday\n")
    write(workspace, "memory/2026-02-12.md", "## 09:00:00 UTC\n\ntwo days ago\n")
    assert [day for day, _ in await store.read_recent(2)] == [date(2026, 2, 14)]
    assert [day for day, _ in await store.read_recent(1)] == [date(2026, 2, 14)]


@pytest.mark.parametrize("days", [0, -1, True, 1.5])
async def test_read_recent_rejects_bad_day_counts(store, days):
    with pytest.raises(UsageError):
        await store.read_recent(days)


async def test_non_utf8_memory_file_is_read_with_a_warning(store, workspace, miniclaw_log):
    path = workspace / "memory/MEMORY.md"
    path.write_bytes(b"# Memory\n\n## 2026-02-14\n- caf\xe9 au lait\n- good line\n")
    entries = await store.read_long_term()
    assert [e.text for e in entries] == ["caf\ufffd au lait", "good line"]
    warnings = [r.getMessage() for r in miniclaw_log.records if r.levelno == logging.WARNING]
    assert any("memory/MEMORY.md" in w and "UTF-8" in w for w in warnings)


async def test_non_utf8_daily_note_is_read_with_a_warning(store, workspace, miniclaw_log):
    (workspace / "memory/2026-02-14.md").write_bytes(b"## 09:00:00 UTC\n\nbad \xff byte\n\ngood\n")
    entries = await store.read_day(TODAY)
    assert [e.text for e in entries] == ["bad \ufffd byte\n\ngood"]
    assert any("memory/2026-02-14.md" in r.getMessage() for r in miniclaw_log.records)


async def test_valid_file_gives_no_warning(store, workspace, miniclaw_log):
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- fine\n")
    await store.read_long_term()
    assert [r for r in miniclaw_log.records if r.name.startswith("miniclaw")] == []


async def test_bom_memory_file_is_read_without_warning(store, workspace, miniclaw_log):
    (workspace / "memory/MEMORY.md").write_bytes(b"\xef\xbb\xbf# Memory\n\n## 2026-02-14\n- x\n")
    entries = await store.read_long_term()
    assert [(e.text, e.line_start) for e in entries] == [("x", 4)]
    assert not [r for r in miniclaw_log.records if r.name.startswith("miniclaw")]


async def test_add_to_non_utf8_memory_file_is_refused_and_keeps_its_bytes(store, workspace):
    """Appending UTF-8 to a Latin-1 file made it two encodings at once: refused now."""
    path = workspace / "memory/MEMORY.md"
    raw = b"# Memory\n\n## 2026-02-13\n- caf\xe9\n"
    path.write_bytes(raw)
    with pytest.raises(MemoryFileError, match="not valid UTF-8 \\(a bad byte on line 4\\)"):
        await store.add_long_term("new")
    assert path.read_bytes() == raw


# -- short-term -------------------------------------------------------------------------


def test_short_term_keeps_the_last_100_turns_oldest_dropped(store):
    for n in range(1, 106):
        store.short_term.add("user", f"turn {n}")
    turns = store.short_term.recent()
    assert len(store.short_term) == 100 == store.short_term.capacity
    assert turns[0].content == "turn 6"
    assert turns[-1].content == "turn 105"


def test_short_term_recent_n_is_oldest_first(store):
    for n in range(5):
        store.short_term.add("assistant", str(n))
    assert [t.content for t in store.short_term.recent(2)] == ["3", "4"]


def test_short_term_keeps_a_turn_without_its_private_parts(store):
    turn = store.short_term.add("user", "gecko tank <private>GECKOSECRET1</private> setup")
    store.short_term.add("assistant", "noted <private>unclosed GECKOSECRET1")
    assert turn.content == "gecko tank  setup"
    assert [t.content for t in store.short_term] == ["gecko tank  setup", "noted"]


async def test_short_term_is_never_written_to_disk(store, workspace):
    store.short_term.add("user", "ephemeral words")
    assert snapshot(workspace) == {}


# -- write failures ---------------------------------------------------------------------


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


async def test_disk_full_on_append_leaves_daily_note_unchanged(store, workspace, monkeypatch):
    path = write(workspace, "memory/2026-02-14.md", "# Daily Note - 2026-02-14\n\n## 08:00:00 UTC\n\nold\n")
    before = path.read_bytes()
    monkeypatch.setattr(os, "write", _disk_full)
    with pytest.raises(MemoryFileError, match="disk is full"):
        await store.add_daily_note("new")
    monkeypatch.undo()
    assert path.read_bytes() == before


async def test_partial_append_is_rolled_back(store, workspace, monkeypatch):
    path = write(workspace, "memory/2026-02-14.md", "# Daily Note - 2026-02-14\n\n## 08:00:00 UTC\n\nold\n")
    before = path.read_bytes()
    real_write = os.write
    calls = []

    def half_then_fail(fd, data):
        calls.append(fd)
        if len(calls) == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_fail)
    with pytest.raises(MemoryFileError):
        await store.add_daily_note("a longer new entry that is written only in part")
    monkeypatch.undo()
    assert len(calls) == 2
    assert path.read_bytes() == before


async def test_disk_full_on_new_daily_note_leaves_no_entry(store, workspace, monkeypatch):
    monkeypatch.setattr(os, "write", _disk_full)
    with pytest.raises(MemoryFileError):
        await store.add_daily_note("new")
    monkeypatch.undo()
    path = workspace / "memory/2026-02-14.md"
    assert not path.exists() or path.read_bytes() == b""


async def test_failed_replace_leaves_memory_file_unchanged(store, workspace, monkeypatch):
    path = write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-13\n- old\n")
    before = path.read_bytes()
    monkeypatch.setattr(os, "replace", _disk_full)
    with pytest.raises(MemoryFileError, match="disk is full"):
        await store.add_long_term("new")
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["MEMORY.md"]


async def test_failed_write_of_temporary_file_leaves_memory_file_unchanged(store, workspace, monkeypatch):
    path = write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-13\n- old\n")
    before = path.read_bytes()
    monkeypatch.setattr(os, "fsync", _disk_full)
    with pytest.raises(MemoryFileError):
        await store.add_long_term("new")
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["MEMORY.md"]


async def test_store_accepts_str_and_pathlike(workspace):
    for where in (str(workspace), workspace):
        async with MemoryStore(where, now=lambda: NOW) as memory:
            assert memory.workspace == workspace
            assert await memory.read_long_term() == []


async def test_files_written_by_store_parse_with_the_plain_parsers(store, workspace):
    await store.add_long_term("l1")
    await store.add_daily_note("d1")
    lt = (workspace / "memory/MEMORY.md").read_text()
    dn = (workspace / "memory/2026-02-14.md").read_text()
    assert [e.text for e in parse_long_term(lt, "memory/MEMORY.md")] == ["l1"]
    assert [e.text for e in parse_daily_note(dn, "memory/2026-02-14.md", TODAY)] == ["d1"]


# -- more writing cases -----------------------------------------------------------------


async def test_naive_when_is_taken_as_utc(store):
    entry = await store.add_daily_note("naive", when=datetime(2026, 2, 13, 23, 59, 59))
    assert (entry.path, entry.time) == ("memory/2026-02-13.md", "23:59:59")


async def test_concurrent_adds_in_one_process_are_all_kept(store):
    import asyncio

    await asyncio.gather(*(store.add_long_term(f"long {n}") for n in range(20)),
                         *(store.add_daily_note(f"daily {n}") for n in range(20)))
    assert sorted(e.text for e in await store.read_long_term()) == sorted(f"long {n}" for n in range(20))
    assert sorted(e.text for e in await store.read_day(TODAY)) == sorted(f"daily {n}" for n in range(20))


async def test_add_long_term_after_a_closed_inline_private_block_in_todays_section(store, workspace):
    # The block opens at the end of today's last bullet and is closed two lines later:
    # the file is valid, so the new memory belongs after `</private>`, visible.
    path = write(workspace, "memory/MEMORY.md",
                 "# Memory\n\n## 2026-02-14\n- call Sam <private>\n  his number 555\n</private>\n")
    entry = await store.add_long_term("new memory")
    assert entry is not None and entry.text == "new memory"
    texts = [e.text for e in await store.read_long_term()]
    assert texts == ["call Sam", "new memory"]
    assert "555" in path.read_text()  # the private text is kept on disk, just never shown


async def test_add_daily_note_with_a_spaced_separator_line_keeps_the_whole_text(store):
    # `- - -` is a thematic break to the reader; the writer must escape it like `---`.
    entry = await store.add_daily_note("before\n- - -\nafter")
    assert entry is not None and entry.text == "before\n- - -\nafter"
    assert [e.text for e in await store.read_day(TODAY)] == ["before\n- - -\nafter"]


async def test_add_long_term_with_a_leading_backslash_is_read_back_unchanged(store):
    # The reader strips one backslash before `#`, `---` and `<!--`; the long-term writer
    # does not add one, so `\# x` comes back as `# x`.
    entry = await store.add_long_term("\\# not a heading")
    assert entry.text == "\\# not a heading"
    assert [e.text for e in await store.read_long_term()] == ["\\# not a heading"]


async def test_read_recent_with_a_day_count_before_year_one_is_a_usage_error(store):
    with pytest.raises(UsageError):
        await store.read_recent(800_000)


# -- text that must not be written (control characters, lone surrogates) ---------------------

UNWRITABLE = ["\x00", "\x01", "\x08", "\x0b", "\x0c", "\x1b", "\x1f", "\x7f", "\x80", "\x85",
              "\x9b", "\x9f", "\ud800", "\udfff"]


@pytest.mark.parametrize("char", UNWRITABLE, ids=[f"U+{ord(c):04X}" for c in UNWRITABLE])
@pytest.mark.parametrize("field", ["text", "category", "tag"])
async def test_control_characters_and_lone_surrogates_are_refused_before_anything_is_written(
        store, workspace, char, field):
    """One NUL used to make the whole note unreadable (and every later add fail)."""
    await store.add_long_term("kept fact")
    await store.add_daily_note("kept note")
    before = snapshot(workspace)
    text, category, tags = "some text", "decision", ["travel"]
    if field == "text":
        text = f"tea {char} with lemon"
    elif field == "category":
        category = f"{char}decision"
    else:
        tags = [f"travel{char}"]
    for add in (store.add_long_term, store.add_daily_note):
        with pytest.raises(UsageError, match=f"U\\+{ord(char):04X}"):
            await add(text, category=category, tags=tags)
    assert snapshot(workspace) == before
    assert [e.text for e in await store.read_long_term()] == ["kept fact"]
    assert [e.text for e in await store.read_day(TODAY)] == ["kept note"]


async def test_tab_and_line_endings_are_written(store):
    entry = await store.add_daily_note("a\tb\r\nc\rd")
    assert entry.text == "a\tb\nc\nd"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.one_of(st.characters(), st.sampled_from(UNWRITABLE + ["\t", "\r", "\n"])),
                   min_size=1, max_size=40))
def test_any_text_is_either_refused_or_read_back_and_the_note_stays_readable(
        store, workspace, miniclaw_log, text):
    """Whatever the text, the note stays valid UTF-8 without NUL: every earlier entry is
    still read, and the new one too when it was accepted."""
    before = [e.text for e in asyncio.run(store.read_day(TODAY))]
    try:
        added = asyncio.run(store.add(text))
    except UsageError:
        assert [e.text for e in asyncio.run(store.read_day(TODAY))] == before
        return
    raw = (workspace / "memory/2026-02-14.md").read_bytes()
    assert b"\x00" not in raw
    raw.decode("utf-8")
    after = [e.text for e in asyncio.run(store.read_day(TODAY))]
    assert after[: len(before)] == before
    if not added.written:  # the same fact is there already (an earlier example's)
        assert after == before and added.entry.text in before
    else:
        assert added.entry is None or after[-1] == added.entry.text


# -- failures after a note was created ------------------------------------------------------


@pytest.mark.parametrize("formatter, add", [
    ("append_daily", lambda store: store.add_daily_note("new")),
    ("insert_long_term", lambda store: store.add_long_term("new")),
])
async def test_a_new_file_is_removed_whatever_error_stops_the_write(store, workspace, monkeypatch,
                                                                    formatter, add):
    from miniclaw.entries import writing

    def broken(*args, **kwargs):
        raise ValueError("a bug in formatting")

    monkeypatch.setattr(writing, formatter, broken)
    with pytest.raises(ValueError):
        await add(store)
    monkeypatch.undo()
    assert snapshot(workspace) == {}
    assert (await add(store)).text == "new"


# -- FIFOs, folders and link swaps ----------------------------------------------------------


@pytest.mark.parametrize("make", ["fifo", "folder"])
async def test_a_fifo_or_folder_named_like_a_memory_file_is_refused_and_skipped(
        store, workspace, miniclaw_log, make):
    (workspace / "memory").mkdir(exist_ok=True)
    for name in ("MEMORY.md", "2026-02-14.md"):
        path = workspace / "memory" / name
        os.mkfifo(path) if make == "fifo" else path.mkdir()
    with pytest.raises(MemoryFileError, match="MEMORY.md is not a regular file"):
        await store.add_long_term("fact")
    with pytest.raises(MemoryFileError, match="2026-02-14.md is not a regular file"):
        await store.add_daily_note("note")
    assert await store.read_long_term() == [] and await store.read_day(TODAY) == []
    assert "not a regular file" in miniclaw_log.text


async def test_a_note_that_is_a_symlink_inside_the_workspace_is_written_where_it_points(store, workspace):
    real = write(workspace, "notes/today.md", "# Daily Note - 2026-02-14\n\n## 08:00:00 UTC\n\nold\n")
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory/2026-02-14.md").symlink_to("../notes/today.md")
    (workspace / "memory/MEMORY.md").symlink_to("../notes/memory.md")  # dangling: created there
    await store.add_daily_note("through the link")
    await store.add_long_term("a fact through the link")
    assert "through the link" in real.read_text()
    assert "a fact through the link" in (workspace / "notes/memory.md").read_text()
    assert (workspace / "memory/2026-02-14.md").is_symlink()
    assert (workspace / "memory/MEMORY.md").is_symlink()


async def test_a_link_to_outside_is_refused_even_when_swapped_in_after_the_first_look(
        store, workspace, tmp_path, monkeypatch):
    """The old check looked at the path before taking the lock, then opened it following
    links: a link swapped in between was written through. Now the open itself refuses it."""
    from miniclaw.fs import files

    outside = tmp_path / "outside.md"
    outside.write_text("# Memory\n\n- outside secret\n")
    path = write(workspace, "memory/2026-02-14.md", "# Daily Note - 2026-02-14\n\n## 08:00:00 UTC\n\nold\n")
    real_locked = files.locked

    @contextlib.contextmanager
    def swap_then_lock(folder):
        path.unlink()
        path.symlink_to(outside)  # another process swaps the note while we wait for the lock
        with real_locked(folder) as held:
            yield held

    monkeypatch.setattr(files, "locked", swap_then_lock)
    with pytest.raises(UsageError, match="symlink out of the workspace"):
        await store.add_daily_note("new")
    assert outside.read_text() == "# Memory\n\n- outside secret\n"


async def test_an_oversized_note_is_read_but_not_added_to(store, workspace):
    from miniclaw.fs.files import MAX_FILE_BYTES

    path = write(workspace, "memory/2026-02-14.md", "# Daily Note - 2026-02-14\n\n## 08:00:00 UTC\n\n")
    with path.open("ab") as handle:
        handle.write(b"word " * (MAX_FILE_BYTES // 5 + 1) + b"\n")
    before = path.stat().st_size
    with pytest.raises(MemoryFileError, match="16 MB"):
        await store.add_daily_note("one more")
    assert path.stat().st_size == before
    assert len(await store.read_day(TODAY)) == 1  # `memory read` still shows it
