"""The memory tools an agent may call, defined once for every front end (the chat, the MCP
server): their names, descriptions, input and output JSON schemas, the checks of their
arguments, the write caps, and how each call is carried out through the `MemoryStore`.

`MemoryTools(store).call(name, arguments)` returns the structured result (a dict that
matches the tool's output schema) or raises a `MiniclawError` whose message a model can act
on; the front ends only change the form (OpenAI function schemas and a line of text for the
chat, MCP tools and structured content for the server). Arguments are checked against the
same schema the model is shown, so the two can never disagree.

Writes go only through the store's writers (no path ever comes from a caller). A model can
also write without end (one was seen making 190 writes in a turn, pushing MEMORY.md past what
the index reads): a `WriteBudget` caps the writes per turn and per session, and one write's
size. Every result comes from the parser's entries or the index: no private text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, NamedTuple

from miniclaw.errors import MiniclawError, UsageError
from miniclaw.search.options import DEFAULT_LIMIT as SEARCH_LIMIT
from miniclaw.entries.entry import MAX_CATEGORY_CHARS, MAX_TAG_CHARS, MAX_TAGS
from miniclaw.search.options import DEFAULT_DAYS, MAX_DAYS, MAX_LIMIT
from miniclaw.search.scoring import AUTO_MODE

MAX_WRITES_PER_TURN = 10  # a turn rarely has more than two or three things worth keeping
MAX_WRITES_PER_SESSION = 100
MAX_WRITE_CHARS = 4000  # one memory is a sentence or a paragraph, not a document
MAX_RECENT_DAYS = 90


class WriteBudget:
    """How many more memory writes a model may make in this turn and in this session."""

    def __init__(self, per_turn: int = MAX_WRITES_PER_TURN,
                 per_session: int = MAX_WRITES_PER_SESSION) -> None:
        self.per_turn, self.per_session = per_turn, per_session
        self.in_turn = self.in_session = 0

    def new_turn(self) -> None:
        self.in_turn = 0

    @property
    def left(self) -> int:
        return max(0, min(self.per_session - self.in_session, self.per_turn - self.in_turn))

    def spend(self) -> None:
        """Count one write, or raise `UsageError` when a cap is reached (nothing counted)."""
        if self.in_session >= self.per_session:
            raise UsageError(f"this session already wrote {self.per_session} memories, the "
                             "most one session may; the user can add more with /remember")
        if self.in_turn >= self.per_turn:
            raise UsageError(f"already {self.per_turn} memories written in this turn, the most "
                             "one turn may; save only what matters most")
        self.in_turn += 1
        self.in_session += 1

    def refund(self) -> None:
        """Give back a write that was refused (bad text, a damaged file): nothing written."""
        self.in_turn -= 1
        self.in_session -= 1


# -- schemas -------------------------------------------------------------------------------

_STR = {"type": "string"}
_INT = {"type": "integer"}
_OPT_STR = {"type": ["string", "null"]}
_STRINGS = {"type": "array", "items": _STR}
# The limits every write and filter has (entries/entry.py), told to the agent up front.
_CATEGORY = {"type": "string", "maxLength": MAX_CATEGORY_CHARS}
_TAGS = {"type": "array", "maxItems": MAX_TAGS,
         "items": {"type": "string", "maxLength": MAX_TAG_CHARS}}

ENTRY_SCHEMA = {"type": "object", "properties": {
    "source": {"type": "string", "description": "long_term, daily_note or a configured source"},
    "path": _STR, "line_start": _INT, "line_end": _INT,
    "citation": {"type": "string", "description": "path:line, to quote back to the user"},
    "ref": {"type": "string", "description": "path:line#mark: the citation with a hash of "
                                             "the text, what forget_memory takes"},
    "date": _OPT_STR, "time": _OPT_STR, "category": _OPT_STR, "tags": _STRINGS,
    "content": _STR,
}, "required": ["source", "path", "line_start", "line_end", "citation", "content"]}

_RESULT_SCHEMA = {"type": "object", "properties": {
    "rank": _INT, "score": {"type": "number"},
    "source": {"type": "string", "description": "long_term, daily_note or a configured source"},
    "path": _STR, "line_start": _INT, "line_end": _INT, "citation": _STR,
    "ref": {"type": "string", "description": "path:line#mark, what forget_memory takes"},
    "date": _OPT_STR, "category": _OPT_STR, "tags": _STRINGS, "content": _STR,
    "excerpt": {"type": "string", "description": "the part of content that matched"},
    "matched": {"type": "boolean",
                "description": "always true: every result holds a query word (kept for "
                               "older clients)"},
}, "required": ["rank", "score", "source", "path", "line_start", "citation", "content"]}

# The hints in the search tool's own terms, its arguments (the kinds are in search/hints.py);
# the kinds not named here read as hints.WORDING.
TOOL_WORDING = {
    "widen_days": f"days {MAX_DAYS} searches all history (only the last {{days}} days of "
                  "daily notes were searched)",
    "older": f"{{count}} older {{matches}} beyond {{days}} days: days {MAX_DAYS} includes them",
    "narrow_category": "category '{category}' (found among these results)",
    "by_meaning": "mode 'hybrid' finds memories by meaning, without the query's words",
    "narrow_tag": "tags ['{tag}'] (found among these results)",
}
_KINDS = {"type": "array", "items": {"type": "object", "properties": {"kind": _STR},
                                     "required": ["kind"]}}

_DAY = ("a day: YYYY-MM-DD, 'today', 'yesterday', '7d' (7 days ago) or '2w'")


def _object(properties: dict, required: Iterable[str] = ()) -> dict:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


class ToolSpec(NamedTuple):
    """What an agent is told about one tool."""

    name: str
    description: str
    input_schema: dict
    output_schema: dict
    writes: bool = False  # refused by a read-only server


SEARCH = ToolSpec(
    "search_memory",
    "Search the user's memory (MEMORY.md, long-term facts, and the daily notes) and get the "
    "best matching entries, best first, each with its citation (path:line) and date. The "
    "query is a few words; it may use \"exact phrase\", +required, -excluded and prefix*. A "
    "misspelt word is searched as the closest known word (see corrections); when few results "
    "match, suggestions say what to try. Daily notes of the last 30 days unless days/since/until "
    "(`older` counts better matches before them).",
    _object({
        "query": {"type": "string", "minLength": 1, "maxLength": 1000,
                  "description": "What to look for, e.g. 'atlas budget' or '\"dark roast\" -tea'."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": SEARCH_LIMIT,
                  "description": "How many results."},
        "days": {"type": "integer", "minimum": 1, "maximum": MAX_DAYS, "default": DEFAULT_DAYS,
                 "description": "Only daily notes of the last N days (MEMORY.md is always "
                                f"searched); {MAX_DAYS} for all history."},
        "since": {"type": "string", "description": f"Only entries dated on or after {_DAY}; "
                                                   "since and until replace days."},
        "until": {"type": "string", "description": f"Only entries dated on or before {_DAY}."},
        "category": {**_CATEGORY, "description": "Only entries of this category."},
        "tags": {**_TAGS, "description": "Only entries with all of these tags."},
        "sources": {"type": "array", "items": {"type": "string",
                                               "enum": ["long_term", "daily_note",
                                                        "transcripts"]},
                    "description": "Only these sources: long_term (Long-term Memory), "
                                   "daily_note (Daily Note), transcripts (Chat "
                                   "Transcript)."},  # as search_spec(SOURCES)
        "mode": {"type": "string", "enum": ["auto", "bm25", "hybrid", "vector", "keyword"],
                 "description": "Ranking: auto (default: the best available, hybrid when "
                                "the embedding model is installed, else bm25; the result's "
                                "mode says which ran), bm25 (words), hybrid (words and "
                                "meaning), vector (meaning) or keyword (word counts)."},
        "all_versions": {"type": "boolean", "default": False,
                         "description": "Also return memories superseded by a newer fact; "
                                        "each has meta.superseded_by (and its text)."},
    }, ["query"]),
    {"type": "object", "properties": {
        "query": _STR, "mode": _STR,
        "total": {"type": "integer", "description": "entries that matched in all"},
        "corrections": {"type": "array", "items": {"type": "object", "properties": {
            "from": _STR, "to": _STR}, "required": ["from", "to"]},
            "description": "words searched instead of misspelt ones"},
        "suggestions": {**_STRINGS, "description": "what to try for more results"},
        "hints": {**_KINDS, "description": "the suggestions as data: a kind (widen_days, "
                                           "drop_word, narrow_category, ...) and its values"},
        "warnings": {**_KINDS, "description": "memory files the search could not use as it "
                                              "should: kind 'file', path (a folder that "
                                              "cannot be read when it ends in /), message"},
        "results": {"type": "array", "items": _RESULT_SCHEMA},
        "degraded": {"type": "object", "description": "only when the mode asked for could "
                                                      "not run: requested, mode, reason (installed: "
                                                      "true when the model is installed but "
                                                      "did not load or run here)"},
        "auto": {"type": "boolean", "description": "only when mode auto chose `mode`"},
        "older": {"type": "object", "description": "only when the days window hid better "
                                                   "matches: count of them, days searched"},
    }, "required": ["query", "mode", "total", "corrections", "suggestions", "results"]},
)

ADD = ToolSpec(
    "add_memory",
    "Save something worth remembering to the user's memory files. kind long_term: lasting "
    "facts, preferences and decisions (MEMORY.md); kind daily: what happened today (today's "
    "daily note, the default). Returns the citation of the saved entry. A fact already "
    "remembered (the same words, or a near copy) is not saved again: saved is false and "
    "already_remembered gives its citation; do not add it again. Text inside "
    "<private>...</private> is kept in the file but never shown by any search.",
    _object({
        "content": {"type": "string", "minLength": 1, "maxLength": MAX_WRITE_CHARS,
                    "description": "The memory, one self-contained sentence or paragraph."},
        "kind": {"type": "string", "enum": ["long_term", "daily"], "default": "daily"},
        "category": {**_CATEGORY,
                     "description": "One category, e.g. preference, decision, person."},
        "tags": {**_TAGS, "description": "Tags: letters, digits, '-' and '_'."},
        "supersedes": {"type": "string", "minLength": 3, "maxLength": 300,
                       "description": "The ref (path:line#mark) of the memory this one "
                                      "replaces (a fact that changed): it stays in the file, "
                                      "marked superseded, and searches no longer return it."},
    }, ["content"]),
    {"type": "object", "properties": {
        "saved": {"type": "boolean", "description": "false: the fact was remembered already"},
        "private": {"type": "boolean",
                    "description": "all of it was private: saved, but never searchable"},
        "entry": {"anyOf": [ENTRY_SCHEMA, {"type": "null"}],
                  "description": "the entry saved, or the one that already holds the fact"},
        "already_remembered": {"type": "string",
                               "description": "only when not saved: the citation of the "
                                              "entry that holds the fact"},
        "superseded": {"type": "object", "description": "only with supersedes: the entry "
                                                        "marked superseded"},
        "writes_left": {"type": "integer", "description": "writes this session may still make"},
    }, "required": ["saved", "private", "entry", "writes_left"]},
    writes=True,
)

READ = ToolSpec(
    "read_memory",
    "Read memory files whole, as entries with citations: which = 'today' (today's daily "
    "note, the default), 'long_term' (MEMORY.md), 'recent' (the daily notes of the last "
    f"`days` days, newest first) or {_DAY}. Private text is never included.",
    _object({
        "which": {"type": "string", "default": "today",
                  "description": "today, long_term, recent, or a day (2026-02-14, yesterday)."},
        "days": {"type": "integer", "minimum": 1, "maximum": MAX_RECENT_DAYS, "default": 7,
                 "description": "For which=recent: how many days back, today included."},
    }),
    {"type": "object", "properties": {
        "which": _STR, "entries": {"type": "array", "items": ENTRY_SCHEMA},
    }, "required": ["which", "entries"]},
)

CONTEXT = ToolSpec(
    "get_context",
    "The memory part of the prompt the user's assistant would get for a message, within a "
    "token budget: its identity files, the memories relevant to the message, today's and "
    "yesterday's notes. `prompt` is the Markdown; `sections` lists each part with citations.",
    _object({
        "message": {"type": "string", "minLength": 1, "description": "The user's message."},
        "budget": {"type": "integer", "minimum": 200, "maximum": 32000, "default": 4000,
                   "description": "Tokens the prompt may take (estimated)."},
    }, ["message"]),
    {"type": "object", "properties": {
        "message": _STR, "budget": _INT, "tokens": _INT, "prompt": _STR,
        "mode": {"type": ["string", "null"],
                 "description": "the mode the memories were ranked by (null: no search)"},
        "sections": {"type": "array", "items": {"type": "object", "properties": {
            "name": _STR, "heading": _STR, "tokens": _INT, "left_out": _INT,
            "items": {"type": "array", "items": {"type": "object", "properties": {
                "source": _OPT_STR, "citation": _OPT_STR, "date": _OPT_STR, "time": _OPT_STR,
                "content": _STR, "tokens": _INT, "cut": {"type": "boolean"}}}},
        }, "required": ["name", "items"]}},
    }, "required": ["message", "budget", "tokens", "prompt", "sections"]},
)

STATUS = ToolSpec(
    "memory_status",
    "Where the user's memory is and what its search index holds: files, entries, whether "
    "it is up to date, and whether this server may write (read_only, writes_left).",
    _object({}),
    {"type": "object", "properties": {
        "workspace": _STR, "read_only": {"type": "boolean"}, "writes_left": _INT,
        "files_on_disk": _INT, "files_indexed": _INT, "entries": _INT, "terms": _INT,
        "index_path": _STR, "index_bytes": _INT, "updated_at": _OPT_STR,
        "up_to_date": {"type": "boolean"},
    }, "required": ["workspace", "read_only", "writes_left", "entries", "up_to_date"]},
)

FORGET = ToolSpec(
    "forget_memory",
    "Remove one entry from the user's memory files, by the ref (path:line#mark) a search or "
    "read returned. The user is asked to confirm first; use it only when the user asks to "
    "forget or correct something. If the file changed since, search again for the ref.",
    _object({
        "citation": {"type": "string", "minLength": 3, "maxLength": 300,
                     "description": "The entry's ref, e.g. memory/2026-02-14.md:5#3fa9c2 "
                                    "(a citation without #mark is checked against the "
                                    "last search)."},
    }, ["citation"]),
    {"type": "object", "properties": {
        "forgotten": {"type": "boolean"}, "entry": ENTRY_SCHEMA,
        "writes_left": {"type": "integer", "description": "writes this session may still make"},
    }, "required": ["forgotten", "entry", "writes_left"]},
    writes=True,
)

SPECS: dict[str, ToolSpec] = {spec.name: spec
                              for spec in (SEARCH, ADD, READ, CONTEXT, STATUS, FORGET)}


def search_spec(sources) -> ToolSpec:
    """`search_memory` as a workspace offers it: its `sources` argument names the sources
    that workspace searches (config.json may add some or leave built-in ones out)."""
    names = [source.name for source in sources]
    listed = ", ".join(f"{source.name} ({source.label})" if source.label else source.name
                       for source in sources)
    schema = {**SEARCH.input_schema, "properties": {
        **SEARCH.input_schema["properties"],
        "sources": {"type": "array", "items": {"type": "string", "enum": names},
                    "description": f"Only these sources: {listed}."}}}
    return SEARCH._replace(input_schema=schema)


def openai_function(spec: ToolSpec) -> dict:
    """The tool as an OpenAI function schema (what the chat's model is told)."""
    return {"type": "function", "function": {
        "name": spec.name, "description": spec.description, "parameters": spec.input_schema}}


# -- checking arguments --------------------------------------------------------------------

_TYPES = {"string": str, "integer": int, "boolean": bool, "array": list, "object": dict}


def check_arguments(spec: ToolSpec, arguments: object) -> dict[str, Any]:
    """The arguments, checked against the tool's input schema (the subset of JSON Schema the
    specs use), with defaults filled in; a `UsageError` naming the first problem otherwise."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise UsageError("the arguments must be a JSON object")
    schema = spec.input_schema
    properties = schema["properties"]
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        raise UsageError(f"{spec.name} has no argument {unknown[0]!r}; it takes: "
                         f"{', '.join(properties) or 'no arguments'}")
    for name in schema["required"]:
        if arguments.get(name) is None:
            raise UsageError(f"{spec.name} needs the argument {name!r}")
    checked = {}
    for name, rule in properties.items():
        value = arguments.get(name, rule.get("default"))
        if value is not None:
            _check_value(name, value, rule)
        checked[name] = value
    return checked


def _check_value(name: str, value: object, rule: dict) -> None:
    kind = rule["type"]
    ok = isinstance(value, _TYPES[kind]) and not (kind == "integer" and isinstance(value, bool))
    if not ok:
        raise UsageError(f"{name} must be {'an' if kind[0] in 'aeiou' else 'a'} {kind}, "
                         f"not {type(value).__name__}")
    if kind == "array":
        if len(value) > rule.get("maxItems", len(value)):
            raise UsageError(f"{name} has {len(value)} items; it may have {rule['maxItems']} "
                             "at most")
        for item in value:
            _check_value(f"each item of {name}", item, rule["items"])
    if "enum" in rule and value not in rule["enum"]:
        raise UsageError(f"{name} must be one of {', '.join(rule['enum'])}, not {value!r}")
    if kind == "string" and len(value) < rule.get("minLength", 0):
        raise UsageError(f"{name} is empty")
    if kind == "string" and len(value) > rule.get("maxLength", len(value)):
        gist = ": save the gist" if name == "content" else ""
        raise UsageError(f"{name} is {len(value)} characters long; it may have "
                         f"{rule['maxLength']} at most{gist}")
    if kind == "integer" and not rule.get("minimum", value) <= value <= rule.get("maximum", value):
        bounds = (f"between {rule['minimum']} and {rule['maximum']}" if "maximum" in rule
                  else f"at least {rule['minimum']}")
        raise UsageError(f"{name} must be {bounds}, not {value}")


# -- carrying calls out ----------------------------------------------------------------------


class MemoryTools:
    """The tools of one session (a chat, an MCP connection) over one `MemoryStore`."""

    def __init__(self, store, *, writes: WriteBudget | None = None,
                 read_only: bool = False,
                 confirm: Callable[[Any], Awaitable[bool]] | None = None,
                 mode: str = AUTO_MODE) -> None:
        self.store = store
        self.mode = mode  # search_memory's mode when the call names none: the best available
        self.writes = writes if writes is not None else WriteBudget()
        self.read_only = read_only
        self.confirm = confirm  # asks the user about an entry; None: no one to ask
        self._run: dict[str, Callable[[dict], Awaitable[dict]]] = {
            "search_memory": self._search, "add_memory": self._add, "read_memory": self._read,
            "get_context": self._context, "memory_status": self._status,
            "forget_memory": self._forget}

    def specs(self) -> list[ToolSpec]:
        """The tools this session offers (a read-only one offers none that write, and one
        with no user to confirm a removal does not offer forget_memory)."""
        return [self.spec(spec.name) for spec in SPECS.values()
                if not (spec.writes and self.read_only)
                and not (spec is FORGET and self.confirm is None)]

    def spec(self, name: str) -> ToolSpec | None:
        """The tool as this session's workspace offers it (its sources in search_memory);
        a workspace whose source list cannot be read offers the built-in ones, and its
        search reports the problem."""
        if name != SEARCH.name:
            return SPECS.get(name)
        try:
            return search_spec(self.store.sources)
        except MiniclawError:
            return SEARCH

    async def call(self, name: str, arguments: object) -> dict:
        """Carry out one call; a bad call raises a `MiniclawError` saying what to change."""
        spec = self.spec(name)
        if spec is None:
            raise UsageError(f"there is no tool called {name!r}; the tools are: "
                             f"{', '.join(s.name for s in self.specs())}")
        if spec.writes and self.read_only:
            raise UsageError(f"{name} is refused: this memory server is read-only "
                             "(started with --read-only)")
        return await self._run[name](check_arguments(spec, arguments))

    async def _search(self, args: dict) -> dict:
        # The tool's arguments are the search's (search/options.py), days and all
        args["mode"] = args["mode"] or self.mode
        found = await self.store.search(args.pop("query"), **args)
        return found.to_dict(TOOL_WORDING)

    async def _add(self, args: dict) -> dict:
        self.writes.spend()
        try:
            added = await self.store.add(args["content"], long=args["kind"] == "long_term",
                                         category=args["category"], tags=args["tags"] or (),
                                         supersedes=args["supersedes"])
        except MiniclawError:
            self.writes.refund()
            raise
        entry = added.entry
        superseded = ({"superseded": added.superseded.to_dict()}
                      if added.superseded is not None else {})
        if not added.written:  # nothing written: the write is not counted
            self.writes.refund()
            return {"saved": False, "private": False, "entry": entry.to_dict(),
                    "already_remembered": entry.citation, **superseded,
                    "writes_left": self.writes.left}
        return {"saved": True, "private": entry is None,
                "entry": entry.to_dict() if entry else None, **superseded,
                "writes_left": self.writes.left}

    async def _forget(self, args: dict) -> dict:
        from miniclaw.store import forget

        if self.confirm is None:
            raise UsageError("forget_memory is refused: no user is here to confirm it; the "
                             "user can run `miniclaw memory forget CITATION`")
        entry = await forget.find(self.store, args["citation"])
        self.writes.spend()
        try:
            if not await self.confirm(entry):
                raise UsageError(f"the user chose to keep {entry.citation}: it was not removed")
            await forget.forget(self.store, [entry])
        except MiniclawError:
            self.writes.refund()
            raise
        return {"forgotten": True, "entry": entry.to_dict(), "writes_left": self.writes.left}

    async def _read(self, args: dict) -> dict:
        which = args["which"].strip().lower()
        if which in ("long_term", "memory.md"):
            entries = await self.store.read_long_term()
        elif which == "recent":
            days = await self.store.read_recent(args["days"])
            entries = [entry for _, day_entries in days for entry in day_entries]
        else:
            from miniclaw.dates import check_not_future

            today = self.store.today()
            day = _day(which, today, "which")
            entries = await self.store.read_day(check_not_future(
                day, today, flag="which", exists=day > today and self.store.has_note(day)))
        return {"which": which, "entries": [e.to_dict() for e in entries]}

    async def _context(self, args: dict) -> dict:
        from miniclaw.context import ContextBuilder

        built = await ContextBuilder(self.store, mode=self.mode).build(
            args["message"], budget_tokens=args["budget"])
        return built.to_dict()

    async def _status(self, args: dict) -> dict:
        status = await self.store.index_status()
        return {"workspace": str(self.store.workspace), "read_only": self.read_only,
                "writes_left": 0 if self.read_only else self.writes.left,
                "files_on_disk": status.files_on_disk, "files_indexed": status.files,
                "entries": status.entries, "terms": status.terms, "index_path": status.path,
                "index_bytes": status.size_bytes, "updated_at": status.updated_at,
                "up_to_date": status.up_to_date}


def _day(text: str | None, today, flag: str):
    from miniclaw.dates import parse_day

    return parse_day(text, today, flag=flag) if text is not None else None
