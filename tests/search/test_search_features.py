"""Search features through the library (`MemoryStore.search` / `search_memories`): the query
language, filters inside the ranking, spelling fallback, suggestions and `explain`.

Daily-note entries here are written more than 30 minutes apart unless a test is about
neighbour context, so bm25's neighbour shares never add entries and result sets are exact.
"""

from __future__ import annotations

import asyncio
import tempfile
from datetime import date as Date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniclaw.errors import QueryError, UsageError
from miniclaw.memory import MemoryStore
from miniclaw.search.hints import Hint
from tests.conftest import NOW, daily_note, long_term, write


def clock(i: int) -> str:
    """The time of the i-th entry of a note: 45 minutes apart, never each other's context."""
    minutes = 45 * i
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


def note(day: str, *texts: str, times: list[str] | None = None) -> str:
    """A daily note as miniclaw writes it; an entry's text may carry annotation lines."""
    return daily_note(day, texts, times or [clock(i) for i in range(len(texts))])


def write_note(workspace: Path, day: str, *texts: str, times: list[str] | None = None) -> None:
    write(workspace, f"memory/{day}.md", note(day, *texts, times=times))




def contents(hits) -> set[str]:
    return {hit.content for hit in hits}


def texts(hits) -> list[str]:
    return [hit.content for hit in hits]


@pytest.fixture
def atlas(workspace: Path) -> Path:
    """Notes about Atlas and Sam, one entry each hour apart, all inside the 30-day window."""
    write_note(workspace, "2026-02-13",
               "Sam approved the atlas budget",
               "Sam wrote the atlas budget draft",
               "The atlas budget is due Friday",
               "Sam said budget atlas twice",
               "Sam likes dark roast coffee")
    write_note(workspace, "2026-02-12",
               "Atlas kickoff: the budget will be discussed later with finance",
               "Bought a new bicycle helmet")
    return workspace


# -- operators, each alone --------------------------------------------------------------


async def test_plain_words_find_exactly_the_entries_holding_one_of_them(store, atlas):
    found = await store.search_memories("coffee helmet", limit=20)
    assert contents(found) == {"Sam likes dark roast coffee", "Bought a new bicycle helmet"}


async def test_plain_word_search_is_case_and_inflection_insensitive(store, atlas):
    found = await store.search_memories("BICYCLES", limit=20)
    assert texts(found) == ["Bought a new bicycle helmet"]


async def test_phrase_finds_its_words_adjacent_and_in_order(store, atlas):
    found = await store.search_memories('"atlas budget"', limit=20)
    assert contents(found) == {"Sam approved the atlas budget", "Sam wrote the atlas budget draft",
                               "The atlas budget is due Friday"}


async def test_phrase_does_not_match_its_words_in_reverse_order(store, workspace):
    write_note(workspace, "2026-02-13", "Sam said budget atlas twice")
    assert await store.search_memories('"atlas budget"') == []


async def test_phrase_does_not_match_its_words_far_apart(store, workspace):
    write_note(workspace, "2026-02-13",
               "Atlas kickoff: the budget will be discussed later with finance")
    assert await store.search_memories('"atlas budget"') == []


async def test_reversed_phrase_matches_only_the_reversed_text(store, atlas):
    found = await store.search_memories('"budget atlas"', limit=20)
    assert texts(found) == ["Sam said budget atlas twice"]


async def test_minus_word_excludes_entries_holding_it(store, atlas):
    found = await store.search_memories("atlas -draft", limit=20)
    assert "Sam wrote the atlas budget draft" not in contents(found)
    assert contents(found) == {"Sam approved the atlas budget", "The atlas budget is due Friday",
                               "Sam said budget atlas twice",
                               "Atlas kickoff: the budget will be discussed later with finance"}


async def test_exclude_option_excludes_and_each_value_counts(store, atlas):
    found = await store.search_memories("atlas", limit=20, exclude=["draft", "friday"])
    assert contents(found) == {"Sam approved the atlas budget", "Sam said budget atlas twice",
                               "Atlas kickoff: the budget will be discussed later with finance"}


