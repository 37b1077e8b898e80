"""Search queries: the small query language miniclaw reads, parsed here and nowhere else.

Syntax: plain words; `"exact phrase"` (its words adjacent, in order; curly quotes too);
`+word` must appear; `-word` must not; `word*` matches terms starting with the word. Only a
`+`/`-` at the start of a whitespace-separated token is an operator (`e-mail`, `2026-02-14`
are words), and only a `*` right after a word. Everything else is text for the tokenizer:
`AND`, `NEAR(`, colons, backslashes, SQL: the query is never passed to SQLite as syntax, only
as terms bound as parameters. An unclosed quote makes the rest of the query a phrase. A phrase
cannot be excluded (`-"a b"` is an error), and a signed word takes no star (`-run*` excludes
"run").

Private text is never searched: the query (and each `--require`/`--exclude` value) loses its
`<private>...</private>` parts first (`privacy.visible_typed`: as in a memory file, an unclosed
`<private>` hides the rest of the query), so `Query.text`, which every output echoes (the
results' header, JSON `query`, hints, corrections, errors), holds none either. A query left
with no text is as empty as "".

Invariants of a `Query` (all terms as `tokenize` gives them, so stemmed and folded):
`terms` is never empty, distinct, in order: the words to score (plain, required, phrase
words, and the word before each `*`), stop words kept. `required` and `excluded` leave stop
words out, because the index does not store them; `excluded` never meets `terms` (asking
for and excluding a term is an error). `phrases` keep stop words: adjacency is checked on
`tokenize(entry text)` with `phrase_matches`. `prefixes` are folded but not stemmed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from miniclaw.errors import QueryError
from miniclaw.entries.privacy import visible_typed
from miniclaw.entries.tokenizer import fold, is_stop_word, token_spans, tokenize

MAX_QUERY_CHARS = 1000

_QUOTE = re.compile('["\u201c\u201d]')  # straight and curly double quotes
_SIGN_BEFORE_QUOTE = re.compile(r"(?:^|\s)([-+])\Z")


class Query(NamedTuple):
    text: str
    terms: tuple[str, ...]  # in order, distinct, never empty
    phrases: tuple[tuple[str, ...], ...] = ()
    required: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()

    @property
    def has_words(self) -> bool:
        """Whether the index can find anything: a query of only stop words is valid but finds
        nothing, since the index leaves stop words out."""
        return bool(self.prefixes) or not all(is_stop_word(term) for term in self.terms)


class _Parts:
    """What the parser has collected so far, in order of appearance."""

    def __init__(self) -> None:
        self.terms: dict[str, None] = {}
        self.required: dict[str, None] = {}
        self.excluded: dict[str, str] = {}  # term -> the word as written, for error messages
        self.phrases: dict[tuple[str, ...], None] = {}
        self.prefixes: dict[str, None] = {}
        self.operators = 0  # signs and stars seen, to say why a query has no words
        self.exclusions = 0  # excluded words seen, stop words too, for the same reason
        self.too_common: dict[str, str] = {}  # stop words given + or -: not in the index

    def search(self, terms: Iterable[str], required: bool = False, written: str = "") -> None:
        terms = list(terms)
        self._check_common(terms, written)
        for term in terms:
            self.terms[term] = None
            if required and not is_stop_word(term):
                self.required[term] = None

    def exclude(self, terms: Iterable[str], written: str) -> None:
        terms = list(terms)
        self._check_common(terms, written)
        for term in terms:
            self.exclusions += 1
            if not is_stop_word(term):
                self.excluded.setdefault(term, written)

    def _check_common(self, terms: list[str], written: str) -> None:
        """A `+word`, `-word` or option value made only of stop words cannot be honoured
        (the index does not hold them): say so rather than ignore it."""
        if written and terms and all(is_stop_word(term) for term in terms):
            self.too_common.setdefault(terms[0], written)


def parse_query(text: str, *, require: Sequence[str] = (), exclude: Sequence[str] = (),
                phrase: bool = False) -> Query:
    """The parsed query, or `QueryError` saying why it cannot be searched.

    `require` and `exclude` are the CLI's `--require`/`--exclude`: each is plain text (no
    operators) whose every word must, or must not, appear. `phrase` reads the whole query as
    one phrase with no operators, as ConKeeper's search reads it (`--phrase`).
    """
    typed = text
    if isinstance(text, str):
        text = visible_typed(text)
    try:
        if isinstance(text, str) and not text.strip() and typed.strip():
            raise QueryError("the query is empty once its private parts are removed (private "
                             "text is never searched): give at least one word to search for")
        return _parse(text, require, exclude, phrase)
    except QueryError as exc:
        exc.query = text if isinstance(text, str) else None
        raise


def _parse(text: str, require: Sequence[str], exclude: Sequence[str], phrase: bool) -> Query:
    if not isinstance(text, str) or not text.strip():
        raise QueryError("the query is empty: give at least one word to search for")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(
            f"the query is {len(text)} characters long; the limit is {MAX_QUERY_CHARS}")
    parts = _Parts()
    pieces = ["", text, ""] if phrase else _QUOTE.split(text)  # odd indexes: phrases
    for i in range(0, len(pieces), 2):
        outside, sign = pieces[i], None
        if i + 1 < len(pieces) and (found := _SIGN_BEFORE_QUOTE.search(outside)):
            outside, sign = outside[: found.start(1)], found.group(1)
        for token in outside.split():
            _read_token(token, parts)
        if i + 1 < len(pieces):
            _read_phrase(pieces[i + 1], sign, parts)
    for words in _texts(require, "--require"):
        parts.search(tokenize(words), required=True, written=f"--require {words}")
    for words in _texts(exclude, "--exclude"):
        parts.exclude(tokenize(words), f"--exclude {words}")
    return _checked(text.strip(), parts)


def _read_token(token: str, parts: _Parts) -> None:
    """One whitespace-separated token: a leading sign, a trailing star, or just text."""
    if token[0] in "+-":
        parts.operators += 1
        if token[0] == "+":
            parts.search(tokenize(token[1:]), required=True, written=token)
        else:
            parts.exclude(tokenize(token[1:]), token)
        return
    body = token.rstrip("*")
    if len(body) == len(token):
        parts.search(tokenize(token))
        return
    parts.operators += 1
    spans = list(token_spans(body))
    for start, end, terms in spans:
        parts.search(terms)
        if end == len(body):  # the word the star touches
            # fold() can turn one rare character into several words (NFKC): keep the last
            prefix = fold(body[start:end]).replace("'", "").replace("\u2019", "").split()
            if prefix:
                parts.prefixes[prefix[-1]] = None


def _read_phrase(inside: str, sign: str | None, parts: _Parts) -> None:
    """A quoted phrase: all its terms are required, and adjacent in order."""
    phrase = tuple(tokenize(inside))
    if not phrase:
        return
    if sign == "-":
        raise QueryError(f'a phrase cannot be excluded (-"{inside.strip()}"): '
                         "exclude its words one by one instead (-word)")
    parts.phrases[phrase] = None
    parts.search(phrase, required=True)


def _texts(values: Sequence[str] | str, option: str) -> tuple[str, ...]:
    """The option's values; a single string is one value, not a sequence of letters."""
    values = (values,) if isinstance(values, str) else tuple(values)
    for value in values:
        if not isinstance(value, str):
            raise QueryError(f"{option} takes words, not {type(value).__name__}")
    return tuple(visible_typed(value) for value in values)


