"""Queries: what cannot be searched is a QueryError; anything else just searches."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniclaw.errors import QueryError, UsageError
from miniclaw.memory import MemoryStore
from miniclaw.search.query import MAX_QUERY_CHARS, parse_query
from tests.conftest import NOW, write

def two_entries(first: str, second: str) -> str:
    """The daily note of 2026-02-12 holding these two entries (lines 5 and 11)."""
    return (f"# Daily Note - 2026-02-12\n\n## 09:00:00 UTC\n\n{first}\n\n---\n\n"
            f"## 10:00:00 UTC\n\n{second}\n")


NOTE = two_entries("Sam said drop table entries near the old oak",
                   "backslash path C:\\Users\\kim with binary-heaps")


@pytest.fixture
def noted(workspace: Path) -> Path:
    write(workspace, "memory/2026-02-12.md", NOTE)
    return workspace


def test_query_error_is_a_usage_error():
    assert issubclass(QueryError, UsageError)


@pytest.mark.parametrize("text", ["", " ", "\t\n  ", "\u00a0\u3000"])
async def test_empty_or_whitespace_query_raises_query_error(store, noted, text):
    with pytest.raises(QueryError):
        await store.search_memories(text)


@pytest.mark.parametrize("text", ["?!", "...", "—…“”", "-- ; ' \" * ( )", "🙂🙂"])
async def test_punctuation_only_query_raises_query_error(store, noted, text):
    with pytest.raises(QueryError):
        await store.search_memories(text)


async def test_query_over_1000_chars_raises_query_error(store, noted):
    with pytest.raises(QueryError):
        await store.search_memories("sam " * 250 + "x")


async def test_query_of_exactly_1000_chars_is_searched(store, noted):
    text = ("sam " * 250)[:MAX_QUERY_CHARS]
    assert len(text) == 1000
    found = await store.search_memories(text)
    assert found[0].line_start == 5


def test_parse_query_keeps_distinct_terms_in_order():
    assert parse_query("Sam met SAM at the café").terms == ("sam", "met", "at", "the", "cafe")


def test_parse_query_rejects_non_string():
    with pytest.raises(QueryError):
        parse_query(None)  # type: ignore[arg-type]


async def test_query_error_does_not_create_the_index(store, noted):
    with pytest.raises(QueryError):
        await store.search_memories("   ")
    assert not store.index.path.exists()


# -- SQL- and FTS-looking text is just words -----------------------------------------------

@pytest.mark.parametrize("text, line", [
    ("'; DROP TABLE entries; --", 5),
    ('"drop" OR tabl*', 5),
    ("NEAR(oak sam)", 5),
    ("oak AND NOT sam", 5),
    ("C:\\Users\\kim\\", 11),
    ("backslash\\", 11),
    ("binary-heaps", 11),
    ("content:backslash", 11),
    ("%backslash%", 11),
    ("_backslash_", 11),
])
async def test_sql_or_fts_syntax_in_a_query_is_searched_as_words(store, noted, text, line):
    found = await store.search_memories(text, mode="keyword")
    assert found[0].line_start == line


async def test_sql_injection_query_leaves_the_index_working(store, noted):
    await store.search_memories("'; DROP TABLE entries; --")
    await store.search_memories("x'); DELETE FROM postings; --")
    found = await store.search_memories("oak", mode="keyword")
    assert [hit.line_start for hit in found] == [5]


async def test_query_with_only_fts_operators_finds_nothing_but_does_not_fail(store, noted):
    assert await store.search_memories("OR AND NOT") == []


# -- any string: a list or a UsageError ----------------------------------------------------

_ANY_QUERY = st.one_of(
    st.text(alphabet=st.characters(exclude_categories=()), max_size=40),
    st.text(max_size=1100),
    st.lists(st.sampled_from(["sam", "OR", "'", '"', "*", "(", ")", ";", "--", "\\", "%", "_",
                              "\x00", "drop", "table", "NEAR", "北京", " ", "\n"]),
             max_size=12).map("".join),
)


def _search_any(query: str, with_index: bool) -> object:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        write(ws, "memory/2026-02-12.md", NOTE)
        index = Path(tmp) / "cache" / "index.sqlite3"

        async def run():
            async with MemoryStore(ws, index_path=index, now=lambda: NOW) as store:
                if with_index:
                    await store.refresh_index()
                    assert index.exists()
                else:
                    assert not index.exists()
                try:
                    return await store.search_memories(query, days=None)
                except UsageError as exc:
                    return exc

        return asyncio.run(run())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ANY_QUERY)
def test_any_query_gives_a_list_or_usage_error_with_an_index(query):
    outcome = _search_any(query, with_index=True)
    assert isinstance(outcome, (list, UsageError))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ANY_QUERY)
def test_any_query_gives_a_list_or_usage_error_without_an_index(query):
    outcome = _search_any(query, with_index=False)
    assert isinstance(outcome, (list, UsageError))


# -- the private parts of a query are never searched or echoed ------------------------------

ZOO = two_entries("zebra at the zoo", "lion in the park")


@pytest.fixture
def zoo(workspace: Path) -> Path:
    write(workspace, "memory/2026-02-12.md", ZOO)
    return workspace


def test_parse_query_leaves_private_parts_out_of_its_text_and_terms():
    query = parse_query("lion <private>zebra</private> park")
    assert query.text == "lion  park" and "zebra" not in query.terms
    assert parse_query("lion <private>zebra park").text == "lion"  # unclosed: the rest hidden


@pytest.mark.parametrize("typed", ["<private>zebra</private>", "  <private>zebra", "<private"])
async def test_a_query_that_is_all_private_is_as_empty_as_an_empty_one(store, zoo, typed):
    with pytest.raises(QueryError, match="^the query is empty") as raised:
        await store.search(typed, days=None)
    assert "zebra" not in str(raised.value) and raised.value.query == ""
    assert "\n" not in str(raised.value)


async def test_private_words_of_a_query_are_not_searched_or_echoed(store, zoo):
    found = await store.search("lion <private>zebra</private>", days=None)
    assert [hit.content for hit in found.results] == ["lion in the park"]
    assert found.query == "lion" and "zebra" not in str(found.to_dict())


async def test_a_private_word_is_not_named_by_a_hint_or_a_correction(store, zoo):
    corrected = await store.search("lion <private>zebrra</private>", days=None, mode="bm25")
    assert corrected.corrections == () and "zebr" not in str(corrected.to_dict())
    hinted = await store.search("quokka <private>wombat</private>", days=None, mode="bm25")
    said = str(hinted.to_dict()) + " ".join(hinted.suggestions)
    assert "wombat" not in said and "drop 'quokka'" in said  # the word it may name


async def test_private_words_in_required_and_excluded_words_are_not_used(store, zoo):
    found = await store.search("zoo park", days=None, require=["<private>zebra</private>"],
                               exclude=["lion <private>zebra</private>"])
    assert [hit.content for hit in found.results] == ["zebra at the zoo"]
    with pytest.raises(QueryError) as raised:  # an error names what it read, not the secret
        await store.search("zoo", days=None, exclude=["zoo <private>zebra</private>"])
    assert "zebra" not in str(raised.value)


async def test_sessions_search_without_transcripts_reads_the_query_the_same_way(store, zoo,
                                                                               monkeypatch):
    from miniclaw.search import sessions

    monkeypatch.setattr(sessions, "transcript_sources", lambda sources: ())
    found = await sessions.search_sessions(store, "lion <private>zebra</private>")
    assert found.query == "lion" and found.sessions == []
    with pytest.raises(QueryError, match="^the query is empty"):
        await sessions.search_sessions(store, "<private>zebra</private>")
