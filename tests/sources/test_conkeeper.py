"""ConKeeper's memory as a source (issue 14, item 2): the shared fixtures through the public
API and the CLI, its privacy rules exactly, its dates, categories and superseded ADRs, and
freshness under the root. The fixtures are copied into tmp_path (never written in place)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniclaw.errors import UsageError
from miniclaw.memory import MemoryStore
from miniclaw.sources.base import SOURCES, configured_sources, read_entries
from miniclaw.sources.conkeeper import ConKeeperSource, redact
from tests.conftest import NOW
from tests.entries import test_privacy as privacy_cases
from tests.formats import FORMAT_FIXTURES

FIXTURES = FORMAT_FIXTURES / "conkeeper"

# What the fixtures keep private: none of it may come out of any search.
PRIVATE_TEXTS = ("sk-test-7f3a91c0", "OS keychain", "paper notebook", "contract renewal",
                 "example secret line", "telemetry.internal", "miniclaw-search",
                 "never closed")
EMPTY_QUERIES = ("sk-test", "keychain", "Bank PIN", "contract", "code fence")


def _copy(tmp_path: Path) -> Path:
    """The fixture folders, copied with fresh times (session files count as recent)."""
    target = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, target, copy_function=shutil.copy)
    return target


def _memory(tmp_path: Path) -> Path:
    return _copy(tmp_path) / "project" / ".claude" / "memory"


def _store(workspace: Path, root: Path, **settings) -> MemoryStore:
    source = ConKeeperSource(root=str(root), **settings)
    return MemoryStore(workspace, sources=(*SOURCES, source), roots=[str(root)], now=lambda: NOW)


def _configure(home: Path, workspace: Path, *items: dict) -> None:
    (home / ".miniclaw").mkdir(exist_ok=True)
    (home / ".miniclaw" / "config.json").write_text(json.dumps({"workspaces": {str(workspace): {
        "sources": ["long_term", "daily_note", *items]}}}), encoding="utf-8")


async def _search(store: MemoryStore, query: str, **arguments) -> list:
    return await store.search_memories(query, days=None, limit=20, **arguments)


def _cli(workspace: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miniclaw", "-w", str(workspace), *args],
                          capture_output=True, text=True, env=os.environ.copy(), timeout=120)


# -- through the public API -----------------------------------------------------------

async def test_a_configured_conkeeper_store_is_searched_alongside_memory(tmp_path, workspace, isolated_home):
    root = _memory(tmp_path)
    (workspace / "memory" / "MEMORY.md").write_text("# Memory\n\n- FTS5 notes in MEMORY.md\n",
                                                     encoding="utf-8")
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": str(root), "name": "app"})
    store = MemoryStore(workspace, now=lambda: NOW)
    try:
        results = await _search(store, "FTS5")
        sources = {r.source for r in results}
        assert sources == {"long_term", "app"}
        only = await _search(store, "FTS5", sources=["app"])
        assert only and {r.source for r in only} == {"app"}
        cited = {r.path.removeprefix(str(root) + "/") + f":{r.line_start}" for r in only}
        assert "active-context.md:8" in cited
        assert "decisions/ADR-002-sqlite-fts5.md:4" in cited
    finally:
        store.close()


async def test_category_filter_matches_the_tools_expected_output(tmp_path, workspace):
    """expected/search--category-decision-FTS5.txt: active-context.md:8 and ADR-002:4."""
    root = _memory(tmp_path)
    store = _store(workspace, root)
    try:
        found = {(r.path.removeprefix(str(root) + "/"), r.line_start)
                 for r in await _search(store, "fts5", category="decision")}  # any case
    finally:
        store.close()
    assert found == {("active-context.md", 8), ("decisions/ADR-002-sqlite-fts5.md", 4)}


async def test_sessions_only_when_configured_as_in_the_tools_expected_output(tmp_path, workspace):
    """expected/search--sessions-FTS5.txt: with sessions, the session summary's line 11 too."""
    root = _memory(tmp_path)
    for sessions, expect in ((False, set()), (True, {11})):
        store = _store(workspace, root, sessions=sessions, name=f"ck{sessions}")
        try:
            lines = {line for r in await _search(store, "FTS5") if "/sessions/" in r.path
                     for line in range(r.line_start, r.line_end + 1)}
        finally:
            store.close()
        assert lines & {11} == expect
    expected = (FIXTURES / "expected" / "search--sessions-FTS5.txt").read_text(encoding="utf-8")
    assert "sessions/2026-02-10-search-refactor.md" in expected and "**Line 11:**" in expected


