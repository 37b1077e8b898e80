"""A chat session's transcript: `sessions/<session-id>.jsonl` in the workspace.

One JSON object per line and per message: `role` (user, assistant, tool, error), `content`,
`timestamp` (UTC, ISO 8601) and `session_id`. Each message is appended in one `write` and
fsynced as it happens, so a crash loses at most the turn in flight and never leaves half a
line before a whole one; a write that fails part-way (a full disk) is cut back off. The file
is created 0600 in a 0700 folder, and only when the first message is written; if that first
write fails, the empty file is removed again (no empty transcripts on a full disk). What goes in
is what was said: the user's own words, the answers, and what the tools did; memory text
reaches it only through those, already without private parts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
from datetime import datetime, timezone
from pathlib import Path

from miniclaw.errors import MemoryFileError
from miniclaw.fs.files import ensure_dir, open_regular, write_whole


def new_session_id(now: datetime) -> str:
    """Sortable by time, unique enough for one person: `20260214-091203-a1b2c3`."""
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


class Transcript:
    def __init__(self, folder: Path, session_id: str) -> None:
        self.folder = Path(folder)
        self.session_id = session_id
        self.path = self.folder / f"{session_id}.jsonl"
        self._fd: int | None = None

    async def append(self, role: str, content: str, at: datetime, **marks: bool) -> None:
        """Append one message; `marks` (interrupted=True: an answer cut short by Ctrl-C;
        recall=True: an answer that only quoted memory) are added to its record."""
        at = at.astimezone(timezone.utc)  # UTC, as Claude Code's: one order for all times
        record = {"role": role, "content": content,
                  "timestamp": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                  "session_id": self.session_id, **marks}
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        await asyncio.to_thread(self._write, line)

    def _write(self, data: bytes) -> None:
        try:
            if self._fd is None:
                ensure_dir(self.folder)
                # The shared open: a FIFO or a link planted at the path is refused, not
                # waited on or written through.
                self._fd, _ = open_regular(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            write_whole(self._fd, data, os.fstat(self._fd).st_size)
        except OSError as exc:
            self._drop_if_empty()
            raise MemoryFileError(f"cannot write the transcript {self.path}: "
                                  f"{exc.strerror or exc}") from exc

    def _drop_if_empty(self) -> None:
        """After a failed write: an empty file (its first write failed) is removed."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            if os.fstat(self._fd).st_size == 0:
                self.close()
                self.path.unlink()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
