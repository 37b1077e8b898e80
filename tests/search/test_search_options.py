"""One search signature (search/options.py): the API, the ranker, the tools and the CLI share
`SearchOptions`, whose arguments take what callers naturally pass and refuse the rest with a
`UsageError` naming the argument, never another exception."""

from __future__ import annotations

import asyncio
import dataclasses
import tempfile
from datetime import date as Date
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniclaw.errors import UsageError
from miniclaw.memory import MemoryStore
from miniclaw.search.options import SearchOptions
from tests.conftest import NOW, long_term, write
from tests.search.test_search_features import note

TODAY = NOW.date()


def _memories(ws: Path) -> None:
    write(ws, "memory/MEMORY.md", long_term(
        ("2026-01-05", ["Atlas budget is 40k\n<!-- @tag: work -->"])))
    write(ws, "memory/2026-02-13.md", note("2026-02-13", "Sam approved the atlas budget"))
    write(ws, "memory/2026-02-10.md", note("2026-02-10", "Atlas kickoff with the budget"))


@pytest.fixture
def atlas(workspace: Path) -> Path:
    _memories(workspace)
    return workspace


def paths(found) -> list[str]:
    return sorted(hit.path for hit in found.results)


async def test_a_datetime_since_keeps_the_whole_of_its_day(store, atlas):
    evening = datetime(2026, 2, 13, 18, 30)
    found = await store.search("atlas", since=evening)
    assert paths(found) == ["memory/2026-02-13.md"]
    aware = datetime(2026, 2, 13, 23, 30, tzinfo=timezone(timedelta(hours=-5)))  # 14th, UTC
    assert paths(await store.search("atlas", since=aware)) == []
    assert paths(await store.search("atlas", until=evening)) == [
        "memory/2026-02-10.md", "memory/2026-02-13.md", "memory/MEMORY.md"]


@pytest.mark.parametrize("since", ["2026-02-13", "yesterday", "1d", Date(2026, 2, 13)])
async def test_since_takes_a_date_or_a_day_as_people_type_it(store, atlas, since):
    assert paths(await store.search("atlas", since=since)) == ["memory/2026-02-13.md"]


async def test_one_tag_or_one_source_is_a_plain_string(store, atlas):
    assert paths(await store.search("atlas", tags="work")) == ["memory/MEMORY.md"]
    assert paths(await store.search("atlas", tags="Work", days=None)) == ["memory/MEMORY.md"]
    assert paths(await store.search("atlas", sources="long_term")) == ["memory/MEMORY.md"]
    hits = await store.search_memories("atlas", sources=["daily_note"], days=None)
    assert sorted(hit.path for hit in hits) == ["memory/2026-02-10.md", "memory/2026-02-13.md"]


@pytest.mark.parametrize(("arguments", "named"), [
    ({"since": 20260213}, "since"), ({"until": "the day after"}, "until"),
    ({"tags": 3}, "tags"), ({"tags": ["ok", 3]}, "tags"), ({"sources": {"a": 1}}, "sources"),
    ({"category": ["x"]}, "category"), ({"mode": 1}, "mode"), ({"explain": "yes"}, "explain"),
    ({"colour": "red"}, "colour"), ({"since": "2026-02-13", "until": "2026-02-10"}, "since"),
])
async def test_a_value_that_cannot_be_read_is_a_usage_error_naming_its_argument(
        store, atlas, arguments, named):
    with pytest.raises(UsageError, match=named):
        await store.search("atlas", **arguments)


def test_the_cli_names_its_own_flags_in_errors():
    with pytest.raises(UsageError, match="--tag"):
        SearchOptions.build(TODAY, names={"tags": "--tag"}, tags=[3])
    with pytest.raises(UsageError, match="--since 'soon' is not a date"):
        SearchOptions.build(TODAY, names={"since": "--since"}, since="soon")


def test_options_are_a_frozen_keyword_built_record():
    options = SearchOptions(limit=3, tags=("work",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.limit = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        SearchOptions(3)  # type: ignore[misc]
    assert dataclasses.replace(options, limit=4).limit == 4
    assert SearchOptions.build(TODAY, limit=3, tags="work") == options


_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 40_000), st.floats(allow_nan=True),
    st.text(max_size=12), st.sampled_from(["2026-02-13", "yesterday", "7d", "2w", "today",
                                           "long_term", "daily_note", "bm25", "work", "14 Feb"]),
    st.dates(), st.datetimes(timezones=st.none() | st.just(timezone.utc)),
    st.lists(st.text(max_size=6) | st.integers(), max_size=3), st.binary(max_size=4),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
_NAMES = ["limit", "days", "since", "until", "category", "tags", "sources", "mode", "require",
          "exclude", "explain", "correct"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments=st.dictionaries(st.sampled_from(_NAMES), _VALUE, max_size=4))
def test_any_argument_values_give_results_or_a_usage_error(arguments):
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        _memories(ws)

        async def search():
            async with MemoryStore(ws, index_path=Path(tmp) / "index.sqlite3",
                                   now=lambda: NOW) as store:
                return await store.search("atlas budget", **arguments)

        try:
            found = asyncio.run(search())
        except UsageError as exc:
            assert str(exc) and "\n" not in str(exc)
            return
        assert all(hit.content for hit in found.results)
