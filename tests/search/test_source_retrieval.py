"""One source's retrieval (`SearchIndex.top`) beside a larger one (issue 14): a small store
reads its own entries' postings instead of every source's postings of the query's terms,
with the same results whichever way the rows are read. Work is counted (SQLite's virtual
machine steps), never timed."""

from __future__ import annotations

import itertools
import random
import sqlite3
from datetime import date

import pytest

from miniclaw.index import database
from miniclaw.index.search_index import Filters, SearchIndex
from miniclaw.search.scoring import BM25Scorer
from tests.conftest import daily_note, long_term, write

WORDS = ["oslo", "hotel", "harbour", "flight", "cat", "miso", "garden", "piano", "train",
         "coffee", "budget", "lamp"]


def _fill(workspace, per_day: int, seed: int = 7) -> None:
    """A small MEMORY.md and four daily notes of `per_day` entries, from a tiny vocabulary:
    every query term has postings in both sources."""
    rng = random.Random(seed)

    def text() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9)))

    write(workspace, "memory/MEMORY.md", long_term(
        ("Travel", [text() for _ in range(3)]), ("Home", [text() for _ in range(2)])))
    for day in range(10, 14):
        times = [f"{9 + i // 60:02d}:{i % 60:02d}:00" for i in range(per_day)]
        write(workspace, f"memory/2026-02-{day}.md",
              daily_note(f"2026-02-{day}", [text() for _ in range(per_day)], times))


def _forced(monkeypatch, small: bool) -> None:
    monkeypatch.setattr(SearchIndex, "_small_source",
                        staticmethod(lambda conn, source, terms: small))


def _top(index: SearchIndex, source_name: str, terms, filters: Filters | None = None, k=20):
    source = next(s for s in index.sources if s.name == source_name)
    scorer = BM25Scorer()
    weights = {term: 1.0 + i / 7 for i, term in enumerate(terms)}
    return index.top(source, filters or Filters(tuple(s.name for s in index.sources)),
                     weights, scorer.term_score_sql, 5.5, k)


async def test_both_ways_of_reading_a_source_give_the_same_entries_scores_and_order(
        store, workspace, monkeypatch):
    _fill(workspace, per_day=30)
    await store.refresh_index()
    index = store.index
    everything = Filters(("long_term", "daily_note"))
    filters = [everything, everything._replace(since=date(2026, 2, 12)),
               everything._replace(until=date(2026, 2, 11), excluded=("cat",)),
               everything._replace(required=("hotel",)), everything._replace(category="Travel")]
    queries = [list(q) for n in (1, 2, 3) for q in itertools.combinations(WORDS, n)]
    compared = 0
    for source in ("long_term", "daily_note"):
        for query, each in zip(queries, itertools.cycle(filters)):
            _forced(monkeypatch, True)
            from_source = _top(index, source, query, each, k=7)
            _forced(monkeypatch, False)
            from_postings = _top(index, source, query, each, k=7)
            assert from_source == from_postings, (source, query, each)
            compared += bool(from_source)
    assert compared > 300  # most comparisons had results to compare


@pytest.fixture
def steps(monkeypatch):
    """SQLite's virtual-machine steps run by the index from now on (a count of work)."""
    counted = [0]
    opened = database.IndexDatabase._open

    def counting(self) -> sqlite3.Connection:
        conn = opened(self)

        def step() -> int:
            counted[0] += 1
            return 0

        conn.set_progress_handler(step, 10)
        return conn

    monkeypatch.setattr(database.IndexDatabase, "_open", counting)
    return counted


async def _work_of_small_source(workspace, store, steps, per_day: int) -> int:
    _fill(workspace, per_day)
    await store.refresh_index()
    expected = _top(store.index, "long_term", ["oslo", "hotel", "piano"])
    assert expected  # the small source does match
    steps[0] = 0
    _top(store.index, "long_term", ["oslo", "hotel", "piano"])
    return steps[0]


async def test_a_small_sources_retrieval_costs_the_same_beside_a_four_times_larger_one(
        store, workspace, steps):
    beside_small = await _work_of_small_source(workspace, store, steps, per_day=25)
    beside_large = await _work_of_small_source(workspace, store, steps, per_day=100)
    # Read from the terms' postings, the work grew with the daily notes' postings (x4).
    assert beside_large <= beside_small * 1.1, (beside_small, beside_large)


async def test_a_large_source_is_still_read_from_the_terms_postings(store, workspace):
    _fill(workspace, per_day=50)
    await store.refresh_index()
    terms = ["oslo", "hotel"]
    small = {name: store.index._run(lambda c, n=name: SearchIndex._small_source(c, n, terms))
             for name in ("long_term", "daily_note")}
    assert small == {"long_term": True, "daily_note": False}
