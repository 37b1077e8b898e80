"""Parsing MEMORY.md and daily notes into entries: every format variant of docs/ARCHITECTURE.md."""

from __future__ import annotations

import re
from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st

from miniclaw.entries.entry import DAILY_NOTE, LONG_TERM
from miniclaw.entries.parsing import parse_annotation, parse_daily_note, parse_long_term

LT = "memory/MEMORY.md"
DN = "memory/2026-02-14.md"
DAY = date(2026, 2, 14)


def summary(entries):
    """(text, date, time, line_start, line_end) of each entry."""
    return [(e.text, e.date, e.time, e.line_start, e.line_end) for e in entries]


STORY = (
    "# Memory\n"
    "\n"
    "## 2026-02-14\n"
    "- Prefers dark roast coffee (added at 2026-02-14T09:12:03Z)\n"
    "- Project Atlas deadline moved to March 3 (added at 2026-02-14T17:40:11+00:00)\n"
)

STORY_ENTRIES = [
    ("Prefers dark roast coffee", DAY, "09:12:03", 4, 4),
    ("Project Atlas deadline moved to March 3", DAY, "17:40:11", 5, 5),
]

# -- MEMORY.md --------------------------------------------------------------------------


def test_long_term_story_format():
    assert summary(parse_long_term(STORY, LT)) == STORY_ENTRIES


def test_long_term_entries_carry_source_and_path():
    entries = parse_long_term(STORY, LT)
    assert {(e.source, e.path) for e in entries} == {(LONG_TERM, LT)}
    assert all(e.category is None and e.tags == () for e in entries)


def test_long_term_two_spaces_after_added_at():
    text = "## 2026-02-14\n- Likes tea (added at  2026-02-14T10:20:30Z)\n"
    assert summary(parse_long_term(text, LT)) == [("Likes tea", DAY, "10:20:30", 2, 2)]


def test_long_term_missing_added_at_suffix():
    text = "# Memory\n\n## 2026-02-13\n- Likes tea\n"
    assert summary(parse_long_term(text, LT)) == [("Likes tea", date(2026, 2, 13), None, 4, 4)]


def test_long_term_added_at_without_a_time_gives_no_time():
    text = "## 2026-02-14\n- Likes tea (added at sometime)\n"
    assert summary(parse_long_term(text, LT)) == [("Likes tea", DAY, None, 2, 2)]


def test_long_term_crlf_line_endings():
    assert summary(parse_long_term(STORY.replace("\n", "\r\n"), LT)) == STORY_ENTRIES


def test_long_term_bom():
    assert summary(parse_long_term("\ufeff" + STORY, LT)) == STORY_ENTRIES


def test_long_term_bom_and_crlf_together():
    assert summary(parse_long_term("\ufeff" + STORY.replace("\n", "\r\n"), LT)) == STORY_ENTRIES


def test_long_term_undated_section_paragraphs_and_bullets():
    text = (
        "# Memory\n"           # 1
        "\n"                   # 2
        "## Preferences\n"     # 3
        "Likes quiet\n"        # 4
        "mornings.\n"          # 5
        "\n"                   # 6
        "- Window seat\n"      # 7
        "- Aisle never\n"      # 8
        "\n"                   # 9
        "## 2026-02-14\n"      # 10
        "- Dated one\n"        # 11
    )
    assert summary(parse_long_term(text, LT)) == [
        ("Likes quiet\nmornings.", None, None, 4, 5),
        ("Window seat", None, None, 7, 7),
        ("Aisle never", None, None, 8, 8),
        ("Dated one", DAY, None, 11, 11),
    ]


def test_long_term_undated_section_after_a_dated_one_has_no_date():
    text = "## 2026-02-14\n- dated\n\n## Projects\n- undated\n"
    assert summary(parse_long_term(text, LT)) == [
        ("dated", DAY, None, 2, 2),
        ("undated", None, None, 5, 5),
    ]


def test_long_term_paragraph_in_a_dated_section_takes_the_date():
    text = "## 2026-02-14\nA paragraph\nover two lines.\n"
    assert summary(parse_long_term(text, LT)) == [("A paragraph\nover two lines.", DAY, None, 2, 3)]


