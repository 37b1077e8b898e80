"""Removing private text, the first step of every parse.

What is hidden (docs/ARCHITECTURE.md): lines between `<private>` and `</private>`; the text between the
tags on one line; everything after an unclosed `<private>` (fail closed); nested blocks close
at the outermost `</private>`; and a whole file whose front matter says `private: true`.
Tags match what a reader sees as the tag: any case, odd spacing (`< PRIVATE >`, `</ private>`),
attributes (`<private reason="x">`), invisible characters inside (zero-width spaces, soft
hyphens, BOMs), compatibility forms (`＜ｐｒｉｖａｔｅ＞`) and a tag split by hard wrapping
(`<` at the end of one line, `private>` on the next).

Front matter is a first line `---` and a block, closed by `---` or `...` at the start of a
line, that YAML reads as a mapping; anything else is ordinary text (a thematic break). A
block that cannot be read but names a `private` key hides the file (fail closed).

Invariant: the output has exactly as many lines as the input, so line numbers survive; a
hidden line becomes an empty string. Private text never leaves this module.

What a person types (a query, a message) is read by the same tag rules, without front
matter, by `visible_typed`: stripped, since it has no line numbers to keep.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import NamedTuple

from miniclaw.text import first_line

# A tag left unfinished at the end of a line (`<private`) still counts: fail closed.
_TAG = re.compile(r"<\s*(/?)\s*private\b[^>]*(?:>|$)", re.IGNORECASE)
_MAYBE_TAG = re.compile(r"<\s*/?\s*private", re.IGNORECASE)
# Hard wrapping: a `<` (or `</`) left at the end of a line, the tag's name on the next.
_DANGLING = re.compile(r"<\s*(/?)\s*$")
_CONTINUED = re.compile(r"\s*(/?)\s*private\b[^>]*(?:>|$)", re.IGNORECASE)
# Characters a reader does not see (Unicode format characters, variation selectors, the
# combining grapheme joiner, Hangul fillers): dropped before tags are matched.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001-\U000e007f\U000e0100-\U000e01ef]"
)

_FENCE = ("---", "...")
_MAX_FRONT_MATTER_LINES = 1000  # a longer "block" is a document, not metadata
_MAX_FRONT_MATTER_CHARS = 64 * 1024
# A `private` key in text YAML could not read: fail closed on it.
_PRIVATE_KEY = re.compile(r"""^[\s{,?\-]*["']?private["']?\s*:(.*)$""",
                          re.IGNORECASE | re.MULTILINE)
# YAML 1.1's false words, and empty: any other value of `private` hides the file.
_FALSE_WORDS = frozenset({"false", "no", "n", "off", "0"})
# Keys that front matter of Obsidian, Jekyll, Hugo and friends holds. Another key that reads
# like prose (a capital, a space, a value of several words: `Atlas: 40k approved by Sam`) may
# be a hand-written note between two thematic breaks, so a warning names it.
_METADATA_KEYS = frozenset({
    "private", "title", "tags", "tag", "aliases", "alias", "date", "created", "updated",
    "modified", "author", "authors", "description", "summary", "category", "categories",
    "keywords", "layout", "draft", "publish", "permalink", "slug", "id", "type", "status",
    "lang", "language", "cssclass", "cssclasses",
})


class FrontMatter(NamedTuple):
    """What a file's front matter block means: how many lines it spans (0 when there is
    none), whether it hides the whole file, and a warning when it hides text a person may
    have meant as memories."""

    lines: int = 0
    private: bool = False
    warning: str | None = None


_NONE = FrontMatter()


def _first_line(lines: list[str]) -> str:
    """The first line as a reader sees it: without BOMs and invisible characters."""
    first = lines[0] if lines else ""
    return _INVISIBLE.sub("", first) if not first.isascii() else first


def starts_front_matter(lines: list[str]) -> bool:
    """The cheap test every parse makes: does the first line open a block?"""
    first = _first_line(lines).lstrip()
    return first.startswith("---") and (first.rstrip() == "---" or "\r" in first)


def front_matter(lines: list[str]) -> FrontMatter:
    """The front matter of a file given as lines (see the module docstring)."""
    if not starts_front_matter(lines):
        return _NONE
    first = _first_line(lines)
    if first.strip() != "---":  # CR-only line ends: the whole file is one "line"
        inner = front_matter(first.split("\r") + lines[1:])
        return FrontMatter(0, inner.private, inner.warning)  # hide it all, or show it all
    for i in range(1, min(len(lines), _MAX_FRONT_MATTER_LINES)):
        if lines[i].rstrip() in _FENCE:  # at the start of the line: an indented `---`
            return _read_block("\n".join(lines[1:i]), i + 1)  # is a block scalar's text
    block = "\n".join(lines[1:_MAX_FRONT_MATTER_LINES])
    if _names_private(block):  # never closed, but meant to be private: fail closed
        return FrontMatter(0, True, "its front matter (first line ---) is never closed and "
                                    "names `private`: the whole file is hidden")
    return _NONE


def _read_block(block: str, end: int) -> FrontMatter:
    # Larger is a document, not metadata: not parsed (time), but still checked for `private`.
    kind, private, other_keys = _load(block) if len(block) <= _MAX_FRONT_MATTER_CHARS else (
        "other", False, ())
    if kind == "mapping":
        warning = None
        if other_keys and not private:
            # The keys are not quoted: a key may hold a `<private>` tag (YAML reads it).
            keys = ("1 key that reads" if len(other_keys) == 1
                    else f"{len(other_keys)} keys that read") + " like notes"
            warning = (f"lines 1-{end} are YAML front matter ({keys}), not memories, and are "
                       "not searched; if they are notes, delete the first line (---)")
        return FrontMatter(end, private, warning)
    if _names_private(block):
        return FrontMatter(end, True, f"its front matter (lines 1-{end}) cannot be read as YAML "
                                      "but names `private`: the whole file is hidden")
    return _NONE  # not front matter: a thematic break and ordinary text


@lru_cache(maxsize=64)  # a file is read by the parse and by the warning check
def _load(block: str) -> tuple[str, bool, tuple[str, ...]]:
    """("mapping", private?, keys that may be notes), or ("other", False, ())."""
    import yaml  # only for files that start with `---`

    try:
        data = yaml.load(block, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, ValueError, RecursionError):  # ValueError: `date: 2026-02-30`
        return ("other", False, ())
    if not isinstance(data, dict) or not data:
        return ("other", False, ())
    private = False
    other: list[str] = []
    for key, value in data.items():
        name = str(key).strip().lower()
        if name == "private":
            private = private or not _is_false(value)
        elif name not in _METADATA_KEYS and _reads_like_prose(key, value):
            other.append(str(key)[:40])
    return ("mapping", private, tuple(other[:5]))


def _names_private(block: str) -> bool:
    """A `private` key whose value is not plainly false, in text YAML could not read."""
    for match in _PRIVATE_KEY.finditer(block):
        value = match.group(1).split("#")[0].strip().strip("'\"{},").strip()
        if not _is_false(value):
            return True
    return False


def _reads_like_prose(key: object, value: object) -> bool:
    text = str(key)
    return (text != text.lower() or " " in text.strip()
            or (isinstance(value, str) and len(value.split()) >= 4))


def _is_false(value: object) -> bool:
    if value is False or (type(value) is int and value == 0):
        return True
    return isinstance(value, str) and value.strip().lower() in _FALSE_WORDS


def front_matter_end(lines: list[str]) -> int:
    """Number of leading lines that form a YAML front matter block (0 when there is none)."""
    return front_matter(lines).lines


def is_private_file(lines: list[str]) -> bool:
    """True when the front matter marks the file private (fail closed, see the docstring)."""
    return front_matter(lines).private


def front_matter_warning(text: str, name: str) -> str | None:
    """A warning naming the file when its front matter hides text (None for most files)."""
    if not starts_front_matter([first_line(text)]):
        return None
    lines = [line.removesuffix("\r") for line in text.removeprefix("\ufeff").split("\n")]
    warning = front_matter(lines).warning
    return f"{name}: {warning}" if warning else None


def visible_text(text: str, keep_front_matter: bool = False, per_line: bool = False) -> str:
    """The text as every reader may see it: front matter and private parts become empty
    lines, so line numbers stay those of the file. Shared code runs it before any source
    parses a file (`sources.read_entries`); most files come back unchanged, unsplit.
    `keep_front_matter`: a format whose metadata is its front matter (mnemonic) gets it,
    private parts still removed (a `private: true` file is still hidden whole).
    `per_line`: one record per line (JSON Lines): each record is redacted on its own
    (`visible_record`), so an unclosed tag hides the rest of its record, not every later
    record."""
    if per_line:
        if not may_hold_private(text) and not _ESCAPED_LESS_THAN.search(text):
            return text
        lines = text.removeprefix("\ufeff").split("\n")
        return "\n".join(visible_record(line) for line in lines)
    if not starts_front_matter([first_line(text)]) and not may_hold_private(text):
        return text
    lines = text.removeprefix("\ufeff").split("\n")
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    skip = 0 if keep_front_matter else front_matter_end(lines)  # as the writers see it
    lines = redact_lines(lines)
    lines[:skip] = [""] * skip
    return "\n".join(lines)


# A `<` (or a character folding to one) spelled as a JSON escape: `\u003c`, `\uff1c`, ...
_ESCAPED_LESS_THAN = re.compile(r"\\u(?:003[cC]|226[eE]|[fF][eE]64|[fF][fF]1[cC])")


def visible_record(line: str) -> str:
    """One JSON Lines record as every reader may see it. A record that reads as JSON keeps
    its shape: the tag rules run over its strings in order, as the lines of one text, so a
    block may span two fields and an unclosed `<private>` hides every later string of the
    record (fail closed within it), never another record. A line that is not JSON (or too
    deeply nested to read) is redacted as text: cut by a tag, it no longer reads as JSON and
    its reader skips it (fail closed). Tags spelled with JSON escapes count once decoded."""
    line = line.removesuffix("\r")
    if not may_hold_private(line) and not _ESCAPED_LESS_THAN.search(line):
        return line
    import json

    try:
        record = json.loads(line)
        places = _string_places(record)
        if not any(may_hold_private(text) for _, _, text in places):
            return line
        visible = iter(without_tags([part for _, _, text in places
                                      for part in text.split("\n")]))
        for container, key, text in places:  # the record is ours: changed in place
            shown = "\n".join(next(visible) for _ in text.split("\n"))
            if container is None:
                record = shown
            else:
                container[key] = shown
        return json.dumps(record, ensure_ascii=False)
    except (ValueError, RecursionError):
        return redact_lines([line])[0] if may_hold_private(line) else line


def _string_places(value: object) -> list[tuple[object, object, str]]:
    """(container, key, string) of every string of a JSON value (keys left out), in the
    order the record writes them; walked with a stack, not recursion (a record may be
    nested a thousand levels). The container is None for a value that is a string."""
    found: list[tuple[object, object, str]] = []
    stack: list[tuple[object, object, object]] = [(None, None, value)]
    while stack:
        container, key, item = stack.pop()
        if isinstance(item, str):
            found.append((container, key, item))
        elif isinstance(item, dict):
            stack.extend((item, k, v) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((item, i, v) for i, v in reversed(list(enumerate(item))))
    return found


def open_depth(text: str) -> int:
    """How many `<private>` blocks are still open at the end of the text, for a reader that
    goes on with what follows (an append-only file read in parts); -1 when the whole file
    is private (its front matter says so)."""
    if not starts_front_matter([first_line(text)]) and not may_hold_private(text):
        return 0
    lines = [line[:-1] if line.endswith("\r") else line
             for line in text.removeprefix("\ufeff").split("\n")]
    if is_private_file(lines):
        return -1
    depth = 0
    for tags in _line_tags(lines):
        for tag in tags:
            depth = max(depth + tag.step, 0)
    return depth


# Every character whose compatibility form holds a `<` (all of Unicode, checked by a test):
# a text without one cannot hold a tag, folded or not.
_LESS_THAN = ("<", "\u226e", "\ufe64", "\uff1c")


def may_hold_private(text: str) -> bool:
    """False when the text has no private tag at all (most files): nothing to redact.
    Most text has no `<` at all: that is found without a regex or folding (building an
    index checks every file and every record)."""
    if "<" not in text and (text.isascii() or not any(c in text for c in _LESS_THAN[1:])):
        return False
    if _MAYBE_TAG.search(text):
        return True
    if text.isascii():
        return False
    # A disguised tag (fullwidth, invisible characters inside) begins at one of the
    # characters folding to `<`: what follows each is folded, not the whole text (a part
    # of a transcript is megabytes, with a few `<` in it).
    return any(_tag_follows(text, start + 1) for start in _less_thans(text))


def _less_thans(text: str) -> Iterator[int]:
    """Where each character of `_LESS_THAN` is in the text, by `str.find`: a regex of the
    four took ~10 ms to look through a transcript part of 2 MB that is not ASCII."""
    for char in _LESS_THAN:
        start = text.find(char)
        while start != -1:
            yield start
            start = text.find(char, start + 1)
_TAG_REST = re.compile(r"\s*/?\s*private", re.IGNORECASE)  # `_MAYBE_TAG` after its `<`
_TAG_REST_BEGUN = re.compile(r"\s*(?:/\s*)?(?:p(?:r(?:i(?:v(?:a(?:t(?:e)?)?)?)?)?)?)?", re.IGNORECASE)


def _tag_follows(text: str, start: int) -> bool:
    """Whether the text from `start` (just after a `<`), folded, goes on as a tag: folded a
    few characters at a time, while what is folded so far may still begin one."""
    size = 32
    while True:
        folded = _fold_fast(text[start:start + size])
        if _TAG_REST.match(folded):
            return True
        if start + size >= len(text) or not _TAG_REST_BEGUN.fullmatch(folded):
            return False
        size *= 4


def _fold_fast(text: str) -> str:
    """Text as a reader sees it, for the test only: invisible characters out, NFKC."""
    import unicodedata

    return unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))


