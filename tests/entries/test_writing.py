"""The writer's promise is the reader's: what `writing` writes, `parsing` reads back."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniclaw.entries.parsing import parse_daily_note, parse_long_term
from miniclaw.entries.writing import (append_daily, daily_entry, insert_long_term,
                                      long_term_item, normalize_text)

NOW = datetime(2026, 2, 14, 9, 12, 3, tzinfo=timezone.utc)
TODAY = NOW.date()
LT = "memory/MEMORY.md"
DN = "memory/2026-02-14.md"


def add_long(raw: bytes, text: str, *, when: datetime = NOW, category=None, tags=()):
    """Insert an item and return (new bytes, line, the parsed entry at that line)."""
    new, line = insert_long_term(raw, when.date(), long_term_item(text, when, category, tags))
    entries = parse_long_term(new.decode("utf-8-sig", "replace"), LT)
    found = [e for e in entries if e.line_start == line]
    assert len(found) == 1, f"no single entry starts at line {line}: {entries}"
    return new, line, found[0]


def add_daily(raw: bytes, text: str, *, when: datetime = NOW, category=None, tags=()):
    """Append an entry and return (new bytes, the last parsed entry)."""
    new = raw + append_daily(raw, when.date(), daily_entry(text, when, category, tags))
    entries = parse_daily_note(new.decode("utf-8-sig", "replace"), DN, when.date())
    assert entries, f"the appended entry was not read back: {new!r}"
    return new, entries[-1]


# -- formats ----------------------------------------------------------------------------


def test_normalize_text_strips_edges_trailing_spaces_and_cr():
    assert normalize_text("  \r\n a  \r\nb\rc \n\n") == "a\nb\nc"


def test_long_term_item_story_format():
    assert long_term_item("Prefers dark roast coffee", NOW) == [
        "- Prefers dark roast coffee (added at 2026-02-14T09:12:03Z)"]


def test_long_term_item_indents_continuation_lines_and_adds_annotations():
    assert long_term_item("one\ntwo", NOW, "decision", ("a", "b")) == [
        "- one",
        "  two (added at 2026-02-14T09:12:03Z)",
        "<!-- @category: decision -->",
        "<!-- @tag: a -->",
        "<!-- @tag: b -->",
    ]


def test_daily_entry_story_format():
    assert daily_entry("Met Sam.", NOW) == ["## 09:12:03 UTC", "", "Met Sam."]


def test_new_daily_note_writes_the_title_once():
    raw, _ = add_daily(b"", "first")
    raw, _ = add_daily(raw, "second", when=NOW.replace(hour=10))
    text = raw.decode()
    assert text == ("# Daily Note - 2026-02-14\n\n## 09:12:03 UTC\n\nfirst\n"
                    "\n---\n\n## 10:12:03 UTC\n\nsecond\n")
    assert text.count("# Daily Note") == 1


def test_new_memory_file_gets_title_and_header():
    new, line = insert_long_term(b"", TODAY, long_term_item("x", NOW))
    assert new == b"# Memory\n\n## 2026-02-14\n- x (added at 2026-02-14T09:12:03Z)\n"
    assert line == 4


# -- long-term round trips --------------------------------------------------------------


def test_long_term_round_trip_into_an_empty_file():
    _, line, entry = add_long(b"", "Prefers dark roast coffee", category="preference",
                              tags=("coffee",))
    assert (entry.text, entry.date, entry.time, entry.line_start, entry.line_end) == (
        "Prefers dark roast coffee", TODAY, "09:12:03", 4, 4)
    assert (entry.category, entry.tags) == ("preference", ("coffee",))


def test_long_term_round_trip_of_multiline_text():
    _, line, entry = add_long(b"", "line one\n\n  indented\nlast")
    assert (entry.text, entry.line_start, entry.line_end) == ("line one\n\n  indented\nlast", 4, 7)


def test_long_term_insert_under_existing_header_in_the_middle_of_the_file():
    raw = (
        b"# Memory\n"                                           # 1
        b"\n"                                                   # 2
        b"## 2026-02-13\n"                                      # 3
        b"- yesterday\n"                                        # 4
        b"\n"                                                   # 5
        b"## 2026-02-14\n"                                      # 6
        b"- earlier today (added at 2026-02-14T08:00:00Z)\n"    # 7
        b"<!-- @tag: old -->\n"                                 # 8
        b"\n"                                                   # 9
        b"## Preferences\n"                                     # 10
        b"- likes tea\n"                                        # 11
    )
    new, line, entry = add_long(raw, "new one")
    assert line == 9
    assert (entry.text, entry.date, entry.time, entry.tags) == ("new one", TODAY, "09:12:03", ())
    entries = parse_long_term(new.decode(), LT)
    assert [(e.text, e.line_start, e.date, e.tags) for e in entries] == [
        ("yesterday", 4, date(2026, 2, 13), ()),
        ("earlier today", 7, TODAY, ("old",)),
        ("new one", 9, TODAY, ()),
        ("likes tea", 12, None, ()),
    ]
    # Only one line was added, and everything else kept its bytes.
    assert new.replace(b"- new one (added at 2026-02-14T09:12:03Z)\n", b"", 1) == raw


def test_long_term_new_header_at_the_end_when_today_is_missing():
    raw = b"# Memory\n\n## 2026-02-13\n- yesterday\n"
    new, line, entry = add_long(raw, "today's")
    assert new == raw + b"\n## 2026-02-14\n- today's (added at 2026-02-14T09:12:03Z)\n"
    assert (line, entry.date, entry.line_end) == (7, TODAY, 7)


def test_long_term_file_without_final_newline():
    raw = b"# Memory\n\n## 2026-02-14\n- a"
    new, line, entry = add_long(raw, "b")
    assert new == b"# Memory\n\n## 2026-02-14\n- a\n- b (added at 2026-02-14T09:12:03Z)\n"
    assert line == 5
    assert [e.text for e in parse_long_term(new.decode(), LT)] == ["a", "b"]


def test_long_term_file_without_final_newline_and_no_header_for_today():
    raw = b"# Memory\n\n## 2026-02-13\n- a"
    new, line, entry = add_long(raw, "b")
    assert new.startswith(raw + b"\n")
    assert (line, entry.text, entry.date) == (7, "b", TODAY)


def test_long_term_today_header_inside_private_block_is_not_used():
    raw = b"# Memory\n<private>\n## 2026-02-14\n- secret\n</private>\n"
    new, line, entry = add_long(raw, "visible")
    assert new.startswith(raw)
    assert entry.text == "visible" and line == 8


def test_long_term_preserves_crlf_byte_for_byte():
    raw = b"# Memory\r\n\r\n## 2026-02-14\r\n- a\r\n\r\n## Other\r\n- b\r\n"
    new, line, entry = add_long(raw, "c")
    assert new == (b"# Memory\r\n\r\n## 2026-02-14\r\n- a\r\n"
                   b"- c (added at 2026-02-14T09:12:03Z)\r\n\r\n## Other\r\n- b\r\n")
    assert (line, entry.text) == (5, "c")


def test_long_term_preserves_bom_and_invalid_utf8_bytes():
    raw = b"\xef\xbb\xbf# Memory\n\n## 2026-02-13\n- caf\xe9 \xff\xfe\n\n## 2026-02-14\n- a\n"
    new, line, entry = add_long(raw, "b")
    assert new == raw + b"- b (added at 2026-02-14T09:12:03Z)\n"
    assert (line, entry.text) == (8, "b")


def test_long_term_invalid_utf8_after_the_insertion_point_is_kept():
    raw = b"## 2026-02-14\n- a\n\n## Other\n- \xc3\x28 broken\r\n"
    new, line, entry = add_long(raw, "b")
    assert new == b"## 2026-02-14\n- a\n- b (added at 2026-02-14T09:12:03Z)\n\n## Other\n- \xc3\x28 broken\r\n"
    assert line == 3


# -- daily round trips ------------------------------------------------------------------


def test_daily_round_trip_into_a_new_note():
    raw, entry = add_daily(b"", "Met Sam about the Atlas budget.", category="decision",
                           tags=("atlas",))
    assert (entry.text, entry.date, entry.time, entry.line_start, entry.line_end) == (
        "Met Sam about the Atlas budget.", TODAY, "09:12:03", 5, 5)
    assert (entry.category, entry.tags) == ("decision", ("atlas",))


def test_daily_round_trip_appends_after_existing_entries():
    raw, first = add_daily(b"", "one")
    raw, second = add_daily(raw, "two\nthree", when=NOW.replace(hour=17, minute=40, second=11))
    assert (second.text, second.time, second.line_start, second.line_end) == (
        "two\nthree", "17:40:11", 11, 12)
    assert [e.text for e in parse_daily_note(raw.decode(), DN, TODAY)] == ["one", "two\nthree"]


def test_daily_append_to_a_file_without_final_newline():
    raw = b"# Daily Note - 2026-02-14\n\n## 08:00:00 UTC\n\nold"
    new, entry = add_daily(raw, "new")
    assert new.startswith(raw + b"\n")
    assert (entry.text, entry.line_start) == ("new", 11)
    assert [e.text for e in parse_daily_note(new.decode(), DN, TODAY)] == ["old", "new"]


def test_daily_append_preserves_crlf_bom_and_invalid_bytes():
    raw = b"\xef\xbb\xbf# Daily Note - 2026-02-14\r\n\r\n## 08:00:00 UTC\r\n\r\nbad \xff byte\r\n"
    new, entry = add_daily(raw, "new")
    assert new == raw + b"\r\n---\r\n\r\n## 09:12:03 UTC\r\n\r\nnew\r\n"
    assert (entry.text, entry.time, entry.line_start) == ("new", "09:12:03", 11)


@pytest.mark.parametrize("text", [
    "# looks like a title",
    "## 10:00:00 UTC",
    "## 2026-02-14",
    "---",
    "   ---",
    "<!-- @category: decision -->",
    "\\# already escaped",
    "\\\\---",
    "a\n---\nb",
    "a\n# Daily Note - 2026-02-14\nb",
    "a\n<!-- @tag: x -->",
])
def test_daily_structure_lookalikes_in_user_text_round_trip(text):
    _, entry = add_daily(b"", text)
    assert entry.text == normalize_text(text)


def test_daily_thematic_break_with_spaces_in_user_text_round_trips():
    # `- - -` is a separator to the reader, so the writer must escape it too.
    _, entry = add_daily(b"", "before\n- - -\nafter")
    assert entry.text == "before\n- - -\nafter"


@pytest.mark.parametrize("text", [
    "# looks like a heading",
    "## 2026-02-14",
    "a\n## Preferences\nb",
    "---",
    "<!-- @category: decision -->",
    "a\n<!-- @tag: x -->",
    "ends with (added at whenever)",
    "1. numbered\n- dash\n* star",
])
def test_long_term_structure_lookalikes_in_user_text_round_trip(text):
    _, _, entry = add_long(b"", text)
    assert entry.text == normalize_text(text)
    assert (entry.category, entry.tags) == (None, ())


@pytest.mark.parametrize("text", ["\\# not a heading", "a\n\\--- b", "path C:\\\n\\<!-- x"])
def test_long_term_leading_backslash_in_user_text_round_trips(text):
    # The reader removes one backslash before `#`, `---` and `<!--` (the daily writer's
    # escape), so the long-term writer must escape those lines too.
    _, _, entry = add_long(b"", text)
    assert entry.text == normalize_text(text)


# -- property round trips ---------------------------------------------------------------

# Pieces that mean something to the reader, so lines often start with structure.
_PIECES = st.sampled_from(["#", "## ", "---", "- - -", "-- -", "<!--", "-->", "\\", "\\#",
                           "\\---", "\\<!--", "(added at x)", "\r", "\r\n", "  ", "\t", "- ",
                           "* ", "1. ", "<!-- @category: a -->", "<!-- @tag: b -->", "word", "é",
                           "𝄞", "## 09:00:00 UTC", "## 2026-02-14", "# Daily Note", "..."])
_LINE = st.lists(st.one_of(_PIECES, st.text(max_size=5)), max_size=4).map("".join)
_TEXT = st.one_of(
    st.text(),
    st.lists(_LINE, min_size=1, max_size=6).map("\n".join),
).filter(lambda s: "private" not in s.lower() and normalize_text(s) != "")


@settings(max_examples=200, deadline=None)
@given(_TEXT)
def test_long_term_round_trip_of_arbitrary_text(text):
    _, line, entry = add_long(b"", text)
    expected = normalize_text(text)
    assert entry.text == expected
    assert (entry.date, entry.time) == (TODAY, "09:12:03")
    assert entry.line_end - entry.line_start == expected.count("\n")


@settings(max_examples=200, deadline=None)
@given(_TEXT, _TEXT)
def test_long_term_round_trip_into_a_file_with_an_earlier_item(first, second):
    raw, _, _ = add_long(b"", first)
    new, line, entry = add_long(raw, second)
    assert entry.text == normalize_text(second)
    assert [e.text for e in parse_long_term(new.decode(), LT)] == [
        normalize_text(first), normalize_text(second)]


@settings(max_examples=200, deadline=None)
@given(_TEXT)
def test_daily_round_trip_of_arbitrary_text(text):
    _, entry = add_daily(b"", text)
    expected = normalize_text(text)
    assert (entry.text, entry.date, entry.time) == (expected, TODAY, "09:12:03")
    assert entry.line_start == 5
    assert entry.line_end == 5 + expected.count("\n")


@settings(max_examples=200, deadline=None)
@given(_TEXT, _TEXT)
def test_daily_round_trip_of_two_entries(first, second):
    raw, _ = add_daily(b"", first)
    new, _ = add_daily(raw, second, when=NOW.replace(hour=18))
    entries = parse_daily_note(new.decode(), DN, TODAY)
    assert [(e.text, e.time) for e in entries] == [
        (normalize_text(first), "09:12:03"), (normalize_text(second), "18:12:03")]


# -- front matter -------------------------------------------------------------------------


def test_a_new_item_never_goes_inside_front_matter():
    """A `## today` line inside YAML front matter is a comment, not today's header."""
    raw = b"---\ntitle: Memory\n## 2026-02-14\n---\n# Memory\n"
    new, line, entry = add_long(raw, "Likes green tea")
    assert line > 4 and entry.text == "Likes green tea"
    assert new.startswith(raw)


