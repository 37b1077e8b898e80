"""Turning text into search terms: the same function for entries and for queries.

Rules: Unicode words; case folded (`casefold`, so ß matches ss); accents removed (é → e);
apostrophes inside words dropped (Caroline's → carolines, then stemmed with caroline);
numbers, dates and times kept whole (`2026-02-14`, `3.5`, `10:30`); CJK text (Han, kana,
Hangul) split into overlapping character bigrams so a Chinese or Japanese query finds its
note without a dictionary; English words stemmed with Snowball (PyStemmer, in C), cached.

`index_terms` is what the index stores: the terms without English stop words, which are
most of any text, tell entries apart least, and measured on LoCoMo make ranking worse when
counted (benchmarks/README.md); leaving them out also halves the index. A query of only stop
words therefore finds nothing. Changing these rules changes the index: bump
`TOKENIZER_VERSION`.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache
from itertools import chain

TOKENIZER_VERSION = 3

_TOKEN = re.compile(r"\d+(?:[.,:/-]\d+)+|[^\W_]+(?:['’][^\W_]+)*")
_COMBINING = re.compile(r"[\u0300-\u036f]")
_CJK_CHARS = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
)


@lru_cache(maxsize=1)
def _cjk_run() -> re.Pattern[str]:
    """Runs of CJK characters; compiled on first use (the class costs ~2 ms to compile)."""
    return re.compile(f"([{_CJK_CHARS}]+)")

STOP_WORDS_EN = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves s t d ll m re ve
""".split())


_local = threading.local()


