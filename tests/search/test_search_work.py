"""The work a search does, counted rather than timed (issue 13's speed target): statements
run against the index, and the sources actually searched. Fewer round trips and no
retrieval in a source without entries, with the same results."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniclaw.index import database
from miniclaw.index.search_index import Filters
from miniclaw.search.scoring import BM25Scorer, register_mode
from tests.conftest import daily_note, long_term, write


@pytest.fixture
def statements(monkeypatch):
    """Every SQL statement the index runs from now on, as SQLite traces them."""
    seen: list[str] = []
    opened = database.IndexDatabase._open

    def traced(self) -> sqlite3.Connection:
        conn = opened(self)
        conn.set_trace_callback(seen.append)
        return conn

    monkeypatch.setattr(database.IndexDatabase, "_open", traced)
    return seen


@pytest.fixture
def spy_mode():
    """The mode `spy`: BM25, noting each source it is asked to search."""
    from miniclaw.search import scoring

    searched: list[str] = []

    class Spy(BM25Scorer):
        def retrieve(self, index, source, request, k):
            searched.append(source.name)
            return super().retrieve(index, source, request, k)

    register_mode("spy", Spy)
    yield searched
    scoring._MODES.pop("spy")


def _notes(workspace) -> None:
    write(workspace, "memory/2026-02-10.md", daily_note(
        "2026-02-10", ["flight to Oslo on Friday", "the cat is called Miso",
                       "booked a hotel near the harbour in Oslo"],
        ["09:00:00", "09:00:05", "09:00:10"]))


async def test_a_source_without_entries_is_not_searched(store, workspace, spy_mode):
    _notes(workspace)  # no MEMORY.md: the long-term source is empty
    hits = await store.search_memories("Oslo hotel", mode="spy", days=None)
    assert spy_mode == ["daily_note"]
    assert hits[0].content == "booked a hotel near the harbour in Oslo"
    # Its first entry makes it a source to search again, in the very next search.
    write(workspace, "memory/MEMORY.md", long_term(("Travel", ["prefers a hotel in Oslo"])))
    spy_mode.clear()
    hits = await store.search_memories("Oslo hotel", mode="spy", days=None)
    assert sorted(spy_mode) == ["daily_note", "long_term"]
    assert "prefers a hotel in Oslo" in [hit.content for hit in hits]


async def test_the_document_frequencies_of_a_long_question_are_one_statement(
        store, workspace, statements):
    _notes(workspace)
    await store.search_memories("warm up", days=None)
    statements.clear()
    question = "which hotel did I book near the harbour when I flew to Oslo on Friday"
    hits = await store.search_memories(question, days=None)
    assert hits[0].content == "booked a hotel near the harbour in Oslo"
    counts = [s for s in statements if "SUM(b.n) FROM terms t JOIN blocks b" in s]
    assert len(counts) == 1, counts


async def test_the_corpus_counts_each_term_once_and_unknown_terms_as_zero(store, workspace):
    _notes(workspace)
    await store.refresh_index()
    _, _, df = store.index.corpus(["oslo", "cat", "oslo", "zebra"])
    assert df == {"oslo": 2, "cat": 1, "zebra": 0}


async def test_filter_ids_in_one_source_keeps_only_that_sources_entries(store, workspace):
    _notes(workspace)
    write(workspace, "memory/MEMORY.md", long_term(("Travel", ["prefers a hotel in Oslo"])))
    await store.refresh_index()
    index = store.index
    by_source = {source.name: source for source in index.sources}
    everything = Filters(tuple(by_source))
    all_ids = index.filter_ids(list(range(1, 50)), everything)
    entries = index.entries(all_ids)
    ids = {name: [i for i in all_ids if entries[i].source == name] for name in by_source}
    assert ids["daily_note"] and ids["long_term"]
    for name, source in by_source.items():
        assert index.filter_ids(all_ids, everything, source) == ids[name]
    # The other filters still apply inside the one source.
    only_notes = Filters(("long_term",))
    assert index.filter_ids(all_ids, only_notes, by_source["daily_note"]) == []


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.text(max_size=10), st.integers(), st.binary(max_size=8),
                 st.times().map(lambda t: t.strftime("%H:%M:%S"))))
def test_a_stored_time_is_read_as_seconds_or_is_damage(value):
    """`neighbours` reads both times of a pair in Python, one lookup each, and must accept
    and refuse exactly what `_clock` (the reading of a row's time) does."""
    from miniclaw.index.database import IndexRowError
    from miniclaw.index.search_index import _clock, _seconds

    try:
        clock = _clock(value)
    except IndexRowError:
        with pytest.raises(IndexRowError):
            _seconds(value)
        return
    expected = None if clock is None else (
        int(clock[:2]) * 3600 + int(clock[3:5]) * 60 + int(clock[6:8]))
    assert _seconds(value) == expected
    assert _seconds(value) == expected  # the second time from the cache


async def test_a_fused_search_reads_where_its_candidates_sit_once_per_source(
        store, workspace, statements):
    """Every retriever of a fused mode finds mostly the same candidates: their places are
    read in one statement per source, not one per retriever (a hybrid search on L made
    four where two do)."""
    from miniclaw.search import scoring
    from miniclaw.search.scoring import SearchMode
    from tests.search.test_retrievers import HashedEmbedding

    _notes(workspace)
    write(workspace, "memory/MEMORY.md", long_term(("Travel", ["prefers a hotel in Oslo"])))
    register_mode("fused", lambda: SearchMode("fused", (BM25Scorer(), HashedEmbedding())))
    try:
        await store.search_memories("warm up", days=None)
        statements.clear()
        hits = await store.search_memories("Oslo hotel", mode="fused", days=None)
    finally:
        scoring._MODES.pop("fused")
    assert {hit.content for hit in hits} >= {"booked a hotel near the harbour in Oslo",
                                             "prefers a hotel in Oslo"}
    places = [s for s in statements if s.startswith("SELECT id, date, time, path, line_start")]
    assert len(places) == 2, places


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 0.5, 0.5 + 4e-10, 0.5 + 2e-9, 1.0, 1.5]),
                          st.integers(0, 3), st.integers(0, 5)), max_size=40),
       st.integers(1, 12))
def test_the_first_results_are_those_a_full_sort_puts_first(rows, n):
    """The ranker sorts only the candidates that can be among the first `n` (scores within
    1e-9 of the n-th best: the order rounds scores to 9 places); they must be exactly the
    first `n` of the whole order, ties broken by date, path and line as always."""
    from datetime import date as Date

    from miniclaw.index.search_index import Place
    from miniclaw.search.ranker import _first, _order_key

    scores = {i: score for i, (score, _, _) in enumerate(rows)}
    places = {i: Place(Date(2026, 1, 1 + day), None, f"memory/{line % 2}.md", line)
              for i, (_, day, line) in enumerate(rows)}
    every = sorted(scores, key=lambda i: _order_key(scores[i], places[i]))
    assert _first(list(scores), scores, places, n)[:n] == every[:n]