async def test_session_files_older_than_30_days_are_left_out(tmp_path, workspace):
    root = _memory(tmp_path)
    old = time.time() - 31 * 86400
    os.utime(root / "sessions" / "2026-02-10-search-refactor.md", (old, old))
    store = _store(workspace, root, sessions=True)
    try:
        paths = {r.path for r in await _search(store, "refactored ranker fts5 transcript")}
    finally:
        store.close()
    assert not any("search-refactor" in path for path in paths)
    assert any("observations" in path for path in _entries_paths(root, sessions=True))


def _entries_paths(root: Path, **settings) -> set[str]:
    source = ConKeeperSource(root=str(root), **settings)
    return {found.path for found in source.files(root)}


@pytest.mark.parametrize("query", EMPTY_QUERIES)
async def test_the_fixtures_private_queries_find_nothing(tmp_path, workspace, query):
    """As ConKeeper reads a query (one literal phrase) nothing is found; as miniclaw reads it
    (any of its words), no result holds private text."""
    copied = _copy(tmp_path)
    root, home = copied / "project" / ".claude" / "memory", copied / "home" / ".claude" / "memory"
    sources = (*SOURCES, ConKeeperSource(root=str(root), sessions=True),
               ConKeeperSource(root=str(home), name="global"))
    store = MemoryStore(workspace, sources=sources, roots=[str(root), str(home)], now=lambda: NOW)
    try:
        assert await _search(store, f'"{query}"') == []
        for result in await _search(store, query):
            assert not any(secret in result.content for secret in PRIVATE_TEXTS)
    finally:
        store.close()


def test_every_entry_leaves_out_the_private_text_and_keeps_the_rest(tmp_path):
    copied = _copy(tmp_path)
    everything = []
    for root in (copied / "project" / ".claude" / "memory", copied / "home" / ".claude" / "memory"):
        source = ConKeeperSource(root=str(root), sessions=True)
        for found in source.files(tmp_path):
            text = Path(found.absolute).read_text(encoding="utf-8")
            everything += read_entries(source, text, found.path)
    texts = "\n".join(entry.text for entry in everything)
    assert not any(secret in texts for secret in PRIVATE_TEXTS)
    assert "Nothing else blocking" in texts  # after a closed block
    assert "External sources get a 2s timeout" in texts  # after an indented block
    assert "runs offline" in texts or "Must run offline" in texts  # `private: trueish`
    assert "ripgrep over grep" in texts  # the global preferences
    assert not any(entry.path.endswith("personal.md") for entry in everything)  # True, CRLF
    assert not any("ADR-003" in entry.path for entry in everything)  # private: true
    assert not any("Last updated" in entry.text or "Session:" in entry.text for entry in everything)


def test_categories_tags_dates_and_superseded_adrs(tmp_path):
    root = _memory(tmp_path)
    source = ConKeeperSource(root=str(root), sessions=True)
    entries = {}
    for found in source.files(tmp_path):
        text = Path(found.absolute).read_text(encoding="utf-8")
        for entry in read_entries(source, text, found.path):
            entries[(found.path.rsplit("memory/", 1)[1], entry.line_start)] = entry
    keyword = entries[("active-context.md", 8)]
    assert (keyword.category, keyword.tags, str(keyword.date)) == ("decision", ("search",), "2026-02-11")
    assert entries[("patterns.md", 10)].tags == ("search-sources",)
    correction = entries[("corrections-queue.md", 4)]
    assert (str(correction.date), correction.time) == ("2026-02-11", "09:20:11")
    observed = entries[("sessions/2026-02-11-observations.md", 4)]
    assert (str(observed.date), observed.time) == ("2026-02-11", "09:14:02")
    adr1 = entries[("decisions/ADR-001-rg-jq-transcript-index.md", 4)]
    adr2 = entries[("decisions/ADR-002-sqlite-fts5.md", 12)]
    assert (adr1.meta["adr_status"], str(adr1.date), adr1.category) == ("Superseded", "2026-01-20", "decision")
    assert (adr2.meta["adr_status"], str(adr2.date)) == ("Accepted", "2026-02-03")
    assert str(entries[("sessions/2026-02-10-search-refactor.md", 10)].date) == "2026-02-10"
    assert str(entries[("glossary.md", 10)].date) == "2026-02-01"  # footer