def test_a_thematic_break_first_does_not_swallow_a_new_item():
    """The issue's data loss: a first-line `---` once hid everything to the next `---`,
    and an item added under today's header there was reported as private."""
    raw = b"---\n# Memory\n\n## 2026-02-14\n- Hand-written fact\n---\n- After the break\n"
    new, line, entry = add_long(raw, "Likes green tea")
    assert line == 8 and entry.text == "Likes green tea"  # today's section runs to the end
    texts = [e.text for e in parse_long_term(new.decode(), LT)]
    assert texts == ["Hand-written fact", "After the break", "Likes green tea"]


def test_an_item_added_to_a_file_private_by_front_matter_stays_private():
    raw = b"---\n{private: true}\n---\n## 2026-02-14\n- secret\n"
    new, _ = insert_long_term(raw, TODAY, long_term_item("more", NOW))
    assert parse_long_term(new.decode(), LT) == []


def test_a_daily_entry_never_closes_a_first_line_break_into_front_matter():
    """A note opening with `---` never closed: the `---` written before a new entry would
    have made the lines between front matter, hiding them."""
    raw = b"---\nmood: good\nweather: rain\n"
    new, entry = add_daily(raw, "Met Sam")
    texts = [e.text for e in parse_daily_note(new.decode(), DN, TODAY)]
    assert texts == ["mood: good\nweather: rain", "Met Sam"] and entry.text == "Met Sam"


