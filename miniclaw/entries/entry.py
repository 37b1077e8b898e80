"""The one record that flows through miniclaw: a memory entry.

Parsing turns a file into entries; stores, index, ranker, context builder and CLI work on
entries, never on raw text. An entry's text has its private parts already removed; its line
numbers are 1-based and inclusive and point into the file as it is on disk. Records are
NamedTuples: immutable, light, and cheap to define at start-up (dataclasses cost ~0.7 ms
each to create, which an agent calling the CLI in a loop pays every time).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator, Mapping, Sequence
from datetime import date as Date
from typing import NamedTuple

from miniclaw.errors import UsageError

# The names of the two built-in sources (`sources/base.py`); nothing else special-cases them.
LONG_TERM = "long_term"
DAILY_NOTE = "daily_note"



class Meta(Mapping):
    """A source's own metadata on an entry: read-only, and hashable (by its items' repr) so
    that entries stay hashable like the tuples they are."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, object] = ()) -> None:
        self._data = dict(data)

    def __getitem__(self, key: str) -> object:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(repr(sorted(self._data.items())))

    def __repr__(self) -> str:
        return f"Meta({self._data!r})"


NO_META = Meta()

# What an annotation may say: `<!-- @category: decision -->`, `<!-- @tag: travel -->`.
CATEGORY_PATTERN = re.compile(r"^[a-z][a-z0-9-]*$")
TAG_PATTERN = re.compile(r"^[^\W_][\w-]*$")


# What one write may give (the CLI, the chat's and MCP's add_memory, search filters): a
# category or tag is a word or two, not a document, and one call wrote megabytes of them.
MAX_CATEGORY_CHARS = 64
MAX_TAG_CHARS = 64
MAX_TAGS = 32


def clean_category(value: str) -> str:
    """A category as stored (lowercase), or UsageError saying what a category may be."""
    category = value.strip().lower()
    if len(category) > MAX_CATEGORY_CHARS:
        raise UsageError(f"the category is {len(category)} characters long; the limit is "
                         f"{MAX_CATEGORY_CHARS}")
    if not CATEGORY_PATTERN.match(category):
        raise UsageError(f"{value!r} is not a category: use lowercase letters, digits and "
                         "dashes, starting with a letter (e.g. decision)")
    return category


def clean_tag(value: str) -> str:
    """A tag as stored (lowercase), or UsageError saying what a tag may be."""
    tag = value.strip().lower()
    if len(tag) > MAX_TAG_CHARS:
        raise UsageError(f"a tag is {len(tag)} characters long; the limit is {MAX_TAG_CHARS}")
    if not TAG_PATTERN.match(tag):
        raise UsageError(f"{value!r} is not a tag: use letters, digits, '-' and '_', no "
                         "spaces (give several tags one by one)")
    return tag


def clean_tags(values: Sequence[str]) -> tuple[str, ...]:
    """Tags as stored, each once, in the order given; UsageError past `MAX_TAGS` or for a
    tag `clean_tag` refuses."""
    if len(values) > MAX_TAGS:
        raise UsageError(f"{len(values)} tags were given; the limit is {MAX_TAGS}")
    return tuple(dict.fromkeys(clean_tag(tag) for tag in values))


def citation(path: str, line_start: int, line_end: int) -> str:
    """`path:line` or `path:start-end`: the form people and agents quote back."""
    if line_end == line_start:
        return f"{path}:{line_start}"
    return f"{path}:{line_start}-{line_end}"


def mark(text: str) -> str:
    """A short hash of an entry's text (6 hex digits of its CRC-32): what a `ref` adds to a
    citation so that a forget or edit can tell the entry it names from one that moved into
    its lines. zlib, not hashlib: it is loaded already, and a search prints one per result."""
    return format(zlib.crc32(text.encode("utf-8", "surrogatepass")) & 0xFFFFFF, "06x")


def ref(path: str, line_start: int, line_end: int, text: str) -> str:
    """`path:line#mark`: a citation that also names the entry's text (`forget.find`)."""
    return f"{citation(path, line_start, line_end)}#{mark(text)}"


class Entry(NamedTuple):
    """One memory: a MEMORY.md bullet or paragraph, or one section of a daily note."""

    text: str
    source: str
    path: str  # relative to the workspace, with forward slashes
    line_start: int
    line_end: int
    date: Date | None = None
    time: str | None = None  # "HH:MM:SS" (UTC) when the file records it
    category: str | None = None
    tags: tuple[str, ...] = ()
    #: A source's own metadata (a transcript's session and role, a namespace): JSON values,
    #: stored with the entry in the index (`entries.meta`).
    meta: Mapping[str, object] = NO_META

    @property
    def citation(self) -> str:
        return citation(self.path, self.line_start, self.line_end)

    @property
    def ref(self) -> str:
        return ref(self.path, self.line_start, self.line_end, self.text)

    def to_dict(self) -> dict:
        """The entry as JSON for every output (CLI `--json`, the memory tools, MCP)."""
        return {"source": self.source, "path": self.path, "line_start": self.line_start,
                "line_end": self.line_end, "citation": self.citation,
                "ref": self.ref, "date": self.date.isoformat() if self.date else None, "time": self.time,
                "category": self.category, "tags": list(self.tags), "content": self.text,
                **({"meta": dict(self.meta)} if self.meta else {})}