def _fold(line: str) -> tuple[str, list[int]]:
    """`_fold_fast` of one line, and where each folded character came from in it."""
    import unicodedata

    out: list[str] = []
    where: list[int] = []
    for i, char in enumerate(line):
        if char.isascii():
            out.append(char)
            where.append(i)
        elif not _INVISIBLE.match(char):
            folded = unicodedata.normalize("NFKC", char)
            out.append(folded)
            where.extend([i] * len(folded))
    where.append(len(line))
    return "".join(out), where


class _Tag(NamedTuple):
    start: int  # where the tag's text begins and ends in the line
    end: int
    step: int  # +1 opens, -1 closes, 0 only hides (the `<` of a tag split over two lines)


def _line_tags(lines: list[str]) -> list[list[_Tag]]:
    """The private tags on each line, in order; most lines have none."""
    found: list[list[_Tag]] = []
    carried: int | None = None  # the previous line ended in `<`: 1 when it was `</`
    for line in lines:
        if line.isascii():
            if carried is None and "<" not in line:
                found.append([])  # the common case: no tag anywhere near
                continue
            text, where = line, None
        else:  # U+FF1C and U+FE64 are the characters NFKC folds to `<`
            if carried is None and "<" not in line and "\uff1c" not in line \
                    and "\ufe64" not in line:
                found.append([])
                continue
            text, where = _fold(line)
        tags: list[_Tag] = []
        pos = 0
        if carried is not None:
            rest = _CONTINUED.match(text)
            if rest:
                closing = carried or rest.group(1)
                tags.append(_Tag(0, rest.end(), -1 if closing else 1))
                pos = rest.end()
            else:
                found[-1].pop()  # that `<` was only a less-than sign
            carried = None
        for match in _TAG.finditer(text, pos):
            tags.append(_Tag(match.start(), match.end(), -1 if match.group(1) else 1))
            pos = match.end()
        dangling = _DANGLING.search(text, pos)
        if dangling:  # a tag only if the next line goes on with `private>`
            tags.append(_Tag(dangling.start(), len(text), 0))
            carried = 1 if dangling.group(1) else 0
        if where is not None:
            tags = [_Tag(where[t.start], where[t.end], t.step) for t in tags]
        found.append(tags)
    if carried is not None:
        found[-1].pop()
    return found


