"""Excerpts: at most 150 characters, centred on the densest cluster of matched words."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from miniclaw.search.excerpt import EXCERPT_WIDTH, make_excerpt
from miniclaw.entries.tokenizer import tokenize


def _terms(query: str) -> frozenset[str]:
    return frozenset(tokenize(query))


def _filler(word: str, count: int) -> str:
    return " ".join([word] * count)


def _highlighted(excerpt: str, spans) -> list[str]:
    return [excerpt[start:end] for start, end in spans]


def test_default_width_is_150():
    assert EXCERPT_WIDTH == 150


def test_short_text_is_returned_whole():
    excerpt, _ = make_excerpt("Prefers dark roast coffee", _terms("coffee"))
    assert excerpt == "Prefers dark roast coffee"


def test_whitespace_runs_are_collapsed():
    excerpt, _ = make_excerpt("Prefers\n\n  dark\troast", _terms("dark"))
    assert excerpt == "Prefers dark roast"


def test_long_text_excerpt_is_at_most_150_chars():
    text = _filler("lorem", 200) + " coffee " + _filler("ipsum", 200)
    excerpt, _ = make_excerpt(text, _terms("coffee"))
    assert len(excerpt) <= 150


def test_excerpt_contains_a_match_far_into_the_text():
    text = _filler("lorem", 200) + " coffee " + _filler("ipsum", 200)
    excerpt, _ = make_excerpt(text, _terms("coffee"))
    assert "coffee" in excerpt


def test_excerpt_cut_on_both_sides_uses_ellipses():
    text = _filler("lorem", 200) + " coffee " + _filler("ipsum", 200)
    excerpt, _ = make_excerpt(text, _terms("coffee"))
    assert excerpt.startswith("…") and excerpt.endswith("…")


def test_excerpt_from_the_start_has_only_a_trailing_ellipsis():
    text = "coffee " + _filler("ipsum", 200)
    excerpt, _ = make_excerpt(text, _terms("coffee"))
    assert excerpt.startswith("coffee") and excerpt.endswith("…")


def test_excerpt_at_the_end_has_only_a_leading_ellipsis():
    text = _filler("ipsum", 200) + " coffee"
    excerpt, _ = make_excerpt(text, _terms("coffee"))
    assert excerpt.startswith("…") and excerpt.endswith("coffee")


def test_uncut_text_has_no_ellipsis():
    excerpt, _ = make_excerpt("dark roast coffee", _terms("coffee"))
    assert "…" not in excerpt


def test_excerpt_keeps_some_context_before_the_match():
    text = _filler("lorem", 100) + " before coffee " + _filler("ipsum", 100)
    excerpt, _ = make_excerpt(text, _terms("coffee"))
    assert "before coffee" in excerpt


def test_excerpt_prefers_densest_cluster_over_a_lone_earlier_match():
    text = ("alpha " + _filler("lorem", 60) + " beta gamma delta " + _filler("ipsum", 60))
    excerpt, _ = make_excerpt(text, _terms("alpha beta gamma delta"))
    assert "beta gamma delta" in excerpt
    assert "alpha" not in excerpt


def test_excerpt_prefers_more_distinct_terms_over_repeats_of_one():
    text = ("beta beta beta beta " + _filler("lorem", 60)
            + " alpha beta gamma " + _filler("ipsum", 60))
    excerpt, _ = make_excerpt(text, _terms("alpha beta gamma"))
    assert "alpha beta gamma" in excerpt


def test_excerpt_holds_both_ends_of_a_wide_cluster_that_fits_the_width():
    # alpha ... omega spans 125 characters: a 150-character window can show both.
    text = _filler("lorem", 60) + " alpha " + _filler("ipsum", 19) + " omega " + _filler("lorem", 60)
    start, end = text.index("alpha"), text.index("omega") + len("omega")
    assert end - start <= 130
    excerpt, _ = make_excerpt(text, _terms("alpha omega"))
    assert "alpha" in excerpt and "omega" in excerpt


def test_highlight_spans_point_at_matched_words_in_short_text():
    excerpt, spans = make_excerpt("Prefers dark roast coffee", _terms("coffee dark"))
    assert _highlighted(excerpt, spans) == ["dark", "coffee"]


def test_highlight_spans_point_at_matched_words_after_a_cut():
    text = _filler("lorem", 100) + " dark roast COFFEE " + _filler("ipsum", 100)
    excerpt, spans = make_excerpt(text, _terms("coffee dark"))
    assert excerpt.startswith("…")
    assert _highlighted(excerpt, spans) == ["dark", "COFFEE"]


def test_highlight_spans_cover_inflected_and_accented_forms():
    excerpt, spans = make_excerpt("Running to the Café", _terms("run cafe"))
    assert _highlighted(excerpt, spans) == ["Running", "Café"]


def test_no_highlights_when_no_term_matches():
    _, spans = make_excerpt("Prefers dark roast coffee", _terms("tea"))
    assert spans == ()


def test_custom_width_is_respected():
    text = _filler("lorem", 50) + " coffee " + _filler("ipsum", 50)
    excerpt, _ = make_excerpt(text, _terms("coffee"), width=40)
    assert len(excerpt) <= 40 and "coffee" in excerpt


# -- properties ----------------------------------------------------------------------------

_WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "lorem", "ipsum", "café",
                          "Running", "2026-02-14", "北京", "x", "—", "…", "\n", "  "])
_TEXT = st.one_of(
    st.text(max_size=400),
    st.lists(_WORDS, max_size=120).map(" ".join),
)
_TERMS = st.one_of(
    st.lists(_WORDS, max_size=5).map(lambda ws: frozenset(t for w in ws for t in tokenize(w))),
    st.text(max_size=30).map(lambda q: frozenset(tokenize(q))),
)


@settings(max_examples=300, deadline=None)
@given(_TEXT, _TERMS)
def test_excerpt_never_exceeds_default_width(text, terms):
    excerpt, _ = make_excerpt(text, terms)
    assert len(excerpt) <= EXCERPT_WIDTH


@settings(max_examples=300, deadline=None)
@given(_TEXT, _TERMS, st.integers(min_value=20, max_value=300))
def test_excerpt_never_exceeds_any_width_and_spans_stay_in_bounds(text, terms, width):
    excerpt, spans = make_excerpt(text, terms, width=width)
    assert len(excerpt) <= width
    for start, end in spans:
        assert 0 <= start < end <= len(excerpt)


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, max_size=120).map(" ".join), _TERMS)
def test_every_highlight_is_a_matched_word(text, terms):
    excerpt, spans = make_excerpt(text, terms)
    for start, end in spans:
        assert set(tokenize(excerpt[start:end])) & terms


@settings(max_examples=300, deadline=None)
@given(_TEXT, _TERMS)
def test_matches_found_chunk_by_chunk_are_those_of_every_word(text, terms):
    """Excerpts look word by word only inside chunks holding a query term (speed on long
    entries): they must find exactly the matches a scan of every word finds."""
    from miniclaw.search.excerpt import _hits
    from miniclaw.entries.tokenizer import token_spans

    flat = " ".join(text.split())
    every_word = [(start, end, terms.intersection(found))
                  for start, end, found in token_spans(flat) if terms.intersection(found)]
    assert _hits(flat, terms) == every_word


@settings(max_examples=300, deadline=None)
@given(_TEXT, _TERMS, st.integers(min_value=1, max_value=200))
def test_the_window_is_the_first_holding_the_most_distinct_terms(text, terms, room):
    """The one-pass window (speed on long entries with many hits) is the one comparing every
    hit with every hit after it finds."""
    from miniclaw.search.excerpt import _best_window, _hits

    hits = _hits(" ".join(text.split()), terms)
    best = (0, 0, -1)
    for i, (start, _, _) in enumerate(hits):
        seen, end = set(), start
        for _, other_end, found in hits[i:]:
            if other_end - start > room:
                break
            seen |= found
            end = other_end
        if len(seen) > best[2]:
            best = (start, end, len(seen))
    assert _best_window(hits, room) == best[:2]
