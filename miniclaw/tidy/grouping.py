"""Grouping texts: duplicate clusters and conflict pairs, pure functions of the texts.

Comparing every pair of 10,000 entries is 50 million comparisons. Two copies of one fact
share their rare words, so each text is filed under its `KEYS` rarest index terms (found
in 2 to `RARE_DF` texts), and only texts filed under a common key and sharing
`MIN_OVERLAP` of their terms (Jaccard; cheap set operations) are compared by the costly
rule. Texts with the same terms in the same order are compared whatever their terms (a
repeated "Went to the gym" has no rare word). A text is folded (`fold`) only when it is
compared; `same(a, b)` on two folds decides a duplicate (the door check's rule,
`entries/similar.py`, unless a value changed: `changes_value`) and `score(a, b)` on two
folds orders clusters, best first.

A conflict (a candidate for superseding) is a pair that is not a duplicate but talks about
the same subject with another value: `conflict` says why (docstring there).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import NamedTuple

from miniclaw.entries.similar import NEAR_COPY, jaccard
from miniclaw.entries.tokenizer import index_terms, tokenize

RARE_DF = 64  # a term in more texts than this files nothing: its pairs would be quadratic
KEYS = 4  # the rarest terms a text is filed under
MIN_OVERLAP = 0.3  # Jaccard of the two texts' terms, for a pair to be compared at all
SUBJECT_OVERLAP = 0.5  # Jaccard of the subject terms for a conflict (measured: benchmarks/tidy.py)



class Group(NamedTuple):
    """A duplicate cluster: indexes into the texts (in order), and its score (the lowest
    score of the pairs that joined it: how sure the weakest link is)."""

    members: tuple[int, ...]
    score: float


class Pair(NamedTuple):
    """A conflict: two indexes, how alike their subjects are, and the rule that matched."""

    first: int
    second: int
    score: float
    reason: str


class _Terms(NamedTuple):
    all: frozenset[str]
    subject: tuple[str, ...]  # in order, values left out
    values: frozenset[str]


_CAPITAL = re.compile(r"(?<![.!?:]\s)(?<!^)\b[A-Z][\w'’-]*")
_DIGIT = re.compile(r"\d")


def terms_of(text: str) -> _Terms:
    """A text's index terms, split into values (anything with a digit: numbers, dates,
    times, amounts; and capitalized words inside a sentence: names, places) and the
    subject (the rest, in order)."""
    terms = index_terms(text)
    names = {t for word in _CAPITAL.findall(text) for t in index_terms(word)}
    values = frozenset(t for t in terms if _DIGIT.search(t) or t in names)
    return _Terms(frozenset(terms), tuple(t for t in terms if t not in values), values)


def candidates(terms: Sequence[frozenset[str]]) -> set[tuple[int, int]]:
    """Pairs (i < j) filed under a common rare key that share enough terms to compare."""
    df: dict[str, int] = defaultdict(int)
    for found in terms:
        for term in found:
            df[term] += 1
    filed: dict[str, list[int]] = defaultdict(list)
    for i, found in enumerate(terms):
        rare = sorted((df[t], t) for t in found if 1 < df[t] <= RARE_DF)
        for _, term in rare[:KEYS]:
            filed[term].append(i)
    pairs = set()
    for holders in filed.values():
        for x, i in enumerate(holders):
            for j in holders[x + 1:]:
                pairs.add((i, j))
    return {(i, j) for i, j in pairs if jaccard(terms[i], terms[j]) >= MIN_OVERLAP}


def group(texts: Sequence[str], same: Callable[[str, str], bool],
          score: Callable[[str, str], float],
          fold: Callable[[str], str] = str) -> tuple[list[Group], list[Pair]]:
    """Duplicate clusters (best first) and conflict pairs (best first) among `texts`."""
    parent = list(range(len(texts)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    weakest: dict[int, float] = {}

    def join(i: int, j: int, how_sure: float) -> None:
        a, b = root(i), root(j)
        low = min(how_sure, weakest.get(a, 1.0), weakest.get(b, 1.0))
        if a != b:
            parent[b] = a
            weakest.pop(b, None)
        weakest[a] = low

    folded: dict[int, str] = {}

    def folds(i: int) -> str:
        if i not in folded:
            folded[i] = fold(texts[i])
        return folded[i]

    exact: dict[tuple[str, ...], int] = {}
    for i, text in enumerate(texts):
        key = tuple(tokenize(text))
        if not key:
            continue
        if key not in exact:
            exact[key] = i
        elif same(folds(exact[key]), folds(i)):
            join(exact[key], i, score(folds(exact[key]), folds(i)))
    found = [terms_of(text) for text in texts]
    pairs = sorted(candidates([t.all for t in found]))
    maybe: list[tuple[int, int]] = []
    for i, j in pairs:
        if root(i) == root(j):
            continue
        if same(folds(i), folds(j)) and not changes_value(found[i], found[j]):
            join(i, j, score(folds(i), folds(j)))
        else:
            maybe.append((i, j))
    members: dict[int, list[int]] = defaultdict(list)
    for i in range(len(texts)):
        members[root(i)].append(i)
    groups = [Group(tuple(m), round(weakest.get(r, 1.0), 3)) for r, m in members.items()
              if len(m) > 1]
    groups.sort(key=lambda g: (-g.score, -len(g.members), g.members))
    conflicts = []
    for i, j in maybe:
        if root(i) == root(j):
            continue
        why = conflict(found[i], found[j], score(folds(i), folds(j)))
        if why:
            conflicts.append(Pair(i, j, *why))
    conflicts.sort(key=lambda p: (-p.score, p.first, p.second))
    return groups, conflicts


def changes_value(a: _Terms, b: _Terms) -> bool:
    """Each text has a value the other lacks: another number, date, name or place. The
    door's rule lets a changed name or month through as a near copy ("met Sarah at the
    park" / "met John at the park"); merging such a pair would drop the newer value, so
    tidy calls it a conflict instead (measured: benchmarks/tidy.py)."""
    return bool(a.values - b.values) and bool(b.values - a.values)


def conflict(a: _Terms, b: _Terms, alike: float = 0.0) -> tuple[float, str] | None:
    """(score, reason) when two statements look like one subject with two values, else
    None: "near" when they are near copies (`alike`, their similarity, from `NEAR_COPY`
    on) that the duplicate rule turned down (a number, a negation or a value changed);
    "values" when their subject terms (values left out) overlap by `SUBJECT_OVERLAP` or
    more, at least two of them, and each has a value the other lacks ("rent is 1200" /
    "rent is 1350"); a value only added is a detail, not a change.

    A third rule, the same first three subject terms with a different rest ("started
    working at the agency" / "... at a bakery"), was measured and dropped: 0 of 108 pairs
    it found in the seeded workspace were planted updates (benchmarks/README.md).
    """
    if alike >= NEAR_COPY:
        return round(alike, 3), "near"
    sa, sb = set(a.subject), set(b.subject)
    common = sa & sb
    if len(common) < 2:
        return None
    overlap = jaccard(sa, sb)
    if overlap >= SUBJECT_OVERLAP and changes_value(a, b):
        return round(overlap, 3), "values"
    return None