def test_long_term_invalid_date_heading_is_an_undated_section():
    text = "## 2026-02-30\n- not a real day\n"
    assert summary(parse_long_term(text, LT)) == [("not a real day", None, None, 2, 2)]


def test_long_term_title_is_not_an_entry():
    assert parse_long_term("# Memory\n", LT) == []


def test_long_term_multiline_bullet_with_indented_continuation():
    text = (
        "## 2026-02-14\n"
        "- First line\n"
        "  second line\n"
        "    indented more\n"
        "  last line (added at 2026-02-14T09:12:03Z)\n"
        "- Next bullet\n"
    )
    assert summary(parse_long_term(text, LT)) == [
        ("First line\nsecond line\n  indented more\nlast line", DAY, "09:12:03", 2, 5),
        ("Next bullet", DAY, None, 6, 6),
    ]


def test_long_term_multiline_bullet_with_blank_line_inside():
    text = "## 2026-02-14\n- Para one\n\n  para two\n- other\n"
    assert summary(parse_long_term(text, LT)) == [
        ("Para one\n\npara two", DAY, None, 2, 4),
        ("other", DAY, None, 5, 5),
    ]


def test_long_term_blank_line_then_unindented_text_starts_a_paragraph():
    text = "## 2026-02-14\n- bullet\n\nparagraph\n"
    assert summary(parse_long_term(text, LT)) == [
        ("bullet", DAY, None, 2, 2),
        ("paragraph", DAY, None, 4, 4),
    ]


def test_long_term_star_plus_and_numbered_bullets():
    text = "## 2026-02-14\n* star\n+ plus\n1. numbered\n"
    assert [e.text for e in parse_long_term(text, LT)] == ["star", "plus", "numbered"]


def test_long_term_annotations_attach_to_the_item_above():
    text = (
        "## 2026-02-14\n"
        "- Chose Postgres\n"
        "<!-- @category: decision -->\n"
        "<!-- @tag: atlas -->\n"
        "<!-- @tag: database -->\n"
        "- Unlabelled\n"
    )
    entries = parse_long_term(text, LT)
    assert [(e.text, e.category, e.tags, e.line_start, e.line_end) for e in entries] == [
        ("Chose Postgres", "decision", ("atlas", "database"), 2, 2),
        ("Unlabelled", None, (), 6, 6),
    ]


def test_long_term_last_category_wins():
    text = "- item\n<!-- @category: decision -->\n<!-- @category: pattern -->\n"
    assert parse_long_term(text, LT)[0].category == "pattern"


def test_long_term_invalid_category_is_ignored():
    text = ("- item\n<!-- @category: decision -->\n<!-- @category: not valid! -->\n"
            "<!-- @category: 9lives -->\n")
    entry = parse_long_term(text, LT)[0]
    assert entry.category == "decision"
    assert entry.text == "item"


def test_long_term_custom_category_matching_the_pattern_is_kept():
    text = "- item\n<!-- @category: follow-up2 -->\n"
    assert parse_long_term(text, LT)[0].category == "follow-up2"


def test_long_term_repeated_tag_is_kept_once():
    text = "- item\n<!-- @tag: travel -->\n<!-- @tag: Travel -->\n"
    assert parse_long_term(text, LT)[0].tags == ("travel",)


def test_long_term_annotation_after_multiline_bullet_labels_it():
    text = "- line one\n  line two\n<!-- @tag: x -->\n- other\n"
    entries = parse_long_term(text, LT)
    assert [(e.text, e.tags, e.line_start, e.line_end) for e in entries] == [
        ("line one\nline two", ("x",), 1, 2),
        ("other", (), 4, 4),
    ]


def test_long_term_annotation_does_not_leak_into_the_text():
    text = "- item\n<!-- @category: decision -->\n"
    assert "category" not in parse_long_term(text, LT)[0].text


def test_long_term_private_block_is_not_an_entry():
    text = "## 2026-02-14\n- shown\n<private>\n- hidden secret\n</private>\n- also shown\n"
    assert summary(parse_long_term(text, LT)) == [
        ("shown", DAY, None, 2, 2),
        ("also shown", DAY, None, 6, 6),
    ]


