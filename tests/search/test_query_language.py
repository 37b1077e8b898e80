"""The query language: words, "phrases", +required, -excluded, prefix*; the rest is text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniclaw.errors import QueryError
from miniclaw.search.query import MAX_QUERY_CHARS, Query, parse_query, phrase_matches
from miniclaw.entries.tokenizer import is_stop_word, tokenize

# -- each operator alone -------------------------------------------------------------------


def test_plain_words_are_tokenized_terms_and_nothing_else():
    query = parse_query("Bicycles near the OLD café")
    assert query.terms == tuple(dict.fromkeys(tokenize("Bicycles near the OLD café")))
    assert (query.phrases, query.required, query.excluded, query.prefixes) == ((), (), (), ())


def test_old_two_field_construction_still_works():
    assert Query("sam", ("sam",)).phrases == ()


def test_phrase_is_its_term_sequence_with_stop_words_and_all_required_but_stop_words():
    query = parse_query('"Bank of America" loans')
    assert query.phrases == (("bank", "of", "america"),)
    assert query.required == ("bank", "america")  # the index stores no stop words
    assert query.terms == ("bank", "of", "america", "loan")


def test_curly_quotes_make_a_phrase_too():
    assert parse_query("\u201cnew york\u201d").phrases == (("new", "york"),)


def test_plus_requires_a_word():
    query = parse_query("+Caroline pottery")
    assert query.required == ("carolin",)
    assert query.terms == ("carolin", "potteri")


def test_minus_excludes_a_word_and_it_is_not_searched():
    query = parse_query("pottery -Melanie")
    assert query.excluded == ("melani",)
    assert query.terms == ("potteri",)
    assert query.required == ()


def test_star_after_a_word_is_an_unstemmed_folded_prefix():
    query = parse_query("Runn*")
    assert query.prefixes == ("runn",)
    assert query.terms == ("runn",)  # so a ranker that ignores prefixes still searches it


@pytest.mark.parametrize("text, prefix", [
    ("Café*", "cafe"), ("Caroline's*", "carolines"), ("北京大*", "北京大"),
    ("2026-02*", "2026-02"), ("runn**", "runn"), ("e-mail*", "mail"),
])
def test_prefix_examples(text, prefix):
    assert parse_query(text).prefixes == (prefix,)


def test_require_and_exclude_options_take_several_words_each():
    query = parse_query("sam", require=["Melanie pottery", "oak"], exclude=("the bob", "kim"))
    assert query.terms == ("sam", "melani", "potteri", "oak")
    assert query.required == ("melani", "potteri", "oak")
    assert query.excluded == ("bob", "kim")


def test_a_single_string_option_is_one_value_not_letters():
    assert parse_query("sam", require="oak tree").required == ("oak", "tree")


# -- combined ------------------------------------------------------------------------------


def test_all_operators_together():
    query = parse_query('+sam "old oak" tabl* -kim -"" walk', exclude=["bob"])
    assert query.terms == ("sam", "old", "oak", "tabl", "walk")
    assert query.phrases == (("old", "oak"),)
    assert query.required == ("sam", "old", "oak")
    assert query.excluded == ("kim", "bob")
    assert query.prefixes == ("tabl",)


def test_repeated_words_and_phrases_are_kept_once():
    query = parse_query('"old oak" old "old oak" +old')
    assert query.terms == ("old", "oak")
    assert query.phrases == (("old", "oak"),)
    assert query.required == ("old", "oak")


# -- everything else is text ---------------------------------------------------------------


@pytest.mark.parametrize("text, terms", [
    ("oak AND NOT sam OR kim", ("oak", "and", "not", "sam", "or", "kim")),
    ("NEAR(oak sam)", ("near", "oak", "sam")),
    ("content:backslash", ("content", "backslash")),
    ("C:\\Users\\kim\\", ("c", "user", "kim")),
    ("'; DROP TABLE entries; --", ("drop", "tabl", "entri")),
    ("x'); DELETE FROM postings; --", ("x", "delet", "from", "post")),
    ("%backslash% _oak_ (sam)", ("backslash", "oak", "sam")),
    ("a*b oak:* ^sam$", ("a", "b", "oak", "sam")),
])
def test_fts_and_sql_syntax_is_plain_text(text, terms):
    query = parse_query(text)
    assert query.terms == terms
    assert query.excluded == query.prefixes == query.phrases == ()


@pytest.mark.parametrize("text, terms", [
    ("e-mail", ("e", "mail")), ("2026-02-14", ("2026-02-14",)),
    ("well-known+x", ("well", "known", "x")),
])
def test_a_dash_or_plus_inside_a_word_is_not_an_operator(text, terms):
    query = parse_query(text)
    assert query.terms == terms
    assert query.excluded == query.required == ()


def test_a_lone_sign_or_star_is_not_a_word():
    query = parse_query("oak - + * sam")
    assert query.terms == ("oak", "sam")
    assert query.excluded == query.required == query.prefixes == ()


def test_a_signed_word_takes_no_star():
    assert parse_query("oak -kim*").excluded == ("kim",)
    assert parse_query("oak +kim*").prefixes == ()


def test_an_unclosed_quote_makes_the_rest_a_phrase():
    query = parse_query('oak "new york')
    assert query.phrases == (("new", "york"),)
    assert query.terms == ("oak", "new", "york")


def test_signs_and_stars_inside_a_phrase_are_text():
    query = parse_query('"-oak +sam tabl*"')
    assert query.phrases == (("oak", "sam", "tabl"),)
    assert query.excluded == query.prefixes == ()


def test_a_sign_glued_to_a_word_before_a_quote_is_text():
    query = parse_query('oak-"new york"')
    assert query.phrases == (("new", "york"),)
    assert query.terms == ("oak", "new", "york")


def test_a_query_of_only_stop_words_is_valid_but_has_no_index_words():
    query = parse_query("the of")
    assert query.terms == ("the", "of")
    assert not query.has_words
    assert parse_query("the oak").has_words and parse_query("the*").has_words


# -- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("text, message", [
    ("", "the query is empty: give at least one word to search for"),
    (" \t\n\u3000", "the query is empty: give at least one word to search for"),
    ("sam " * 250 + "x", "the query is 1001 characters long; the limit is 1000"),
    ("-foo -bar", "the query '-foo -bar' only excludes words: add a word to search for"),
    ("-the", "'-the' names only words too common to be indexed ('the'), so it cannot be required or excluded: drop it"),
    ("+ - * --", "the query '+ - * --' has operators but no word to search for"),
    ("?! ... ()", "the query '?! ... ()' has no words to search for"),
    ('""', "the query '\"\"' has no words to search for"),
    ("oak -oaks", "'-oaks' excludes 'oak', which the query also searches for: remove one of them"),
    ('"new york" -York', "'-York' excludes 'york', which the query also searches for: "
                         "remove one of them"),
    ('oak -"new york"', 'a phrase cannot be excluded (-"new york"): exclude its words one by one '
                        "instead (-word)"),
])
def test_query_errors_say_why(text, message):
    with pytest.raises(QueryError) as caught:
        parse_query(text)
    assert str(caught.value) == message


def test_exactly_the_limit_is_accepted():
    assert parse_query("a" * MAX_QUERY_CHARS).terms == ("a" * MAX_QUERY_CHARS,)


def test_option_errors():
    with pytest.raises(QueryError, match="only excludes words"):
        parse_query("-", exclude=["bob"])
    with pytest.raises(QueryError, match="excludes 'oak'"):
        parse_query("oak", exclude=["oaks"])
    with pytest.raises(QueryError, match="--require takes words"):
        parse_query("oak", require=[3])  # type: ignore[list-item]


def test_required_words_alone_are_enough():
    assert parse_query("-kim", require=["oak"]).terms == ("oak",)


# -- phrase_matches ------------------------------------------------------------------------


@pytest.mark.parametrize("phrase, text, expected", [
    ("new york", "I flew to New York in May", True),
    ("new york", "York is new", False),
    ("new york", "new big york", False),
    ("bank of america", "the Bank of America branch", True),
    ("bank of america", "bank america", False),
    ("new york", "new new york", True),
    ("york", "new york", True),
    ("", "anything", True),
    ("new york", "", False),
])
def test_phrase_matches_adjacent_terms_in_order(phrase, text, expected):
    assert phrase_matches(tokenize(phrase), tokenize(text)) is expected


# -- any string ----------------------------------------------------------------------------

_PIECES = ["sam", "oak", "the", "of", "-", "+", "*", '"', "\u201c", "\u201d", " ", "\n", "-sam",
           "+oak", "tabl*", "AND", "NEAR(", ")", ":", "\\", "'", ";", "e-mail", "2026-02-14",
           "北京", "é", "\x00", "--", "**"]
_ANY_TEXT = st.one_of(
    st.text(max_size=60),
    st.text(max_size=1100),
    st.lists(st.sampled_from(_PIECES), max_size=14).map("".join),
)
_OPTION = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(_PIECES)), max_size=3)


def _clean(items: tuple[str, ...]) -> bool:
    return all(item and not any(c.isspace() for c in item) for item in items)


@settings(max_examples=400)
@given(_ANY_TEXT, _OPTION, _OPTION)
def test_any_string_gives_a_query_or_a_query_error(text, require, exclude):
    try:
        query = parse_query(text, require=require, exclude=exclude)
    except QueryError as exc:
        assert str(exc)
        return
    assert query.terms and len(set(query.terms)) == len(query.terms)
    assert not set(query.excluded) & (set(query.required) | set(query.terms))
    assert set(query.required) <= set(query.terms)
    assert not any(is_stop_word(term) for term in query.required + query.excluded)
    assert all(term in query.terms for phrase in query.phrases for term in phrase)
    for part in (query.terms, query.required, query.excluded, query.prefixes,
                 *query.phrases):
        assert _clean(part)
    assert len(query.text) <= MAX_QUERY_CHARS


@given(st.text(alphabet=st.characters(exclude_characters='"\u201c\u201d*+-'), max_size=80))
def test_text_without_operators_parses_to_its_tokens(text):
    """What existing callers relied on: a plain query's terms are tokenize's, distinct."""
    try:
        query = parse_query(text)
    except QueryError:
        assert not tokenize(text)
        return
    assert query.terms == tuple(dict.fromkeys(tokenize(text)))


# -- the whole query as one phrase (--phrase, ConKeeper's reading) --------------------------


def test_phrase_reads_the_whole_query_as_one_phrase_with_no_operators():
    query = parse_query('code +fence -draft "x', phrase=True)
    assert query.phrases == (("code", "fenc", "draft", "x"),)
    assert query.excluded == () and query.prefixes == ()
    assert set(query.required) == {"code", "fenc", "draft", "x"}


@given(_ANY_TEXT)
def test_phrase_gives_one_phrase_of_the_texts_words_or_a_query_error(text):
    try:
        query = parse_query(text, phrase=True)
    except QueryError as exc:
        assert str(exc) and (not tokenize(text) or len(text) > MAX_QUERY_CHARS)
        return
    assert query.phrases == (tuple(tokenize(text)),)
    assert query.excluded == () and query.prefixes == ()
