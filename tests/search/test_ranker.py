"""MemoryRanker through the store, on real files: order, limits, window, sources, modes."""

from __future__ import annotations

import asyncio
import tempfile
import threading
from datetime import date as Date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniclaw.errors import UsageError
from miniclaw.memory import MemoryStore
from miniclaw.search.ranker import MemoryRanker
from miniclaw.entries.tokenizer import tokenize
from tests.conftest import NOW, long_term, write


def note(day: str, *sections: tuple[str, str]) -> str:
    """A daily note as miniclaw writes it: (HH:MM:SS, text) sections."""
    parts = [f"# Daily Note - {day}\n"]
    for i, (clock, text) in enumerate(sections):
        if i:
            parts.append("\n---\n")
        parts.append(f"\n## {clock} UTC\n\n{text}\n")
    return "".join(parts)


def write_note(workspace: Path, day: str, *texts: str) -> None:
    # A minute apart: close enough in time to be each other's context (bm25 neighbours).
    sections = [(f"09:{i:02d}:00", text) for i, text in enumerate(texts)]
    write(workspace, f"memory/{day}.md", note(day, *sections))




# -- order ---------------------------------------------------------------------------------

async def test_higher_score_ranks_first(store, workspace):
    write_note(workspace, "2026-02-13", "coffee with Sam")
    write_note(workspace, "2026-02-10", "coffee with Sam about the Atlas budget")
    found = await store.search_memories("coffee atlas budget", mode="keyword")
    assert [hit.date for hit in found] == [Date(2026, 2, 10), Date(2026, 2, 13)]


async def test_equal_scores_rank_newer_date_first(store, workspace):
    write_note(workspace, "2026-02-10", "coffee at noon")
    write_note(workspace, "2026-02-12", "coffee at dusk")
    write_note(workspace, "2026-02-11", "coffee at dawn")
    found = await store.search_memories("coffee", mode="keyword")
    assert [hit.date for hit in found] == [Date(2026, 2, 12), Date(2026, 2, 11), Date(2026, 2, 10)]


async def test_equal_bm25_scores_rank_newer_date_first(store, workspace):
    write_note(workspace, "2026-02-10", "coffee morning")
    write_note(workspace, "2026-02-12", "coffee morning")
    found = await store.search_memories("coffee")
    assert found[0].score == pytest.approx(found[1].score)
    assert [hit.date for hit in found] == [Date(2026, 2, 12), Date(2026, 2, 10)]


