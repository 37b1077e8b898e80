"""Short-term memory: the conversation so far, in process only.

A bounded deque: at most `capacity` turns (100 by default), the oldest dropped first.
Never written to disk by this module (the chat loop keeps its own transcript).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import NamedTuple

SHORT_TERM_CAPACITY = 100


class Turn(NamedTuple):
    role: str  # "user", "assistant", "system", "tool"
    content: str
    at: datetime


class ShortTermMemory:
    """The last turns of the conversation, oldest first."""

    def __init__(self, capacity: int = SHORT_TERM_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._turns: deque[Turn] = deque(maxlen=capacity)

    @property
    def capacity(self) -> int:
        return self._turns.maxlen or 0

    def add(self, role: str, content: str) -> Turn:
        turn = Turn(role, content, datetime.now(timezone.utc))
        self._turns.append(turn)
        return turn

    def recent(self, n: int | None = None) -> list[Turn]:
        """The last `n` turns (all when None), oldest first."""
        turns = list(self._turns)
        return turns if n is None else turns[max(len(turns) - n, 0) :]

    def clear(self) -> None:
        self._turns.clear()

    def __len__(self) -> int:
        return len(self._turns)

    def __iter__(self) -> Iterator[Turn]:
        return iter(list(self._turns))
