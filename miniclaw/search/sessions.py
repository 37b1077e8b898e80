"""Search by session: the matching messages of chat transcripts, grouped per conversation.

`miniclaw sessions search QUERY` and the chat's recall. Every matching message of the
transcript sources is ranked once (the usual query language: words OR'ed, +required,
-excluded, "phrases"); messages are grouped by their session (`Entry.meta["session"]`),
sessions ordered by the sum of their messages' scores (then latest message), each showing
its best messages in time order. Left out: the sessions running now (`current_sessions`),
messages outside `--project`, and a session whose every matching message another,
better-ranked session already holds (a resumed or copied transcript).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from miniclaw.search.options import SearchOptions
from miniclaw.search.results import RankedMemory

DEFAULT_SESSIONS = 10
DEFAULT_MESSAGES = 5
#: How many matching messages are read at most (counts stay exact up to this many).
MAX_MATCHES = 5000
#: A message longer than this is cut to a snippet around its first matching word.
SNIPPET = 300


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionHit:
    """One session that matched: its messages shown (time order) and how many matched."""

    session: str
    project: str | None
    source: str
    path: str
    matches: int
    latest: str | None
    score: float
    messages: tuple[RankedMemory, ...]

    def to_dict(self, rank: int) -> dict:
        return {"rank": rank, "session": self.session, "project": self.project,
                "source": self.source, "path": self.path, "matches": self.matches,
                "latest": self.latest, "score": round(self.score, 4),
                "more": self.matches - len(self.messages),
                "messages": [{"role": hit.meta.get("role"), "timestamp": hit.meta.get("timestamp"),
                              "citation": hit.citation, "score": round(hit.score, 4),
                              "text": snippet(hit)} for hit in self.messages]}


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionResults:
    query: str
    sessions: list[SessionHit]
    total: int  # sessions that matched, before the top N
    #: What the search could not use as it should (hints.SearchWarning: a transcript or a
    #: folder that cannot be read), as `SearchResults.warnings`.
    warnings: tuple = ()

    def to_dict(self) -> dict:
        return {"query": self.query, "total": self.total,
                "warnings": [warning.to_dict() for warning in self.warnings],
                "sessions": [hit.to_dict(rank) for rank, hit in enumerate(self.sessions, 1)]}


def transcript_sources(sources) -> tuple[str, ...]:
    """The names of the sources whose entries are chat messages (they declare `append_only`
    and give each entry a session)."""
    from miniclaw.sources.transcripts import TranscriptSource

    return tuple(source.name for source in sources if isinstance(source, TranscriptSource))


async def search_sessions(store, query: str, *, sessions: int = DEFAULT_SESSIONS,
                          messages: int = DEFAULT_MESSAGES, project: str | None = None,
                          require: tuple[str, ...] = (), exclude: tuple[str, ...] = (),
                          skip: frozenset[str] | None = None) -> SessionResults:
    """The best `sessions` sessions for the query with their best `messages` messages."""
    from miniclaw.errors import UsageError
    from miniclaw.sources.transcripts import current_sessions

    if sessions < 1 or messages < 1:
        raise UsageError("the numbers of sessions and messages must be at least 1")
    names = transcript_sources(store.sources)
    if not names:  # nothing to search; the query is still read (checked, private parts out)
        from miniclaw.search.query import parse_query

        text = parse_query(query, require=require, exclude=exclude).text
        return SessionResults(query=text, sessions=[], total=0)
    options = SearchOptions(limit=MAX_MATCHES, days=None, sources=names, require=tuple(require),
                            exclude=tuple(exclude), correct=False, asked_below=False)
    found = await store.search(query, options)
    skip = current_sessions() if skip is None else skip
    under = _project_filter(project)
    groups: dict[tuple[str, str], list[RankedMemory]] = {}
    for hit in found.results:
        session = str(hit.meta.get("session") or hit.path)
        if session in skip or not under(hit.meta.get("project")):
            continue
        groups.setdefault((hit.source, session), []).append(hit)
    ranked = sorted(groups.items(), key=lambda item: _latest(item[1]) or "", reverse=True)
    ranked.sort(key=lambda item: -sum(hit.score for hit in item[1]))  # stable: latest first on ties
    seen: set[tuple] = set()
    kept = []
    for (source, session), hits in ranked:
        keys = {(hit.meta.get("role"), hit.meta.get("timestamp"), hit.content) for hit in hits}
        if keys <= seen:  # a copy of a session already shown
            continue
        seen |= keys
        top = sorted(hits[:messages], key=lambda hit: (hit.meta.get("timestamp") or "", hit.line_start))
        kept.append(SessionHit(session=session, project=_project(hits), source=source,
                               path=hits[0].path, matches=len(hits), latest=_latest(hits),
                               score=sum(hit.score for hit in hits), messages=tuple(top)))
    return SessionResults(query=found.query, sessions=kept[:sessions], total=len(kept),
                          warnings=found.warnings)


def _latest(hits: list[RankedMemory]) -> str | None:
    stamps = [str(hit.meta["timestamp"]) for hit in hits if hit.meta.get("timestamp")]
    return max(stamps) if stamps else None


def _project(hits: list[RankedMemory]) -> str | None:
    return next((str(hit.meta["project"]) for hit in hits if hit.meta.get("project")), None)


def _project_filter(project: str | None):
    """Whether a message's project (`cwd`) is the folder asked for or inside it."""
    if project is None:
        return lambda cwd: True
    folder = os.path.normpath(os.path.abspath(os.path.expanduser(project)))
    return lambda cwd: isinstance(cwd, str) and (
        cwd == folder or os.path.normpath(cwd).startswith(folder.rstrip("/") + "/"))


def snippet(hit: RankedMemory) -> str:
    """The message, or when longer than `SNIPPET` characters a cut around its first matching
    word (100 characters before, 200 after), as the reference tool shows it."""
    text = hit.content
    if len(text) <= SNIPPET:
        return text
    start = hit.highlights[0][0] if hit.highlights else -1
    where = text.find(hit.excerpt[start:hit.highlights[0][1]]) if start >= 0 else -1
    if where < 0:
        return text[:SNIPPET] + "..."
    begin, end = max(0, where - 100), min(len(text), where + 200)
    return ("..." if begin else "") + text[begin:end] + ("..." if end < len(text) else "")
