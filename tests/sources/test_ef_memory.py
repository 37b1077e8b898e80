"""EF Memory stores as a source (issue 14, item 4): the fixture store through the API and
the CLI, latest line per id, deprecated hidden, drafts and archives never searched, damaged
lines skipped with a warning, Hard S1 first at equal relevance only, `[Stale?]` and
`[Source may be outdated]`, privacy per record, freshness."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from datetime import date as Date
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miniclaw.memory import MemoryStore
from miniclaw.sources.base import KINDS, SOURCES, read_entries
from miniclaw.sources.ef_memory import EFMemorySource, age_days, cited_files, too_broad
from tests.conftest import NOW
from tests.formats import FORMAT_FIXTURES

FIXTURES = FORMAT_FIXTURES / "efm"
SECRET = "zanzibarquokka"
AS_OF = Date(2026, 3, 15)  # the day the fixture's expected/ outputs were made


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The fixture project (events, drafts, archive, cited sources), copied writable."""
    shutil.copytree(FIXTURES, tmp_path / "efm")
    for folder, _, names in os.walk(tmp_path / "efm"):
        os.chmod(folder, 0o755)
        for name in names:
            os.chmod(os.path.join(folder, name), 0o644)
    return tmp_path / "efm/project"


def _store(workspace: Path, project: Path) -> MemoryStore:
    return MemoryStore(workspace, now=lambda: NOW, roots=[project],
                       sources=(*SOURCES, EFMemorySource(root=str(project))))


def _event(id_: str, title: str, classification="hard", severity="S1", **extra) -> str:
    return json.dumps({"id": id_, "type": "lesson", "classification": classification,
                       "severity": severity, "title": title, "content": ["a", "b"],
                       "rule": f"{title} rule", "implication": None, "source": ["PR #1"],
                       "tags": [], "created_at": "2026-02-01T00:00:00Z",
                       "last_verified": None, "deprecated": False, "_meta": {}, **extra})


async def test_the_fixture_store_latest_line_wins_and_deprecated_is_hidden(workspace, project):
    async with _store(workspace, project) as store:
        hits = await store.search("transcript fork", days=None, limit=10)
        # EFM's basic search finds these three, in this order (expected/search-basic.txt).
        assert [hit.meta["title"] for hit in hits.results] == [
            "Indexing recall forks doubled every transcript hit",
            "The TSV transcript index must be rebuilt after sessions are deleted",
            "Claude Code writes each transcript record as one compact JSON line"]  # latest
        first = hits.results[0]
        assert (first.meta["classification"], first.meta["severity"], first.meta["type"]) == (
            "Hard", "S1", "lesson")
        assert first.meta["rule"].startswith("Transcript readers MUST skip")
        assert first.meta["source"] == ["docs/decisions/INCIDENTS.md#INC-007:L3-L8"]
        assert first.category == "lesson" and first.line_start == first.line_end == 5
        assert first.path == f"{project}/.memory/events.jsonl"
        # Deprecated on its last line: never found.
        assert await store.search_memories("capped", days=None) == []
        # Drafts and archives are never searched.
        assert await store.search_memories("backoff", days=None) == []
        assert await store.search_memories("drafts unreviewed", days=None) == []
        archived = (project / ".memory/archive/events_2025Q4.jsonl").read_text()
        title = json.loads(archived.splitlines()[0])["title"]
        assert not await store.search_memories(title, days=None, limit=1) or all(
            "archive" not in hit.path for hit in await store.search_memories(title, days=None))


async def test_entries_that_mention_the_tag_are_kept_less_what_it_hides(workspace, project):
    """Two fixture entries mention `<private>` in their content (2 of 9 in a real store,
    issue 39): the tag rules apply to each entry's text, fail closed within the entry
    (everything after the unclosed tag in that record is hidden), not to the JSON line.
    Before, each line was cut, no longer read as JSON, was dropped, and every command
    warned of 2 damaged lines."""
    async with _store(workspace, project) as store:
        results = await store.search("private", days=None)
        assert not results.warnings
        by_id = {hit.meta["id"]: hit for hit in results.results}
        assert set(by_id) == {"lesson-inc009-0a8c1e45", "risk-conkeeper-eed4311c"}
        leak = by_id["lesson-inc009-0a8c1e45"]
        assert leak.content == ("Private ADR leaked into memory search results\n"
                                "An ADR with private: true in its front matter appeared in "
                                "search output\nThe reader only looked for")
        assert leak.meta["rule"] is None and leak.meta["source"] == []  # after the tag
        fenced = by_id["risk-conkeeper-eed4311c"]
        assert fenced.content == ("Private tags inside code fences are stripped too\n"
                                  "ConKeeper treats")
        # What follows the tag in the record is not found; later records are whole.
        assert await store.search_memories("harmless documentation", days=None) == []
        assert await store.search_memories("normalised merge", days=None)  # line 10


