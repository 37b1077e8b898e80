"""Spelling fallback: the known term closest to a query term that matches nothing.

Only typos are corrected, never words (`may_be_typo`): a query word that is a real word
("hiking", "reboot", "sister") finds nothing rather than results about another word, and a
word that is not all Latin letters (CJK, Cyrillic, a number) is left as it is. A real word is
one of wordfreq's English "small" list (about 29,000 words used at least once per million),
read from its data file (~12 ms once per process, then a set lookup) only when a word matched
nothing.

Closeness is the optimal string alignment distance (Damerau-Levenshtein where no substring is
edited twice): insertions, deletions, substitutions and swaps of two adjacent characters cost
one each. A suggestion is at most 1 edit away for words of up to 5 characters and 2 for longer
ones (short words have too many neighbours: "coffe" is 2 edits from "cafe"), is never the word itself, and among equally close
terms is the one closest to the word as typed (when the caller compares stems), then the one
in the most entries, then the first alphabetically. The vocabulary is whatever
strings the caller has (index terms are stemmed; mapping back for display is the caller's job).

No index is kept: each lookup scans the vocabulary, ~7 ms for 50,000 terms (under 20 ms at
worst), because building a deletion index (SymSpell) costs ~1 s in Python, more than a
hundred lookups. The scan rejects most terms in C (`str.translate` over all terms at once,
then length) and the rest with a bit-parallel distance bounded by the limit.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from functools import lru_cache


def may_be_typo(word: str) -> bool:
    """True when a query word, as typed, may be a misspelling worth correcting: Latin letters
    only, and not a known English word."""
    return bool(word) and all(_is_latin_letter(char) for char in word) and not _is_word(word)


def _is_latin_letter(char: str) -> bool:
    if char.isascii():
        return char.isalpha()
    return char.isalpha() and unicodedata.name(char, "").startswith("LATIN")


@lru_cache(maxsize=4096)
def _is_word(word: str) -> bool:
    words = _english_words()
    if words is not None:
        return word.casefold() in words
    try:
        from wordfreq import zipf_frequency  # ~150 ms to import: the fallback only
    except ImportError:  # no word list at all: correct nothing rather than a real word
        return True
    return zipf_frequency(word, "en", wordlist="small") > 0


@lru_cache(maxsize=1)
def _english_words() -> frozenset[str] | None:
    """wordfreq's English "small" list read straight from its data file (~12 ms), not through
    `import wordfreq` (~125-200 ms: it loads regex, ftfy and langcodes), which a one-shot CLI
    search would pay whenever a word matched nothing. The file is wordfreq's "cB" format,
    version 1: a header, then lists of words, one list per frequency. None when the file is
    not there or not in that format: then wordfreq itself answers."""
    import gzip
    import importlib.util
    from pathlib import Path

    try:
        import msgpack  # a dependency of wordfreq

        spec = importlib.util.find_spec("wordfreq")
        if spec is None or spec.origin is None:
            return None
        raw = (Path(spec.origin).parent / "data" / "small_en.msgpack.gz").read_bytes()
        data = msgpack.unpackb(gzip.decompress(raw), raw=False)
    except Exception:  # noqa: BLE001 - any surprise in another package's data: its own API
        return None
    if not data or data[0] != {"format": "cB", "version": 1}:
        return None
    return frozenset(word for bucket in data[1:] for word in bucket)


def edit_distance(a: str, b: str) -> int:
    """The optimal string alignment distance, by the textbook table (the definition)."""
    before, row = None, list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        above, row = row, [i] + [0] * len(b)
        for j, other in enumerate(b, 1):
            row[j] = min(above[j] + 1, row[j - 1] + 1, above[j - 1] + (char != other))
            if before and j > 1 and char == b[j - 2] and a[i - 2] == other:
                row[j] = min(row[j], before[j - 2] + 1)
        before = above
    return row[-1]


def _masks(word: str) -> dict[str, int]:
    """For each character of the word, the bit set of its positions."""
    masks: dict[str, int] = {}
    for i, char in enumerate(word):
        masks[char] = masks.get(char, 0) | 1 << i
    return masks


def _bounded_distance(masks: dict[str, int], size: int, term: str, limit: int) -> int | None:
    """The distance from the word (as `_masks`, `size` characters) to `term`, or None when
    it exceeds `limit`. Hyyrö's bit-parallel OSA (2003): one column of the table per step,
    as bits; Python's unbounded ints make it work for any length."""
    vp, vn, d0, last = -1, 0, 0, 0
    top, distance, remaining = 1 << (size - 1), size, len(term)
    for char in term:
        pm = masks.get(char, 0)
        swap = ((~d0 & pm) << 1) & last
        d0 = (((pm & vp) + vp) ^ vp) | pm | vn | swap
        hp = vn | ~(d0 | vp)
        hn = d0 & vp
        distance += 1 if hp & top else -1 if hn & top else 0
        remaining -= 1
        if distance - remaining > limit:  # each character left lowers it by one at most
            return None
        hp = hp << 1 | 1
        vp = hn << 1 | ~(d0 | hp)
        vn = hp & d0
        last = pm
    return distance if distance <= limit else None


def _near(word: str, terms: list[str], limit: int) -> list[str]:
    """Terms that may be within `limit`: at most `limit` characters not in the word, and a
    length within `limit` of it. Counting those characters runs over all terms at once."""
    drop = str.maketrans("", "", word)
    foreign = "\n".join(terms).translate(drop).split("\n")
    if len(foreign) != len(terms):  # a newline in a term or in the word: one at a time
        foreign = [term.translate(drop) for term in terms]
    low, high = len(word) - limit, len(word) + limit
    return [term for term, rest in zip(terms, foreign)
            if len(rest) <= limit and low <= len(term) <= high]


def suggest(word: str, vocabulary: Mapping[str, int], *,
            max_distance: int | None = None, typed: str | None = None) -> str | None:
    """The known term closest to `word` (then closest to `typed`, frequency, then alphabet,
    break ties), or None. `typed` is the word as typed when `word` is its stem: a stem
    loses letters that tell close terms apart ("cofee" stems to "cofe", one edit from both
    "code" and "coffe", the stem of coffee; "cofee" is one edit from "coffe", two from
    "code")."""
    limit = max_distance if max_distance is not None else 1 if len(word) <= 5 else 2
    if not word or limit < 1:
        return None
    masks, size, missing = _masks(word), len(word), set(word).difference
    best: tuple[int, int, str] | None = None
    for term in _near(word, list(vocabulary), limit):
        if term == word or len(missing(term)) > limit:
            continue
        distance = _bounded_distance(masks, size, term, limit) if term else size
        if distance is not None and distance <= limit:
            surface = edit_distance(typed, term) if typed else 0
            key = (distance, surface, -vocabulary[term], term)
            if best is None or key < best:
                best, limit = key, distance
    return best[-1] if best else None