def test_long_term_front_matter_is_skipped_and_lines_still_count_it():
    text = "---\ntitle: mine\n---\n## 2026-02-14\n- after front matter\n"
    assert summary(parse_long_term(text, LT)) == [("after front matter", DAY, None, 5, 5)]


# -- daily notes ------------------------------------------------------------------------

DAILY = (
    "# Daily Note - 2026-02-14\n"   # 1
    "\n"                            # 2
    "## 09:12:03 UTC\n"             # 3
    "\n"                            # 4
    "Met Sam about the Atlas budget.\n"  # 5
    "\n"                            # 6
    "---\n"                         # 7
    "\n"                            # 8
    "## 17:40:11 UTC\n"             # 9
    "\n"                            # 10
    "Second entry line one.\n"      # 11
    "Line two.\n"                   # 12
)

DAILY_ENTRIES = [
    ("Met Sam about the Atlas budget.", DAY, "09:12:03", 5, 5),
    ("Second entry line one.\nLine two.", DAY, "17:40:11", 11, 12),
]


def test_daily_story_format():
    assert summary(parse_daily_note(DAILY, DN, DAY)) == DAILY_ENTRIES


def test_daily_entries_carry_source_and_path():
    entries = parse_daily_note(DAILY, DN, DAY)
    assert {(e.source, e.path) for e in entries} == {(DAILY_NOTE, DN)}


def test_daily_crlf_and_bom():
    text = "\ufeff" + DAILY.replace("\n", "\r\n")
    assert summary(parse_daily_note(text, DN, DAY)) == DAILY_ENTRIES


def test_daily_older_repeated_title_is_accepted_and_not_content():
    text = (
        "# Daily Note - 2026-02-14\n"  # 1
        "\n"                           # 2
        "## 09:00:00 UTC\n"            # 3
        "\n"                           # 4
        "First.\n"                     # 5
        "\n"                           # 6
        "# Daily Note - 2026-02-14\n"  # 7
        "\n"                           # 8
        "## 10:00:00 UTC\n"            # 9
        "\n"                           # 10
        "Second.\n"                    # 11
    )
    assert summary(parse_daily_note(text, DN, DAY)) == [
        ("First.", DAY, "09:00:00", 5, 5),
        ("Second.", DAY, "10:00:00", 11, 11),
    ]


def test_daily_entry_without_separator_ends_at_next_time_heading():
    text = "## 09:00:00 UTC\nOne.\n## 10:00:00 UTC\nTwo.\n"
    assert summary(parse_daily_note(text, DN, DAY)) == [
        ("One.", DAY, "09:00:00", 2, 2),
        ("Two.", DAY, "10:00:00", 4, 4),
    ]


def test_daily_text_after_a_separator_without_heading_is_its_own_entry():
    text = "## 09:00:00 UTC\nOne.\n---\nLoose.\n"
    assert summary(parse_daily_note(text, DN, DAY)) == [
        ("One.", DAY, "09:00:00", 2, 2),
        ("Loose.", DAY, None, 4, 4),
    ]


def test_daily_entry_keeps_inner_blank_lines_and_bullets():
    text = "## 09:00:00 UTC\n\nPara one.\n\n- bullet a\n- bullet b\n\n"
    assert summary(parse_daily_note(text, DN, DAY)) == [
        ("Para one.\n\n- bullet a\n- bullet b", DAY, "09:00:00", 3, 6),
    ]


def test_daily_other_heading_starts_an_untimed_entry_with_its_title():
    text = "# Daily Note - 2026-02-14\n\n## Ideas\n\nBuild a bird house.\n"
    assert summary(parse_daily_note(text, DN, DAY)) == [
        ("Ideas\n\nBuild a bird house.", DAY, None, 3, 5),
    ]


def test_daily_level_three_heading_stays_inside_the_entry():
    text = "## 09:00:00 UTC\n\n### Details\nMore.\n"
    assert summary(parse_daily_note(text, DN, DAY)) == [
        ("### Details\nMore.", DAY, "09:00:00", 3, 4),
    ]