def _checked(text: str, parts: _Parts) -> Query:
    """The Query, once it is sure to have words to search and no contradiction."""
    for term, written in parts.too_common.items():
        raise QueryError(f"{written!r} names only words too common to be indexed ({term!r}), "
                         "so it cannot be required or excluded: drop it")
    for term, written in parts.excluded.items():
        if term in parts.terms:
            raise QueryError(f"{written!r} excludes {term!r}, which the query also searches "
                             "for: remove one of them")
    if not parts.terms:
        if parts.exclusions:
            raise QueryError(f"the query {text!r} only excludes words: add a word to search for")
        if parts.operators:
            raise QueryError(f"the query {text!r} has operators but no word to search for")
        raise QueryError(f"the query {text!r} has no words to search for")
    return Query(text, tuple(parts.terms), tuple(parts.phrases), tuple(parts.required),
                 tuple(parts.excluded), tuple(parts.prefixes))


def phrase_matches(phrase_terms: Sequence[str], text_terms: Sequence[str]) -> bool:
    """Whether the phrase's terms appear adjacent and in order in the text's terms; both come
    from `tokenize`, so stop words count and case, accents and stemming do not."""
    phrase, text = list(phrase_terms), list(text_terms)
    if not phrase:
        return True
    size, first, start = len(phrase), phrase[0], 0
    while True:
        try:
            start = text.index(first, start)
        except ValueError:
            return False
        if text[start : start + size] == phrase:
            return True
        start += 1
