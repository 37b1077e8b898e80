"""Dates a query names, read relative to when it is asked, and how they lift matching entries."""

from __future__ import annotations

from datetime import date as Date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miniclaw.date_cue import DateSpan, named_dates
from tests.conftest import write

TODAY = Date(2026, 2, 14)  # a Saturday


@pytest.mark.parametrize("text, span", [
    ("what did I buy on 2026-02-03?", DateSpan(Date(2026, 2, 3), Date(2026, 2, 3))),
    ("dinner on October 13, 2025", DateSpan(Date(2025, 10, 13), Date(2025, 10, 13))),
    ("what did I find on 1 February, 2026", DateSpan(Date(2026, 2, 1), Date(2026, 2, 1))),
    ("camping in June", DateSpan(Date(2025, 6, 1), Date(2025, 6, 30))),  # the latest June
    ("trips in February", DateSpan(Date(2026, 2, 1), Date(2026, 2, 28))),
    ("the party in May 2024", DateSpan(Date(2024, 5, 1), Date(2024, 5, 31))),
    ("what did I do last month", DateSpan(Date(2026, 1, 1), Date(2026, 1, 31))),
    ("who did I meet last Tuesday", DateSpan(Date(2026, 2, 10), Date(2026, 2, 10))),
    ("runs last week", DateSpan(Date(2026, 2, 2), Date(2026, 2, 8))),
    ("the book I finished two weeks ago", DateSpan(Date(2026, 1, 29), Date(2026, 2, 2))),
    ("the appliance I bought 10 days ago", DateSpan(Date(2026, 2, 3), Date(2026, 2, 5))),
    ("what happened yesterday", DateSpan(Date(2026, 2, 13), Date(2026, 2, 13))),
])
def test_named_dates_reads_the_span_a_question_means(text, span):
    assert named_dates(text, TODAY) == [span]


@pytest.mark.parametrize("text", [
    "may I ask about coffee", "what time is standup, 9:30?", "I wake up on Saturday mornings",
    "how many days ago did I attend", "version 2026 of the plan", "March of the penguins",
])
def test_words_that_name_no_day_give_no_span(text):
    assert named_dates(text, TODAY) == []


@given(st.text(max_size=80))
def test_any_text_gives_valid_spans_or_none(text):
    for span in named_dates(text, TODAY):
        assert span.first <= span.last


@pytest.mark.parametrize("text", [
    "in may 0000", "in december 9999", "on 1 january 0000", "the 3rd of may 0000",
    "the cat in May 0000, and the dog last month",
])
def test_a_date_out_of_the_calendar_names_no_span(text):
    """A year Python's dates cannot hold raised ValueError through every search surface."""
    spans = named_dates(text, TODAY)
    assert all(Date.min <= span.first <= span.last <= Date.max for span in spans)
    assert ("last month" in text) == bool(spans)


@given(st.sampled_from(["in may", "on 3 march", "march 3,", "in december"]),
       st.integers(min_value=0, max_value=9999), st.integers(min_value=0, max_value=999))
def test_any_year_or_amount_gives_valid_spans_or_none(phrase, year, amount):
    for text in (f"{phrase} {year:04d}", f"{amount} years ago", f"{amount} months ago"):
        for span in named_dates(text, TODAY):
            assert span.first <= span.last


async def test_a_match_dated_when_the_question_says_ranks_first(store, workspace):
    # NOW in conftest is 2026-02-14: "last week" is 2026-02-02 .. 2026-02-08.
    write(workspace, "memory/2026-02-12.md",
          "# Daily Note - 2026-02-12\n\n## 09:00:00 UTC\n\nbought a toaster\n")
    write(workspace, "memory/2026-02-05.md",  # longer: it ranks second on its words alone
          "# Daily Note - 2026-02-05\n\n## 09:00:00 UTC\n\nbought a toaster and a kettle\n")
    found = await store.search("the toaster from last week", limit=5, explain=True)
    assert [hit.date for hit in found.results] == [Date(2026, 2, 5), Date(2026, 2, 12)]
    assert "date" in dict(found.results[0].explanation)
    plain = await store.search("the toaster", limit=5)
    assert [hit.date for hit in plain.results] == [Date(2026, 2, 12), Date(2026, 2, 5)]


async def test_a_named_date_never_brings_in_an_entry_that_does_not_match(store, workspace):
    write(workspace, "memory/2026-02-05.md",
          "# Daily Note - 2026-02-05\n\n## 09:00:00 UTC\n\nwatered the plants\n")
    write(workspace, "memory/2026-02-12.md",
          "# Daily Note - 2026-02-12\n\n## 09:00:00 UTC\n\nbought a toaster\n")
    found = await store.search("the toaster from last week", limit=5)
    assert [hit.content for hit in found.results] == ["bought a toaster"]