def test_a_daily_entry_after_front_matter_is_read_back():
    raw = b"---\ntags: [work]\n---\n# Daily Note - 2026-02-14\n"
    _, entry = add_daily(raw, "Met Sam")
    assert entry.text == "Met Sam"


def test_cli_keeps_hand_written_text_after_a_first_line_break_and_warns_of_hidden_text(tmp_path):
    """Through the real CLI: the add is visible (not "private"), read shows the hand-written
    lines, and front matter that may be notes is named by a `Warning:` line."""
    from tests.reliability.support import cli, subprocess_env

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "MEMORY.md").write_text("---\nHand-written fact\n---\n", encoding="utf-8")
    env = subprocess_env(tmp_path)
    added = cli(env, "--workspace", str(ws), "memory", "add", "--long", "Likes green tea")
    assert added.returncode == 0 and "private" not in added.stdout, added.stdout + added.stderr
    read = cli(env, "--workspace", str(ws), "memory", "read", "--long")
    assert "Hand-written fact" in read.stdout and "Likes green tea" in read.stdout
    assert read.stderr == ""

    note = ws / "memory" / "2026-02-14.md"
    note.write_text("---\nAtlas: 40k approved\n---\n\n## 09:00:00 UTC\n\nvisible\n", encoding="utf-8")
    read = cli(env, "--workspace", str(ws), "memory", "read", "--date", "2026-02-14")
    assert "visible" in read.stdout and "Atlas" not in read.stdout
    assert read.stderr.startswith("Warning: memory/2026-02-14.md: lines 1-3 are YAML front matter")
    ranked = cli(env, "--workspace", str(ws), "memory", "rank", "-q", "visible", "--all")
    assert "Warning: memory/2026-02-14.md: lines 1-3" in ranked.stderr