# -- privacy: ConKeeper's rules exactly, on top of miniclaw's ----------------------------

@pytest.mark.parametrize("text, hidden", [
    ("---\nprivate: true\n---\nsecret\n", True),
    ("---\r\nprivate: True\r\n---\r\nsecret\r\n", True),
    ("\ufeff---\nprivate: 'true'\n---\nsecret\n", True),
    ('---\ntitle: x\nprivate: "TRUE"\n---\nsecret\n', True),
    ("---\nprivate: trueish\n---\nsecret\n", False),
    ("# Title\nprivate: true\nsecret\n", False),  # not front matter
    ("---\ntitle: x\n---\nprivate: true\nsecret\n", False),  # in the body
])
def test_front_matter_privacy_is_conkeepers(text, hidden):
    source = ConKeeperSource(root="/x")
    texts = " ".join(entry.text for entry in read_entries(source, text, "/x/a.md"))
    assert ("secret" not in texts) == hidden


def test_a_tag_opened_in_the_front_matter_hides_the_body_up_to_its_close(tmp_path, workspace,
                                                                          isolated_home):
    """`title: Notes <private>` in a ConKeeper file's front matter, closed in the body: the
    reader blanked the front matter before the tag rules ran, so the text the tag hides was
    searched (the same file as a miniclaw memory file was hidden). Tags are read on the
    whole file first, in every format."""
    root = tmp_path / "ck" / ".claude" / "memory"
    root.mkdir(parents=True)
    text = ("---\ntitle: Notes <private>\n---\n\n- The vault code is 7-2-9 marmoset\n\n"
            "</private>\n\n- The harbour ferry leaves at noon marmoset\n")
    (root / "notes.md").write_text(text, encoding="utf-8")
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": str(root)})
    run = _cli(workspace, "memory", "rank", "-q", "marmoset", "--json", "--days", "36500")
    assert run.returncode == 0, run.stderr
    assert [r["content"] for r in json.loads(run.stdout)["results"]] == [
        "The harbour ferry leaves at noon marmoset"]
    assert "vault" not in run.stdout
    entries = read_entries(SOURCES[0], text, "memory/MEMORY.md")  # as a miniclaw file
    assert "vault" not in " ".join(e.text for e in entries)


@pytest.mark.parametrize("lines", [
    ["<private>", "secret", "</private>", "shown"],
    ["   <private>", "secret", "\t</private>", "shown"],
    ["<private>inline</private> secret", "secret", "</private>", "shown"],
    ["```", "<private>", "secret", "</private>", "```", "shown"],
    ["shown", "<private>", "secret", "<!-- @category: secretcat -->"],
])
def test_block_privacy_is_conkeepers(lines):
    source = ConKeeperSource(root="/x")
    entries = read_entries(source, "\n".join(lines), "/x/a.md")
    assert "shown" in " ".join(entry.text for entry in entries)
    assert not any("secret" in entry.text or entry.category == "secretcat" for entry in entries)
    assert all("secret" not in line for line in redact("\n".join(lines)).split("\n"))


SECRET = "zebrasecret"
_PLAIN = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30).filter(
    lambda s: "private" not in s.lower() and "---" not in s and "<" not in s)
_OPEN = st.sampled_from(["<private>", "  <private>", "\t<private>", "<private>x</private>",
                         "<private> trailing"])
_CLOSE = st.sampled_from(["</private>", "  </private>", "</private> after"])


_FRONT_OPEN = st.sampled_from(["<private>", "< PRIVATE >", '<private reason="x">', "<private"])