async def test_exclude_option_excludes_every_word_of_its_value(store, atlas):
    found = await store.search_memories("atlas", limit=20, exclude=["draft friday"])
    assert "Sam wrote the atlas budget draft" not in contents(found)
    assert "The atlas budget is due Friday" not in contents(found)


async def test_plus_word_requires_it(store, atlas):
    found = await store.search_memories("atlas +sam", limit=20)
    assert contents(found) == {"Sam approved the atlas budget", "Sam wrote the atlas budget draft",
                               "Sam said budget atlas twice", "Sam likes dark roast coffee"}


async def test_require_option_requires_and_each_value_counts(store, atlas):
    found = await store.search_memories("budget", limit=20, require=["sam", "draft"])
    assert texts(found) == ["Sam wrote the atlas budget draft"]


async def test_star_finds_words_starting_with_the_prefix(store, workspace):
    write_note(workspace, "2026-02-13",
               "Weekly meeting moved to Tuesday",
               "Too many meetings this week",
               "Joined the Rust meetup downtown",
               "Lunch was a quick meal")
    found = await store.search_memories("meet*", limit=20)
    assert contents(found) == {"Weekly meeting moved to Tuesday", "Too many meetings this week",
                               "Joined the Rust meetup downtown"}


async def test_without_the_star_a_prefix_is_only_a_word(store, workspace):
    write_note(workspace, "2026-02-13", "Joined the Rust meetup downtown")
    assert await store.search_memories("meet") == []


# -- operators combined ---------------------------------------------------------------------


async def test_phrase_exclusion_and_requirement_combined(store, atlas):
    found = await store.search_memories('"atlas budget" -draft +sam', limit=20)
    assert texts(found) == ["Sam approved the atlas budget"]


async def test_prefix_and_exclusion_combined(store, workspace):
    write_note(workspace, "2026-02-13",
               "Weekly meeting moved to Tuesday",
               "Meetings cancelled for the holiday",
               "Joined the Rust meetup downtown")
    found = await store.search_memories("meet* -cancelled", limit=20)
    assert contents(found) == {"Weekly meeting moved to Tuesday", "Joined the Rust meetup downtown"}


async def test_query_operators_and_require_exclude_options_combined(store, atlas):
    found = await store.search_memories("atlas +budget", limit=20, require=["sam"],
                                        exclude=["twice"])
    assert contents(found) == {"Sam approved the atlas budget", "Sam wrote the atlas budget draft"}


async def test_operators_combine_with_keyword_mode_too(store, atlas):
    found = await store.search_memories('"atlas budget" -draft +sam', limit=20, mode="keyword")
    assert texts(found) == ["Sam approved the atlas budget"]


# -- text that looks like syntax is text ------------------------------------------------------


@pytest.mark.parametrize("query", [
    "NEAR(atlas budget)", "atlas AND budget", "atlas OR NOT budget", "'; DROP TABLE entries; --",
    "content:atlas", "atlas\\budget", "\\\\atlas\\", "atlas*)(", "{atlas} [budget] ^2", "%atlas%_",
])
async def test_fts_and_sql_syntax_is_searched_as_plain_text(store, atlas, query):
    found = await store.search(query, limit=20)
    assert found.query == query.strip()
    after = await store.search_memories("atlas", limit=20)  # the index is intact
    assert len(after) == 5


async def test_sql_injection_text_finds_entries_by_its_words(store, workspace):
    write_note(workspace, "2026-02-13", "Learned to drop a table from the entries list")
    found = await store.search_memories("'; DROP TABLE entries; --")
    assert texts(found) == ["Learned to drop a table from the entries list"]


async def test_query_of_only_stop_words_is_valid_and_finds_nothing(store, atlas):
    found = await store.search("the of", limit=20)
    assert found.results == [] and found.total == 0


