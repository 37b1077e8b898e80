"""The tokenizer: the same terms for entries and queries, whatever the script or punctuation."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from miniclaw.entries.tokenizer import index_terms, is_stop_word, token_spans, tokenize
from tests.conftest import write


# -- words, case and accents ---------------------------------------------------------------

def test_plain_words_are_lowercased_terms():
    assert tokenize("Met Sam about Atlas") == ["met", "sam", "about", "atlas"]


def test_non_latin_words_are_single_terms():
    assert tokenize("Привет мир") == ["привет", "мир"]
    assert tokenize("Ωμέγα") == tokenize("ωμεγα")


def test_case_folding_makes_upper_and_lower_case_equal():
    assert tokenize("COFFEE Coffee coffee") == ["coffe"] * 3


def test_sharp_s_folds_to_ss():
    assert tokenize("Straße") == tokenize("STRASSE") == tokenize("strasse")


def test_accented_and_plain_spellings_match():
    assert tokenize("café") == tokenize("CAFÉ") == tokenize("cafe") == ["cafe"]


def test_decomposed_accent_matches_precomposed():
    assert tokenize("cafe\u0301") == tokenize("caf\u00e9") == ["cafe"]


def test_underscore_separates_words():
    assert tokenize("foo_bar") == ["foo", "bar"]


# -- punctuation ---------------------------------------------------------------------------

def test_curly_quotes_separate_words():
    assert tokenize("“alpha”‘beta’") == ["alpha", "beta"]


def test_em_dash_separates_words():
    assert tokenize("alpha—beta–gamma") == ["alpha", "beta", "gamma"]


def test_ellipsis_separates_words():
    assert tokenize("alpha…beta") == ["alpha", "beta"]


def test_no_break_space_separates_words():
    assert tokenize("alpha\u00a0beta\u202fgamma") == ["alpha", "beta", "gamma"]


def test_apostrophe_possessive_matches_the_bare_name():
    assert tokenize("Caroline's") == tokenize("Caroline")


def test_curly_apostrophe_possessive_matches_the_bare_name():
    assert tokenize("Caroline’s") == tokenize("Caroline")


def test_apostrophe_is_not_a_word_boundary():
    assert len(tokenize("don't")) == 1


# -- numbers, dates, times -----------------------------------------------------------------

def test_iso_date_is_one_term():
    assert tokenize("on 2026-02-14") == ["on", "2026-02-14"]


def test_decimal_number_is_one_term():
    assert tokenize("costs 3.5 euros")[1] == "3.5"


def test_clock_time_is_one_term():
    assert tokenize("at 10:30")[1] == "10:30"


def test_trailing_period_is_not_part_of_a_number():
    assert tokenize("it was 42.") == ["it", "was", "42"]


# -- CJK -----------------------------------------------------------------------------------

def test_chinese_becomes_overlapping_bigrams():
    assert tokenize("我喜欢咖啡") == ["我喜", "喜欢", "欢咖", "咖啡"]


def test_japanese_kana_and_kanji_become_overlapping_bigrams():
    assert tokenize("東京タワー") == ["東京", "京タ", "タワ", "ワー"]


def test_korean_becomes_overlapping_bigrams():
    assert tokenize("안녕하세요") == ["안녕", "녕하", "하세", "세요"]


def test_korean_words_split_at_spaces():
    assert tokenize("좋은 친구") == ["좋은", "친구"]


def test_single_cjk_character_is_one_term():
    assert tokenize("猫") == ["猫"]


def test_latin_next_to_cjk_is_a_separate_term():
    assert tokenize("Atlas项目") == ["atlas", "项目"]


async def test_chinese_word_query_finds_its_daily_note(store, workspace):
    write(workspace, "memory/2026-02-10.md",
          "# Daily Note - 2026-02-10\n\n## 08:00:00 UTC\n\n今天我们去北京吃烤鸭。\n")
    write(workspace, "memory/2026-02-11.md",
          "# Daily Note - 2026-02-11\n\n## 08:00:00 UTC\n\n明天上海下雨。\n")
    found = await store.search_memories("北京", days=None)
    assert [hit.path for hit in found] == ["memory/2026-02-10.md"]


@pytest.mark.parametrize(("text", "query"), [
    ("我们在烤鸭店见面", "烤鸭店"),  # three Chinese characters: two bigrams
    ("明日は東京タワーに行きます", "東京"),  # Japanese
    ("오늘 서울에서 친구를 만났다", "친구"),  # Korean
])
async def test_cjk_word_query_finds_its_note(store, workspace, text, query):
    write(workspace, "memory/2026-02-10.md",
          f"# Daily Note - 2026-02-10\n\n## 08:00:00 UTC\n\n{text}\n")
    found = await store.search_memories(query, days=None)
    assert [hit.path for hit in found] == ["memory/2026-02-10.md"]


async def test_added_long_term_chinese_entry_is_found(store):
    await store.add_long_term("我喜欢喝咖啡")
    found = await store.search_memories("咖啡")
    assert [hit.content for hit in found] == ["我喜欢喝咖啡"]


# -- stemming ------------------------------------------------------------------------------

def test_running_and_runs_stem_to_run():
    assert tokenize("running runs run") == ["run", "run", "run"]


def test_plural_matches_singular():
    assert tokenize("meetings") == tokenize("meeting")


async def test_inflected_query_finds_other_inflection(store):
    await store.add_daily_note("Went running by the river",
                               when=datetime(2026, 2, 13, 7, 0, tzinfo=timezone.utc))
    found = await store.search_memories("runs")
    assert [hit.content for hit in found] == ["Went running by the river"]


# -- token_spans ---------------------------------------------------------------------------

def test_token_spans_offsets_point_at_each_word():
    text = "Hello, Café—world’s 2026-02-14 at 10:30!"
    spans = list(token_spans(text))
    assert [text[s:e] for s, e, _ in spans] == [
        "Hello", "Café", "world’s", "2026-02-14", "at", "10:30"]


def test_token_spans_terms_match_tokenize_of_the_word():
    text = "Caroline's RUNNING café"
    for start, end, terms in token_spans(text):
        assert terms == tokenize(text[start:end])


def test_token_spans_of_cjk_run_carry_its_bigrams():
    text = "去北京了"
    [(start, end, terms)] = list(token_spans(text))
    assert (start, end) == (0, 4)
    assert terms == ["去北", "北京", "京了"]


# -- properties ----------------------------------------------------------------------------

_ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=200)


@settings(max_examples=400, deadline=None)
@given(_ANY_TEXT)
def test_tokenize_never_raises_and_gives_nonempty_terms_without_whitespace(text):
    terms = tokenize(text)
    assert isinstance(terms, list)
    for term in terms:
        assert isinstance(term, str)
        assert term
        assert not any(ch.isspace() for ch in term)


@settings(max_examples=400, deadline=None)
@given(_ANY_TEXT)
def test_token_spans_are_ordered_in_bounds_and_nonempty(text):
    last_end = 0
    for start, end, _ in token_spans(text):
        assert last_end <= start < end <= len(text)
        last_end = end


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=200))
@example("add ½ cup of sugar")
@example("the\u2003café\x1cat 10:30,Sam's\u3000東京へ")  # whitespace str.split knows, no regex
def test_token_spans_terms_agree_with_tokenize(text):
    """Highlights rely on token_spans finding exactly the terms the index holds."""
    from_spans = [term for _, _, terms in token_spans(text) for term in terms]
    assert from_spans == tokenize(text)


@settings(max_examples=400, deadline=None)
@given(_ANY_TEXT)
@example("The cat and THE dog's 2026-02-14 去北京了")
def test_index_terms_are_tokenize_without_stop_words(text):
    """The index's terms come from a second cache: they must be the query side's, minus stop
    words, or a stored word could never be found again."""
    assert index_terms(text) == [term for term in tokenize(text) if not is_stop_word(term)]


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
@example("Sam's,O'Neil's-3.5x_2026-02-14:10:30")
@example("it's''RUNNING'")
def test_ascii_chunks_take_a_shortcut_to_the_same_terms(text):
    """A chunk the cache has not seen is mostly ASCII, tokenized in one pass
    (`_ascii_terms`): the same terms as folding and splitting each word on its own."""
    from miniclaw.entries.tokenizer import _TOKEN, _ascii_terms, _word_terms

    chunk = "".join(text.split())
    assert _ascii_terms(chunk) == tuple(term for word in _TOKEN.findall(chunk)
                                        for term in _word_terms(word))


def test_long_chunks_are_tokenized_but_not_cached():
    """URLs and hashes seldom repeat: caching each would grow the caches without end."""
    from miniclaw.entries import tokenizer

    url = "https://example.com/some/long/path?query=visit-kyoto-2026&x=1"
    assert "kyoto" in tokenize(url) and "kyoto" in index_terms(url)
    assert url not in tokenizer._cache and url not in tokenizer._index_cache
    assert tokenize("kyoto,") == ["kyoto"] and "kyoto," in tokenizer._cache


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_terms_by_chunk_are_the_terms_of_the_text(text):
    from miniclaw.entries.tokenizer import chunk_terms

    chunks = text.split()
    found = chunk_terms(chunks)
    assert len(found) == len(chunks)
    assert [t for terms in found for t in ([terms] if isinstance(terms, str) else terms)] \
        == tokenize(text)


def _counted_reference(terms: list[str]) -> tuple[list[str], list[int] | None, int]:
    """`sync._counted` as of 93140e5: what the index stored for an entry's terms."""
    from collections import Counter

    unique = set(terms)
    if len(unique) == len(terms):
        return list(unique), None, len(terms)
    counts = Counter(terms)
    return list(counts), list(counts.values()), len(terms)


