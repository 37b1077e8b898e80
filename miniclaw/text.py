"""Text that can be printed and written: no terminal controls, no bytes that were not UTF-8.

Python hands bytes that are not UTF-8 (in argv, on stdin, in a JSON `\\udcff` escape) over as
lone surrogates: a str that cannot be encoded to UTF-8, so printing or saving it fails.
Control characters in text miniclaw did not write (a memory file, a model's answer) are
escape sequences that can set a terminal's title, write its clipboard (OSC 52) or move its
cursor. The chat, the CLI and the model client use these, and nothing else, for both.
"""

from __future__ import annotations

import functools
import re

_CONTROL_RANGES = "\x00-\x1f\x7f-\x9f"  # C0, DEL, C1
LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str, every surrogate is a lone one
_CONTROLS = re.compile(f"(?![\t\n])[{_CONTROL_RANGES}]")  # but tab and newline


@functools.cache
def _unwritable(allow: str) -> re.Pattern:
    skip = f"(?![{re.escape(allow)}])" if allow else ""
    return re.compile(f"{skip}[{_CONTROL_RANGES}\ud800-\udfff]")


def first_unwritable(text: str, allow: str = "\t\n") -> re.Match | None:
    """The first control character (other than those in `allow`) or lone surrogate in
    `text`: what must not be written to a memory file or a setting."""
    return _unwritable(allow).search(text)


def is_utf8(text: str) -> bool:
    """Whether `text` came from valid UTF-8 (holds no lone surrogate)."""
    return LONE_SURROGATE.search(text) is None


def utf8(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD, so that it can be encoded."""
    return LONE_SURROGATE.sub("\ufffd", text)


def printable(text: str) -> str:
    """`text` safe to print on a terminal: C0 and C1 controls (and with them every escape
    sequence) removed, except newline and tab; lone surrogates as U+FFFD."""
    return utf8(_CONTROLS.sub("", text))


class LazyPattern:
    """A regular expression compiled the first time one of its methods is used. A source
    kind's module holds a dozen patterns that only its parser needs, and a search through
    an up-to-date index parses nothing: compiling them cost every search ~2 ms. Each method
    used is then an attribute of its own, as fast as the compiled pattern's."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str):
        if name.startswith("_"):  # `_source` itself, copy and pickle probes
            raise AttributeError(name)
        value = getattr(re.compile(*self._source), name)
        setattr(self, name, value)
        return value


def first_line(text: str) -> str:
    """The text's first line, without copying the rest (`str.partition` copies it: 2 ms of
    a transcript part of 2 MB, and a part's first line is read twice)."""
    end = text.find("\n")
    return text if end < 0 else text[:end]


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`1 memory`, `2 memories`: a count with its noun in the right number."""
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_FEW_WORDS = 3  # a sentence this short ("Wow!", "Hey Nate!") says nothing either way


def asks_only(text: str) -> bool:
    """Whether a text only asks: it ends with a question mark, and each of its sentences is
    a question or a word or three ("Wow, cool! What did you paint?")."""
    body = text.strip()
    return body.endswith("?") and all(
        part.endswith("?") or len(part.split()) <= _FEW_WORDS
        for part in _SENTENCE_END.split(body))
