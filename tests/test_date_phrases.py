"""Date phrases as a diary question or a `--since`/`--until` value holds them (issue 39):
"yesterday", "last week", "this month", "3 days ago", "last 3 days", read against a `today`
passed in."""

from __future__ import annotations

from datetime import date as Date
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miniclaw.dates import parse_day
from miniclaw.errors import UsageError
from miniclaw.date_cue import DateSpan, date_phrases, span_of

TODAY = Date(2026, 2, 14)  # a Saturday
days = st.dates(min_value=Date(1900, 3, 1), max_value=Date(9000, 12, 31))


@pytest.mark.parametrize("text, first, last", [
    ("today", TODAY, TODAY),
    ("yesterday", Date(2026, 2, 13), Date(2026, 2, 13)),
    ("3 days ago", Date(2026, 2, 11), Date(2026, 2, 11)),  # that very day, as a bound
    ("two weeks ago", Date(2026, 1, 31), Date(2026, 1, 31)),
    ("last week", Date(2026, 2, 2), Date(2026, 2, 8)),
    ("Last Month", Date(2026, 1, 1), Date(2026, 1, 31)),
    ("this week", Date(2026, 2, 9), TODAY),
    ("this month", Date(2026, 2, 1), TODAY),
    ("this year", Date(2026, 1, 1), TODAY),
    ("last 3 days", Date(2026, 2, 12), TODAY),
    ("past two weeks", Date(2026, 2, 1), TODAY),
    ("last friday", Date(2026, 2, 13), Date(2026, 2, 13)),
])
def test_a_whole_phrase_names_a_span(text, first, last):
    assert span_of(text, TODAY) == DateSpan(first, last)


@pytest.mark.parametrize("text", ["coffee last week", "last week coffee", "week", "blah week",
                                  "3 days", "last", ""])
def test_a_phrase_among_other_words_is_no_bound(text):
    assert span_of(text, TODAY) is None


@pytest.mark.parametrize("flag, end, expected", [
    ("--since", False, Date(2026, 2, 2)), ("--until", True, Date(2026, 2, 8))])
def test_since_and_until_take_the_first_and_last_day_of_a_span(flag, end, expected):
    assert parse_day("last week", TODAY, flag=flag, end=end) == expected


def test_a_span_where_one_day_is_meant_is_refused_naming_the_span():
    with pytest.raises(UsageError, match="names 2026-02-02 to 2026-02-08: give one day"):
        parse_day("last week", TODAY)
    assert parse_day("2 days ago", TODAY) == Date(2026, 2, 12)


@given(days, st.integers(min_value=1, max_value=400), st.sampled_from(["day", "week"]))
def test_n_units_ago_is_that_day(today, n, unit):
    text = f"{n} {unit}{'s' if n > 1 else ''} ago"
    back = n * (7 if unit == "week" else 1)
    assert span_of(text, today) == DateSpan(today - timedelta(days=back),
                                            today - timedelta(days=back))
    assert parse_day(text, today, flag="--since", end=False) == today - timedelta(days=back)


@given(days, st.sampled_from(["week", "month", "year"]))
def test_this_and_last_unit_are_whole_spans_that_meet(today, unit):
    this, last = span_of(f"this {unit}", today), span_of(f"last {unit}", today)
    assert this.last == today and this.first <= today
    assert last.first <= last.last and last.last + timedelta(days=1) == this.first
    assert last.first.weekday() == 0 if unit == "week" else last.first.day == 1


@given(days, st.text(max_size=60))
def test_any_text_gives_spans_in_order_that_never_pass_today_when_relative(today, text):
    """Never an error; spans in order of appearance, each inside the text."""
    found = date_phrases(text, today)
    assert [start for start, _, _ in found] == sorted(start for start, _, _ in found)
    for start, end, span in found:
        assert 0 <= start < end <= len(text) and span.first <= span.last
    whole = span_of(text, today)
    assert whole is None or whole.first <= whole.last


@given(days, st.text(alphabet="abcdefghijklmnopqrstuvwxyz 0123456789-", max_size=30))
def test_parse_day_gives_a_date_or_one_clear_usage_error(today, text):
    for end in (None, False, True):
        try:
            parse_day(text, today, flag="--since", end=end)
        except UsageError as error:
            assert str(error).startswith("--since ") and "\n" not in str(error)
