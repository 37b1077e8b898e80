"""Is this the same fact? The comparison behind the add door and `memory tidy`.

Pure text, no I/O, so the store (adding) and a tidy pass (consolidating) judge alike:

- `fold(text)`: the text as a careful reader compares it: Unicode NFKC, case folded
  (`casefold`), accents dropped; Markdown syntax gone (list bullets and numbers, task
  boxes, headings, quotes, emphasis, code ticks, HTML tags; a link keeps its text, an
  image its alt text); apostrophes inside words dropped (Sam's -> sams); other
  punctuation a space, except between digits (3,5 and 3.5 and 3:5 fold alike, never to
  35); whitespace one space. Idempotent, and never raises on any `str`.
- `similarity(a, b)`: in [0, 1], the Jaccard index of the two folds' character trigrams
  (`_grams`). Why trigrams and not words: a typo or a plural changes one word, which is a
  whole token of six but only two or three trigrams of thirty; the benchmark
  (benchmarks/door.py, figures in benchmarks/README.md) measured it against word sets.
- `NEAR_COPY`: the similarity from which two texts are a near copy, chosen on that
  benchmark for precision (a false duplicate loses what a user meant to keep).
- `is_same_fact(a, b)`: equal folds, or a near copy that changes no number or negation
  and puts no word of its own in place of another ("the budget is 5,000" / "6,000",
  "Gina's favourite ..." / "Jon's favourite ...": not the same fact but an update, which
  `memory add --supersedes` is for). A near copy may add or drop words and mistype some.
  `similarity` itself ignores these rules, so a tidy pass can still see such pairs as
  close.

For many comparisons: `similarity_of_folds` and `same_fact_folds` take texts folded once;
`find_same(text, others)` finds the first of many that is the same fact (folding another
only when it holds the text's key words); `may_hold_same(text, file_text)` says whether a
whole file can hold it at all, before it is parsed.

Callers pass text without its private parts (`privacy.visible_text`): nothing private
ever takes part in a comparison.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from miniclaw.entries.tokenizer import fold as _case_fold

NEAR_COPY = 0.8  # benchmarks/door.py: precision 0.9995, recall 0.984 (benchmarks/README.md)

_LINK = re.compile(r"!?\[([^\]\n]*)\]\((?:[^()\n]|\([^()\n]*\))*\)|!?\[([^\]\n]*)\]\[[^\]\n]*\]")
_AUTOLINK = re.compile(r"<((?:https?|mailto|ftp):[^>\s]*)>", re.IGNORECASE)
_TAG = re.compile(r"</?[a-zA-Z][a-zA-Z0-9-]*(?:\s[^<>]*)?/?>")
_LIST_MARK = re.compile(r"^[ \t]*(?:>[ \t]*)*(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?", re.MULTILINE)
_APOSTROPHE = re.compile(r"(?<=\w)['’](?=\w)")
_DIGIT_SEP = re.compile(r"(?<=\d)[.,:/-](?=\d)")
_LONE_DOT = re.compile(r"(?<!\d)\.|\.(?!\d)")
_NEGATIONS = frozenset(
    "no not nor never none nobody nothing nowhere neither cannot cant dont doesnt didnt isnt "
    "arent wasnt werent wont wouldnt shouldnt couldnt hasnt havent hadnt without".split()
)


def _kept(ch: str) -> str:
    """One character of folded text that is not a letter or a digit: a space for
    punctuation, Markdown syntax and control or space characters; a token of its own for
    the symbols a fact can hinge on (currency, %, emoji, degrees); combining marks kept."""
    if ch == "%":
        return " % "
    category = unicodedata.category(ch)
    if category[0] in "PCZ" or category in ("Sm", "Sk"):
        return " "
    if category[0] == "S":
        return f" {ch} "
    return ch


def _fold_once(text: str) -> str:
    text = _LINK.sub(lambda m: f" {m.group(1) or m.group(2) or ''} ", text)
    text = _AUTOLINK.sub(r" \1 ", text)
    text = _TAG.sub(" ", text)
    text = _LIST_MARK.sub(" ", text)
    text = _case_fold(unicodedata.normalize("NFKC", text))
    text = _APOSTROPHE.sub("", text)
    text = _LONE_DOT.sub(" ", _DIGIT_SEP.sub(".", text))  # a dot stays only between digits
    kept = "".join(ch if ch.isalnum() or ch == "." else _kept(ch) for ch in text)
    return " ".join(kept.split())


# ASCII punctuation and Markdown's symbols -> a space; % and $ a token of their own; the
# dot is kept for `_LONE_DOT`, letters and digits lowered by `str.lower` before.
_ASCII = {c: " " for c in range(128) if not chr(c).isalnum() and chr(c) != "."}
_ASCII.update({ord("%"): " % ", ord("$"): " $ "})


def _fold_ascii(text: str) -> str:
    """`_fold_once` of an ASCII text, in C where it can be: the door folds every entry of
    MEMORY.md on an add. Its result is stable (one pass), being ASCII letters, digits,
    dots between digits and spaced `$`/`%`."""
    if "[" in text:
        text = _LINK.sub(lambda m: f" {m.group(1) or m.group(2) or ''} ", text)
    if "<" in text:
        text = _TAG.sub(" ", _AUTOLINK.sub(r" \1 ", text))
    if "\n" in text or text[:1] in " \t-*+>0123456789":
        text = _LIST_MARK.sub(" ", text)
    text = text.lower()
    if "'" in text:
        text = _APOSTROPHE.sub("", text)
    if "." in text or "," in text or ":" in text or "/" in text or "-" in text:
        text = _LONE_DOT.sub(" ", _DIGIT_SEP.sub(".", text))
    return " ".join(text.translate(_ASCII).split())


def fold(text: str) -> str:
    """The text as compared: see the module's docstring. `fold(fold(t)) == fold(t)`."""
    if text.isascii():
        return _fold_ascii(text)
    folded = _fold_once(text)
    for _ in range(3):  # Unicode folding may need a second pass to settle (rare scripts)
        again = _fold_once(folded)
        if again == folded:
            return folded
        folded = again
    return folded