def test_daily_text_before_any_heading_is_an_entry():
    text = "Loose thought.\n\n## 09:00:00 UTC\n\nEntry.\n"
    assert summary(parse_daily_note(text, DN, DAY)) == [
        ("Loose thought.", DAY, None, 1, 1),
        ("Entry.", DAY, "09:00:00", 5, 5),
    ]


def test_daily_text_between_title_and_first_heading_is_an_entry():
    text = "# Daily Note - 2026-02-14\nLoose thought.\n## 09:00:00 UTC\nEntry.\n"
    assert summary(parse_daily_note(text, DN, DAY)) == [
        ("Loose thought.", DAY, None, 2, 2),
        ("Entry.", DAY, "09:00:00", 4, 4),
    ]


def test_daily_note_of_hand_written_bullets_is_one_entry_per_bullet():
    """Issue 13: a note without time sections was one entry, lines 1-5, bullets run together."""
    text = ("- Met Sam about the Atlas budget\n"
            "- Dentist moved to Friday\n"
            "  (bring the forms)\n"
            "* Bought a bicycle\n"
            "1. Call mum\n")
    assert summary(parse_daily_note(text, DN, DAY)) == [
        ("Met Sam about the Atlas budget", DAY, None, 1, 1),
        ("Dentist moved to Friday\n(bring the forms)", DAY, None, 2, 3),
        ("Bought a bicycle", DAY, None, 4, 4),
        ("Call mum", DAY, None, 5, 5),
    ]


def test_daily_bullets_keep_their_day_under_any_heading_and_annotations_label_them():
    text = ("# Daily Note - 2026-02-14\n"
            "- one\n"
            "<!-- @tag: work -->\n"
            "\n"
            "A paragraph\n"
            "over two lines.\n")
    entries = parse_daily_note(text, DN, DAY)
    assert summary(entries) == [("one", DAY, None, 2, 2),
                                ("A paragraph\nover two lines.", DAY, None, 5, 6)]
    assert entries[0].tags == ("work",)


def test_daily_bullets_stay_split_after_a_timed_entry_is_appended():
    text = "- first fact\n- second fact\n\n---\n\n## 09:00:00 UTC\n\nAdded later.\n"
    assert summary(parse_daily_note(text, DN, DAY)) == [
        ("first fact", DAY, None, 1, 1),
        ("second fact", DAY, None, 2, 2),
        ("Added later.", DAY, "09:00:00", 8, 8),
    ]


def test_daily_front_matter_is_skipped():
    text = "---\nmood: good\n---\n## 09:00:00 UTC\n\nEntry.\n"
    assert summary(parse_daily_note(text, DN, DAY)) == [("Entry.", DAY, "09:00:00", 6, 6)]


def test_daily_front_matter_private_hides_every_entry():
    text = "---\nprivate: true\n---\n## 09:00:00 UTC\n\nSecret.\n"
    assert parse_daily_note(text, DN, DAY) == []


def test_daily_empty_time_section_gives_no_entry():
    text = "## 09:00:00 UTC\n\n---\n\n## 10:00:00 UTC\n\nReal.\n"
    assert summary(parse_daily_note(text, DN, DAY)) == [("Real.", DAY, "10:00:00", 7, 7)]


def test_daily_annotation_labels_the_entry():
    text = "## 09:00:00 UTC\n\nChose X.\n<!-- @category: decision -->\n<!-- @tag: atlas -->\n"
    entry = parse_daily_note(text, DN, DAY)[0]
    assert (entry.text, entry.category, entry.tags, entry.line_end) == (
        "Chose X.", "decision", ("atlas",), 3)


def test_daily_private_inline_text_is_removed():
    text = "## 09:00:00 UTC\n\nCall <private>555-1234</private> Sam.\n"
    assert summary(parse_daily_note(text, DN, DAY)) == [("Call  Sam.", DAY, "09:00:00", 3, 3)]


def test_daily_date_comes_from_the_argument_not_the_title():
    text = "# Daily Note - 2020-01-01\n\n## 09:00:00 UTC\n\nx\n"
    assert parse_daily_note(text, DN, DAY)[0].date == DAY


