"""What the citations one process handed out stood for (`MemoryStore.showing`).

A citation names lines; by the time it is quoted back (a chat's `/forget`, an MCP client's
forget_memory) a forget may have shifted the file and a later search re-synced the index.
`forget.find` checks a bare citation against every text its lines were shown as here.
Kept apart from `forget` so that a search, which records its results, imports nothing more.
"""

from __future__ import annotations

from miniclaw.entries.entry import Entry


class Shown:
    """What the citations this process handed out stood for: (path, first line) -> the
    (last line, text) pairs shown there, by every search and read of one `MemoryStore` (a
    chat, an MCP connection). A bare citation a person or model quotes back after the file
    shifted (and a later search re-synced the index) is then still checked against the
    memory it was shown as. Bounded: the oldest places are dropped first."""

    LIMIT = 20_000

    def __init__(self) -> None:
        self._places: dict[tuple[str, int], set[tuple[int, str]]] = {}

    def note(self, items) -> None:
        """Record entries or search results (anything with a path, lines and a text)."""
        places = self._places
        for item in items:
            text = item.text if isinstance(item, Entry) else item.content
            key = (item.path, item.line_start)
            places.setdefault(key, set()).add((item.line_end, text))
            if len(places) > self.LIMIT:
                del places[next(iter(places))]

    def texts(self, path: str, start: int, end: int | None = None) -> list[str]:
        """The texts shown at these lines (any last line when `end` is None)."""
        return [text for last, text in self._places.get((path, start), ())
                if end is None or last == end]

    def __bool__(self) -> bool:
        return bool(self._places)
