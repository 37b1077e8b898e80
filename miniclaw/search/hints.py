"""What to try next when a search finds little, and what went wrong on the way: as data.

A `Hint` says what to change (widen the window, drop a word no memory holds, drop a
requirement, use fewer words, narrow by a category or tag that the partial matches have); a
`SearchWarning` says what a search could not use as it should (a memory file with bad bytes,
too large, unreadable, or front matter hiding text; a folder of them that cannot be listed).
Both are a `kind` and parameters, so each caller words them in its own terms: the CLI names
its flags (`cli/render.py`), the memory tools their arguments (`memory_tools.py`), people
and the chat get `describe`'s plain wording. In JSON each is `{"kind": ..., **parameters}`.
The kinds and their parameters:

    rarer_words                        the query held only words too common to be indexed
    widen_days         days            only the last `days` days of daily notes were searched,
                                       and older notes hold entries (a new workspace's
                                       have none: no hint that could find nothing)
    drop_word          word            no memory holds this word (as typed), and the search
                                       found nothing, by words only (bm25, keyword)
    drop_filter        filter, value   no memory has this category or tag (`filter`:
                                       "category" or "tag"), and the search found nothing
    by_meaning                         a search by words only found nothing, and the
                                       embedding model is installed: hybrid finds by meaning
    drop_requirement                   +word, a phrase or a required word limits the results
    fewer_words                        many words: fewer would match more
    other_words                        nothing better to suggest
    older              count, days     `SearchResults.older`: `count` entries of notes older
                                       than the `days` window would be among the results
                                       without it (not a hint of `hints`: said with them)
    other_dates        first, last     the query named only dates (from `first` to `last`,
                                       ISO), and no memory is dated then
    narrow_category    category        a category found among the results
    narrow_tag         tag             a tag found among the results
    file (warning)     path, message   a memory file was indexed with a problem (message
                                       names it, never its private text), or could not be
                                       seen: a `path` ending in `/` is a folder that could
                                       not be listed, a source's root that is gone its root
    vectors (warning)  embedded, total a semantic mode ranked with the vectors of only
                                       `embedded` of `total` texts (the rest come later)
    degraded           requested, mode, reason   `SearchResults.degraded`: the mode asked
                                       for could not run (the model is not installed), so
                                       `mode` ran instead; never an error. Optional:
                                       `installed` (it is, but failed: a server down),
                                       `install` (the command another embedder needs)
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType


class Hint:
    """One suggestion: `Hint("widen_days", days=30)`. Immutable. A plain slotted class, not a
    dataclass: it never grows fields, and a dataclass costs ~0.5 ms of every CLI start."""

    __slots__ = ("kind", "params")
    kind: str
    params: Mapping[str, object]

    def __init__(self, kind: str, /, **params: object) -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "params", MappingProxyType(params))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        return (type(other) is type(self) and self.kind == other.kind
                and dict(self.params) == dict(other.params))

    def __hash__(self) -> int:
        return hash((self.kind, tuple(sorted(self.params.items()))))

    def __repr__(self) -> str:
        args = "".join(f", {key}={value!r}" for key, value in self.params.items())
        return f"{type(self).__name__}({self.kind!r}{args})"

    def to_dict(self) -> dict:
        return {"kind": self.kind, **self.params}


class SearchWarning(Hint):
    """Something a search could not use as it should: `SearchWarning("file", path=...,
    message=...)`. Returned with the results, never logged by the library."""

    __slots__ = ()


# How people read a hint (the chat, the API's `SearchResults.suggestions`): no CLI flags.
WORDING: Mapping[str, str] = {
    "rarer_words": "search for rarer words: very common words (the, of, what...) are not "
                   "indexed",
    "widen_days": "search all history (only the last {days} days of daily notes were searched)",
    "drop_word": "drop '{word}': no memory contains it",
    "drop_filter": "drop the {filter} '{value}': no memory has it",
    "by_meaning": "search by meaning (the hybrid mode): it finds memories without the "
                  "query's words",
    "drop_requirement": "drop a requirement (+word or \"phrase\"): every result must hold all "
                        "of them",
    "fewer_words": "use fewer words",
    "other_words": "try broader or different words",
    "older": "{count} older {matches} beyond {days} days: search all history to include them",
    "other_dates": "no memory is dated {first} to {last}: try other dates, or words",
    "narrow_category": "narrow to the category {category} (found among these results)",
    "narrow_tag": "narrow to the tag {tag} (found among these results)",
    "file": "{message}",
    "vectors": "meaning search used the vectors of {embedded} of {total} memories so far "
               "(`miniclaw memory index` computes the rest)",
    "degraded": "[{mode}] \u26a0 {reason} ({install} for {requested})",
    "degraded_installed": "[{mode}] \u26a0 {reason}: searched by {mode}",  # no reinstall
}


def older(count: int, days: int | None) -> Hint:
    """The `older` line of a search (or a context) whose window hid `count` matches."""
    return Hint("older", count=count, days=days, matches="match" if count == 1 else "matches")


def describe(hint: Hint, wording: Mapping[str, str] | None = None) -> str:
    """The hint in words: `wording`'s template for its kind if it has one, else the plain
    one; an unknown kind (from a newer miniclaw) is its name."""
    kind = "degraded_installed" if hint.kind == "degraded" and hint.params.get("installed") \
        else hint.kind
    template = (wording or {}).get(kind) or WORDING.get(kind)
    if not template:
        return hint.kind.replace("_", " ")
    if "{install}" in template:  # this project's command, worked out only when shown
        from miniclaw.install import install_command

        return template.format(**{**hint.params, "install": hint.params.get("install")
                                  or install_command("semantic")})
    return template.format(**hint.params)