async def test_equal_scores_across_sources_rank_newer_date_first(store, workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-13", ["likes coffee"])))
    write_note(workspace, "2026-02-11", "drank coffee")
    write_note(workspace, "2026-02-12", "bought coffee")
    found = await store.search_memories("coffee", mode="keyword")
    assert [(hit.source, hit.date) for hit in found] == [
        ("long_term", Date(2026, 2, 13)), ("daily_note", Date(2026, 2, 12)),
        ("daily_note", Date(2026, 2, 11))]


async def test_same_day_equal_scores_rank_later_entry_first(store, workspace):
    write(workspace, "memory/2026-02-12.md",
          note("2026-02-12", ("08:00:00", "coffee early"), ("17:30:00", "coffee late")))
    found = await store.search_memories("coffee", mode="keyword")
    assert [hit.time for hit in found] == ["17:30:00", "08:00:00"]


async def test_same_query_twice_gives_identical_results(store, workspace):
    for day in ("2026-02-10", "2026-02-11", "2026-02-12"):
        write_note(workspace, day, "coffee one", "coffee two", "tea three")
    write(workspace, "memory/MEMORY.md", long_term(("Notes", ["coffee undated", "coffee again"])))
    first = await store.search_memories("coffee", limit=20)
    second = await store.search_memories("coffee", limit=20)
    assert len(first) >= 8
    assert first == second


async def test_same_query_gives_same_scores_after_an_all_history_search(store, workspace):
    """The index is a cache: what earlier searches happened to index must not change scores."""
    write_note(workspace, "2026-02-12", "coffee with Sam", "tea with Kim")
    for day in ("2025-06-01", "2025-06-02", "2025-06-03", "2025-06-04"):
        write_note(workspace, day, "coffee again", "more coffee", "walk")
    first = await store.search_memories("coffee sam")
    await store.search_memories("walk", days=None)
    second = await store.search_memories("coffee sam")
    assert [(h.content, h.score) for h in second] == [(h.content, h.score) for h in first]


async def test_scores_do_not_depend_on_index_history(workspace, tmp_path):
    write_note(workspace, "2026-02-12", "coffee with Sam", "tea with Kim")
    for day in ("2025-06-01", "2025-06-02", "2025-06-03", "2025-06-04"):
        write_note(workspace, day, "coffee again", "more coffee", "walk")
    async with MemoryStore(workspace, index_path=tmp_path / "cold.sqlite3", now=lambda: NOW) as cold:
        fresh = await cold.search_memories("coffee sam")
    async with MemoryStore(workspace, index_path=tmp_path / "warm.sqlite3", now=lambda: NOW) as warm:
        await warm.rebuild_index()
        warmed = await warm.search_memories("coffee sam")
    assert [(h.content, pytest.approx(h.score)) for h in warmed] == \
        [(h.content, h.score) for h in fresh]


# -- limit ---------------------------------------------------------------------------------

async def test_limit_defaults_to_five(store, workspace):
    write_note(workspace, "2026-02-12", *[f"coffee cup {i}" for i in range(8)])
    found = await store.search_memories("coffee")
    assert len(found) == 5


async def test_limit_twenty_is_allowed(store, workspace):
    write_note(workspace, "2026-02-12", *[f"coffee cup {i}" for i in range(25)])
    found = await store.search_memories("coffee", limit=20)
    assert len(found) == 20


@pytest.mark.parametrize("limit", [0, 21, -1])
async def test_limit_out_of_range_raises_usage_error(store, workspace, limit):
    write_note(workspace, "2026-02-12", "coffee")
    with pytest.raises(UsageError):
        await store.search_memories("coffee", limit=limit)


# "tea only" follows "coffee cup 7" but holds no query word: it is not counted in either mode.
@pytest.mark.parametrize(("mode", "total"), [("keyword", 9), (None, 9)])
async def test_total_counts_all_matches_beyond_the_limit(store, workspace, mode, total):
    write_note(workspace, "2026-02-12", *[f"coffee cup {i}" for i in range(8)], "tea only")
    write(workspace, "memory/MEMORY.md", long_term(("2026-01-01", ["coffee beans", "tea"])))
    found = await store.search("coffee", mode=mode)
    assert (found.total, len(found.results)) == (total, 5)


async def test_total_respects_the_window(store, workspace):
    write_note(workspace, "2026-02-12", "coffee recent")
    write_note(workspace, "2025-06-01", "coffee old")
    assert (await store.search("coffee")).total == 1
    assert (await store.search("coffee", days=None)).total == 2


async def test_total_is_never_less_than_the_results_shown(store, workspace):
    write_note(workspace, "2026-02-14", "coffee", "tea")
    found = await store.search("coffee", limit=5)
    assert found.total >= len(found.results)


async def test_bm25_never_returns_an_entry_only_for_being_next_to_a_match(store, workspace):
    write_note(workspace, "2026-02-14", "coffee", "tea")
    found = await store.search_memories("coffee")
    assert [hit.content for hit in found] == ["coffee"]


BURST = ["cat is named Miso", "prefers Python over Go", "flight to Oslo on Friday",
         "allergic to peanuts", "manager is Dana"]


@pytest.mark.parametrize("query, wanted", [
    ("peanut allergy", "allergic to peanuts"), ("what is my cat called?", "cat is named Miso"),
    ("when is the Oslo flight", "flight to Oslo on Friday"), ("who is my manager", "manager is Dana"),
])
async def test_a_burst_of_unrelated_notes_gives_only_the_matching_one(store, query, wanted):
    for i, text in enumerate(BURST):  # added through the API a few seconds apart
        await store.add_daily_note(text, when=NOW.replace(second=i))
    found = await store.search(query)
    assert [hit.content for hit in found.results] == [wanted]
    assert found.total == 1


async def test_neighbours_still_lift_a_matching_turn(store, workspace):
    # Both answers hold "trip"; the longer one would rank second on its own, but it follows
    # the question, which names "Lisbon" too.
    write_note(workspace, "2026-02-13", "Anna: a trip to Rome")
    write_note(workspace, "2026-02-14", "Sam: any news about Lisbon?",
               "Anna: the trip is booked for the whole family")
    found = await store.search("Lisbon trip", limit=5)
    answers = [hit.content for hit in found.results if hit.content.startswith("Anna")]
    assert answers == ["Anna: the trip is booked for the whole family", "Anna: a trip to Rome"]


async def test_bm25_gives_no_context_across_entries_written_hours_apart(store, workspace):
    write(workspace, "memory/2026-02-14.md",
          note("2026-02-14", ("09:00:00", "coffee"), ("15:00:00", "tea")))
    found = await store.search_memories("coffee")
    assert [hit.content for hit in found] == ["coffee"]


async def test_keyword_results_all_contain_a_query_term(store, workspace):
    write_note(workspace, "2026-02-14", "coffee", "tea")
    found = await store.search_memories("coffee", mode="keyword")
    assert [hit.content for hit in found] == ["coffee"]


async def test_long_term_entries_get_no_neighbour_context(store, workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-14", ["coffee", "tea"])))
    found = await store.search_memories("coffee")
    assert [hit.content for hit in found] == ["coffee"]


# -- the window ----------------------------------------------------------------------------

async def test_note_31_days_old_is_outside_default_window(store, workspace):
    write_note(workspace, "2026-01-14", "coffee long ago")
    assert await store.search_memories("coffee") == []


async def test_note_29_days_old_is_inside_default_window(store, workspace):
    write_note(workspace, "2026-01-16", "coffee a while ago")
    found = await store.search_memories("coffee")
    assert [hit.date for hit in found] == [Date(2026, 1, 16)]


async def test_days_none_searches_all_history(store, workspace):
    write_note(workspace, "2020-03-01", "coffee years ago")
    found = await store.search_memories("coffee", days=None)
    assert [hit.date for hit in found] == [Date(2020, 3, 1)]


async def test_memory_md_is_searched_whatever_its_dates(store, workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2019-05-05", ["coffee from 2019"])))
    found = await store.search_memories("coffee")
    assert [(hit.source, hit.date) for hit in found] == [("long_term", Date(2019, 5, 5))]


async def test_memory_md_is_searched_with_days_one(store, workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2019-05-05", ["coffee from 2019"])))
    found = await store.search_memories("coffee", days=1)
    assert [hit.source for hit in found] == ["long_term"]


async def test_days_one_finds_only_today(store, workspace):
    write_note(workspace, "2026-02-14", "coffee today")
    write_note(workspace, "2026-02-13", "coffee yesterday")
    found = await store.search_memories("coffee", days=1)
    assert [hit.date for hit in found] == [NOW.date()]


async def test_days_zero_raises_usage_error(store, workspace):
    with pytest.raises(UsageError):
        await store.search_memories("coffee", days=0)


# -- sources -------------------------------------------------------------------------------

async def test_sources_long_term_only(store, workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", ["coffee fact"])))
    write_note(workspace, "2026-02-12", "coffee note")
    found = await store.search_memories("coffee", sources=["long_term"])
    assert [hit.source for hit in found] == ["long_term"]


async def test_sources_daily_note_only(store, workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", ["coffee fact"])))
    write_note(workspace, "2026-02-12", "coffee note")
    found = await store.search_memories("coffee", sources=["daily_note"])
    assert [hit.source for hit in found] == ["daily_note"]


async def test_unknown_source_raises_usage_error(store, workspace):
    with pytest.raises(UsageError):
        await store.search_memories("coffee", sources=["sessions"])


# -- modes ---------------------------------------------------------------------------------

async def test_default_mode_is_bm25(store, workspace):
    write_note(workspace, "2026-02-12", "coffee")
    assert (await store.search("coffee")).mode == "bm25"


async def test_keyword_mode_is_reported(store, workspace):
    write_note(workspace, "2026-02-12", "coffee")
    assert (await store.search("coffee", mode="keyword")).mode == "keyword"


async def test_keyword_score_is_number_of_distinct_query_terms_found(store, workspace):
    write_note(workspace, "2026-02-12", "dark roast coffee", "coffee coffee coffee",
               "dark chocolate")
    found = await store.search_memories("dark roast coffee", mode="keyword")
    assert {hit.content: hit.score for hit in found} == {
        "dark roast coffee": 3.0, "coffee coffee coffee": 1.0, "dark chocolate": 1.0}
    assert found[0].content == "dark roast coffee"


async def test_keyword_repeated_query_word_counts_once(store, workspace):
    write_note(workspace, "2026-02-12", "coffee")
    [hit] = await store.search_memories("coffee coffee COFFEE", mode="keyword")
    assert hit.score == 1.0


async def test_bm25_scores_a_rarer_term_higher(store, workspace):
    write_note(workspace, "2026-02-12", "coffee alpha", "coffee beta", "coffee gamma",
               "zebra delta")
    found = await store.search_memories("coffee zebra")
    assert found[0].content == "zebra delta"


@pytest.mark.parametrize("mode", ["semantic", "", "BM26"])
async def test_unknown_mode_raises_usage_error(store, workspace, mode):
    write_note(workspace, "2026-02-12", "coffee")
    with pytest.raises(UsageError):
        await store.search_memories("coffee", mode=mode)


async def test_same_text_scores_equally_in_memory_md_and_a_note(store, workspace):
    write(workspace, "memory/MEMORY.md",
          long_term(("2026-02-10", ["Prefers dark roast coffee (added at 2026-02-10T08:00:00Z)",
                                    "Sam likes tea"])))
    write_note(workspace, "2026-02-12", "Prefers dark roast coffee", "Sam likes cake")
    found = await store.search_memories("dark roast coffee")
    same = {hit.source: hit.score for hit in found if hit.content == "Prefers dark roast coffee"}
    assert set(same) == {"long_term", "daily_note"}
    assert same["long_term"] == pytest.approx(same["daily_note"], rel=1e-9)


# -- concurrency ---------------------------------------------------------------------------

async def test_sources_are_searched_at_the_same_time(store, workspace, monkeypatch):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", ["coffee fact"])))
    write_note(workspace, "2026-02-12", "coffee note")
    barrier = threading.Barrier(2, timeout=10)
    threads: list[str] = []
    original = MemoryRanker._search_source

    def meeting(self, source, *args):
        threads.append(threading.current_thread().name)
        barrier.wait()  # BrokenBarrierError unless the other source is being searched too
        return original(self, source, *args)

    monkeypatch.setattr(MemoryRanker, "_search_source", meeting)
    found = await store.search_memories("coffee")
    assert len(set(threads)) == 2
    assert {hit.source for hit in found} == {"long_term", "daily_note"}


async def test_source_search_runs_off_the_event_loop_thread(store, workspace, monkeypatch):
    write_note(workspace, "2026-02-12", "coffee note")
    loop_thread = threading.current_thread().name
    seen: list[str] = []
    original = MemoryRanker._search_source

    def spy(self, *args):
        seen.append(threading.current_thread().name)
        return original(self, *args)

    monkeypatch.setattr(MemoryRanker, "_search_source", spy)
    await store.search_memories("coffee")
    assert seen and loop_thread not in seen


async def test_concurrent_searches_on_one_store_agree(store, workspace):
    for day in ("2026-02-10", "2026-02-11", "2026-02-12"):
        write_note(workspace, day, "coffee one", "coffee two")
    results = await asyncio.gather(*(store.search_memories("coffee", limit=10) for _ in range(8)))
    assert len(results[0]) == 6
    assert all(r == results[0] for r in results)


# -- property ------------------------------------------------------------------------------

_VOCAB = ["coffee", "tea", "atlas", "budget", "running", "sam", "river", "the", "café", "北京"]
_DAYS = ["2026-02-14", "2026-02-13", "2026-02-01", "2026-01-20", "2026-01-10", "2025-11-30"]

_entry_text = st.lists(st.sampled_from(_VOCAB), min_size=1, max_size=8).map(" ".join)
_corpus = st.fixed_dictionaries({
    "long_term": st.lists(st.tuples(st.sampled_from(_DAYS + ["Notes"]), _entry_text), max_size=8),
    "notes": st.dictionaries(st.sampled_from(_DAYS), st.lists(_entry_text, min_size=1, max_size=6),
                             max_size=5),
})


def _neighbour_texts(texts: list[str], content: str) -> list[str]:
    """The texts within two entries of `content` in a note (itself included)."""
    at = [i for i, text in enumerate(texts) if text.strip() == content]
    return [texts[j] for i in at for j in range(max(i - 2, 0), min(i + 3, len(texts)))]


def _date_key(hit) -> int:
    return hit.date.toordinal() if hit.date else 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=_corpus,
       query=st.lists(st.sampled_from(_VOCAB + ["zzz"]), min_size=1, max_size=3).map(" ".join),
       limit=st.integers(min_value=1, max_value=20),
       days=st.sampled_from([None, 1, 7, 30]),
       mode=st.sampled_from([None, "keyword", "bm25"]))
def test_results_are_sorted_limited_windowed_and_matching(corpus, query, limit, days, mode):
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / "memory").mkdir(parents=True)
        if corpus["long_term"]:
            sections: dict[str, list[str]] = {}
            for header, text in corpus["long_term"]:
                sections.setdefault(header, []).append(text)
            write(ws, "memory/MEMORY.md", long_term(*sections.items()))
        for day, texts in corpus["notes"].items():
            write_note(ws, day, *texts)

        async def run():
            async with MemoryStore(ws, index_path=Path(tmp) / "index.sqlite3",
                                   now=lambda: NOW) as store:
                return await store.search(query, limit=limit, days=days, mode=mode)

        found = asyncio.run(run())

    hits = found.results
    assert len(hits) <= limit
    assert len(hits) == min(limit, found.total)
    # A word that matched nothing may have been replaced by its closest spelling.
    query_terms = set(tokenize(query)) | {t for _, used in found.corrections for t in tokenize(used)}
    for hit in hits:
        if mode == "keyword" or hit.source == "long_term":
            assert query_terms & set(tokenize(hit.content))
        else:  # bm25: the entry matches, or one of its neighbours (up to 2 away) does
            near = _neighbour_texts(corpus["notes"][hit.date.isoformat()], hit.content)
            assert any(query_terms & set(tokenize(text)) for text in near)
        if days is not None and hit.source == "daily_note":
            assert (NOW.date() - hit.date).days < days
    for before, after in zip(hits, hits[1:]):
        assert before.score >= after.score - 1e-9
        if abs(before.score - after.score) < 1e-12:
            assert _date_key(before) >= _date_key(after)
