"""Claude Code's transcripts as a memory source: `~/.claude/projects/<project>/<session>.jsonl`.

Configured, not on by default (a folder outside the workspace, allowed in `roots`). One
entry per user or assistant message: string content, or its `text` blocks joined by a
space (tool use, tool results, thinking and images left out); project = the record's `cwd`.
Left out by default: sidechains (sub-agents), meta messages, API errors and the synthetic
messages Claude Code writes for limits. The shared filters are `transcripts.py`'s.
"""

from __future__ import annotations

from miniclaw.errors import UsageError
from miniclaw.entries.entry import Entry
from miniclaw.sources.transcripts import TranscriptSource, message_entry


class ClaudeCodeSource(TranscriptSource):
    name = "claude_code"
    label = "Claude Code"
    root = "~/.claude/projects"
    recursive = True  # a folder per project; newer sub-agents under <session>/subagents/
    sidechains = False

    def __init__(self, **settings: object) -> None:
        """`sidechains=True` also indexes sub-agents' messages."""
        if "sidechains" in settings:
            value = settings.pop("sidechains")
            if not isinstance(value, bool):
                raise UsageError("the memory source setting 'sidechains' must be true or false")
            self.sidechains = value
        super().__init__(**settings)

    def record_entry(self, record: dict, path: str, line: int, session: str) -> Entry | None:
        kind = record.get("type")
        if kind not in ("user", "assistant"):
            return None
        if record.get("isMeta") or record.get("isApiErrorMessage"):
            return None
        if record.get("isSidechain") and not self.sidechains:
            return None
        message = record.get("message")
        if not isinstance(message, dict) or message.get("model") == "<synthetic>":
            return None
        text = message_text(message.get("content"))
        sid, cwd = record.get("sessionId"), record.get("cwd")
        return message_entry(text, path, line, session=sid if isinstance(sid, str) else session,
                             role=kind, timestamp=record.get("timestamp"),
                             project=cwd if isinstance(cwd, str) else None)


def message_text(content: object) -> str:
    """String content as it is, or the `text` blocks joined by one space."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return " ".join(block["text"] for block in content
                    if isinstance(block, dict) and block.get("type") == "text"
                    and isinstance(block.get("text"), str))
