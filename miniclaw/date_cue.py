"""Dates a question names ("in May", "last week", "3 days ago", "on 13 October 2023",
"2026-02-14", "this week", "last 3 days"), read relative to when it is asked, as a span of
days; and a whole `--since`/`--until` value that is one such phrase (`span_of`).

Why: any memory is dated, and "what did I buy last week?" is about entries written then. The
ranker favours matching entries dated in the span; it never brings in one that does not match.
Only forms that name a date unambiguously are read: a weekday needs "last", a month name
alone is the latest such month up to today. Pure regular expressions: no import cost.
"""

from __future__ import annotations

import functools
import re
from datetime import date as Date
from datetime import timedelta
from collections.abc import Callable
from typing import NamedTuple

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")
_MONTH = r"(?P<month>" + "|".join(m[:3] + r"(?:" + m[3:] + r")?" for m in _MONTHS) + r")"
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3}
_AMOUNT = r"(?P<amount>\d{1,3}|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}

# Words without which a text names no date: most questions have none, and then the patterns
# below are not even compiled (~2 ms of a one-shot CLI search).
_CUES = ("ago", "last", "past", "previous", "yesterday", "today", "this week", "this month",
         "this year") + tuple(m[:3] for m in _MONTHS)


@functools.cache
def _patterns() -> tuple[re.Pattern, ...]:
    """(ISO, day month, month day, in month, N units ago, last unit, yesterday/today,
    last N units, this unit)."""
    return (
        re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"),
        re.compile(r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH
                   + r"\b,?\s*(?P<year>\d{4})?", re.I),
        re.compile(r"\b" + _MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?\b(?!:)"
                   + r",?\s*(?P<year>\d{4})?", re.I),
        re.compile(r"\b(?:in|during|of|since|early|late|mid)\s+" + _MONTH
                   + r"\b(?:\s+(?P<year>\d{4}))?", re.I),
        re.compile(r"\b" + _AMOUNT + r"\s+(?P<unit>day|week|month|year)s?\s+ago\b", re.I),
        re.compile(r"\b(?:last|past|previous)\s+(?P<unit>week|weekend|month|year|"
                   + "|".join(_WEEKDAYS) + r")\b", re.I),
        re.compile(r"\b(?P<word>yesterday|today)\b", re.I),
        re.compile(r"\b(?:last|past|previous)\s+" + _AMOUNT
                   + r"\s+(?P<unit>day|week|month|year)s?\b", re.I),
        re.compile(r"\bthis\s+(?P<unit>week|month|year)\b", re.I),
    )


class DateSpan(NamedTuple):
    first: Date
    last: Date

    def distance(self, day: Date) -> int:
        """Days between `day` and the span (0 inside it)."""
        if day < self.first:
            return (self.first - day).days
        return max((day - self.last).days, 0)


def _month_number(name: str) -> int:
    return next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(name.lower()[:3]))