def _grams(folded: str) -> frozenset[str]:
    """The character trigrams of a folded text, words padded by a space at each end."""
    padded = f" {folded} "
    if len(padded) < 3:
        return frozenset((padded,)) if folded else frozenset()
    return frozenset(padded[i : i + 3] for i in range(len(padded) - 2))


def similarity_of_folds(a: str, b: str) -> float:
    """`similarity` of two texts already folded (a caller comparing one text to many folds
    each once)."""
    return 1.0 if a == b else jaccard(_grams(a), _grams(b))


def jaccard(a: frozenset | set, b: frozenset | set) -> float:
    """The share of the two sets' members that both hold (0 for two empty sets)."""
    return len(a & b) / len(a | b) if a or b else 0.0


def similarity(a: str, b: str) -> float:
    """How alike two texts are, in [0, 1]: 1.0 for equal folds (see the module's docstring)."""
    return similarity_of_folds(fold(a), fold(b))


def _guards(folded: str) -> tuple[frozenset[str], list[str]]:
    """The numbers and the negations (counted: "not not" is not "not") of a folded text: a
    near copy must keep both."""
    words = folded.split()
    numbers = frozenset(w for w in words if any(c.isdigit() for c in w))
    return numbers, sorted(w for w in words if w in _NEGATIONS)


def _typo_of(a: str, b: str) -> bool:
    """Whether two different words are one typo apart: a letter dropped, added or doubled,
    or two neighbours swapped, the longer of 4 letters or more. Not a letter changed: that
    makes another word as often as a typo (Mark / Mary, clientaxa / clientbxa)."""
    if max(len(a), len(b)) < 4 or abs(len(a) - len(b)) > 1 or a == b:
        return False
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    a, b = a[start:], b[start:]
    return (
        a[1:] == b  # dropped from b
        or a == b[1:]  # added to b
        or (len(a) == len(b) >= 2 and a[0] == b[1] and a[1] == b[0] and a[2:] == b[2:])
    )


def _substitutes(a: str, b: str) -> bool:
    """Whether `b` puts a word of its own where `a` had another (Gina -> Jon, tea ->
    coffee, Monday -> Tuesday): another fact, however alike the rest. Words only added
    or only dropped, and typos, are not substitutions."""
    words_a, words_b = Counter(a.split()), Counter(b.split())  # counted: "true ... true"
    only_a, only_b = set(words_a - words_b), set(words_b - words_a)  # is not "true ... false"
    if not only_a or not only_b:
        return False
    joined_a, joined_b = a.replace(" ", ""), b.replace(" ", "")

    def matched(word: str, others: set[str], joined: str) -> bool:
        # a typo of a word there, or words written there apart (gluten free, glutenfree)
        return any(_typo_of(word, other) for other in others) or (len(word) >= 6 and word in joined)

    if all(matched(w, only_b, joined_b) for w in only_a):
        return False
    return not all(matched(v, only_a, joined_a) for v in only_b)


