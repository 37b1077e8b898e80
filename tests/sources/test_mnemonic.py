"""mnemonic stores as a source (issue 14, item 3): every fixture memory through the API and
the CLI, the front matter's fallbacks, both layouts and their scopes, the namespace and
type filters, freshness, and miniclaw's privacy over a format that has none of its own."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miniclaw.errors import UsageError
from miniclaw.memory import MemoryStore
from miniclaw.search.options import SearchOptions
from miniclaw.sources.base import KINDS, SOURCES
from miniclaw.sources.mnemonic import MnemonicSource, scope
from tests.conftest import NOW
from tests.formats import FORMAT_FIXTURES

FIXTURES = FORMAT_FIXTURES / "mnemonic"
HOME_STORE = ".claude/mnemonic"
SECRET = "zanzibarquokka"


@pytest.fixture
def stores(tmp_path: Path) -> tuple[Path, Path]:
    """The fixture's home store and project store, copied (writable) under tmp_path."""
    shutil.copytree(FIXTURES, tmp_path / "fx")
    for folder, _, names in os.walk(tmp_path / "fx"):
        os.chmod(folder, 0o755)
        for name in names:
            os.chmod(os.path.join(folder, name), 0o644)
    return tmp_path / "fx/home" / HOME_STORE, tmp_path / "fx/project" / HOME_STORE


def _store(workspace: Path, home: Path, project: Path, **settings) -> MemoryStore:
    return MemoryStore(workspace, now=lambda: NOW, roots=[home, project], sources=(
        *SOURCES, MnemonicSource(root=str(home), **settings),
        MnemonicSource(root=str(project), name="mnemonic_project", **settings)))


async def _all(store: MemoryStore) -> dict[str, dict]:
    """Every indexed mnemonic entry by file name: its fields as the index holds them."""
    store.index.refresh()
    filters = store.ranker().filters(SearchOptions(days=None))
    ids = [i for source in store.sources if source.name.startswith("mnemonic")
           for i in store.index.matching(source, filters)]
    return {entry.path.rsplit("/", 1)[-1]: {"entry": entry, **dict(entry.meta)}
            for entry in store.index.entries(ids).values()}


async def test_every_fixture_memory_is_one_entry_with_its_front_matter(workspace, stores):
    home, project = stores
    async with _store(workspace, home, project) as store:
        found = await _all(store)
    assert len(found) == 10  # 9 at home + 1 in the project; .blackboard/ is not a memory
    assert not any("handoff" in name for name in found)
    fts5 = found["use-sqlite-fts5-for-keyword-search.memory.md"]
    assert (fts5["title"], fts5["namespace"], fts5["type"], fts5["id"]) == (
        "Use SQLite FTS5 for keyword search", "_semantic/decisions", "semantic",
        "622d6f14-cb77-4da2-98b7-8075c5c293a4")
    assert (fts5["scope"], fts5["org"], fts5["project"]) == ("project", "acme", "miniclaw")
    entry = fts5["entry"]
    assert entry.category == "semantic" and entry.tags == ("search", "sqlite", "architecture")
    assert entry.date.isoformat() == "2026-02-03"
    assert entry.text.startswith("# Use SQLite FTS5") and "---" not in entry.text
    assert "supersedes" in entry.text  # the whole body, relationships too
    # Inline tags, unquoted title; a date-only `created`.
    plain = found["every-search-source-yields-plain-dicts.memory.md"]
    assert plain["entry"].tags == ("search-sources", "python", "interface")
    assert plain["title"] == "Every search source yields plain dicts"
    assert found["fts5-missing-on-system-python.memory.md"]["entry"].date.isoformat() == "2026-02-04"
    # No front matter: title falls back to the file stem, namespace and type to the path.
    loose = found["notes-without-frontmatter.memory.md"]
    assert (loose["title"], loose["namespace"], loose["type"]) == (
        "notes-without-frontmatter.memory", "_semantic/knowledge", "semantic")
    assert loose["entry"].date is None and loose["entry"].line_start == 1
    # Scopes as the tool derives them from the path, both layouts.
    org = found["org-python-version-policy.memory.md"]
    assert (org["scope"], org["org"]) == ("org", "acme") and "project" not in org
    assert found["prefer-ripgrep-for-ad-hoc-search.memory.md"]["scope"] == "default"
    user = found["8fdff6dd-146b-43f3-81a7-987ec73bc453-jq-tsv-escapes-newlines.memory.md"]
    assert (user["scope"], user["org"], user["namespace"]) == ("user", "acme", "learnings/user")
    jwt = found["942c980a-5624-4a33-8647-5ad88935e9a3-use-jwt-for-api-authentication.memory.md"]
    assert (jwt["scope"], jwt["namespace"], jwt["entry"].source) == (
        "project", "decisions/project", "mnemonic_project")