def test_the_edge_file_damaged_lines_and_conflict_markers():
    text = (FIXTURES / "project/.memory/events.edge.jsonl").read_text()
    source = EFMemorySource()
    entries = read_entries(source, text, "events.jsonl")
    titles = [entry.meta["title"] for entry in entries]
    assert "Conflicting edit on branch feature/transcripts" in titles  # the later side wins
    assert "Capitalised classification and naive timestamp" in titles
    casing = next(e for e in entries if e.meta["id"] == "lesson-casing-6933be59")
    assert casing.meta["classification"] == "Hard" and casing.date == Date(2025, 6, 1)
    warning = source.warning(text, "events.jsonl")
    assert "2 damaged lines skipped (line 2, 3)" in warning  # truncated JSON, no id
    assert "Truncated" not in warning and "without an id" not in warning
    bad = next(e for e in entries if e.meta["id"] == "fact-baddate-30e475b1")
    assert age_days(bad.meta, AS_OF) == 999
    verify = next(e for e in entries if e.meta["id"] == "fact-badverify-2f73946f")
    assert age_days(verify.meta, AS_OF) == 1  # garbage last_verified: created_at instead


async def test_hard_s1_first_at_equal_relevance_never_an_irrelevant_one(workspace, tmp_path):
    project = tmp_path / "proj"
    (project / ".memory").mkdir(parents=True)
    (project / ".memory/events.jsonl").write_text("\n".join([
        _event("lesson-a-00000001", "Soft walrus", "soft", "S1"),
        _event("lesson-b-00000002", "Hard walrus", "hard", "S3"),
        _event("lesson-c-00000003", "Hard walrus", "hard", "S1"),
        _event("lesson-d-00000004", "Hard otter", "hard", "S1"),
    ]) + "\n", encoding="utf-8")
    async with _store(workspace, project) as store:
        hits = await store.search_memories("walrus", days=None, limit=2)
        assert [(h.meta["classification"], h.meta["severity"]) for h in hits] == [
            ("Hard", "S1"), ("Hard", "S3")]  # the soft one, tied, is cut; the otter never in
        hits = await store.search_memories("walrus", days=None)
        assert [h.meta["id"] for h in hits] == ["lesson-c-00000003", "lesson-b-00000002",
                                                "lesson-a-00000001"]
        # A more relevant Soft entry stays above a Hard S1 one.
        with (project / ".memory/events.jsonl").open("a") as handle:
            handle.write(_event("lesson-e-00000005", "Walrus walrus walrus", "soft", "S3") + "\n")
        hits = await store.search_memories("walrus", days=None)
        assert hits[0].meta["id"] == "lesson-e-00000005"


async def test_stale_and_outdated_source_notes(workspace, project):
    source = EFMemorySource(root=str(project))
    async with _store(workspace, project) as store:
        hits = {h.meta["id"]: h for h in await store.search_memories(
            "transcript index rebuilt conkeeper case-sensitive recency", days=None, limit=20)}
    notes = {i: source.notes(hit.meta, workspace, AS_OF) for i, hit in hits.items()}
    assert notes["lesson-legacy_index-a20d57a5"] == ("[Stale?]", "[Source may be outdated]")
    assert notes["fact-conkeeper-e1ae972e"] == ("[Stale?]",)
    assert notes["lesson-ranker-c7f74431"] == ()  # old, but verified two weeks before
    (project / "src/miniclaw/ranker.py").unlink()
    assert source.notes(hits["lesson-ranker-c7f74431"].meta, workspace, AS_OF) == (
        "[Source may be outdated]",)
    assert cited_files(["commit 4e1f2a9", "PR #41", "a.py::f", "d.md#H:L1-L2", "b.py:L3"]) == [
        "a.py", "d.md", "b.py"]


