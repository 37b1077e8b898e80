"""Privacy, property-based: a word that appears only in private text never comes out.

Each example writes a workspace whose MEMORY.md, daily notes and USER.md mix public lines with
private text in every form the readers must hide: `<private>` blocks (tags alone on lines,
indented, any case, odd spacing, attributes), inline tags, a block opened at the end of a
line, nested blocks (the secret sits between the inner and the outer `</private>`), blocks
never closed or closed by a tag that is not one (`</privat>`: fail closed, everything after
is hidden, "public-looking" lines included), an unfinished `<private` at the end of a line,
annotations and headings inside blocks, tags split by hard wrapping or disguised by invisible
characters and fullwidth forms, and whole files marked `private: true` in their front matter
in any spelling YAML reads so (quoted keys, flow maps, `y`, `!!bool`, BOMs, CR-only lines,
terminated or not, unreadable but naming `private`). The secret word is a fresh nonsense word per example.

Then every way out is checked: stdout and stderr of `read`, `recent`, `rank` (text, JSON,
Markdown, --explain), `status`, `add`, `context` and `chat --once` (the echo model answers
from what the context holds) and the chat transcript, the API's entries and results, log
records, and the bytes of the index (main file and WAL, before and after a checkpoint).
Queries aim at the secret three ways: its prefix with `*` (found if it were indexed), the
word with one letter changed (the spelling fallback would "correct" it into the secret), and
the word itself, whose echo in "Search Results for" / `"query"` is the only place it may
appear.

The other way round, a secret typed inside `<private>` in a query, a context message or a
chat message (in the same forms) is a public word of the memories, so using it would show
it: no search result, echo, hint, error, prompt, model message or short-term turn holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import json
import logging
import os
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import NamedTuple

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from miniclaw.cli import app
from miniclaw.config import index_path
from miniclaw.memory import MemoryStore

# No shrinking: each example runs ~40 commands, and shrinking a failure took over 5 minutes;
# the failing example is printed whole instead.
SETTINGS = dict(deadline=None, derandomize=True, database=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

PUBLIC_WORDS = ["coffee", "atlas", "budget", "lisbon", "flight", "dentist", "garden",
                "meeting", "sam", "report", "bicycle", "piano", "river", "mango"]
# What a reader sees as the tag: invisible characters inside, compatibility forms too.
OPEN_TAGS = ["<private>", "<PRIVATE>", "< private >", "<  Private  >", '<private reason="x">',
             "\t<private>", "   <private>", "<private\t>", "<PrIvAtE>", "<private/>",
             "<pri\u200bvate>", "<\u2060private\u200d>", "\ufeff<priv\u00adate>", "\uff1cprivate\uff1e",
             "<\uff50\uff52\uff49\uff56\uff41\uff54\uff45>", "\ufe64private\u200c>"]
CLOSE_TAGS = ["</private>", "</PRIVATE>", "</ private >", "< / private >", "< /private>",
              "  </private>", "</private >", "</Private foo>", "</private", "</pri\u200cvate>",
              "\uff1c/private\uff1e", "<\ufeff/private>"]
BROKEN_CLOSE = ["</privat>", "</ priv ate >", "<//private>", "</pri vate>", "<private-end>",
                "/private", "<\\private>"]
FRONT_MATTER = [["---", "private: true", "---"], ["---", "Private: TRUE", "title: x", "---"],
                ["---", "private: 'yes'", "..."], ["---", "private: on  # hidden"],
                ["---", "tags: [a]", 'private: "1"', "---"], ["---", '"private": true', "---"],
                ["---", "'private': true", "---"], ["---", "{private: true, title: x}", "---"],
                ["---", "private: !!bool true", "---"], ["---", "private: y", "---"],
                ["---", "note: |", "  ---", "  text", "private: yes", "---"],
                ["\ufeff\ufeff---", "private: true", "---"], ["\u200b---", "Private: On", "---"],
                ["---", "private: true", "title: [not yaml", "---"]]

_secret = st.text(alphabet="bcdfghjkmnprtvwx", min_size=9, max_size=9).map(lambda s: f"zq{s}q")
_pub = st.lists(st.sampled_from(PUBLIC_WORDS), min_size=1, max_size=5).map(" ".join)


@st.composite
def _private_part(draw, secret: str, terminal: bool) -> list[str]:
    """Lines holding the secret only in private text, in one of the forms."""
    o, c = draw(st.sampled_from(OPEN_TAGS)), draw(st.sampled_from(CLOSE_TAGS))
    pub = lambda: draw(_pub)  # noqa: E731
    s_line = lambda: f"{pub()} {secret} {pub()}"  # noqa: E731
    body = draw(st.lists(st.sampled_from([
        "s", "s", "- s", "## s", "## 2026-02-14 s", "<!-- @tag: S -->", "<!-- @category: S -->",
        "## 09:00:00 UTC", "---", "", "  indented s"]), min_size=1, max_size=4))
    lines = [s_line() if b == "s" else b.replace(" s", f" {s_line()}").replace("S", secret)
             for b in body]
    if not any(secret in line for line in lines):  # every form must hold the secret
        lines.append(s_line())
    forms = ["block", "inline", "open-inline", "nested", "nested-inline", "attribute",
             "unfinished", "wrapped"]
    if terminal:
        forms += ["unclosed", "broken-close"]
    form = draw(st.sampled_from(forms))
    if form == "block":
        return [o, *lines, c]
    if form == "inline":
        return [f"- {pub()} {o}{s_line()}{c} {pub()}"]
    if form == "open-inline":  # opened at the end of a public line, closed mid-line later
        return [f"{pub()} {o} {secret}", *lines, f"{secret} {c} {pub()}"]
    if form == "nested":  # the secret between the inner and the outer close is still private
        return [o, pub(), f"{pub()} {o} {secret}", c, s_line(), *lines, c]
    if form == "nested-inline":
        return [f"{pub()} {o}{pub()} {o}{pub()}{c} {secret} {c} {pub()}"]
    if form == "attribute":
        return [f'<private note="{secret}">', *lines, c]
    if form == "unfinished":  # `<private` cut at the end of the line still opens a block
        return [f"{pub()} <private", *lines, "</private>"]
    if form == "wrapped":  # hard wrapping split both tags after their `<`
        return [f"{pub()} <", f"private> {secret}", *lines, f"{secret} <", f"/private> {pub()}"]
    if form == "unclosed":
        return [o, *lines, f"- {s_line()}", "## 2026-02-14", f"- {s_line()}", s_line()]
    broken = draw(st.sampled_from(BROKEN_CLOSE))  # not a closing tag: the block stays open
    return [o, *lines, broken, f"- {s_line()}", "", "## 10:00:00 UTC", "", s_line()]


@st.composite
def _file(draw, secret: str, kind: str) -> str:
    """A MEMORY.md ("long"), daily note ("daily") or identity file ("identity") text."""
    lines = {"long": ["# Memory", ""], "daily": ["# Daily Note", ""], "identity": ["# User", ""]}[kind]
    for i in range(draw(st.integers(1, 4))):
        if kind == "long":
            lines += [f"## 2026-0{i + 1}-1{i}", f"- {draw(_pub)} public entry"]
        elif kind == "daily":
            lines += [f"## 0{i}:00:00 UTC", "", f"{draw(_pub)} public note", "", "---", ""]
        else:
            lines += [f"{draw(_pub)} public fact"]
        if draw(st.booleans()):
            lines += draw(_private_part(secret, terminal=False))
    lines += draw(_private_part(secret, terminal=draw(st.booleans())))  # never closed, maybe
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return newline.join(lines) + newline


@st.composite
def _workspace_files(draw):
    secret = draw(_secret)
    files = {"memory/MEMORY.md": draw(_file(secret, "long")),
             "today": draw(_file(secret, "daily")),
             "yesterday": draw(_file(secret, "daily")),
             "USER.md": draw(_file(secret, "identity"))}
    front = draw(st.sampled_from(FRONT_MATTER))  # a whole note private by its front matter
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))  # "\r": an old Mac editor's
    files["three_days_ago"] = newline.join(front + [
        "", "## 09:00:00 UTC", "", f"{draw(_pub)} {secret} {draw(_pub)}", "- coffee atlas",
        f"<!-- @tag: {secret} -->"]) + newline
    return secret, files


_counter = itertools.count()


def _day(offset: int) -> str:
    return (datetime.now(timezone.utc).date() - timedelta(days=offset)).isoformat()


def _echo_free(text: str, secret: str, query: str) -> str:
    """The output without the places where a search echoes its own query."""
    for echo in (f'"{query}"', f"{secret} →", f"'{secret}'", f'"{secret}"'):
        text = text.replace(echo, "")
    return text


def _json_echo_free(data: dict, secret: str) -> str:
    data = dict(data)
    data.pop("query", None)
    data.pop("message", None)
    data["corrections"] = [c for c in data.get("corrections", []) if c.get("from") != secret]
    data["suggestions"] = [s for s in data.get("suggestions", []) if f"'{secret}'" not in s]
    return json.dumps(data, ensure_ascii=False)


def _index_bytes(ws: Path) -> dict[str, bytes]:
    path = index_path(ws)
    found = {s: Path(f"{path}{s}").read_bytes() for s in ("", "-wal") if Path(f"{path}{s}").exists()}
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    found.update({f"{s} after checkpoint": Path(f"{path}{s}").read_bytes()
                  for s in ("", "-wal") if Path(f"{path}{s}").exists()})
    return found


@settings(max_examples=25, **SETTINGS)
@given(example=_workspace_files(), shape=st.sampled_from(["plain", "crlf-bom"]))
def test_private_words_never_leave_through_any_door(tmp_path, caplog, example, shape):
    secret, texts = example
    ws = tmp_path / f"ws{next(_counter)}"
    (ws / "memory").mkdir(parents=True)
    names = {"memory/MEMORY.md": "memory/MEMORY.md", "USER.md": "USER.md",
             "today": f"memory/{_day(0)}.md", "yesterday": f"memory/{_day(1)}.md",
             "three_days_ago": f"memory/{_day(3)}.md"}
    for key, text in texts.items():
        raw = text.encode("utf-8")
        if shape == "crlf-bom" and key != "three_days_ago":
            raw = b"\xef\xbb\xbf" + text.replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-8")
        (ws / names[key]).write_bytes(raw)
    for text in texts.values():
        assert secret in text  # the secret is in every file, to be leaked...

    runner = CliRunner()
    outputs: list[tuple[str, str]] = []  # (what ran, its output without query echoes)

    def run(*args: str, query: str | None = None, parse_json: bool = False) -> None:
        result = runner.invoke(app, ["--workspace", str(ws), *args])
        assert "Traceback" not in result.stdout + result.stderr
        out = result.stdout
        if result.exit_code == 1 and args[:2] == ("memory", "add"):
            # Refused: the file ends inside a block never closed (the text would be hidden).
            assert "never closed" in result.stderr and out == "", result.stderr
            parse_json = False
        else:
            assert result.exit_code == 0, (args, result.stdout, result.stderr)
        if parse_json:
            out = _json_echo_free(json.loads(out), secret)
        if query is not None:
            out = _echo_free(out, secret, query)
        outputs.append((" ".join(args), out + _echo_free(result.stderr, secret, query or "")))

    caplog.set_level(logging.DEBUG, logger="miniclaw")
    run("memory", "read", "--long")
    run("memory", "read", "--long", "--json")
    run("memory", "read")
    run("memory", "read", "--date", _day(1), "--json")
    run("memory", "read", "--date", _day(3))
    run("memory", "recent", "-d", "7")
    run("memory", "recent", "-d", "7", "--json")
    typo = secret[:-2] + ("b" if secret[-2] != "b" else "c") + secret[-1]
    queries = ["coffee atlas budget", f"{secret[:4]}*", typo, secret, f"{secret} coffee"]
    for query in queries:
        run("memory", "rank", f"--query={query}", "--all", "--json", query=query, parse_json=True)
    for query in queries[1:4]:
        run("memory", "rank", f"--query={query}", "--all", query=query)
    for query in queries[0], queries[2], queries[4]:
        run("memory", "rank", f"--query={query}", "--all", "--format", "markdown", "--explain",
            query=query)
    run("memory", "status")
    run("memory", "status", "--json")
    run("memory", "add", "--long", "--json", f"garden <private>{secret}</private> visible",
        query=f"garden <private>{secret}</private> visible")
    run("memory", "add", "--json", f"piano <private>{secret}</private> lesson",
        query=f"piano <private>{secret}</private> lesson")
    run("context", "-q", "coffee atlas budget garden piano", "--json", parse_json=True)
    run("context", "-q", f"what is {secret}?", query=f"what is {secret}?")
    run("chat", "--once", "tell me about coffee, atlas and the budget")
    result = runner.invoke(app, ["--workspace", str(ws), "chat"], input=(
        f"/search {secret[:4]}*\n/search {typo}\nwhat about garden and piano?\n/context\n/exit\n"))
    assert result.exit_code == 0 and "Traceback" not in result.stdout + result.stderr, result.stderr
    outputs.append(("chat (piped)", result.stdout + result.stderr))

    for what, out in outputs:
        assert secret not in out, (what, out)
    for record in caplog.records:
        assert secret not in record.getMessage(), record.getMessage()

    # The API: entries, results and the context builder's parts.
    async def api() -> list[str]:
        from miniclaw.context import ContextBuilder

        seen = []
        async with MemoryStore(ws) as store:
            seen += [e.text for e in await store.read_long_term()]
            for offset in (0, 1, 3):
                day = datetime.now(timezone.utc).date() - timedelta(days=offset)
                seen += [e.text + " ".join(e.tags) + (e.category or "")
                         for e in await store.read_day(day)]
            for query in (f"{secret[:5]}*", "coffee atlas"):
                found = await store.search(query, limit=20, days=None)
                seen += [h.content + h.excerpt + " ".join(h.tags) for h in found.results]
                seen += [f"{a}{b}" for a, b in found.corrections] + list(found.suggestions)
            built = await ContextBuilder(store).build("coffee atlas budget garden")
            seen.append(built.render())
        return seen

    for text in asyncio.run(api()):
        assert secret not in text, text

    # The chat transcript and the index file's bytes.
    for transcript in (ws / "sessions").glob("*.jsonl"):
        assert secret not in transcript.read_text(encoding="utf-8")
    for name, raw in _index_bytes(ws).items():
        assert secret.encode() not in raw and secret[:8].encode() not in raw, name


def test_text_that_became_private_leaves_the_index(tmp_path):
    """A line indexed while public, then wrapped in <private> by hand, must not linger in
    the index file (deleted rows are zeroed, the WAL checkpointed)."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    note = ws / f"memory/{_day(0)}.md"
    public = "# Daily Note\n\n## 09:00:00 UTC\n\nmet zqxwvtkrbq about the atlas budget\n"
    note.write_text(public, encoding="utf-8")
    runner = CliRunner()
    found = runner.invoke(app, ["--workspace", str(ws), "memory", "rank", "-q", "zqxwvtkrbq", "--json"])
    assert json.loads(found.stdout)["total"] == 1
    note.write_text(public.replace("met zqxwvtkrbq about", "met <private>zqxwvtkrbq</private> about"),
                    encoding="utf-8")
    again = runner.invoke(app, ["--workspace", str(ws), "memory", "rank", "-q", "atlas", "--json"])
    assert again.exit_code == 0 and "zqxwvtkrbq" not in again.stdout
    for name, raw in _index_bytes(ws).items():
        assert b"zqxwvtkrbq" not in raw, name