@pytest.mark.parametrize("query", ["+", "-", "*", "+ - *", "-foo", "-foo -bar", "", "   ", "**"])
async def test_query_without_a_word_to_search_is_a_query_error(store, atlas, query):
    with pytest.raises(QueryError):
        await store.search(query)


async def test_excluding_a_searched_word_is_a_query_error(store, atlas):
    with pytest.raises(QueryError):
        await store.search("atlas -atlas")


# -- filters ------------------------------------------------------------------------------


@pytest.fixture
def dated(workspace: Path) -> Path:
    """Coffee notes on several days around the window edge (NOW is 2026-02-14; the 30-day
    window starts 2026-01-16) and MEMORY.md with dated and undated coffee entries."""
    for day in ("2026-02-13", "2026-02-05", "2026-01-16", "2026-01-15", "2025-12-10"):
        write_note(workspace, day, f"coffee on {day}")
    write(workspace, "memory/MEMORY.md", long_term(
        ("2025-06-01", ["old coffee habit"]),
        ("2026-02-10", ["new coffee habit"]),
        ("Preferences", ["undated coffee preference"])))
    return workspace


def days_of(hits) -> set:
    return {hit.date for hit in hits}


async def test_default_window_is_the_last_30_days_of_daily_notes(store, dated):
    found = await store.search_memories("coffee", limit=20, sources=["daily_note"])
    assert days_of(found) == {Date(2026, 2, 13), Date(2026, 2, 5), Date(2026, 1, 16)}


async def test_days_narrows_the_window(store, dated):
    found = await store.search_memories("coffee", limit=20, days=10, sources=["daily_note"])
    assert days_of(found) == {Date(2026, 2, 13), Date(2026, 2, 5)}


async def test_days_none_searches_all_history(store, dated):
    found = await store.search_memories("coffee", limit=20, days=None, sources=["daily_note"])
    assert len(found) == 5


async def test_memory_md_is_searched_whatever_the_window_and_undated_entries_too(store, dated):
    found = await store.search_memories("coffee", limit=20, days=1, sources=["long_term"])
    assert contents(found) == {"old coffee habit", "new coffee habit", "undated coffee preference"}


async def test_since_replaces_the_window(store, dated):
    found = await store.search_memories("coffee", limit=20, since=Date(2025, 12, 1),
                                        sources=["daily_note"])
    assert len(found) == 5


async def test_since_filters_daily_notes_by_date_inclusive(store, dated):
    found = await store.search_memories("coffee", limit=20, since=Date(2026, 1, 16),
                                        sources=["daily_note"])
    assert days_of(found) == {Date(2026, 2, 13), Date(2026, 2, 5), Date(2026, 1, 16)}


async def test_until_alone_replaces_the_window(store, dated):
    found = await store.search_memories("coffee", limit=20, until=Date(2026, 1, 15),
                                        sources=["daily_note"])
    assert days_of(found) == {Date(2026, 1, 15), Date(2025, 12, 10)}


async def test_since_and_until_together_bound_both_ends(store, dated):
    found = await store.search_memories("coffee", limit=20, since=Date(2026, 1, 15),
                                        until=Date(2026, 2, 5), sources=["daily_note"])
    assert days_of(found) == {Date(2026, 2, 5), Date(2026, 1, 16), Date(2026, 1, 15)}


async def test_since_filters_memory_md_dated_entries_and_leaves_out_undated(store, dated):
    found = await store.search_memories("coffee", limit=20, since=Date(2026, 1, 1),
                                        sources=["long_term"])
    assert texts(found) == ["new coffee habit"]


async def test_until_filters_memory_md_dated_entries_and_leaves_out_undated(store, dated):
    found = await store.search_memories("coffee", limit=20, until=Date(2026, 1, 1),
                                        sources=["long_term"])
    assert texts(found) == ["old coffee habit"]


async def test_days_window_leaves_memory_md_undated_entries_in(store, dated):
    found = await store.search_memories("undated", limit=20, days=3)
    assert texts(found) == ["undated coffee preference"]


