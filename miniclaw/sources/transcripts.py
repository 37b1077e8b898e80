"""Chat transcripts as a memory source: one entry per user or assistant message.

Two formats share this reading (the `claude_code` kind subclasses `TranscriptSource`):
miniclaw's own `sessions/<id>.jsonl` (`{"role", "content", "timestamp", "session_id"}`,
chat/transcript.py) and Claude Code's projects folder. A file is JSON lines appended in
time order, one record per line (`line_records`: privacy applies to each record on its own,
so a tool result quoting an unclosed `<private>` hides the rest of that record only). A line
that is not a JSON object (cut short while written) is skipped; one nested too deeply to
read is skipped with a warning (`warning`). What is left out is what the reference transcript
search leaves out (shared/formats/FORMATS.md section 4), per message: text of 10
characters or less, acknowledgements ("ok", "thanks"), system noise (IDE and shell
wrappers, interrupted requests, API errors), and what an earlier recall printed or quoted
(each paragraph holding a recall's header or result line, not the messages before a
recall: the reference's known gap). A fork
session (first record a `queue-operation`: a headless recall) is left out whole.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from datetime import date as Date
from pathlib import Path

from miniclaw.config import SESSIONS_DIR
from miniclaw.entries.entry import Entry
from miniclaw.sources.base import FileSource

#: Messages shorter than this say nothing worth finding (the reference's `length > 10`).
MIN_TEXT = 11

#: The reference tool's noise: any message holding one of these is a wrapper, not speech.
NOISE = ("<ide_", "[Request interrupted", "New environment", "API Error", "Limit reached",
         "Caveat:", "<bash-", "<function_calls", "<invoke", "</invoke", "<parameter",
         "</parameter", "</function_calls")
# The markers that start with "<", looked for only in a message that has one (most have
# none): half the scans of every message in a build.
_NOISE_TAGS = tuple(marker for marker in NOISE if marker.startswith("<"))
_NOISE_WORDS = tuple(marker for marker in NOISE if not marker.startswith("<"))

#: A line a recall printed: the reference's `[k/n] 5d8e2c4 • Dec 27` header, and the session
#: headers and message lines of `miniclaw sessions search` (cli/render_sessions.py).
_RECALL_LINE = (r"\[\d+/\d+\]\s+[a-f0-9]{7}\s+•"
                r"|^.* \| \S+ \| \d+ match(?:es)? \| \S+\s*$"
                r"|^\s*\[(?:user|asst)\] "
                r"|^\s*\.\.\. and \d+ more match(?:es)?\s*$"
                r"|^\s*Found matches in \d+ sessions?(?: \(showing top \d+\))?\s*$")

#: A whole message that only acknowledges ("ok", "thanks!", "sounds good, thank you").
_ACK_WORDS = (r"ok|okay|k|thanks|thank you|thx|ty|great|perfect|sounds good|got it|cool|"
              r"nice|sure|yes|yep|no|nope|lgtm|done|good|fine|alright|all right|awesome|"
              r"ok thanks|great thanks|understood|makes sense")


@functools.cache
def _patterns() -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    """(recall line, acknowledgement, paragraph break), compiled when a transcript is first
    read: this module is imported by every CLI start (the source is on by default)."""
    return (re.compile(_RECALL_LINE, re.MULTILINE),
            re.compile(rf"^\W*(?:(?:{_ACK_WORDS})\W*)+$", re.IGNORECASE),
            re.compile(r"\n[ \t]*\n"))


def kept_text(text: str) -> str:
    """A message's text as indexed, or "" when it is left out (noise, short, a recall)."""
    if is_noise(text):
        return ""
    recall_line, acknowledgement, paragraph_break = _patterns()
    if "•" in text or "|" in text or "[" in text or "Found" in text or "..." in text:
        paragraphs = paragraph_break.split(text)
        if _may_recall(text):  # the regex tries five patterns at every character
            paragraphs = [p for p in paragraphs if not recall_line.search(p)]
        text = "\n\n".join(paragraphs).strip()
    if len(text) < MIN_TEXT or acknowledgement.match(text):
        return ""
    return text


def _may_recall(text: str) -> bool:
    """Whether a line of the text may be a recall's (`_RECALL_LINE`): each of its patterns
    holds a `•`, " match" or a `[user] ` / `[asst] ` label."""
    return "•" in text or " match" in text or "[user] " in text or "[asst] " in text


def is_noise(text: str) -> bool:
    """Whether the message holds one of the `NOISE` markers."""
    return (any(marker in text for marker in _NOISE_WORDS)
            or ("<" in text and any(marker in text for marker in _NOISE_TAGS)))


def records(text: str) -> Iterator[tuple[int, dict]]:
    """(1-based line number, record) for each line that is a JSON object."""
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("{"):
            record = _record(line)
            if isinstance(record, dict):
                yield number, record


def _record(line: str) -> object:
    """A line's JSON value; None when it does not read: cut short, or nested too deeply for
    the decoder (a tool result 1,500 levels deep made every search fail)."""
    import json  # only when a transcript changed: not at every CLI start

    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


