"""Spelling fallback: the closest known term within 1 or 2 edits, or None."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniclaw.search.spelling import edit_distance, may_be_typo, suggest


@pytest.mark.parametrize("a, b, distance", [
    ("", "", 0), ("", "abc", 3), ("abc", "abc", 0),
    ("kitten", "sitting", 3),
    ("abcd", "acbd", 1),     # one swap of adjacent letters
    ("ca", "abc", 3),        # OSA edits no substring twice (full Damerau would say 2)
    ("bicyle", "bicycle", 1), ("bicyle", "bible", 2),
    ("北京", "京北", 1), ("café", "cafe", 1),
])
def test_edit_distance_examples(a, b, distance):
    assert edit_distance(a, b) == distance


@pytest.mark.parametrize("word, vocabulary, expected", [
    ("bicyle", {"bicycle": 3, "bible": 9}, "bicycle"),          # missing letter
    ("bicylce", {"bicycle": 3, "bible": 9}, "bicycle"),         # swapped letters
    ("teh", {"the": 1, "tea": 1}, "tea"),                       # both 1 away: alphabet
    ("teh", {"the": 5, "tea": 1}, "the"),                       # both 1 away: frequency
    ("recieve", {"receive": 1, "believe": 40}, "receive"),      # 1 swap beats 2 changes
    ("melanie", {"melani": 2, "melanin": 2, "melody": 50}, "melani"),  # stemmed terms are fine
    ("pottery", {"potteri": 4}, "potteri"),
    ("北京大", {"北京": 2}, "北京"),
])
def test_suggest_typical_typos(word, vocabulary, expected):
    assert suggest(word, vocabulary) == expected


def test_closer_beats_more_frequent():
    assert suggest("bicyle", {"bicycle": 1, "bicycles": 100}) == "bicycle"


def test_never_suggests_the_word_itself():
    assert suggest("cat", {"cat": 9}) is None
    assert suggest("cat", {"cat": 9, "bat": 1}) == "bat"


@pytest.mark.parametrize("word, vocabulary", [
    ("zebra", {"bicycle": 3, "bible": 9}),
    ("abcd", {"cdab": 1}),            # 2 edits is too many for a word of 4 characters
    ("", {"a": 1}),
    ("word", {}),
])
def test_nothing_close_is_none(word, vocabulary):
    assert suggest(word, vocabulary) is None


def test_limit_is_one_edit_up_to_five_characters_and_two_beyond():
    assert suggest("abcd", {"abxy": 1}) is None
    assert suggest("abcde", {"abxye": 1}) is None  # "coffe" must not become "cafe"
    assert suggest("abcde", {"abcxe": 1}) == "abcxe"
    assert suggest("abcdef", {"abxyef": 1}) == "abxyef"
    assert suggest("abcdef", {"axyzef": 1}) is None


def test_max_distance_overrides_the_limit():
    assert suggest("abcd", {"abxy": 1}, max_distance=2) == "abxy"
    assert suggest("abcdef", {"abxyef": 1}, max_distance=1) is None
    assert suggest("abc", {"abd": 1}, max_distance=0) is None


def test_newlines_in_terms_or_word_do_not_misalign_the_scan():
    assert suggest("ab\nc", {"ab\nd": 2, "xyz": 1}) == "ab\nd"
    assert suggest("abce", {"a\nb": 1, "abcd": 1}) == "abcd"


# -- properties ----------------------------------------------------------------------------

_WORD = st.text(alphabet="abcde", max_size=8)


@given(_WORD, _WORD)
def test_distance_is_symmetric(a, b):
    assert edit_distance(a, b) == edit_distance(b, a)


@given(_WORD, _WORD)
def test_distance_is_zero_iff_equal_and_within_length_bounds(a, b):
    distance = edit_distance(a, b)
    assert (distance == 0) == (a == b)
    assert abs(len(a) - len(b)) <= distance <= max(len(a), len(b))


@settings(max_examples=300)
@given(_WORD, st.dictionaries(_WORD, st.integers(1, 5), max_size=30))
def test_suggestion_is_the_closest_allowed_term(word, vocabulary):
    """The fast scan agrees with the definition: nearest, then most frequent, then first."""
    limit = 1 if len(word) <= 5 else 2
    allowed = [(edit_distance(word, term), -count, term) for term, count in vocabulary.items()
               if term != word and edit_distance(word, term) <= limit]
    found = suggest(word, vocabulary)
    assert found == (min(allowed)[2] if word and allowed else None)
    if found is not None:
        assert found != word and found in vocabulary
        assert edit_distance(word, found) <= limit


@pytest.mark.parametrize("word", ["bicyle", "bugdet", "hikng", "Recieve", "xqzt"])
def test_a_word_no_dictionary_knows_may_be_a_typo(word):
    assert may_be_typo(word)


@pytest.mark.parametrize("word", [
    "hiking", "reboot", "sister", "Sister", "café",   # real words, however close to others
    "東京", "京都", "Москва", "αθήνα",                 # other scripts: not corrected
    "2026", "3.5", "b2b", "",                         # not all letters
])
def test_real_words_and_other_scripts_are_not_typos(word):
    assert not may_be_typo(word)


@pytest.mark.parametrize("word", ["hiking", "Reboot", "sister", "teh", "coffe", "bugdet", "miso",
                                  "atlas", "naïve", "café", "straße", "zzzq", "Dana"])
def test_the_word_list_read_from_its_file_says_what_wordfreq_says(word):
    """The list is read from wordfreq's data file (an import costs ~150 ms a CLI call)."""
    from wordfreq import zipf_frequency

    from miniclaw.search import spelling

    assert spelling._english_words() is not None  # the file was read, not the fallback
    assert spelling._is_word.__wrapped__(word) == (zipf_frequency(word, "en", wordlist="small") > 0)


def test_without_any_word_list_nothing_is_corrected(monkeypatch):
    """wordfreq is a dependency, but a broken install must not turn a search into a traceback:
    with no list, every word counts as real, so none is replaced."""
    import builtins

    from miniclaw.search import spelling

    real_import = builtins.__import__

    def no_wordfreq(name, *args, **kwargs):
        if name.startswith(("wordfreq", "msgpack")):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_wordfreq)
    spelling._english_words.cache_clear()
    spelling._is_word.cache_clear()
    try:
        assert spelling._english_words() is None
        assert not spelling.may_be_typo("bugdet")
    finally:
        monkeypatch.undo()
        spelling._english_words.cache_clear()
        spelling._is_word.cache_clear()


def test_among_equally_close_stems_the_one_closest_to_the_typed_word_wins():
    """"cofee" stems to "cofe": one edit from "code" and from "coffe" (coffee's stem), and
    "code" is in more entries; the word as typed is one edit from "coffe", two from "code"."""
    vocabulary = {"code": 5, "coffe": 1}
    assert suggest("cofe", vocabulary) == "code"  # the stem alone cannot tell
    assert suggest("cofe", vocabulary, typed="cofee") == "coffe"
    assert suggest("cofe", {"code": 5}, typed="cofee") == "code"  # only breaks ties


async def test_a_typo_is_corrected_to_the_word_it_was_typed_for(store, workspace):
    from tests.conftest import long_term, write

    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", [
        "The gym door code is 4471", "Changed the code of the bike lock",
        "Left the wifi code on the fridge", "Prefers dark roast coffee"])))
    found = await store.search("cofee", days=None)
    assert [typed for typed, _ in found.corrections] == ["cofee"]
    assert found.corrections[0][1] in ("coffe", "coffee")  # shown as the stem or the word
    assert [hit.content for hit in found.results] == ["Prefers dark roast coffee"]