async def test_since_after_until_is_a_usage_error(store, dated):
    with pytest.raises(UsageError):
        await store.search("coffee", since=Date(2026, 2, 10), until=Date(2026, 2, 1))


@pytest.fixture
def labelled(workspace: Path) -> Path:
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", [
        "Chose Postgres for atlas\n<!-- @category: decision -->\n<!-- @tag: db -->\n<!-- @tag: atlas -->",
        "Atlas deploys on Fridays\n<!-- @category: convention -->\n<!-- @tag: atlas -->",
        "Atlas uses sqlite for tests\n<!-- @category: decision -->\n<!-- @tag: db -->",
        "Atlas logo is blue",
    ])))
    write_note(workspace, "2026-02-13",
               "Atlas standup notes\n<!-- @category: decision -->\n<!-- @tag: atlas -->\n<!-- @tag: db -->",
               "Atlas retro notes\n<!-- @tag: atlas -->")
    return workspace


async def test_category_filter_keeps_only_that_category(store, labelled):
    found = await store.search_memories("atlas", limit=20, category="decision")
    assert contents(found) == {"Chose Postgres for atlas", "Atlas uses sqlite for tests",
                               "Atlas standup notes"}
    assert {hit.category for hit in found} == {"decision"}


async def test_category_filter_ignores_case_and_spaces(store, labelled):
    found = await store.search_memories("atlas", limit=20, category=" Convention ")
    assert texts(found) == ["Atlas deploys on Fridays"]


async def test_one_tag_filter(store, labelled):
    found = await store.search_memories("atlas", limit=20, tags=["db"])
    assert contents(found) == {"Chose Postgres for atlas", "Atlas uses sqlite for tests",
                               "Atlas standup notes"}


async def test_several_tags_must_all_match(store, labelled):
    found = await store.search_memories("atlas", limit=20, tags=["db", "atlas"])
    assert contents(found) == {"Chose Postgres for atlas", "Atlas standup notes"}


async def test_a_tag_does_not_match_a_longer_tag_holding_it(store, workspace):
    write_note(workspace, "2026-02-13", "Atlas dbx migration\n<!-- @tag: dbx -->")
    assert await store.search_memories("atlas", tags=["db"]) == []


@pytest.mark.parametrize("tag", ["db atlas", "atlas db", "", " "])
async def test_a_tag_that_no_entry_can_have_matches_nothing_or_is_a_usage_error(store, labelled,
                                                                              tag):
    # Tags never hold spaces and are never empty, so such a filter must not pick entries by
    # how their tags happen to be stored (or pick the untagged ones).
    try:
        found = await store.search_memories("atlas", limit=20, tags=[tag])
    except UsageError:
        return
    assert found == []


async def test_source_filter_long_term(store, labelled):
    found = await store.search_memories("atlas", limit=20, sources=["long_term"])
    assert {hit.source for hit in found} == {"long_term"} and len(found) == 4


async def test_source_filter_daily_note(store, labelled):
    found = await store.search_memories("atlas", limit=20, sources=["daily_note"])
    assert contents(found) == {"Atlas standup notes", "Atlas retro notes"}


async def test_unknown_source_is_a_usage_error(store, labelled):
    with pytest.raises(UsageError):
        await store.search("atlas", sources=["chat"])


async def test_category_tag_source_and_since_combined(store, labelled):
    found = await store.search_memories("atlas", limit=20, category="decision", tags=["db"],
                                        sources=["daily_note"], since=Date(2026, 2, 13))
    assert texts(found) == ["Atlas standup notes"]


async def test_filters_combine_with_operators(store, labelled):
    found = await store.search_memories("atlas -sqlite", limit=20, tags=["db"],
                                        sources=["long_term"])
    assert texts(found) == ["Chose Postgres for atlas"]