# -- transcripts edited in place --------------------------------------------------------------

def _record(content: str, n: int) -> bytes:
    return (json.dumps({"role": "user" if n % 2 else "assistant", "content": content,
                        "session_id": "s1", "timestamp": f"2026-02-1{n % 9}T09:00:00Z"})
            + "\n").encode("utf-8")


def _in_json(tag: str) -> bytes:
    """A tag as a JSON writer puts it inside a string (quotes and tabs escaped)."""
    return json.dumps(tag, ensure_ascii=False)[1:-1].encode("utf-8")


class _Edit(NamedTuple):
    """A transcript holding a secret, and an edit in place that hides it (small to print:
    the bytes are made by `_edited`)."""

    secret: str
    count: int  # records
    where: int  # the secret's record
    public: tuple[str, ...]
    how: str  # "masked", "tagged" or "tagged-unclosed"
    mask: str
    tags: tuple[str, str]
    appended: str | None  # a record appended after the edit


@st.composite
def _same_size_edits(draw) -> _Edit:
    """The secret hidden by an edit that keeps the file's size, at the start, in the middle
    or at the end of a short or a long transcript (over the 64 KB hashed at either end of
    what was indexed)."""
    count = draw(st.sampled_from([3000, 40, 3000, 3]))  # 3,000 records: ~360 KB
    return _Edit(draw(_secret), count, (count - 1) * draw(st.integers(0, 4)) // 4,
                 tuple(draw(st.lists(_pub, min_size=1, max_size=5))),
                 draw(st.sampled_from(["masked", "tagged", "tagged-unclosed"])),
                 draw(st.sampled_from(["*", "x", "#", "-"])),
                 (draw(st.sampled_from(OPEN_TAGS)), draw(st.sampled_from(CLOSE_TAGS))),
                 draw(st.none() | _pub))


