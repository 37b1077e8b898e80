"""Short-term memory: the conversation so far, in process only.

A bounded deque: at most `capacity` turns (100 by default), the oldest dropped first.
Never written to disk by this module (the chat loop keeps its own transcript). A turn is
kept without its `<private>` parts (`privacy.visible_typed`): the conversation so far goes
into prompts, and what a person marked private never reaches a model.
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
        """Keep a turn, its private parts removed (the returned turn holds what is kept)."""
        from miniclaw.entries.privacy import visible_typed

        turn = Turn(role, visible_typed(content), datetime.now(timezone.utc))
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