def open_at_end(lines: list[str]) -> bool:
    """True when a `<private>` block is still open after the last line.

    Text appended to such a file would be hidden, so writers refuse rather than lose it.
    """
    return unclosed_private_line(lines) is not None


def unclosed_private_line(lines: list[str]) -> int | None:
    """The 1-based line of the `<private>` that is never closed, or None: what `doctor`
    names, since everything after it is hidden."""
    depth, opened = 0, None
    for number, tags in enumerate(_line_tags(lines), 1):
        for tag in tags:
            if depth == 0 and tag.step > 0:
                opened = number
            depth = max(depth + tag.step, 0)
    return opened if depth > 0 else None


def redact_lines(lines: list[str]) -> list[str]:
    """The lines with every private part removed, same count and order."""
    if is_private_file(lines):
        return [""] * len(lines)
    return without_tags(lines)


def visible_typed(text: str) -> str:
    """What a person typed (a search query, a chat or context message) as everything but
    their own files may see it: searched, echoed, sent to a model, put in a prompt or in
    short-term memory. The tags hide what they hide in a memory file (inline, across lines,
    nested, and everything after an unclosed `<private>`: fail closed); front matter means
    nothing here (it belongs to a file), so a first line `---` is text. Text with no tag
    comes back as it is; otherwise without its private parts, stripped, and again until no
    tag is left (removing a part may join the two halves of a new tag), so that applying it
    twice changes nothing."""
    while may_hold_private(text):
        visible = "\n".join(without_tags(text.split("\n"))).strip()
        if visible == text:
            break
        text = visible
    return text


def without_tags(lines: list[str]) -> list[str]:
    """The lines less what the `<private>` tags hide (not front matter), same count: for a
    format that reads front matter its own way (ConKeeper's), after the tags."""
    out: list[str] = []
    depth = 0
    for line, tags in zip(lines, _line_tags(lines)):
        if not tags:
            out.append(line if depth == 0 else "")
            continue
        visible: list[str] = []
        pos = 0
        for tag in tags:
            if depth == 0:
                visible.append(line[pos : tag.start])
            depth = max(depth + tag.step, 0)
            pos = tag.end
        if depth == 0:
            visible.append(line[pos:])
        text = "".join(visible)
        # A line that held only tags (and private text) is not content.
        out.append(text if text.strip() else "")
    return out