_WORDS = st.lists(st.sampled_from(["coffee", "Coffee,", "the", "tea", "Sam's", "2026-02-14",
                                   "東京で", "café", "x", "aa", "bb", "cc", "dd", "ee", "ff"])
                  | st.text(max_size=8), max_size=120).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(_ANY_TEXT | _WORDS)
@example("coffee tea coffee the")
@example("")
def test_counted_index_terms_are_index_terms_counted(text):
    """What a build stores for an entry, counted as its chunks are looked up: the same
    distinct terms in the same order (they number new terms), the same frequencies."""
    from miniclaw.entries.tokenizer import counted_index_terms

    terms = [term for term in tokenize(text) if not is_stop_word(term)]
    assert counted_index_terms(text) == _counted_reference(terms)
    assert counted_index_terms(text) == _counted_reference(terms)  # from the cache now


def test_counted_index_terms_keep_set_order_of_many_distinct_terms():
    """Hundreds of distinct terms: a set of them grows several times, and its order must
    still be the one counting the term list gave."""
    from miniclaw.entries.tokenizer import counted_index_terms

    text = " ".join(f"word{i}x" for i in range(700))
    assert counted_index_terms(text) == _counted_reference(index_terms(text))


def test_index_terms_fill_one_cache():
    """A build's chunks are kept once (`_index_cache`), as tuples that flatten in C."""
    from miniclaw.entries import tokenizer

    index_terms("zanzibarian, the")
    assert tokenizer._index_cache["zanzibarian,"] == ("zanzibarian",)
    assert tokenizer._index_cache["the"] == ()
    assert "zanzibarian," not in tokenizer._cache
