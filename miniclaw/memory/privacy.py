"""Removing private text, the first step of every parse.

What is hidden (DESIGN.md): lines between `<private>` and `</private>`; the text between the
tags on one line; everything after an unclosed `<private>` (fail closed); nested blocks close
at the outermost `</private>`; and a whole file whose front matter says `private: true`.
Tags match case-insensitively and tolerate odd spacing (`< PRIVATE >`, `</ private>`) and
attributes (`<private reason="x">`).

Invariant: the output has exactly as many lines as the input, so line numbers survive; a
hidden line becomes an empty string. Private text never leaves this module.
"""

from __future__ import annotations

import re

# A tag left unfinished at the end of a line (`<private`) still counts: fail closed.
_TAG = re.compile(r"<\s*(/?)\s*private\b[^>]*(?:>|$)", re.IGNORECASE)
_FRONT_MATTER_PRIVATE = re.compile(
    r"""^\s*private\s*:\s*["']?(true|yes|on|1)["']?\s*(#.*)?$""", re.IGNORECASE
)
_MAYBE_TAG = re.compile(r"<\s*/?\s*private", re.IGNORECASE)


def front_matter_end(lines: list[str]) -> int:
    """Number of leading lines that form a YAML front matter block (0 when there is none)."""
    if not lines or lines[0].strip() != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return i + 1
    return 0


def may_hold_private(text: str) -> bool:
    """False when the text has no private tag at all (most files): nothing to redact."""
    return _MAYBE_TAG.search(text) is not None


def is_private_file(lines: list[str]) -> bool:
    """True when the front matter marks the file private.

    Fails closed: an unterminated front matter block that says `private: true` still counts.
    """
    if not lines or lines[0].strip() != "---":
        return False
    for line in lines[1:]:
        if line.strip() in ("---", "..."):
            return False
        if _FRONT_MATTER_PRIVATE.match(line):
            return True
    return False


def open_at_end(lines: list[str]) -> bool:
    """True when a `<private>` block is still open after the last line.

    Text appended to such a file would be hidden, so writers refuse rather than lose it.
    """
    depth = 0
    for line in lines:
        for match in _TAG.finditer(line):
            depth = max(depth - 1, 0) if match.group(1) else depth + 1
    return depth > 0


def redact_lines(lines: list[str]) -> list[str]:
    """The lines with every private part removed, same count and order."""
    if is_private_file(lines):
        return [""] * len(lines)
    out: list[str] = []
    depth = 0
    for line in lines:
        if depth == 0 and not _MAYBE_TAG.search(line):
            out.append(line)  # the common case: no tag anywhere near
            continue
        visible: list[str] = []
        pos = 0
        for match in _TAG.finditer(line):
            if depth == 0:
                visible.append(line[pos : match.start()])
            if match.group(1):  # a closing tag
                depth = max(depth - 1, 0)
            else:
                depth += 1
            pos = match.end()
        if depth == 0:
            visible.append(line[pos:])
        text = "".join(visible)
        # A line that held only tags (and private text) is not content.
        out.append(text if text.strip() else "")
    return out