def same_fact_folds(a: str, b: str) -> bool:
    """`is_same_fact` of two texts already folded."""
    if a == b:
        return bool(a)
    if similarity_of_folds(a, b) < NEAR_COPY:
        return False
    return _guards(a) == _guards(b) and not _substitutes(a, b)


def is_same_fact(a: str, b: str) -> bool:
    """Whether `b` says what `a` says: equal folds, or a near copy keeping its numbers and
    negations. Two texts that fold to nothing (only punctuation) are not a fact."""
    return same_fact_folds(fold(a), fold(b))


def _key_words(folded: str) -> list[str]:
    """Up to three of the longest ASCII words of a folded text (4 letters or more, not
    English stop words, which are everywhere): a near
    copy keeps all but one of them as written (`_enough`; measured: benchmarks/door.py)."""
    from miniclaw.entries.tokenizer import STOP_WORDS_EN

    words = sorted({w for w in folded.split() if len(w) >= 4 and w.isascii() and w.isalpha()
                    and w not in STOP_WORDS_EN}, key=len, reverse=True)
    return words[:3]


_LOOSE = str.maketrans("", "", "'’*_`~")


def _loose(text: str) -> str:
    """A text lowered as `fold` lowers it (case, accents, NFKC), without apostrophes and
    emphasis marks, which `fold` takes out of words: where key words are looked for."""
    low = text.lower()
    for mark in "'’*_`~":  # `replace` is C over the text; `translate` a lookup a character
        if mark in low:
            low = low.replace(mark, "")
    if low.isascii():
        return low
    for mark in "“”‘—–…\u00a0":  # the non-ASCII most English text holds: the rest ASCII
        if mark in low:
            low = low.replace(mark, " ")
    if low.isascii():
        return low
    return "\n".join(line if line.isascii() else _case_fold(line).translate(_LOOSE)
                     for line in low.split("\n"))


_MAX_PLACES = 2000  # a key word found more often than this: the file is parsed


def may_hold_same(text: str, haystack: str) -> bool:
    """False when no text in `haystack` (a whole file, say) can be the same fact as `text`:
    no stretch of it about as long as the text holds its key words (all but one, in any
    case, across lines too). A quick test, in C but for the sweep, before parsing a file."""
    keys = _key_words(fold(text))
    if not keys:
        return True
    low = _loose(haystack)
    need = max(1, len(keys) - 1)
    places: list[tuple[int, int]] = []
    for number, key in enumerate(keys):
        at = low.find(key)
        while at >= 0:
            places.append((at, number))
            if len(places) > _MAX_PLACES * len(keys):
                return True
            at = low.find(key, at + 1)
    if len({number for _, number in places}) < need:
        return False
    if need == 1:
        return True
    places.sort()
    width = 2 * len(text) + 200  # a near copy is not much longer, Markdown and all
    first = 0
    for last, (at, _) in enumerate(places):
        while places[first][0] < at - width:
            first += 1
        if len({number for _, number in places[first : last + 1]}) >= need:
            return True
    return False


def _enough(keys: list[str], low: str) -> bool:
    """Whether a lowered text holds all the key words but one (one may be mistyped or dropped)."""
    missing = 0
    for key in keys:
        if key not in low:
            missing += 1
            if missing > 1 or len(keys) == 1:
                return False
    return True


def find_same(text: str, others: Sequence[str]) -> int | None:
    """The index of the first of `others` that is the same fact as `text` (`is_same_fact`),
    or None. Fast on many: the text is folded once, and another text is folded only when it
    holds one of its key words (`_key_words`) or is short."""
    new = fold(text)
    if not new:
        return None
    keys = _key_words(new)
    grams = _grams(new)
    guards = None
    for i, other in enumerate(others):
        if keys and other.isascii() and not _enough(keys, _loose(other)):
            continue
        folded = fold(other)
        if folded == new:
            return i
        found = _grams(folded)
        shared = len(grams & found)
        if not shared or shared < NEAR_COPY * (len(grams) + len(found) - shared):
            continue
        if guards is None:
            guards = _guards(new)
        if _guards(folded) == guards and not _substitutes(new, folded):
            return i
    return None