@st.composite
def _conkeeper_file(draw):
    """A ConKeeper file of plain lines, private blocks (some left open) and, sometimes, a
    front matter saying `private: true` in one of its spellings, or a front matter that
    opens a `<private>` in a value (`title: Notes <private>`), closed in the body or never:
    the secret follows it, in the front matter or in the body (issue 37)."""
    lines: list[str] = []
    front = draw(st.sampled_from(["none", "private", "tag"]))
    if front == "private":
        flag = draw(st.sampled_from(["true", "True", "'true'", '"TRUE"']))
        lines += ["---", f"private: {flag}", "---", SECRET]
    elif front == "tag":
        key = draw(st.sampled_from(["title", "tags", "summary", "Notes"]))
        lines += ["---", f"{key}: {draw(_PLAIN)} {draw(_FRONT_OPEN)}"]
        lines += draw(st.sampled_from([[], [f"  {SECRET}"], [f"other: {SECRET}"]]))
        lines += ["---", "- " + draw(_PLAIN) + SECRET + draw(_PLAIN)]
        lines += draw(st.sampled_from([[], [draw(_CLOSE)], [f"- {SECRET}", draw(_CLOSE)]]))
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["plain", "block", "open", "category"]))
        if kind == "plain":
            lines.append("- " + draw(_PLAIN))
        elif kind == "category":
            lines += [draw(_OPEN), "- " + SECRET, f"<!-- @category: {SECRET} -->", draw(_CLOSE)]
        else:
            lines += [draw(_OPEN), draw(_PLAIN) + SECRET + draw(_PLAIN)]
            lines += [draw(_CLOSE)] if kind == "block" else []
    if draw(st.booleans()):
        lines = [line + "\r" for line in lines]
    return "\n".join(lines)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_conkeeper_file())
def test_private_text_never_reaches_a_conkeeper_entry(text):
    """The privacy property of tests/entries/test_privacy.py, over this source."""
    entries = read_entries(ConKeeperSource(root="/x"), text, "/x/decisions/ADR-001-x.md")
    entries += read_entries(ConKeeperSource(root="/x"), text, "/x/notes.md")
    for entry in entries:
        assert SECRET not in entry.text
        assert SECRET not in (entry.category or "") and SECRET not in " ".join(entry.tags)
        assert SECRET not in json.dumps(dict(entry.meta))


# -- freshness -------------------------------------------------------------------------

async def test_an_edit_a_new_file_and_a_deleted_file_are_seen_by_the_next_search(tmp_path, workspace):
    root = _memory(tmp_path)
    store = _store(workspace, root)
    try:
        assert await _search(store, "FTS5")
        patterns = root / "patterns.md"
        patterns.write_text(patterns.read_text(encoding="utf-8") + "\n- Quokka caching layer\n",
                            encoding="utf-8")
        assert [r.path for r in await _search(store, "quokka")] == [f"{root}/patterns.md"]
        (root / "decisions" / "ADR-004-wombat.md").write_text(
            "# ADR-004: Wombat storage\n\n**Status:** Accepted | **Date:** 2026-02-12\n",
            encoding="utf-8")
        found = await _search(store, "wombat")
        assert [(r.path, str(r.date)) for r in found] == [
            (f"{root}/decisions/ADR-004-wombat.md", "2026-02-12")]
        (root / "decisions" / "ADR-002-sqlite-fts5.md").unlink()
        assert not any("ADR-002-sqlite" in r.path for r in await _search(store, "FTS5"))
    finally:
        store.close()


# -- configuration ------------------------------------------------------------------------

def test_configured_kinds_build_their_sources_and_allow_their_roots(tmp_path, workspace, isolated_home):
    root = _memory(tmp_path)
    _configure(isolated_home, workspace,
               {"kind": "conkeeper", "root": str(root)},
               {"kind": "conkeeper", "root": "~/.claude/memory", "name": "global", "sessions": True})
    sources, roots = configured_sources(workspace)
    assert [s.name for s in sources] == ["long_term", "daily_note", "conkeeper", "global"]
    assert sources[3].sessions is True and sources[2].sessions is False
    assert set(roots) == {str(root), "~/.claude/memory"}


@pytest.mark.parametrize("item, words", [
    ({"kind": "zettel", "root": "/x"}, "unknown kind"),
    ({"kind": "conkeeper"}, '"root"'),
    ({"kind": "conkeeper", "root": "/x", "sessions": "yes"}, "'sessions'"),
    ({"kind": "conkeeper", "root": "/x", "colour": "red"}, "'colour'"),
    ({"kind": "conkeeper", "root": "/x", "name": ""}, "'name'"),
])
def test_a_bad_configured_source_is_one_usage_error_naming_the_file_and_item(
        workspace, isolated_home, item, words):
    _configure(isolated_home, workspace, item)
    with pytest.raises(UsageError) as raised:
        configured_sources(workspace)
    message = str(raised.value)
    assert "config.json" in message and words in message
    assert json.dumps(item) in message


def test_two_sources_of_one_name_are_a_usage_error(workspace, isolated_home):
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": "/a"},
               {"kind": "conkeeper", "root": "/b"})
    with pytest.raises(UsageError, match="two named 'conkeeper'"):
        configured_sources(workspace)


