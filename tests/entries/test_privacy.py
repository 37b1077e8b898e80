"""Privacy: `redact_lines` hides every private part and keeps the line count (docs/ARCHITECTURE.md)."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import unicodedata

from miniclaw.fs.files import decode
from miniclaw.entries.parsing import parse_daily_note, parse_long_term, split_lines
from miniclaw.entries.privacy import front_matter_end, is_private_file, open_at_end, redact_lines

# -- block tags -------------------------------------------------------------------------


def test_block_tags_alone_on_lines_hide_the_lines_between_them():
    lines = ["before", "<private>", "secret one", "secret two", "</private>", "after"]
    assert redact_lines(lines) == ["before", "", "", "", "", "after"]


def test_block_tags_with_leading_spaces_still_hide():
    lines = ["before", "   <private>", "secret", "  </private>", "after"]
    assert redact_lines(lines) == ["before", "", "", "", "after"]


def test_text_after_a_block_is_visible_again():
    lines = ["<private>", "secret", "</private>", "visible", "<private>", "secret2", "</private>"]
    assert redact_lines(lines) == ["", "", "", "visible", "", "", ""]


def test_unclosed_block_hides_everything_to_the_end_of_the_file():
    lines = ["visible", "<private>", "secret", "", "## 2026-02-14", "- more secret"]
    assert redact_lines(lines) == ["visible", "", "", "", "", ""]


def test_nested_blocks_close_at_the_outermost_closing_tag():
    lines = ["<private>", "a", "<private>", "b", "</private>", "still secret", "</private>", "shown"]
    assert redact_lines(lines) == ["", "", "", "", "", "", "", "shown"]


def test_nested_block_left_open_inside_a_closed_one_hides_to_the_end():
    lines = ["<private>", "<private>", "x", "</private>", "y"]
    assert redact_lines(lines) == ["", "", "", "", ""]


# -- inline tags ------------------------------------------------------------------------


def test_inline_tags_hide_only_the_text_between_them():
    assert redact_lines(["call <private>555-1234</private> tomorrow"]) == ["call  tomorrow"]


def test_several_inline_pairs_on_one_line_are_all_hidden():
    line = "a <private>one</private> b <PRIVATE>two</PRIVATE> c"
    assert redact_lines([line]) == ["a  b  c"]


def test_inline_open_without_close_on_its_line_opens_a_block():
    lines = ["note <private>secret start", "secret middle", "secret end</private> after", "next"]
    assert redact_lines(lines) == ["note ", "", " after", "next"]


def test_line_holding_only_tags_and_private_text_becomes_empty():
    assert redact_lines(["  <private>secret</private>  "]) == [""]


def test_the_word_private_without_angle_brackets_is_not_a_tag():
    lines = ["this is private information", "privately held", "<privateer> ahoy"]
    assert redact_lines(lines) == lines


# -- odd spacing and case ---------------------------------------------------------------


@pytest.mark.parametrize("opening", ["<private>", "<PRIVATE>", "< PRIVATE >", "<Private>",
                                     '<Private reason="x">', "<private reason='health'>",
                                     "<  private  >"])
def test_opening_tag_variants_open_a_block(opening):
    lines = ["shown", opening, "secret", "</private>", "shown too"]
    assert redact_lines(lines) == ["shown", "", "", "", "shown too"]


@pytest.mark.parametrize("closing", ["</private>", "</ private>", "</PRIVATE>", "< / private >",
                                     "</Private >"])
def test_closing_tag_variants_close_a_block(closing):
    lines = ["<private>", "secret", closing, "shown"]
    assert redact_lines(lines) == ["", "", "", "shown"]


def test_inline_tags_with_odd_spacing_and_attributes():
    line = 'keep <Private reason="x">secret</ private> this'
    assert redact_lines([line]) == ["keep  this"]


def test_unfinished_opening_tag_at_end_of_line_fails_closed():
    lines = ["text before <private", "secret", "more secret"]
    out = redact_lines(lines)
    assert out == ["text before ", "", ""]


def test_unfinished_opening_tag_then_closing_tag_later():
    lines = ["text <private", "secret", "</private>", "shown"]
    assert redact_lines(lines) == ["text ", "", "", "shown"]


# -- front matter -----------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["private: true", 'private: "true"', "private: 'true'",
                                  "private: yes", "private: True", "private:true",
                                  "private: TRUE  # keep it to me"])
def test_front_matter_private_hides_the_whole_file(flag):
    lines = ["---", "title: notes", flag, "---", "", "## 09:00:00 UTC", "", "secret"]
    assert is_private_file(lines)
    assert redact_lines(lines) == [""] * len(lines)


def test_unterminated_front_matter_saying_private_false_hides_nothing():
    lines = ["---", "private: false  # shown", "- visible"]
    assert redact_lines(lines) == lines


def test_unterminated_front_matter_saying_private_still_hides_the_file():
    lines = ["---", "private: true", "## 09:00:00 UTC", "secret"]
    assert redact_lines(lines) == ["", "", "", ""]


@pytest.mark.parametrize("flag", ["private: false", "private: no", "public: true"])
def test_front_matter_not_private_leaves_content_visible(flag):
    lines = ["---", flag, "---", "visible"]
    assert not is_private_file(lines)
    assert redact_lines(lines)[3] == "visible"


def test_private_key_after_the_front_matter_does_not_hide_the_file():
    lines = ["---", "title: x", "---", "private: true", "visible"]
    assert not is_private_file(lines)
    assert redact_lines(lines)[4] == "visible"


def test_front_matter_must_start_on_the_first_line():
    lines = ["", "---", "private: true", "---", "visible"]
    assert redact_lines(lines) == lines


def test_private_front_matter_behind_a_bom_and_crlf_hides_the_parsed_file():
    text = "\ufeff---\r\nprivate: true\r\n---\r\n- secret bullet\r\n"
    assert parse_long_term(text, "memory/MEMORY.md") == []


# Each reads as `private: true` to YAML (PyYAML's safe_load, or YAML 1.1's booleans).
YAML_PRIVATE = {
    "double-quoted key": '---\n"private": true\n---\n',
    "single-quoted key": "---\n'private': true\n---\n",
    "flow mapping": "---\n{private: true}\n---\n",
    "explicit tag": "---\nprivate: !!bool true\n---\n",
    "yaml 1.1 y": "---\nprivate: y\n---\n",
    "yaml 1.1 On": "---\nprivate: On\n---\n",
    "null value": "---\nprivate:\n---\n",
    "--- in a block scalar": "---\nnote: |\n  first\n  ---\n  more\nprivate: true\n---\n",
    "... ends the block": "---\ntitle: x\nprivate: yes\n...\n",
    "CR-only line ends": "---\rprivate: true\r---\r",
    "two BOMs": "\ufeff\ufeff---\nprivate: true\n---\n",
    "three BOMs and CRLF": "\ufeff\ufeff\ufeff---\r\nprivate: True\r\n---\r\n",
    "zero-width space first": "\u200b---\nprivate: true\n---\n",
    "indented first fence": "  ---\nprivate: true\n---\n",
    "not valid YAML but names private": "---\nprivate: true\ntitle: [never closed\n---\n",
    "never closed": "---\ntitle: x\n  private : true\n",
}


@pytest.mark.parametrize("front", YAML_PRIVATE.values(), ids=YAML_PRIVATE.keys())
def test_front_matter_that_yaml_reads_as_private_hides_the_file(front):
    newline = "\r" if "\r" in front and "\n" not in front else "\n"
    text = front + newline.join(["# Memory", "", "## 2026-02-14", "- zebrasecret one",
                                 "## 09:00:00 UTC", "zebrasecret two", ""])
    assert is_private_file(split_lines(text))
    assert parse_long_term(text, "memory/MEMORY.md") == []
    assert parse_daily_note(text, "memory/2026-02-14.md", date(2026, 2, 14)) == []


@pytest.mark.parametrize("front", ["---\nprivate: false\n---\n", "---\nprivate: n\n---\n",
                                   "---\nprivate: Off\n---\n", "---\nprivate: 0\n---\n",
                                   "---\nprivacy: none\n---\n"])
def test_front_matter_that_yaml_reads_as_not_private_shows_the_file(front):
    text = front + "## 2026-02-14\n- visible\n"
    assert [e.text for e in parse_long_term(text, "memory/MEMORY.md")] == ["visible"]


@pytest.mark.parametrize("text", [
    "---\nA hand-written paragraph.\n- a bullet\n---\n- after\n",
    "---\n# Memory\n## 2026-02-14\n- a bullet\n---\n- after\n",
    "---\n- a bullet\n- another\n---\n- after\n",
])
def test_a_thematic_break_first_is_not_front_matter_and_hides_nothing(text):
    texts = [e.text for e in parse_long_term(text, "memory/MEMORY.md")]
    assert texts[-1] == "after" and len(texts) >= 2, texts
    assert front_matter_end(split_lines(text)) == 0
    assert decode(text.encode(), "memory/MEMORY.md")[1] is None


def test_front_matter_holding_what_may_be_notes_is_named_in_a_warning():
    text = "---\nAtlas: 40k approved\n---\n- after\n"
    assert [e.text for e in parse_long_term(text, "memory/MEMORY.md")] == ["after"]
    warning = decode(text.encode(), "memory/MEMORY.md")[1]
    assert warning.startswith("memory/MEMORY.md: lines 1-3 are YAML front matter (1 key that "
                              "reads like notes)")


def test_the_front_matter_warning_never_quotes_a_key_that_may_be_private():
    """YAML reads `<private>...</private>: ...` as a key: quoted in the warning, it reached
    the terminal, the index's files table and an MCP server's log."""
    text = "---\n<private>Bank PIN is 4411</private>: see the safe deposit box\n---\n- after\n"
    warning = decode(text.encode(), "memory/2026-11-20.md")[1]
    assert warning is not None and "4411" not in warning and "Bank" not in warning


def test_a_front_matter_note_of_several_words_is_named_in_a_warning():
    text = "---\nnote: call Sam about the budget\n---\n- after\n"
    assert "(1 key that reads like notes)" in decode(text.encode(), "memory/MEMORY.md")[1]


def test_usual_front_matter_is_skipped_without_a_warning():
    text = "---\ntitle: Notes\ntags: [travel, work]\naliases: []\nmood: good\n---\n- after\n"
    assert [e.text for e in parse_long_term(text, "memory/MEMORY.md")] == ["after"]
    assert decode(text.encode(), "memory/MEMORY.md")[1] is None


def test_front_matter_too_large_to_read_still_hides_a_file_that_names_private():
    text = "---\nprivate: true\nnote: " + "x" * 100_000 + "\n---\n- zebrasecret\n"
    assert parse_long_term(text, "memory/MEMORY.md") == []


def test_front_matter_hiding_the_file_because_it_cannot_be_read_says_so():
    text = "---\nprivate: true\ntitle: [never closed\n---\n- secret\n"
    assert "cannot be read as YAML but names `private`" in decode(text.encode(), "x.md")[1]


# -- tags a reader sees -------------------------------------------------------------------


@pytest.mark.parametrize("lines", [
    ["note <", "private> zebrasecret", "</private> shown"],
    ["note <", "  private reason='x'>", "zebrasecret", "</private>", "shown"],
    ["<private>", "zebrasecret", "<", "/private> shown"],
], ids=["open", "open-attr", "close"])
def test_a_tag_split_after_the_angle_bracket_by_hard_wrapping_is_a_tag(lines):
    out = redact_lines(lines)
    assert len(out) == len(lines)
    assert not any("zebrasecret" in line for line in out), out


def test_a_less_than_sign_at_the_end_of_a_line_is_not_a_tag_otherwise():
    lines = ["1 <", "2 and private", "x <", "", "private> y"]
    assert redact_lines(lines) == lines


INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u034f", "\ufe0f"]


@pytest.mark.parametrize("char", INVISIBLE, ids=[f"U+{ord(c):04X}" for c in INVISIBLE])
@pytest.mark.parametrize("where", [1, 2, 4, 8])
def test_an_invisible_character_inside_a_tag_does_not_hide_the_tag(char, where):
    tag, close = "<private>", "</private>"
    line = f"keep {tag[:where]}{char}{tag[where:]}zebrasecret{close[:where]}{char}{close[where:]} this"
    assert redact_lines([line]) == ["keep  this"]
    lines = ["keep", f"{tag[:where]}{char}{tag[where:]}", "zebrasecret"]
    assert redact_lines(lines) == ["keep", "", ""]


def test_every_format_character_is_invisible_in_a_tag():
    format_chars = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"]
    for char in format_chars:
        assert redact_lines([f"a <pri{char}vate>zebrasecret</private> b"]) == ["a  b"], hex(ord(char))


def test_every_character_that_folds_to_an_angle_bracket_opens_a_tag():
    brackets = [chr(c) for c in range(0x110000) if "<" in unicodedata.normalize("NFKC", chr(c))]
    for char in brackets:
        assert redact_lines([f"a {char}private>zebrasecret"]) == ["a "], hex(ord(char))


@pytest.mark.parametrize("line", ["a ＜private＞zebrasecret＜/private＞ b",
                                  "a ﹤PRIVATE﹥zebrasecret</private> b",
                                  "a <ｐｒｉｖａｔｅ>zebrasecret</ｐｒｉｖａｔｅ> b",
                                  "a <\u00a0private\u3000>zebrasecret</private> b"])
def test_compatibility_forms_of_the_tag_are_the_tag(line):
    assert redact_lines([line]) == ["a  b"]


def test_text_around_a_tag_with_invisible_characters_keeps_them():
    assert redact_lines(["caf\u00e9\u200b <pri\u200bvate>x</private> \u00fcber"]) == [
        "caf\u00e9\u200b  \u00fcber"]


def test_parsers_see_the_split_and_disguised_tags():
    text = "## 2026-02-14\n- shown <\nprivate> zebrasecret\n</priv\u200bate>\n- also shown\n"
    assert [e.text for e in parse_long_term(text, "memory/MEMORY.md")] == ["shown", "also shown"]


# -- invariants -------------------------------------------------------------------------


def test_line_count_is_preserved():
    lines = ["a", "<private>", "b", "c <private>d</private> e", "</private>", "f <private", "g"]
    assert len(redact_lines(lines)) == len(lines)


def test_empty_input_gives_empty_output():
    assert redact_lines([]) == []


def test_open_at_end_detects_an_unclosed_block():
    assert open_at_end(["<private>", "x"])
    assert not open_at_end(["<private>", "x", "</private>"])
    assert not open_at_end(["a <private>x</private> b"])


_PLAIN = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r§"),
    max_size=30,
).filter(lambda s: "private" not in s.lower())


@settings(max_examples=200, deadline=None)
@given(st.lists(_PLAIN, max_size=20))
def test_text_without_tags_passes_through_unchanged(lines):
    assert redact_lines(lines) == lines


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=40).map(lambda s: s.replace("\n", " ")), max_size=20))
def test_redaction_never_changes_the_line_count(lines):
    assert len(redact_lines(lines)) == len(lines)


SECRET = "§zebrasecret§"
_OPEN = st.sampled_from(["<private>", "< PRIVATE >", '<Private reason="x">', "<PRIVATE>",
                         "  <private>", "<pri\u200bvate>", "<\ufeffprivate\u2060>",
                         "\uff1cprivate\uff1e", "<priv\u00adate>"])
_CLOSE = st.sampled_from(["</private>", "</ private>", "</PRIVATE>", "< / private >",
                          "  </private>", "</\u200dprivate>", "\uff1c/private\uff1e"])


@st.composite
def _segment(draw):
    """A list of lines: plain text, or a private part holding the secret."""
    kind = draw(st.sampled_from(["plain", "block", "inline", "nested", "open-inline", "wrapped"]))
    if kind == "plain":
        return [draw(_PLAIN)]
    before, after = draw(_PLAIN), draw(_PLAIN)
    if kind == "block":
        inner = [draw(_PLAIN) + SECRET + draw(_PLAIN) for _ in range(draw(st.integers(1, 3)))]
        return [draw(_OPEN), *inner, draw(_CLOSE)]
    if kind == "inline":
        return [f"{before}{draw(_OPEN).strip()}{SECRET}{draw(_CLOSE).strip()}{after}"]
    if kind == "wrapped":  # hard wrapping split the tags after their `<`
        return [f"{before}<", f"private>{SECRET}", SECRET, f"{SECRET}<", f"/private>{after}"]
    if kind == "nested":
        return [draw(_OPEN), SECRET, draw(_OPEN), SECRET, draw(_CLOSE), SECRET, draw(_CLOSE)]
    return [f"{before}{draw(_OPEN).strip()}{SECRET}", SECRET, f"{SECRET}{draw(_CLOSE).strip()}{after}"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_segment(), min_size=1, max_size=12), st.booleans())
def test_secret_in_private_parts_never_appears_in_the_output(segments, leave_open):
    lines = [line for segment in segments for line in segment]
    if leave_open:
        lines += ["<private>", SECRET, "more " + SECRET]
    out = redact_lines(lines)
    assert len(out) == len(lines)
    assert not any("zebrasecret" in line for line in out)
    text = "\n".join(lines)
    for entry in parse_long_term(text, "memory/MEMORY.md"):
        assert "zebrasecret" not in entry.text
    for entry in parse_daily_note(text, "memory/2026-02-14.md", date(2026, 2, 14)):
        assert "zebrasecret" not in entry.text


@settings(max_examples=150, deadline=None)
@given(st.lists(_PLAIN, min_size=1, max_size=10))
def test_plain_lines_around_private_blocks_stay_visible(plain):
    lines = []
    for text in plain:
        lines += [text, "<private>", SECRET, "</private>"]
    out = redact_lines(lines)
    assert out[0::4] == plain
    assert all(line == "" for i, line in enumerate(out) if i % 4)


def test_split_lines_then_redact_keeps_crlf_line_numbers():
    text = "a\r\n<private>\r\nsecret\r\n</private>\r\nb"
    assert redact_lines(split_lines(text)) == ["a", "", "", "", "b"]


def test_every_character_that_folds_to_an_angle_bracket_is_looked_for_before_folding():
    """`may_hold_private` skips folding text without any of `_LESS_THAN`: that list must hold
    every character whose compatibility form has a `<`, or a disguised tag would be missed."""
    from miniclaw.entries.privacy import _LESS_THAN, may_hold_private

    brackets = [chr(c) for c in range(0x110000)
                if "<" in unicodedata.normalize("NFKD", chr(c))]
    assert set(brackets) <= set(_LESS_THAN)
    for char in brackets:
        if "<" not in unicodedata.normalize("NFKC", char):
            continue  # U+226E: folded, it is itself again, not a `<`
        assert may_hold_private(f"caf\u00e9 {char}pri\u200bvate> x"), hex(ord(char))


_TAG_ALPHABET = st.sampled_from([*"ab <>/\u00e9\u200b\u226e\ufe64\uff1c\uff50\u0301\u0338private\n\t",
                                  "\u3000", "PRIVATE", "\uff50\uff52\uff49\uff56\uff41\uff54\uff45", " " * 40,
                                  "\u200b" * 40, "\u0130", "\u0131", "\u1d56", "\U0001d429"])


@given(st.lists(_TAG_ALPHABET, max_size=30).map("".join))
def test_the_quick_check_for_a_tag_answers_as_folding_the_text_does(text):
    from miniclaw.entries.privacy import _MAYBE_TAG, _fold_fast, may_hold_private

    folded = bool(_MAYBE_TAG.search(text) or _MAYBE_TAG.search(_fold_fast(text)))
    # Only `≮` (itself again when folded, not a `<`) may make it answer "maybe" needlessly.
    assert may_hold_private(text) == folded or ("\u226e" in text and not folded)


@given(st.lists(_TAG_ALPHABET | st.text(max_size=5), max_size=30).map("".join))
def test_every_character_folding_to_an_angle_bracket_is_found(text):
    """`may_hold_private` folds what follows each of `_LESS_THAN` (found by `str.find`):
    the places a regex of the four finds, every one."""
    import re

    from miniclaw.entries.privacy import _LESS_THAN, _less_thans

    found = list(_less_thans(text))
    assert sorted(found) == [m.start() for m in re.finditer(f"[{''.join(_LESS_THAN)}]", text)]


@given(st.text(alphabet="ab\n\r-\ufeff", max_size=12))
def test_the_first_line_is_the_one_partition_gives(text):
    from miniclaw.text import first_line

    assert first_line(text) == text.partition("\n")[0]


# -- what a person types (a query, a message): `visible_typed` -----------------------------

from miniclaw.entries.privacy import visible_typed  # noqa: E402


@pytest.mark.parametrize("typed, visible", [
    ("gecko tank <private>GECKOSECRET1</private> setup", "gecko tank  setup"),
    ("dentist <private>my ssn 123-45-6789</private>", "dentist"),
    ("<private>zebra</private>", ""),
    ("lion <PRIVATE>zebra</ private > tiger", "lion  tiger"),
    ('lion <private reason="x y">zebra</private>', "lion"),
    ("lion \uff1cprivate\uff1ezebra\uff1c/private\uff1e", "lion"),
    ("lion <pri\u200bvate>zebra</private> tiger", "lion  tiger"),
    ("a <private>b <private>c</private> d</private> e", "a  e"),  # nested: the outermost closes
    ("a\n<private>\nb\n</private>\nc", "a\n\n\n\nc"),  # lines are kept, as in a file
])
def test_typed_text_loses_its_private_parts_as_a_memory_file_does(typed, visible):
    assert visible_typed(typed) == visible


@pytest.mark.parametrize("typed, visible", [
    ("zoo <private>zebra and the rest", "zoo"),  # unclosed: the rest is hidden (fail closed)
    ("zoo <private", "zoo"),  # an unfinished tag too
    ("zoo <private>\nzebra\nlion", "zoo"),  # to the end of the text, not of the line
    ("zoo </private> lion", "zoo  lion"),  # a stray closing tag hides nothing but itself
])
def test_an_unclosed_tag_in_typed_text_hides_the_rest_of_it(typed, visible):
    assert visible_typed(typed) == visible


def test_typed_text_without_a_tag_comes_back_unchanged():
    for text in ("  spaces kept  ", "a < b and c > d", "---\nprivate: true\n---\nhi", ""):
        assert visible_typed(text) is text  # front matter belongs to files, not to typed text


def test_halves_of_a_tag_joined_by_a_removal_are_a_tag_too():
    assert visible_typed("<pri<private>x</private>vate>secret") == ""


_PUBLIC = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30).filter(
    lambda s: "<" not in s and "\uff1c" not in s and "\ufe64" not in s and "zq" not in s)
_OPEN = st.sampled_from(["<private>", "<PRIVATE>", "< private >", '<private reason="x">',
                         "<pri\u200bvate>", "\uff1cprivate\uff1e", "\ufe64private\u200c>"])
_CLOSE = st.sampled_from(["</private>", "</ private >", "</Private foo>", "</pri\u200cvate>",
                          "\uff1c/private\uff1e", "", "</privat>"])  # "", "</privat>": unclosed


@given(before=_PUBLIC, after=_PUBLIC, opening=_OPEN, closing=_CLOSE,
       secret=st.text(alphabet="bcdfghjk", min_size=6, max_size=6).map(lambda s: f"zq{s}"),
       newline=st.sampled_from([" ", "\n", "\r\n"]))
def test_no_private_part_of_typed_text_is_ever_visible(before, after, opening, closing,
                                                       secret, newline):
    typed = f"{before}{opening}{newline}{secret}{newline}{closing}{after}"
    visible = visible_typed(typed)
    assert secret not in visible
    assert visible_typed(visible) == visible  # applying it again changes nothing
    if closing in ("</private>", "</ private >", "</Private foo>"):
        # A closed part hides only itself (an invisible character touching a tag, which
        # the tag matcher skips, goes with the tag: nothing a reader sees is lost).
        from miniclaw.entries.privacy import _INVISIBLE

        assert _INVISIBLE.sub("", after).strip() in _INVISIBLE.sub("", visible)