def test_a_broad_query_is_too_broad_past_the_threshold():
    assert not too_broad(20) and too_broad(21)


async def test_edits_new_lines_and_a_deleted_store_are_seen_by_the_next_search(workspace, tmp_path):
    project = tmp_path / "proj"
    (project / ".memory").mkdir(parents=True)
    events = project / ".memory/events.jsonl"
    events.write_text(_event("lesson-a-00000001", "Narwhal tusk") + "\n", encoding="utf-8")
    async with _store(workspace, project) as store:
        assert await store.search_memories("narwhal", days=None)
        with events.open("a") as handle:  # EFM appends an update: the latest line wins
            handle.write(_event("lesson-a-00000001", "Beluga pod") + "\n")
        assert await store.search_memories("narwhal", days=None) == []
        assert await store.search_memories("beluga", days=None)
        with events.open("a") as handle:
            handle.write(_event("lesson-a-00000001", "Beluga pod", deprecated=True) + "\n")
        assert await store.search_memories("beluga", days=None) == []
        events.write_text(_event("lesson-z-00000009", "Orca") + "\n", encoding="utf-8")
        assert await store.search_memories("orca", days=None)
        events.unlink()
        assert await store.search_memories("orca", days=None) == []


@given(st.lists(st.sampled_from(["<private>", "</private>", "<PRIVATE >", "a", " ", "\n",
                                 '"', "{", "}"]), max_size=30).map("".join))
def test_private_text_never_reaches_an_entry_or_its_meta(noise):
    lines = [_event("lesson-a-00000001", f"t {noise} <private>{SECRET}</private>"),
             _event("lesson-b-00000002", f"u <private>{SECRET}", rule=f"{SECRET}"),
             _event("lesson-c-00000003", "v \\u003cprivate\\u003e" + SECRET),
             _event("lesson-d-00000004", "plain", content=[noise, "x"])]
    text = "\n".join(lines).replace("\\\\u003", "\\u003")
    for entry in read_entries(EFMemorySource(), text, "events.jsonl"):
        assert SECRET not in entry.text
        assert SECRET not in json.dumps(dict(entry.meta))
    assert SECRET not in (EFMemorySource().warning(text, "events.jsonl") or "")


async def test_private_records_are_never_indexed(workspace, tmp_path):
    project = tmp_path / "proj"
    (project / ".memory").mkdir(parents=True)
    (project / ".memory/events.jsonl").write_text("\n".join([
        _event("lesson-a-00000001", f"Vault door <private>{SECRET}</private> red"),
        _event("lesson-b-00000002", "Vault \\u003cprivate\\u003e" + SECRET)]
        ).replace("\\\\u003", "\\u003") + "\n", encoding="utf-8")
    async with _store(workspace, project) as store:
        hits = await store.search_memories("vault", days=None)
        assert hits and SECRET not in json.dumps([h.to_dict(1) for h in hits])
        index_path = store.index.path
    with sqlite3.connect(index_path) as conn:
        assert SECRET not in "\n".join(conn.iterdump())


def test_the_kind_is_registered():
    module, _, name = KINDS["ef_memory"].partition(":")
    assert getattr(__import__(module, fromlist=[name]), name) is EFMemorySource