@pytest.fixture
def crowded(workspace: Path) -> Path:
    """30 coffee entries: the 25 untagged say coffee three times (they score higher), the 5
    tagged `x` (category `rare`) once."""
    strong = [f"coffee coffee coffee number {i}" for i in range(25)]
    weak = [f"coffee once number {i}\n<!-- @category: rare -->\n<!-- @tag: x -->"
            for i in range(5)]
    write_note(workspace, "2026-02-13", *strong[:15])
    write_note(workspace, "2026-02-12", *strong[15:], *weak)
    return workspace


async def test_tag_filter_applies_inside_the_ranking(store, crowded):
    found = await store.search_memories("coffee", limit=5, tags=["x"])
    assert sorted(texts(found)) == [f"coffee once number {i}" for i in range(5)]


async def test_category_filter_applies_inside_the_ranking(store, crowded):
    found = await store.search_memories("coffee", limit=5, category="rare")
    assert sorted(texts(found)) == [f"coffee once number {i}" for i in range(5)]


async def test_unfiltered_top_five_are_the_stronger_entries(store, crowded):
    found = await store.search_memories("coffee", limit=5)
    assert all(hit.content.startswith("coffee coffee coffee") for hit in found)


async def test_source_filter_applies_inside_the_ranking(store, crowded):
    write(store.workspace, "memory/MEMORY.md", long_term(
        ("2026-02-01", [f"coffee bullet {i} with many other words around it" for i in range(5)])))
    found = await store.search_memories("coffee", limit=5, sources=["long_term"])
    assert len(found) == 5 and {hit.source for hit in found} == {"long_term"}


async def test_date_filter_applies_inside_the_ranking(store, crowded):
    write_note(store.workspace, "2026-01-20", *[f"coffee late entry {i} filler words here"
                                                for i in range(5)])
    found = await store.search_memories("coffee", limit=5, until=Date(2026, 1, 31))
    assert sorted(texts(found)) == [f"coffee late entry {i} filler words here" for i in range(5)]


# -- spelling fallback -----------------------------------------------------------------------


async def test_misspelt_word_is_replaced_by_the_closest_indexed_spelling(store, atlas):
    found = await store.search("bicyle")
    assert found.corrections == (("bicyle", "bicycle"),)
    assert texts(found.results) == ["Bought a new bicycle helmet"]


async def test_correct_false_searches_the_word_as_typed(store, atlas):
    found = await store.search("bicyle", correct=False)
    assert found.corrections == () and found.results == []
    assert await store.search_memories("bicyle", correct=False) == []


async def test_correction_picks_the_nearest_of_several_spellings(store, workspace):
    write_note(workspace, "2026-02-13", "A bottle of water", "The bottom drawer")
    found = await store.search("bottel")
    assert found.corrections == (("bottel", "bottle"),)
    assert texts(found.results) == ["A bottle of water"]


async def test_correction_keeps_the_first_letter(store, atlas):
    found = await store.search("vicycle")
    assert found.corrections == ()
    assert found.results == []


async def test_word_in_the_index_is_never_corrected_even_outside_the_window(store, workspace):
    write_note(workspace, "2025-06-01", "Fixed the desk lamp")
    write_note(workspace, "2026-02-13", "Roast lamb for dinner", "Lamb stew again")
    found = await store.search("lamp")
    assert found.corrections == ()
    assert found.results == []  # the lamp note is outside the 30-day window


async def test_word_in_the_index_is_never_corrected(store, workspace):
    write_note(workspace, "2026-02-13", "Fixed the desk lamp", "Roast lamb for dinner",
               "Lamb stew again", "More lamb chops")
    found = await store.search("lamp")
    assert found.corrections == ()
    assert texts(found.results) == ["Fixed the desk lamp"]


async def test_only_the_word_that_matches_nothing_is_corrected(store, atlas):
    found = await store.search("helmet bicyle")
    assert found.corrections == (("bicyle", "bicycle"),)


async def test_word_without_close_spelling_stays_and_a_suggestion_says_to_drop_it(store, atlas):
    found = await store.search("xylophone")
    assert found.corrections == ()
    assert found.results == []
    assert any("drop 'xylophone'" in hint for hint in found.suggestions)


