"""Search queries: checking what the user typed and turning it into search terms.

Query text is never passed to SQLite as syntax: it becomes a list of terms (tokenizer) that
are bound as parameters. Limits: at most `MAX_QUERY_CHARS` characters, at least one word.
"""

from __future__ import annotations

from typing import NamedTuple

from miniclaw.errors import QueryError
from miniclaw.memory.tokenizer import tokenize

MAX_QUERY_CHARS = 1000


class Query(NamedTuple):
    text: str
    terms: tuple[str, ...]  # in order, distinct


def parse_query(text: str) -> Query:
    """The query's terms, or `QueryError` saying why it cannot be searched."""
    if not isinstance(text, str) or not text.strip():
        raise QueryError("the query is empty: give at least one word to search for")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is {len(text)} characters long; the limit is {MAX_QUERY_CHARS}")
    terms = tuple(dict.fromkeys(tokenize(text)))
    if not terms:
        raise QueryError(f"the query {text.strip()!r} has no words to search for")
    return Query(text.strip(), terms)