async def test_search_finds_each_memory_case_insensitively(workspace, stores):
    """What the tool's `rg -i` finds, ranked: one query per fixture memory."""
    home, project = stores
    queries = {"sqlite fts5 keyword": "use-sqlite-fts5", "JWT": "use-jwt-for-api",
               "loose note": "notes-without-frontmatter", "ripgrep": "prefer-ripgrep",
               "jq tsv": "jq-tsv-escapes", "CRLF": "ranker-crashed-on-crlf",
               "iter_entries": "every-search-source", "python minor versions": "org-python",
               "encoded-cwd session": "claude-code-transcripts"}
    async with _store(workspace, home, project) as store:
        for query, name in queries.items():
            results = await store.search_memories(query, days=None)
            assert results and name in results[0].path, query
        assert await store.search_memories("handoff", days=None) == []


async def test_namespace_and_type_filter_as_settings_and_in_queries(workspace, stores):
    home, project = stores
    async with _store(workspace, home, project, namespace="_semantic") as store:
        names = {hit["namespace"] for hit in (await _all(store)).values()}
    assert names == {"_semantic/decisions", "_semantic/knowledge"}
    async with _store(workspace, home, project, type="episodic") as store:
        assert {hit["type"] for hit in (await _all(store)).values()} == {"episodic"}
    async with _store(workspace, home, project) as store:
        hits = await store.search_memories("python", days=None,
                                           meta={"namespace": "_semantic/knowledge"})
        assert [hit.meta["title"] for hit in hits] == [
            "Org policy: support the two newest Python minor versions"]
        hits = await store.search_memories("python", days=None, meta={"type": "episodic"})
        assert {hit.meta["type"] for hit in hits} == {"episodic"}
        with pytest.raises(UsageError):
            await store.search_memories("python", meta={"a b": "x"})
    with pytest.raises(UsageError):
        MnemonicSource(root=str(home), namespace="")


@pytest.mark.parametrize("front, title, tags", [
    ("title: 'Quoted   title'\ntags: a, b", "Quoted title", ("a", "b")),
    ("title: [unclosed\ntags:\n  - one\n  - two", "[unclosed", ("one", "two")),  # bad YAML
    ("title: x\ntags: [p, q]\ntitle: : :", "x", ("p", "q")),  # bad YAML, inline tags
])
def test_front_matter_variants(front, title, tags):
    text = f"---\n{front}\n---\n\nBody line\n"
    [entry] = MnemonicSource().parse(text, "acme/_semantic/knowledge/x.memory.md")
    assert entry.meta["title"] == title and entry.tags == tags
    assert entry.line_start == entry.line_end == front.count("\n") + 5
    assert entry.text.endswith("Body line")


def test_front_matter_never_closed_is_body():
    [entry] = MnemonicSource().parse("---\ntitle: x\nbody\n", "default/_semantic/a/n.memory.md")
    assert entry.meta["title"] == "n.memory" and "title: x" in entry.text


@given(st.lists(st.sampled_from(list("-:\n #[]ab'\"\r\t_/<>") + ["private", "---\n", "tags:"]),
                max_size=60).map("".join))
def test_any_text_parses_to_at_most_one_entry(text):
    entries = MnemonicSource().parse(text, "acme/miniclaw/_episodic/x/y.memory.md")
    assert len(entries) <= 1
    for entry in entries:
        assert 1 <= entry.line_start <= entry.line_end <= max(1, text.count("\n") + 1)


def test_scope_of_each_layout():
    assert scope("acme/miniclaw/_semantic/decisions/x.memory.md") == {
        "scope": "project", "org": "acme", "project": "miniclaw", "namespace": "_semantic/decisions"}
    assert scope("decisions/project/u-x.memory.md") == {"scope": "project",
                                                         "namespace": "decisions/project"}
    assert scope("x.memory.md") == {}


@given(st.lists(st.sampled_from(list("ab \n-:#") + ["<private>", "</private>", "<PRIVATE >",
                                                   "private: true\n", "---\n"]),
                max_size=40).map("".join))
