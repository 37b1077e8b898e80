"""What to try next when a search finds little: a pure function of the search and its results.

Agents act on these (they are in the JSON), people read them under the results. Each says
what to change and why: widen the window (`--all`), drop a word no memory holds, drop a
requirement, use fewer words, or narrow by a category or tag that the partial matches have.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from miniclaw.memory.query import Query
from miniclaw.memory.results import RankedMemory


def search_hints(query: Query, results: Sequence[RankedMemory], limit: int, *,
                 window: int | None, missing_words: Sequence[str]) -> tuple[str, ...]:
    """Suggestions when fewer than `limit` results came back (none otherwise). `window` is
    the number of days of daily notes searched, None when it was not limited."""
    if len(results) >= limit:
        return ()
    hints: list[str] = []
    if not query.has_words:
        hints.append("search for rarer words: very common words (the, of, what...) are not "
                     "indexed")
    if window is not None:
        hints.append(f"search all history with --all (only the last {window} days of daily "
                     "notes were searched)")
    for word in missing_words:
        hints.append(f"drop '{word}': no memory contains it")
    if query.required or query.phrases:
        hints.append("drop a requirement (+word, --require, \"phrase\"): every result must "
                     "hold all of them")
    if len(query.terms) > 2:
        hints.append("use fewer words")
    if not results or not hints:
        hints.append("try broader or different words")
    categories = Counter(hit.category for hit in results if hit.category)
    tags = Counter(tag for hit in results for tag in hit.tags)
    for category, _ in categories.most_common(2):
        hints.append(f"--category {category} (found among these results)")
    for tag, _ in tags.most_common(3):
        hints.append(f"--tag {tag} (found among these results)")
    return tuple(hints)