def _edited(edit: _Edit) -> tuple[bytes, bytes, bytes]:
    """(the transcript, the same bytes edited in place, bytes appended after the edit)."""
    pad = "x" * 60  # room to delete as many characters as the tags add
    records = [_record(f"{edit.public[n % len(edit.public)]} public message {n} {pad}", n)
               for n in range(edit.count)]
    records[edit.where] = _record(f"{edit.public[0]} {edit.secret} now {pad}", edit.where)
    old = b"".join(records)
    start = sum(map(len, records[:edit.where]))
    line, secret = records[edit.where], edit.secret.encode()
    if edit.how == "masked":  # a password overwritten with asterisks (or other letters)
        edited = line.replace(secret, edit.mask.encode() * len(secret))
    else:  # wrapped in tags, and as many characters deleted from the padding after it
        tagged = _in_json(edit.tags[0]) + secret + (
            _in_json(edit.tags[1]) if edit.how == "tagged" else b"")
        edited = line.replace(secret, tagged).replace(
            pad.encode(), pad.encode()[:len(pad) - (len(tagged) - len(secret))])
    assert len(edited) == len(line)
    appended = b"" if edit.appended is None else _record(f"{edit.appended} later", edit.count)
    return old, old[:start] + edited + old[start + len(line):], appended