def test_the_cli_searches_a_configured_store_and_says_nothing_of_its_tags(workspace, project,
                                                                        tmp_path):
    """The fixture store's entries that mention `<private>` are read (less what it hides):
    before, every command printed "2 damaged lines skipped" (issue 39)."""
    config_home = tmp_path / "mchome"
    config_home.mkdir()
    (config_home / "config.json").write_text(json.dumps({"workspaces": {str(workspace): {
        "sources": ["long_term", "daily_note",
                    {"class": "miniclaw.sources.ef_memory:EFMemorySource", "root": str(project)}],
        "roots": [str(project)]}}}), encoding="utf-8")
    env = {**os.environ, "MINICLAW_HOME": str(config_home), "MINICLAW_WORKSPACE": str(workspace)}
    run = subprocess.run([sys.executable, "-m", "miniclaw", "memory", "rank", "-q",
                          "transcript fork", "--json", "--days", "36500"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert [r["meta"]["id"] for r in out["results"]] == [
        "lesson-inc007-a1868b83", "lesson-legacy_index-a20d57a5", "fact-pr41-734a0d29"]
    assert run.stderr == ""


def test_the_startup_check_counts_as_efm_does(project):
    """expected/startup-2026-03-15.txt: pending_drafts=1 drafts_expired=1
    oldest_draft_age_days=2 stale_entries=2 source_warnings=1 merge_markers=0. miniclaw sees
    the 9 entries too (waste 12/9), but two mention `<private>`: the rest of each record is
    hidden (fail closed), their dates with it, and an undated entry counts as 999 days old
    (EFM's rule), hence 4 stale entries."""
    from datetime import datetime, timezone

    from miniclaw.sources.ef_memory import startup_check

    before = sorted(p.name for p in (project / ".memory/drafts").iterdir())
    check = startup_check(project, datetime(2026, 3, 15, tzinfo=timezone.utc))
    assert check._asdict() == {
        "total_entries": 9, "pending_drafts": 1, "drafts_expired": 1,
        "oldest_draft_age_days": 2, "stale_entries": 4, "source_warnings": 1,
        "waste_ratio": 1.33, "merge_markers": 0, "damaged_lines": 0}
    assert check.hint().startswith(
        "EF Memory: 1 drafts past 7 days (EF Memory's startup deletes them), 1 pending "
        "(oldest: 2d, review: /memory-save) / 1 source warnings / 4 stale entries (>90d)")
    assert sorted(p.name for p in (project / ".memory/drafts").iterdir()) == before  # read-only
    edge = project / ".memory/events.jsonl"
    edge.write_text((project / ".memory/events.edge.jsonl").read_text(), encoding="utf-8")
    check = startup_check(project, datetime(2026, 3, 15, tzinfo=timezone.utc))
    assert check.merge_markers == 3 and check.damaged_lines == 2
    shutil.rmtree(project / ".memory/drafts")
    edge.write_text(_event("lesson-a-00000001", "Fine", last_verified="2026-03-01T00:00:00Z",
                           source=["commit abcdef1"]) + "\n", encoding="utf-8")
    check = startup_check(project, datetime(2026, 3, 15, tzinfo=timezone.utc))
    assert check.healthy and check.hint() == "EF Memory: 1 entries, all healthy"


def test_doctor_runs_the_startup_check_of_a_configured_store(workspace, project, isolated_home):
    (isolated_home / ".miniclaw").mkdir(exist_ok=True)
    (isolated_home / ".miniclaw/config.json").write_text(json.dumps({"workspaces": {str(workspace): {"sources": [
        "long_term", "daily_note", {"kind": "ef_memory", "root": str(project)}]}}}), encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", str(workspace),
                          "doctor", "--json"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "HOME": str(isolated_home)})
    assert "Traceback" not in run.stderr
    found = [f for f in json.loads(run.stdout)["findings"] if f["check"] == "sources"]
    assert [f["severity"] for f in found] == ["warning"]
    assert found[0]["path"] == str(project) and found[0]["message"].startswith("EF Memory: ")
    assert "stale entries (>90d)" in found[0]["message"]


@given(st.lists(st.tuples(st.sampled_from([1.0, 1.002, 0.5, 0.3]), st.booleans(),
                          st.integers(0, 7)), max_size=12))
def test_priority_reorders_only_its_own_entries_within_equal_relevance(rows):
    """Property of the ranker's stage: other sources keep their places, every place keeps a
    score within 0.5% of the one it had, and no entry is lost or added."""
    from miniclaw.entries.entry import Entry
    from miniclaw.search.ranker import _by_priority

    class Ranked:
        name = "ranked"

        @staticmethod
        def priority(meta):
            return meta["p"]

    rows = sorted(rows, key=lambda row: -row[0])
    scores = {i: row[0] for i, row in enumerate(rows)}
    entries = {i: Entry("t", "ranked" if row[1] else "other", "p", 1, 1, meta={"p": row[2]})
               for i, row in enumerate(rows)}
    out = _by_priority(list(scores), scores, entries, [Ranked()])
    assert sorted(out) == list(scores)
    for place, (before, after) in enumerate(zip(scores, out)):
        if entries[before].source == "other":
            assert after == before
        assert abs(scores[after] - scores[before]) <= 0.005 * scores[before] + 1e-12