#: Fewer brackets than this cannot nest deeply enough to fail the decoder (its limit is the
#: interpreter's recursion limit, 1,000, less the frames already used): only lines with more
#: are decoded again to be told apart by `TranscriptSource.warning`.
_DEEP_BRACKETS = 400


def too_deep(text: str) -> list[int]:
    """The numbers of the lines that are JSON objects too deeply nested to read."""
    if text.count("{") + text.count("[") < _DEEP_BRACKETS:  # most parts: two scans in C
        return []
    import json

    out = []
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("{") and line.count("{") + line.count("[") >= _DEEP_BRACKETS:
            try:
                json.loads(line)
            except RecursionError:
                out.append(number)
            except ValueError:
                pass
    return out


def is_fork(text: str) -> bool:
    """A headless session (a recall fork) starts with a `queue-operation` record."""
    first = text.split("\n", 1)[0]
    if '"queue-operation"' not in first:
        return False
    record = _record(first)
    return isinstance(record, dict) and record.get("type") == "queue-operation"


def message_entry(text: str, path: str, line: int, *, session: str, role: str,
                  timestamp: object, project: str | None) -> Entry | None:
    """One message's entry (date and time from its UTC timestamp), or None when left out."""
    text = kept_text(text)
    if not text:
        return None
    stamp = timestamp if isinstance(timestamp, str) else ""
    try:
        day = Date.fromisoformat(stamp[:10])
    except ValueError:
        day = None
    clock = stamp[11:19] if day is not None and len(stamp) >= 19 else None
    meta = {"session": session, "role": role, "timestamp": stamp or None}
    if project:
        meta["project"] = project
    return Entry(text, "", path, line, line, day, clock, meta=meta)


def current_sessions() -> frozenset[str]:
    """The sessions running now, left out of a recall: the agent's own (Claude Code sets
    `CLAUDE_SESSION_ID`) and the running miniclaw chat's (`MINICLAW_SESSION_ID`)."""
    return frozenset(value for name in ("CLAUDE_SESSION_ID", "MINICLAW_SESSION_ID")
                     if (value := os.environ.get(name, "").strip()))


def not_running(hits: list) -> list:
    """Search results less the messages of the sessions running now: a conversation is not
    its own memory (the context builder, the chat's /search)."""
    running = current_sessions()
    if not running:
        return hits
    return [hit for hit in hits if not (hit.meta and hit.meta.get("session") in running)]


class TranscriptSource(FileSource):
    """miniclaw's chat transcripts, `sessions/<session-id>.jsonl` in the workspace."""

    name = "transcripts"
    label = "Chat Transcript"
    sequence = True  # turns of a conversation: neighbour context applies
    append_only = True  # a transcript only grows: an append is read from its old end
    line_records = True  # one JSON record per line: privacy redacts each on its own
    root = SESSIONS_DIR

    def owns(self, relative: str) -> bool:
        """Its `.jsonl` files, less the running session's (named after its id): a
        conversation is not its own memory, and its words would hide the typos it makes."""
        if not relative.endswith(".jsonl") or relative.startswith("."):
            return False
        running = current_sessions()
        return not running or relative.rsplit("/", 1)[-1][:-6] not in running

    def folders(self, workspace: Path) -> list[Path]:
        """None while its folder is missing (no chat yet): a watch needs every folder it is
        given to exist, and must not be lost for the other sources. A long-lived process
        that started before the folder existed reads it at its next full look."""
        return [folder for folder in super().folders(workspace) if os.path.isdir(folder)]

    def parse(self, text: str, path: str) -> list[Entry]:
        from miniclaw.text import first_line

        return self.parse_part(text, path, first_line(text))

    def parse_part(self, text: str, path: str, head: str) -> list[Entry]:
        """Entries of some complete lines of the file (`append_only`: the index reads what
        was appended), `head` being the file's first line (a fork's marker)."""
        if is_fork(head):
            return []
        session = path.rsplit("/", 1)[-1].removesuffix(".jsonl")
        entries = []
        for line, record in records(text):
            entry = self.record_entry(record, path, line, session)
            if entry is not None:
                entries.append(entry)
        return entries

    def warning(self, text: str, path: str) -> str | None:
        """Lines skipped because they nest too deeply to read (by number, never their text)."""
        deep = too_deep(text)
        if not deep:
            return None
        shown = ", ".join(map(str, deep[:10])) + (", ..." if len(deep) > 10 else "")
        return (f"{path}: {len(deep)} record{'s' if len(deep) > 1 else ''} nested too deeply "
                f"to read skipped (line {shown}); the rest is searched")

    def record_entry(self, record: dict, path: str, line: int, session: str) -> Entry | None:
        """A miniclaw record: only what the user typed and what the assistant answered
        (tool calls and errors are the chat's own bookkeeping; an answer marked a recall
        quoted memory, which is found where it is kept)."""
        role, content = record.get("role"), record.get("content")
        if role not in ("user", "assistant") or not isinstance(content, str):
            return None
        if record.get("interrupted") and not content.strip():
            return None
        if record.get("recall") is True:  # an answer that only quoted memory (`echo`)
            return None
        sid = record.get("session_id")
        return message_entry(content, path, line, session=sid if isinstance(sid, str) else session,
                             role=role, timestamp=record.get("timestamp"), project=None)