async def test_corrected_required_word_is_required_under_its_new_spelling(store, atlas):
    found = await store.search("helmet +bicyle", limit=20)
    assert found.corrections == (("bicyle", "bicycle"),)
    assert texts(found.results) == ["Bought a new bicycle helmet"]


# -- suggestions -----------------------------------------------------------------------------


async def test_suggestions_when_fewer_results_than_the_limit_mention_all(store, atlas):
    write_note(atlas, "2025-12-01", "Older: a kite")  # outside the window: --all may find more
    found = await store.search("helmet", limit=5)
    assert len(found.results) == 1
    assert Hint("widen_days", days=30) in found.hints
    # the library names no CLI flag: its plain wording, and the CLI's own in cli/render.py
    assert "search all history (only the last 30 days" in found.suggestions[0]
    assert not any("--" in hint for hint in found.suggestions)


async def test_suggestions_do_not_mention_all_when_all_history_was_searched(store, atlas):
    found = await store.search("helmet", limit=5, days=None)
    assert len(found.results) == 1
    assert not any(hint.kind == "widen_days" for hint in found.hints)


async def test_no_suggestions_when_the_limit_is_reached(store, atlas):
    found = await store.search("atlas", limit=3)
    assert len(found.results) == 3
    assert found.hints == () and found.suggestions == ()


# -- explain ---------------------------------------------------------------------------------


async def test_explain_parts_sum_to_the_score(store, atlas):
    found = await store.search("atlas budget sam", limit=20, explain=True)
    assert found.results
    for hit in found.results:
        assert hit.explanation
        assert sum(value for _, value in hit.explanation) == pytest.approx(hit.score)


async def test_explain_names_the_query_terms_an_entry_holds(store, atlas):
    found = await store.search("helmet coffee", limit=20, explain=True)
    parts = {hit.content: dict(hit.explanation) for hit in found.results}
    assert set(parts["Bought a new bicycle helmet"]) == {"helmet"}
    assert set(parts["Sam likes dark roast coffee"]) == {"coffe"}  # terms are stems


async def test_without_explain_there_is_no_explanation(store, atlas):
    found = await store.search("atlas")
    assert all(hit.explanation == () for hit in found.results)


@pytest.fixture
def conversation(workspace: Path) -> Path:
    """Entries five minutes apart: neighbours of each other in bm25."""
    write_note(workspace, "2026-02-13",
               "Met Sam about the zephyr project",
               "He agreed to the numbers",
               times=["10:00:00", "10:05:00"])
    return workspace


async def test_neighbour_holding_no_query_word_is_not_returned_in_bm25(store, conversation):
    found = await store.search("zephyr", limit=5)
    assert texts(found.results) == ["Met Sam about the zephyr project"]
    assert found.total == 1


async def test_matched_entry_with_a_matching_neighbour_explains_its_share(store, workspace):
    write_note(workspace, "2026-02-13", "zephyr kickoff", "zephyr budget followup",
               times=["10:00:00", "10:05:00"])
    found = await store.search("zephyr budget", explain=True)
    parts = {hit.content: dict(hit.explanation) for hit in found.results}
    # The kickoff lacks "budget", which its neighbour holds; the followup lacks nothing.
    assert set(parts["zephyr kickoff"]) == {"zephyr", "neighbours"}
    assert set(parts["zephyr budget followup"]) == {"zephyr", "budget"}
    for hit in found.results:
        assert sum(dict(hit.explanation).values()) == pytest.approx(hit.score)


async def test_a_neighbour_lends_only_the_query_words_an_entry_lacks(store, workspace):
    # A long reply repeating the question's words gains nothing from the question before it.
    write_note(workspace, "2026-02-13", "user: zephyr budget?",
               "assistant: the zephyr budget, zephyr budget and more budget talk",
               times=["10:00:00", "10:05:00"])
    found = await store.search("zephyr budget", explain=True)
    reply = next(hit for hit in found.results if hit.content.startswith("assistant"))
    assert "neighbours" not in dict(reply.explanation)