def test_daily_time_heading_is_case_insensitive_on_utc():
    text = "## 09:05:07 utc\n\nx\n"
    assert parse_daily_note(text, DN, DAY)[0].time == "09:05:07"


def test_daily_empty_file_has_no_entries():
    assert parse_daily_note("", DN, DAY) == []
    assert parse_daily_note("# Daily Note - 2026-02-14\n", DN, DAY) == []


# -- annotations ------------------------------------------------------------------------


def test_parse_annotation_accepts_category_and_tag():
    assert parse_annotation("<!-- @category: decision -->") == ("category", "decision")
    assert parse_annotation("  <!--@tag:travel-->  ") == ("tag", "travel")


def test_parse_annotation_rejects_other_comments_and_bad_values():
    assert parse_annotation("<!-- a comment -->") is None
    assert parse_annotation("<!-- @category: two words -->") is None
    assert parse_annotation("<!-- @owner: me -->") is None


# -- properties -------------------------------------------------------------------------

_ANY_TEXT = st.text(max_size=400)


@settings(max_examples=200, deadline=None)
@given(_ANY_TEXT)
def test_parsers_never_crash_and_line_numbers_are_in_range(text):
    line_count = text.count("\n") + 1
    for entry in parse_long_term(text, LT) + parse_daily_note(text, DN, DAY):
        assert 1 <= entry.line_start <= entry.line_end <= line_count
        assert entry.text == entry.text.strip() and entry.text


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab #-*<!>@:\\\t", max_size=12), max_size=25),
       st.sampled_from(["\n", "\r\n"]))
def test_crlf_gives_the_same_entries_as_lf(lines, newline):
    lf = "\n".join(lines)
    other = newline.join(lines)
    assert parse_long_term(other, LT) == parse_long_term(lf, LT)
    assert parse_daily_note(other, DN, DAY) == parse_daily_note(lf, DN, DAY)


# The `(added at ...)` suffix as first specified: searched for anywhere in the last line.
_SUFFIX_REFERENCE = re.compile(r"[ \t]*\(added at\s+([^()]*?)\s*\)[ \t]*$", re.IGNORECASE)
_SUFFIX_PIECES = st.sampled_from(["(", ")", "(added at ", "(Added At\t", "2026-02-14T09:12:03Z",
                                  " ", "\t", "x", "tea", ") ", "((", "\u00a0"])


@settings(max_examples=500, deadline=None)
@given(st.lists(_SUFFIX_PIECES, max_size=12).map("".join))
def test_added_at_suffix_is_split_where_the_search_would_split_it(tail):
    """The parser looks for the suffix only from the line's last "(": the same split as
    searching the whole line, which it replaced for speed."""
    line = f"Likes green tea{tail}"
    [entry] = parse_long_term(f"## 2026-02-14\n- {line}\n", "memory/MEMORY.md")
    found = _SUFFIX_REFERENCE.search(line)
    expected = (line[: found.start()] if found else line).strip()
    assert entry.text == expected
    if found:
        clock = re.search(r"T(\d{2}):(\d{2}):(\d{2})", found.group(1))
        assert entry.time == (":".join(clock.groups()) if clock else None)


def test_an_entry_with_many_tags_is_read_in_linear_time():
    """Each tag was looked for in a list of those already seen: 40,000 tags took 12 s."""
    import time

    text = "- item\n" + "".join(f"<!-- @tag: t{n} -->\n<!-- @tag: T{n} -->\n" for n in range(40_000))
    started = time.perf_counter()
    tags = parse_long_term(text, LT)[0].tags
    assert time.perf_counter() - started < 3
    assert tags == tuple(f"t{n}" for n in range(40_000))


@given(st.lists(st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,6}", fullmatch=True), max_size=30))
def test_an_entrys_tags_are_each_kept_once_in_the_order_first_given(tags):
    text = "- item\n" + "".join(f"<!-- @tag: {tag} -->\n" for tag in tags)
    assert parse_long_term(text, LT)[0].tags == tuple(dict.fromkeys(t.lower() for t in tags))