def test_private_text_never_reaches_an_entry(text):
    """Privacy applies to mnemonic like every source (shared code: `read_entries`)."""
    from miniclaw.sources.base import read_entries

    marked = f"---\ntitle: t\n---\n{text}\n<private>{SECRET}</private>\n<private>\n{SECRET}"
    for entry in read_entries(MnemonicSource(), marked, "default/_semantic/k/x.memory.md"):
        assert SECRET not in entry.text and SECRET not in json.dumps(dict(entry.meta))


async def test_private_parts_are_never_indexed(workspace, stores):
    home, project = stores
    folder = home / "acme/miniclaw/_semantic/knowledge"
    (folder / "secret.memory.md").write_text(
        f"---\ntitle: Vault\nprivate: true\n---\nvault {SECRET}\n", encoding="utf-8")
    (folder / "half.memory.md").write_text(
        f"---\ntitle: Half vault\n---\nvault door <private>{SECRET}</private> is red\n",
        encoding="utf-8")
    async with _store(workspace, home, project) as store:
        hits = await store.search_memories("vault", days=None)
        assert [hit.meta["title"] for hit in hits] == ["Half vault"]
        assert SECRET not in json.dumps([hit.to_dict(1) for hit in hits])
        index_path = store.index.path
    with sqlite3.connect(index_path) as conn:
        dump = "\n".join(conn.iterdump())
    assert SECRET not in dump


async def test_edits_new_and_deleted_files_are_seen_by_the_next_search(workspace, stores):
    home, project = stores
    fts5 = home / "acme/miniclaw/_semantic/decisions/use-sqlite-fts5-for-keyword-search.memory.md"
    async with _store(workspace, home, project) as store:
        assert await store.search_memories("bm25", days=None)
        fts5.write_text(fts5.read_text().replace("BM25", "okapi"), encoding="utf-8")
        os.utime(fts5, ns=(1, 1))
        assert [h.path for h in await store.search_memories("okapi", days=None)] == [str(fts5)]
        new = home / "acme/miniclaw/_procedural/runbooks/release.memory.md"
        new.parent.mkdir(parents=True)
        new.write_text("---\ntitle: Release runbook\ntype: procedural\n---\nTag then wheelhouse.\n",
                       encoding="utf-8")
        [hit] = await store.search_memories("wheelhouse", days=None)
        assert hit.meta["namespace"] == "_procedural/runbooks"
        new.unlink()
        assert await store.search_memories("wheelhouse", days=None) == []


def test_the_kind_is_registered():
    module, _, name = KINDS["mnemonic"].partition(":")
    assert getattr(__import__(module, fromlist=[name]), name) is MnemonicSource


def test_the_cli_searches_a_configured_store(workspace, stores, tmp_path):
    home, project = stores
    config_home = tmp_path / "mchome"
    config_home.mkdir()
    (config_home / "config.json").write_text(json.dumps({"workspaces": {str(workspace): {
        "sources": ["long_term", "daily_note",
                    {"class": "miniclaw.sources.mnemonic:MnemonicSource", "root": str(home),
                     "namespace": "_semantic"}],
        "roots": [str(home)]}}}), encoding="utf-8")
    env = {**os.environ, "MINICLAW_HOME": str(config_home), "MINICLAW_WORKSPACE": str(workspace)}
    run = subprocess.run([sys.executable, "-m", "miniclaw", "memory", "rank", "-q", "sqlite",
                          "--json", "--days", "36500"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    [result] = json.loads(run.stdout)["results"]  # the episodic blocker is filtered out
    assert result["source"] == "mnemonic" and result["meta"]["namespace"] == "_semantic/decisions"
    assert result["path"].startswith(str(home)) and result["tags"] == ["search", "sqlite",
                                                                       "architecture"]


async def test_front_matter_it_reads_gets_no_not_searched_warning(workspace, stores):
    """Front matter with keys that read like notes warns for MEMORY.md ("not searched");
    mnemonic reads its front matter, so that warning would be false."""
    home, project = stores
    (home / "default/_semantic/knowledge/prose.memory.md").write_text(
        "---\ntitle: Prose key\nDecision Notes: we picked the fast one today\n---\nOtter body\n",
        encoding="utf-8")
    async with _store(workspace, home, project) as store:
        results = await store.search("otter", days=None)
    assert [hit.meta["title"] for hit in results.results] == ["Prose key"]
    assert results.warnings == ()