# -- through the CLI -----------------------------------------------------------------------

def test_the_cli_searches_a_configured_store_and_hides_its_private_text(tmp_path, workspace, isolated_home):
    root = _memory(tmp_path)
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": str(root), "name": "app"})
    done = _cli(workspace, "memory", "rank", "FTS5", "--all", "--category", "decision", "--json")
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["results"]
    assert {(r["source"], r["path"].removeprefix(str(root) + "/"), r["line_start"]) for r in results} == {
        ("app", "active-context.md", 8), ("app", "decisions/ADR-002-sqlite-fts5.md", 4)}
    for query in EMPTY_QUERIES:
        done = _cli(workspace, "memory", "rank", f'"{query}"', "--all", "--json")
        assert done.returncode == 0 and json.loads(done.stdout)["total"] == 0, done.stderr
        done = _cli(workspace, "memory", "rank", query, "--all", "--limit", "20")
        assert not any(secret in done.stdout + done.stderr for secret in PRIVATE_TEXTS)
    done = _cli(workspace, "memory", "rank", "FTS5", "--source", "nope")
    assert done.returncode == 2 and "app" in done.stderr and "Traceback" not in done.stderr


def test_the_cli_reads_a_query_as_conkeeper_does_with_phrase(tmp_path, workspace, isolated_home):
    """ConKeeper's drop-in (docs/sources.md): `--phrase` reads the query as its script does, one
    literal phrase (ignoring case), so the fixture's private queries find nothing at all, over
    the project store with its sessions and the global store."""
    copied = _copy(tmp_path)
    root, home = copied / "project" / ".claude" / "memory", copied / "home" / ".claude" / "memory"
    _configure(isolated_home, workspace,
               {"kind": "conkeeper", "root": str(root), "name": "app", "sessions": True},
               {"kind": "conkeeper", "root": str(home), "name": "global"})
    for query in EMPTY_QUERIES:
        done = _cli(workspace, "search", query, "--phrase", "--all", "--format", "markdown")
        assert done.returncode == 0, done.stderr
        assert "Found 0 matches across 0 files." in done.stdout
        assert not any(secret in done.stdout + done.stderr for secret in PRIVATE_TEXTS)
    done = _cli(workspace, "search", "sqlite FTS5", "--phrase", "--all", "--json")
    found = {(r["source"], r["line_start"]) for r in json.loads(done.stdout)["results"]}
    assert ("app", 8) in found, done.stdout  # "Keyword index uses SQLite FTS5"
    done = _cli(workspace, "search", "FTS5 sqlite", "--phrase", "--all", "--json")
    assert json.loads(done.stdout)["total"] == 0, done.stdout  # a phrase keeps its order


def test_a_table_gives_one_entry_per_row_without_its_rule(tmp_path):
    root = _memory(tmp_path)
    source = ConKeeperSource(root=str(root))
    text = (root / "decisions" / "INDEX.md").read_text(encoding="utf-8")
    rows = [(e.line_start, e.line_end, e.text[:9]) for e in read_entries(source, text, "INDEX.md")
            if e.text.startswith("|")]
    assert rows == [(8, 8, "| # | Tit"), (10, 10, "| ADR-001"), (11, 11, "| ADR-002")]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(privacy_cases._segment(), min_size=1, max_size=12), st.booleans())
def test_miniclaws_own_privacy_property_holds_over_this_source_too(segments, leave_open):
    """tests/entries/test_privacy.py's generator (every spelling of miniclaw's tags), through
    the ConKeeper source: its rules come on top of miniclaw's, never instead."""
    lines = [line for segment in segments for line in segment]
    if leave_open:
        lines += ["<private>", privacy_cases.SECRET]
    for path in ("/x/notes.md", "/x/decisions/ADR-001-x.md", "/x/sessions/2026-02-10-x.md"):
        for entry in read_entries(ConKeeperSource(root="/x"), "\n".join(lines), path):
            assert "zebrasecret" not in entry.text


def _expected_hits(name: str) -> set[tuple[str, int]]:
    """(root-relative file, line) of each hit in one of the tool's expected outputs."""
    return _markdown_hits((FIXTURES / "expected" / name).read_text(encoding="utf-8"))