@settings(max_examples=20, **SETTINGS)
@given(example=_same_size_edits())
def test_a_transcript_edited_in_place_to_hide_a_word_never_shows_it_again(tmp_path, example):
    """Issue 37: a same-size edit of a transcript (the index took it for an append of
    nothing) kept serving the old words. Whatever the edit, the file's length and where
    the secret sits, and with or without an append after it, no search shows the secret
    and no row of the index holds it."""
    secret, (old, new, appended) = example.secret, _edited(example)
    ws = tmp_path / f"edited{next(_counter)}"
    (ws / "memory").mkdir(parents=True)
    (ws / "sessions").mkdir()
    path = ws / "sessions" / "s1.jsonl"
    path.write_bytes(old)
    hour_ago = (datetime.now(timezone.utc) - timedelta(hours=1)).timestamp()
    os.utime(path, (hour_ago, hour_ago))
    runner = CliRunner()

    def found(*args: str) -> str:
        result = runner.invoke(app, ["--workspace", str(ws), *args, "--json"])
        assert result.exit_code == 0, (args, result.stdout, result.stderr)
        data = json.loads(result.stdout)
        return json.dumps([data.get("results"), data.get("sessions")], ensure_ascii=False)

    assert secret in found("search", secret, "--all")  # indexed before the edit
    with open(path, "r+b") as handle:  # in place: same inode, same size
        handle.write(new)
    if appended:
        with open(path, "ab") as handle:
            handle.write(appended)
    for args in (("search", secret, "--all"), ("search", f"{secret[:5]}*", "--all"),
                 ("sessions", "search", secret)):
        assert secret not in found(*args), args
    # Every row of the index, not its file's bytes: SQLite may keep a stale copy of a row
    # it moved in a page's unused space, which secure_delete does not zero (RELIABILITY).
    with contextlib.closing(sqlite3.connect(index_path(ws))) as conn:
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master"
                                                   " WHERE type = 'table'")]
        for table in tables:
            for row in conn.execute(f"SELECT * FROM {table}"):
                assert secret not in repr(row) and secret.encode() not in repr(row).encode(), table


