"""Dates as users type them, the clock, and the zone that names the days.

"Today" is the date in the workspace's zone (the `timezone` setting, UTC by default;
docs/ARCHITECTURE.md). `parse_day` accepts ISO dates
(`2026-02-14`), `today`, `yesterday`, relative forms (`7d`, `2w` ago), the phrases a
question may hold (`3 days ago`, `last week`, `this month`: date_cue.py), and, through
python-dateutil (imported only then, since its parser is slow to import), forms like
`14 Feb 2026`. Anything else is a `UsageError` naming the flag.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone, tzinfo

from miniclaw.errors import UsageError

_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_RELATIVE = re.compile(r"^(\d{1,5})\s*([dw])$", re.IGNORECASE)


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def zone_name(zone: tzinfo) -> str:
    """How messages and help name a zone: `UTC`, or its IANA name (`Asia/Tokyo`)."""
    return "UTC" if zone is timezone.utc else str(getattr(zone, "key", None) or zone)


def utc_offset(moment: datetime) -> str:
    """`UTC` when the moment is at offset zero, else the offset as `+09:00` (or `-03:30`):
    what a daily-note header carries after its time."""
    offset = moment.utcoffset() or timedelta(0)
    if not offset:
        return "UTC"
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


# The furthest ahead of today another zone's date can be: zones span UTC-12 to UTC+14, so at
# 23:59 on the 1st at UTC-12 it is already 01:59 on the 3rd at UTC+14.
ZONE_LEAD_DAYS = 2

_FORMS = "YYYY-MM-DD, '14 Feb 2026', 'today', 'yesterday', '7d', '2w' or '3 days ago'"
# where a span's first or last day is taken (--since, --until): its phrases too
_SPAN_FORMS = _FORMS.replace(" or ", ", ") + ", 'last week' or 'this month'"


def parse_day(text: str, today: date, *, flag: str = "--date", end: bool | None = None) -> date:
    """The day a user means by `text`, relative to `today` (passed in: the caller's clock).
    A phrase naming several days ("last week", "this month") is read by `end`: its first day
    for a start (`--since`, end=False), its last for an end (`--until`, end=True), refused
    where one day is meant (None)."""
    from miniclaw.date_cue import span_of

    span = span_of(text, today)
    if span is not None and (span.first == span.last or end is not None):
        return span.last if end else span.first
    if span is not None:
        raise UsageError(f"{flag} {text!r} names {span.first} to {span.last}: give one day "
                         "(YYYY-MM-DD, 'yesterday', '3 days ago', 'last friday')")
    value = text.strip().lower()
    forms = _FORMS if end is None else _SPAN_FORMS
    if _ISO.match(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            raise UsageError(f"{flag} {text!r} is not a real date (expected YYYY-MM-DD)") from None
    if value == "today":
        return today
    if value == "yesterday":
        return today - timedelta(days=1)
    relative = _RELATIVE.match(value)
    if relative:
        amount = int(relative.group(1)) * (7 if relative.group(2) == "w" else 1)
        return today - timedelta(days=amount)
    if value.isdigit():
        raise UsageError(f"{flag} {text!r} is ambiguous: write {value}d for {value} days ago, "
                         "or a date like 2026-02-14")
    if not value or not re.search(r"\d", value):
        raise UsageError(f"{flag} {text!r} is not a date (expected {forms})")
    from dateutil import parser  # slow to import: only for unusual forms

    try:
        return parser.parse(text, default=datetime(today.year, 1, 1)).date()
    except (ValueError, OverflowError):
        raise UsageError(f"{flag} {text!r} is not a date (expected {forms})") from None


def check_not_future(day: date, today: date, *, flag: str = "--date", zone: str = "UTC",
                     exists: bool = False) -> date:
    """`day`, unless it is after `today` with no note (`exists`): a note written where the
    zone was ahead (travel, a second machine syncing the workspace) is dated tomorrow here,
    and is still read."""
    if day > today and not exists:
        raise UsageError(f"{flag} {day.isoformat()} is in the future (today is {today.isoformat()} {zone})")
    return day
