"""The search arguments, defined once: `SearchOptions`, shared by the API
(`MemoryStore.search`, `search_memories`), the ranker, the memory tools and the CLI.

Callers pass what they naturally have, and `SearchOptions.build` makes it right or refuses
it with a `UsageError` naming the argument: `since`/`until` as a date, a datetime (its UTC
date) or a day as people type it (`2026-05-01`, `yesterday`, `7d`: dates.py); `tags` and
`sources` as one string or several; words to require or exclude likewise. The constructor
takes values that are already right (the context builder's larger limits, the ranker).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import date as Date
from datetime import datetime, timezone

from miniclaw.errors import UsageError

DEFAULT_LIMIT = 5
MAX_LIMIT = 20
# Why there is a cap (said with it): past the best 20, results hardly hold what was meant.
WHY_LIMIT = "past the best 20, results hardly hold what was meant: narrow the search instead (more words, dates, tags)"
DEFAULT_DAYS = 30
MAX_DAYS = 36_500  # a century: further back is "all history"


def check_limit(limit: int, name: str = "the result limit") -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"{name} must be between 1 and {MAX_LIMIT}, not {limit!r}: {WHY_LIMIT}")
    return limit


def check_days(days: int | None, name: str = "the number of days") -> int | None:
    if days is not None and (isinstance(days, bool) or not isinstance(days, int)
                             or not 1 <= days <= MAX_DAYS):
        raise UsageError(f"{name} must be between 1 and {MAX_DAYS}, not {days!r}")
    return days


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOptions:
    """How to search: which entries (window, dates, category, tags, sources), how to rank
    them (mode), how many to return, and what to add (explanations, corrections)."""

    limit: int = DEFAULT_LIMIT
    days: int | None = DEFAULT_DAYS  # daily notes of the last N days; None: all history
    since: Date | None = None  # since/until replace the window and filter every dated entry
    until: Date | None = None
    category: str | None = None
    tags: tuple[str, ...] = ()  # every one must match
    sources: tuple[str, ...] | None = None  # None: every source
    mode: str | None = None  # scoring mode; None: the default
    require: tuple[str, ...] = ()  # words every result must hold
    exclude: tuple[str, ...] = ()  # words no result may hold
    explain: bool = False  # break each score down by term
    correct: bool = True  # replace a misspelt word that matches nothing by its closest term
    excerpts: bool = True  # False: each excerpt is the entry's start (the context's many)
    # A source's metadata that must match: {"namespace": "_semantic/decisions"} (mnemonic).
    meta: tuple[tuple[str, str], ...] = ()
    phrase: bool = False  # the whole query is one phrase, no operators (ConKeeper's reading)
    # a user's chat message that only asks ranks below what was stated (ranker.ASKED_WEIGHT);
    # False where past conversations are what is sought (`sessions search`)
    asked_below: bool = True
    # superseded entries too (`memory add --supersedes` marks them; hidden by default)
    all_versions: bool = False

    @classmethod
    def build(cls, today: Date, *, names: Mapping[str, str] | None = None,
              **arguments: object) -> SearchOptions:
        """Options from a caller's values; `today` (UTC) reads relative days, and `names`
        says what the caller calls each argument in errors (the CLI: `--tag` for tags)."""
        known = {field.name for field in fields(cls)}
        for name in arguments:
            if name not in known:
                raise UsageError(f"search has no argument {name!r}; it takes: "
                                 f"{', '.join(sorted(known))}")
        label = lambda name: (names or {}).get(name, name)  # noqa: E731
        values = dict(arguments)
        for name in ("since", "until"):
            if values.get(name) is not None:
                values[name] = _day(values[name], today, label(name), end=name == "until")
        for name in ("tags", "sources", "require", "exclude"):
            if name in values and (values[name] is not None or name != "sources"):
                values[name] = _strings(values[name], label(name))
        if values.get("tags"):
            from miniclaw.entries.entry import clean_tags

            values["tags"] = clean_tags(values["tags"])
        if values.get("category") is not None:
            from miniclaw.entries.entry import clean_category

            values["category"] = clean_category(_string(values["category"], label("category")))
        if values.get("mode") is not None:
            _string(values["mode"], label("mode"))
        for name in ("explain", "correct", "excerpts", "phrase", "asked_below", "all_versions"):
            if name in values and not isinstance(values[name], bool):
                raise UsageError(f"{label(name)} must be true or false, not {values[name]!r}")
        if values.get("meta") is not None:
            values["meta"] = _meta(values["meta"], label("meta"))
        options = cls(**values)
        check_limit(options.limit, (names or {}).get("limit", "the result limit"))
        check_days(options.days, (names or {}).get("days", "the number of days"))
        if options.since and options.until and options.since > options.until:
            raise UsageError(f"{label('since')} {options.since} is after {label('until')} "
                             f"{options.until}")
        return options


def _day(value: object, today: Date, name: str, *, end: bool = False) -> Date:
    """A date from a date, a datetime (its UTC date, not midnight) or a typed day; a
    phrase naming several days ("last week") gives its last day for an `end`, else its
    first."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(timezone.utc)
        return value.date()
    if isinstance(value, Date):
        return value
    if isinstance(value, str):
        from miniclaw.dates import parse_day

        return parse_day(value, today, flag=name, end=end)
    raise UsageError(f"{name} must be a date, a datetime or a day such as 2026-02-14 or "
                     f"'yesterday', not {type(value).__name__}")


def _meta(value: object, name: str) -> tuple[tuple[str, str], ...]:
    """Metadata to match, from a mapping of plain names to strings."""
    import re

    items = value.items() if isinstance(value, Mapping) else value
    try:
        pairs = tuple((key, item) for key, item in items)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must map metadata keys to values, such as "
                         '{"namespace": "_semantic/decisions"}') from None
    for key, item in pairs:
        if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise UsageError(f"{name}: {key!r} is not a metadata key (letters, digits, _)")
        _string(item, f"{name}[{key!r}]")
    return tuple(sorted(pairs))


def _string(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise UsageError(f"{name} must be a string, not {type(value).__name__}")
    return value


def _strings(value: object, name: str) -> tuple[str, ...]:
    """One string is one value (not its letters); a list, tuple or set of strings is many."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, Iterable) or isinstance(value, (bytes, Mapping)):
        raise UsageError(f"{name} must be a string or a list of strings, not "
                         f"{type(value).__name__}")
    items = tuple(value)
    for item in items:
        _string(item, f"each of {name}")
    return items