def _month_span(year: int, month: int) -> DateSpan:
    following = Date(year + month // 12, month % 12 + 1, 1)
    return DateSpan(Date(year, month, 1), following - timedelta(days=1))


def _day(year: int, month: int, day: int) -> DateSpan | None:
    try:
        one = Date(year, month, day)
    except ValueError:
        return None
    return DateSpan(one, one)


def _latest_year(month: int, day: int, today: Date) -> int:
    """The year of the latest (month, day) up to today."""
    return today.year if (month, day) <= (today.month, today.day) else today.year - 1


def named_dates(text: str, today: Date) -> list[DateSpan]:
    """The spans of days the text names, relative to `today`, in order of appearance."""
    return [span for _, _, span in date_phrases(text, today)]


def span_of(text: str, today: Date) -> DateSpan | None:
    """The span a whole text names when it is one date phrase and nothing else ("last week",
    "3 days ago", "yesterday"), as a `--since`/`--until` value; else None. "N days ago" is
    that very day here (in a question it is about then)."""
    text = text.strip()
    found = date_phrases(text, today, exact=True)
    if len(found) == 1 and found[0][0] == 0 and found[0][1] == len(text):
        return found[0][2]
    return None


def date_phrases(text: str, today: Date, *,
                 exact: bool = False) -> list[tuple[int, int, DateSpan]]:
    """(start, end, span) of each date phrase of the text, in order of appearance: where it
    is, so that a question's date words can be told from its other words (ranker.py)."""
    lowered = text.lower()
    if not any(cue in lowered for cue in _CUES) and not any(c.isdigit() for c in text):
        return []
    (_ISO, _DAY_MONTH, _MONTH_DAY, _IN_MONTH, _AGO, _LAST, _SINGLE, _RECENT,
     _THIS) = _patterns()
    found: list[tuple[int, int, DateSpan]] = []
    taken: list[tuple[int, int]] = []

    def add(match: re.Match, make: Callable[[], DateSpan | None]) -> None:
        try:
            span = make()
        except (ValueError, OverflowError):  # "in May 0000", "9999 years ago": no such day
            return
        if span is None or any(s < match.end() and match.start() < e for s, e in taken):
            return
        taken.append((match.start(), match.end()))
        found.append((match.start(), match.end(), span))

    def amount(m: re.Match) -> int:
        raw = " ".join(m.group("amount").lower().split())
        return int(raw) if raw.isdigit() else _NUMBERS[raw.removeprefix("a ")]

    for m in _RECENT.finditer(text):  # "last 3 days": up to today (before "last week")
        days = amount(m) * _UNIT_DAYS[m.group("unit").lower()]
        add(m, lambda: DateSpan(today - timedelta(days=days - 1), today) if days else None)

    for m in _ISO.finditer(text):
        add(m, lambda: _day(int(m.group(1)), int(m.group(2)), int(m.group(3))))
    for pattern in (_DAY_MONTH, _MONTH_DAY):
        for m in pattern.finditer(text):
            month, day = _month_number(m.group("month")), int(m.group("day"))
            year = int(m.group("year")) if m.group("year") else _latest_year(month, day, today)
            add(m, lambda: _day(year, month, day))
    for m in _IN_MONTH.finditer(text):
        month = _month_number(m.group("month"))
        year = int(m.group("year")) if m.group("year") else _latest_year(month, 1, today)
        add(m, lambda: _month_span(year, month))
    for m in _AGO.finditer(text):
        days = amount(m) * _UNIT_DAYS[m.group("unit").lower()]
        slack = 0 if exact else max(days // 7, 1)  # "10 days ago" means about then
        add(m, lambda: DateSpan(today - timedelta(days=days + slack),
                                today - timedelta(days=days - slack)))
    for m in _LAST.finditer(text):
        unit = m.group("unit").lower()
        if unit in _WEEKDAYS:
            back = (today.weekday() - _WEEKDAYS.index(unit) - 1) % 7 + 1
            add(m, lambda: _day(*(today - timedelta(days=back)).timetuple()[:3]))
        elif unit in ("week", "weekend"):
            add(m, lambda: DateSpan(today - timedelta(days=today.weekday() + 7),
                                    today - timedelta(days=today.weekday() + 1)))
        elif unit == "month":
            first = today.replace(day=1) - timedelta(days=1)
            add(m, lambda: _month_span(first.year, first.month))
        else:
            add(m, lambda: DateSpan(Date(today.year - 1, 1, 1), Date(today.year - 1, 12, 31)))
    for m in _SINGLE.finditer(text):
        back = 1 if m.group("word").lower() == "yesterday" else 0
        one = today - timedelta(days=back)
        add(m, lambda: DateSpan(one, one))
    for m in _THIS.finditer(text):  # up to today: a diary holds nothing later
        unit = m.group("unit").lower()
        first = {"week": today - timedelta(days=today.weekday()),
                 "month": today.replace(day=1), "year": today.replace(month=1, day=1)}[unit]
        add(m, lambda: DateSpan(first, today))
    return sorted(found, key=lambda item: item[0])