# -- what a person types: a query, a context message, a chat message -------------------------

_TYPED_FORMS = ["inline", "unclosed", "broken-close", "block", "wrapped", "alone"]


@st.composite
def _typed(draw, secret: str) -> str:
    """A query or message holding the secret only inside a private part, in one form."""
    o, c = draw(st.sampled_from(OPEN_TAGS)), draw(st.sampled_from(CLOSE_TAGS))
    before, after = draw(_pub), draw(_pub)
    form = draw(st.sampled_from(_TYPED_FORMS))
    if form == "inline":
        return f"{before} {o}{draw(_pub)} {secret}{c} {after}"
    if form == "unclosed":  # hides the rest of the text: fail closed
        return f"{before} {o} {secret} {after}"
    if form == "broken-close":  # not a closing tag: still open
        return f"{before} {o}{secret}{draw(st.sampled_from(BROKEN_CLOSE))} {after}"
    if form == "block":
        return f"{before}\n{o}\n{secret}\n{c}\n{after}"
    if form == "wrapped":  # `<` at the end of a line, the tag's name on the next
        return f"{before} <\nprivate> {secret} <\n/private> {after}"
    return f"{o}{secret}{c}"  # all of it private: an empty query, an unsent message


@settings(max_examples=20, **SETTINGS)
@given(data=st.data())
def test_private_words_typed_in_a_query_or_message_never_come_out(tmp_path, data):
    """The secret is a public word of the memories, so a search that used it would find
    and show it: whatever the form of its private part, no result, echo, hint, error,
    prompt, model message or short-term turn holds it."""
    from miniclaw.chat.echo import EchoProvider
    from miniclaw.chat.loop import ChatSession
    from miniclaw.cli.render import Style, search_text
    from miniclaw.context import ContextBuilder
    from miniclaw.errors import UsageError
    from miniclaw.entries.privacy import visible_typed

    secret = data.draw(_secret)
    typed = [data.draw(_typed(secret)) for _ in range(3)]
    ws = tmp_path / f"typed{next(_counter)}"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / f"{_day(5)}.md").write_text(
        f"# Daily Note\n\n## 09:00:00 UTC\n\nthe {secret} is here\n\n---\n\n"
        f"## 10:00:00 UTC\n\n{' '.join(PUBLIC_WORDS)}\n", encoding="utf-8")

    async def every_way_out() -> list[str]:
        seen = []
        async with MemoryStore(ws) as store:
            for text in typed:
                try:
                    found = await store.search(text, days=None, mode="bm25")
                except UsageError as exc:
                    seen.append(f"{exc} {exc.query}")
                else:
                    seen += [json.dumps(found.to_dict(), ensure_ascii=False),
                             search_text(found, Style(False)), " ".join(found.suggestions)]
                try:  # a message left empty is refused, its error the text it holds
                    built = await ContextBuilder(store, mode="bm25").build(text)
                except UsageError as exc:
                    seen.append(str(exc))
                else:
                    seen.append(json.dumps(built.to_dict(), ensure_ascii=False))
        out, err = io.StringIO(), io.StringIO()
        chat = ChatSession.open(ws, EchoProvider(), out=out, err=err, mode="bm25",
                                format_search=lambda found: search_text(found, Style(False)))
        sent = []
        original = chat.provider.stream

        def stream(request):
            sent.append(json.dumps(request.messages, ensure_ascii=False))
            return original(request)

        chat.provider.stream = stream
        try:
            for text in typed:
                await chat.handle(text)
                await chat.handle(f"/search {text}")
            await chat.handle("/context")
            seen += [turn.content for turn in chat.store.short_term]
        finally:
            await chat.aclose()
        return seen + sent + [out.getvalue(), err.getvalue()]

    running = os.environ.get("MINICLAW_SESSION_ID")  # ChatSession.open sets it
    try:
        seen = asyncio.run(every_way_out())
    finally:
        os.environ.pop("MINICLAW_SESSION_ID", None)
        if running is not None:
            os.environ["MINICLAW_SESSION_ID"] = running
    for text in seen:
        assert secret not in text, (typed, text)
    # The transcript, the person's own file, keeps each message sent as it was typed.
    transcript = "".join(p.read_text(encoding="utf-8") for p in (ws / "sessions").glob("*.jsonl"))
    for text in typed:
        if visible_typed(text.strip()):
            assert json.dumps(text.strip(), ensure_ascii=False)[1:-1] in transcript