def _markdown_hits(output: str, root: str = "") -> set[tuple[str, int]]:
    """(root-relative file, line) of each hit in ConKeeper's Markdown shape, read as its
    consumers read it: `### file` groups of `**Line N:**` lines, a `---` rule, a count."""
    lines = output.splitlines()
    assert lines[0].startswith("## Results for: ") and lines[1:3] == ["", ""], lines[:3]
    assert lines[-2] == "---" and re.fullmatch(r"Found \d+ match(es)? across \d+ files?\.",
                                               lines[-1]), lines[-2:]
    hits, current = set(), None
    for line in lines:
        if line.startswith("### "):
            current = line[4:].removeprefix(root).removeprefix(".claude/memory/")
        found = re.match(r"^\*\*Line (\d+):\*\*", line)
        if found:
            hits.add((current, int(found.group(1))))
    return hits


@pytest.mark.parametrize("expected, settings, arguments", [
    ("search--sessions-FTS5.txt", {"sessions": True}, {}),
    ("search--category-decision-FTS5.txt", {}, {"category": "decision"}),
])
async def test_every_hit_of_the_tools_expected_output_is_found(tmp_path, workspace, expected,
                                                              settings, arguments):
    """Each line the tool printed lies in an entry miniclaw finds (in any order, any case)."""
    root = _memory(tmp_path)
    store = _store(workspace, root, **settings)
    try:
        found = [(r.path.removeprefix(f"{root}/"), r.line_start, r.line_end)
                 for r in await _search(store, "fts5", **arguments)]
    finally:
        store.close()
    hits = _expected_hits(expected)
    assert len(hits) == {"search--sessions-FTS5.txt": 6}.get(expected, 2)
    for path, line in hits:
        assert any(p == path and start <= line <= end for p, start, end in found), (path, line)


def test_the_markdown_shape_reads_as_the_tools_output_does(tmp_path, workspace, isolated_home):
    """`--format markdown` parses with the same reader as the tool's own expected output, to
    the same hits."""
    root = _memory(tmp_path)
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": str(root), "name": "app"})
    done = _cli(workspace, "search", "FTS5", "--phrase", "--all", "--category", "decision",
                "--source", "app", "--format", "markdown")
    assert done.returncode == 0, done.stderr
    assert _markdown_hits(done.stdout, f"{root}/") == \
        _expected_hits("search--category-decision-FTS5.txt")


async def test_a_folder_named_sessions_above_the_root_does_not_make_files_sessions(tmp_path, workspace):
    root = tmp_path / "sessions" / "app" / ".claude" / "memory"
    shutil.copytree(FIXTURES / "project" / ".claude" / "memory", root, copy_function=shutil.copy)
    store = _store(workspace, root)
    try:
        found = {(r.path.removeprefix(f"{root}/"), r.line_start, str(r.date))
                 for r in await _search(store, "snake_case")}
    finally:
        store.close()
    assert found == {("patterns.md", 4, "2026-02-09")}  # a bullet of its own, footer-dated


def test_a_private_file_with_a_bad_byte_is_not_named_in_search_warnings(tmp_path, workspace,
                                                                        isolated_home):
    root = _memory(tmp_path)
    name = "ADR-009-fire-bob-after-the-q3-audit.md"
    (root / "decisions" / name).write_bytes(
        b"---\nprivate: true\n---\n# ADR-009: fire Bob\n\nBob goes after the audit \xff.\n")
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": str(root), "name": "app"})
    for form in ("json", "text"):
        found = _cli(workspace, "search", "audit", "--all", "--format", form)
        assert found.returncode == 0, found.stderr
        assert "fire-bob" not in found.stdout + found.stderr, form


def test_a_private_file_changed_since_indexed_is_not_named_by_status_or_doctor(
        tmp_path, workspace, isolated_home):
    root = _memory(tmp_path)
    adr = root / "decisions" / "ADR-009-fire-bob-after-the-q3-audit.md"
    adr.write_bytes(b"---\nprivate: true\n---\n# ADR-009: fire Bob\n\nBob goes \xff.\n")
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": str(root), "name": "app"})
    assert _cli(workspace, "memory", "index").returncode == 0
    adr.write_bytes(b"---\nprivate: true\n---\n# ADR-009: fire Bob\n\nBob goes soon \xff.\n")
    for command in (("memory", "status"), ("doctor",)):
        shown = _cli(workspace, *command)
        assert "fire-bob" not in shown.stdout + shown.stderr, command