def _stemmer():
    """This thread's stemmer: PyStemmer objects must not be used by two threads at once."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        import Stemmer  # PyStemmer; loaded on first use, not at import

        stemmer = _local.stemmer = Stemmer.Stemmer("english")
        # Its own cache of 10,000 words, purged when full, made each new word cost 2 us
        # instead of 0.5 us; the chunk caches here keep what repeats.
        stemmer.maxCacheSize = 0
    return stemmer


# Whitespace-separated chunk of text ("coffee,", "Sam's") -> its terms: a str for one term, a
# tuple otherwise. No word spans whitespace, so the terms of a text are those of its chunks,
# and `str.split` (in C) replaces most of the regex: building an index is mostly this lookup.
# Bounded so a stream of unique chunks cannot grow it forever, and long chunks (URLs, hashes,
# JSON), which seldom repeat, are not kept.
_cache: dict[str, str | tuple[str, ...]] = {}
_CACHE_MAX = 500_000
_CACHED_CHUNK_MAX = 32  # characters


def _stem(word: str) -> str:
    if word.isascii() and word.isalpha():
        return _stemmer().stemWord(word)
    return word


def fold(text: str) -> str:
    """Case and accent folding, shared by tokens and excerpts."""
    text = text.casefold()
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKC", text)
    text = _COMBINING.sub("", unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFC", text)


def _terms_of(word: str) -> Iterator[str]:
    """The terms of one folded word: itself (stemmed), or CJK bigrams and the rest."""
    if "'" in word or "’" in word:
        word = word.replace("'", "").replace("’", "")
    if word.isascii():
        yield _stem(word)
        return
    cjk = _cjk_run()
    if not cjk.search(word):
        yield _stem(word)
        return
    for part in cjk.split(word):
        if not part:
            continue
        if cjk.fullmatch(part):
            if len(part) == 1:
                yield part
            else:
                for i in range(len(part) - 1):
                    yield part[i : i + 2]
        else:
            yield _stem(part)


def _word_terms(word: str) -> tuple[str, ...]:
    """The terms of one word as written: folded, split again if folding made several words
    of it (½ → 1⁄2), stemmed or cut into CJK bigrams."""
    folded = fold(word)
    parts = [folded] if folded.isalnum() else _TOKEN.findall(folded)
    return tuple(term for part in parts for term in _terms_of(part))


def _chunk_terms(chunk: str) -> str | tuple[str, ...]:
    """The terms of a whitespace-free chunk of text (cached)."""
    found = _found_terms(chunk)
    terms = found[0] if len(found) == 1 else found
    _remember(_cache, chunk, terms)
    return terms


def _found_terms(chunk: str) -> tuple[str, ...]:
    """The terms of a whitespace-free chunk of text, worked out (not cached)."""
    if chunk.isascii():
        return _ascii_terms(chunk)
    return tuple(term for word in _TOKEN.findall(chunk) for term in _word_terms(word))


def _ascii_terms(chunk: str) -> tuple[str, ...]:
    """`_word_terms` of each word of an ASCII chunk, in one pass (most chunks a build has
    not seen are ASCII): folding is `lower`, a word stays one word, it has no CJK, and an
    apostrophe inside it is dropped before it is stemmed."""
    stem = _stemmer().stemWord
    lowered = chunk.lower()
    if lowered.isalpha():  # one word, the most common chunk: no regex needed
        return (stem(lowered),)
    terms = []
    for word in _TOKEN.findall(lowered):
        if "'" in word:
            word = word.replace("'", "")
        terms.append(stem(word) if word.isalpha() else word)
    return tuple(terms)


def tokenize(text: str) -> list[str]:
    """The search terms of a text, in order, repeats kept (term frequency counts them).

    Words are found in the text as written and each is folded on its own, so `token_spans`
    (which needs positions in the original text) finds exactly the same terms.
    """
    return _text_terms(text, _cache, _chunk_terms)


def _text_terms(text: str, cache: dict, terms_of_chunk) -> list[str]:
    """The terms of each whitespace-separated chunk, from `cache` or `terms_of_chunk`."""
    out: list[str] = []
    append, extend, cached = out.append, out.extend, cache.get
    for chunk in text.split():
        terms = cached(chunk)
        if terms is None:
            terms = terms_of_chunk(chunk)
        if terms.__class__ is str:
            append(terms)
        else:
            extend(terms)
    return out


def chunk_terms(chunks: list[str]) -> list[str | tuple[str, ...]]:
    """The terms of each whitespace-free chunk (a str when it has exactly one), in one pass
    over the cache: what `tokenize` finds, kept apart by chunk."""
    found = list(map(_cache.get, chunks))
    if None in found:
        for i, terms in enumerate(found):
            if terms is None:
                found[i] = _chunk_terms(chunks[i])
    return found


def _remember(cache: dict, chunk: str, terms: str | tuple[str, ...]) -> None:
    if len(chunk) <= _CACHED_CHUNK_MAX and len(cache) < _CACHE_MAX:
        cache[chunk] = terms


def token_spans(text: str) -> Iterator[tuple[int, int, list[str]]]:
    """(start, end, terms) of each word of the original text, for excerpts and highlights."""
    cached = _cache.get
    for match in _TOKEN.finditer(text):
        word = match.group()  # a word is a chunk of its own, with the same terms
        terms = cached(word)
        if terms is None:
            terms = _chunk_terms(word)
        yield match.start(), match.end(), [terms] if terms.__class__ is str else list(terms)


@lru_cache(maxsize=1)
def _stop_terms() -> frozenset[str]:
    return frozenset(STOP_WORDS_EN) | frozenset(_stem(word) for word in STOP_WORDS_EN)


def is_stop_word(term: str) -> bool:
    """True for terms of very common English words (compared after stemming)."""
    return term in _stop_terms()


class _IndexTerms(dict):
    """Chunk -> its index terms, always a tuple (empty for a stop word), so that the terms
    of a whole text are flattened in C (`index_terms`); a chunk not seen yet is worked out
    by `__missing__`, called by `dict.__getitem__` only on a miss."""

    def __missing__(self, chunk: str) -> tuple[str, ...]:
        terms = _cache.get(chunk)  # a query may have tokenized it already
        if terms is None:
            terms = _found_terms(chunk)
        elif terms.__class__ is str:
            terms = (terms,)
        stop = _stop_terms()
        if not stop.isdisjoint(terms):
            terms = tuple(term for term in terms if term not in stop)
        _remember(self, chunk, terms)
        return terms


# A build fills only this cache, not `_cache` too: a large build runs in a process of its
# own (`parse_worker`), where nothing reads `_cache`, and a tuple per chunk in one cache
# costs about what two caches sharing the chunk's term did.
_index_cache = _IndexTerms()


def index_terms(text: str) -> list[str]:
    """The terms the index stores for a text: `tokenize` without stop words (cached per
    chunk like `tokenize`, and flattened in C: building an index is mostly this)."""
    return list(chain.from_iterable(map(_index_cache.__getitem__, text.split())))


def counted_index_terms(text: str) -> tuple[list[str], list[int] | None, int]:
    """`index_terms` as the index stores an entry's: (its distinct terms, their frequencies,
    None when all are 1, the number of terms), counted in C as the chunks are looked up.
    The same lists in the same order as counting `index_terms(text)` into a set, or a
    `Counter` when a term repeats (`sync`: the order numbers a build's new terms)."""
    counts = Counter(chain.from_iterable(map(_index_cache.__getitem__, text.split())))
    total = counts.total()
    if len(counts) == total:  # no repeats: a set of the same terms, added in the same order
        return list(set(counts)), None, total
    return list(counts), list(counts.values()), total