async def test_entries_far_apart_in_time_are_not_each_others_context(store, workspace):
    write_note(workspace, "2026-02-13", "Met Sam about the zephyr project",
               "He agreed to the numbers", times=["10:00:00", "10:31:00"])
    found = await store.search("zephyr", limit=5)
    assert texts(found.results) == ["Met Sam about the zephyr project"]


async def test_keyword_mode_has_no_neighbour_context(store, conversation):
    found = await store.search("zephyr", limit=5, mode="keyword")
    assert texts(found.results) == ["Met Sam about the zephyr project"]


async def test_excluded_word_keeps_its_entry_out_even_as_neighbour_context(store, workspace):
    write_note(workspace, "2026-02-13", "Met Sam about the zephyr project",
               "He agreed to the secret numbers", times=["10:00:00", "10:05:00"])
    found = await store.search("zephyr -secret", limit=5)
    assert texts(found.results) == ["Met Sam about the zephyr project"]


async def test_matched_neighbour_results_all_hold_the_phrase(store, workspace):
    write_note(workspace, "2026-02-13", "Sam approved the atlas budget",
               "Sam said budget atlas twice", times=["10:00:00", "10:05:00"])
    found = await store.search('"atlas budget"', limit=5)
    assert texts(found.results) == ["Sam approved the atlas budget"]


async def test_tag_filter_keeps_untagged_neighbours_out(store, workspace):
    write_note(workspace, "2026-02-13", "Met Sam about the zephyr project\n<!-- @tag: work -->",
               "He agreed to the numbers", times=["10:00:00", "10:05:00"])
    found = await store.search("zephyr", limit=5, tags=["work"])
    assert texts(found.results) == ["Met Sam about the zephyr project"]


# -- any user text ---------------------------------------------------------------------------

_WORDS = ["atlas", "budget", "sam", "coffee", "bicyle", "the", "of"]
_query_text = st.one_of(
    st.text(max_size=60),
    st.lists(st.one_of(st.sampled_from(_WORDS), st.sampled_from(['"', "+", "-", "*", "(", ":"]),
                       st.text(max_size=6)), max_size=8).map(" ".join),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_query_text, mode=st.sampled_from([None, "keyword", "bm25"]))
def test_any_query_text_searches_or_raises_a_query_error(text, mode):
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        write(ws, "memory/2026-02-13.md", note("2026-02-13", "Sam approved the atlas budget",
                                               "Bought a new bicycle helmet"))

        async def search():
            async with MemoryStore(ws, index_path=Path(tmp) / "index.sqlite3",
                                   now=lambda: NOW) as store:
                return await store.search(text, limit=5, mode=mode)

        try:
            found = asyncio.run(search())
        except QueryError:
            return
    assert len(found.results) <= 5
    assert found.total >= len(found.results)
    assert all(isinstance(hit.content, str) for hit in found.results)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.lists(st.sampled_from(["atlas", "budget", "sam", "draft", "friday", "coffee"]),
                      min_size=1, max_size=3, unique=True),
       banned=st.sampled_from(["draft", "friday", "sam", "twice"]))
def test_no_result_ever_holds_an_excluded_word(words, banned):
    if banned in words:
        words = [w for w in words if w != banned] or ["atlas"]
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        write(ws, "memory/2026-02-13.md", note(
            "2026-02-13", "Sam approved the atlas budget", "Sam wrote the atlas budget draft",
            "The atlas budget is due Friday", "Sam said budget atlas twice",
            "Sam likes dark roast coffee"))

        async def search():
            async with MemoryStore(ws, index_path=Path(tmp) / "index.sqlite3",
                                   now=lambda: NOW) as store:
                return await store.search_memories(" ".join(words) + f" -{banned}", limit=20)

        found = asyncio.run(search())
    assert all(banned not in hit.content.lower() for hit in found)
