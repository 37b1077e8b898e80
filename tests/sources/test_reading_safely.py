"""Other tools' stores read safely (issues 37, 38, 39): a record of unexpected shape or depth
is skipped with a warning and never fails a search; the `<private>` tag applies per record
(JSON Lines) and on the whole file first (Markdown); no link leads a source out of its root;
one file is one set of entries whatever its names. Each test builds the store a user has
(real files in tmp_path, the real index) and runs the CLI as the user does."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from miniclaw.cli import app
from miniclaw.sources.base import read_entries
from miniclaw.sources.claude_code import ClaudeCodeSource
from miniclaw.sources.ef_memory import EFMemorySource
from miniclaw.sources.transcripts import TranscriptSource

SECRET = "zanzibarquokka"


def _configure(home: Path, workspace: Path, *items: dict) -> None:
    """config.json with the built-in sources and `items` (kinds, each root allowed)."""
    (home / ".miniclaw").mkdir(exist_ok=True)
    (home / ".miniclaw" / "config.json").write_text(json.dumps({"workspaces": {str(workspace): {
        "sources": ["long_term", "daily_note", "transcripts", *items]}}}), encoding="utf-8")


def _run(workspace: Path, *args: str):
    result = CliRunner().invoke(app, ["--workspace", str(workspace), *args])
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


def _rank(workspace: Path, query: str, *more: str) -> tuple[dict, str]:
    result = _run(workspace, "memory", "rank", "-q", query, "--json", "--days", "36500", *more)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def _event(id_: str, title: str, **extra) -> str:
    return json.dumps({"id": id_, "type": "lesson", "classification": "hard", "severity": "S1",
                       "title": title, "content": ["a", "b"], "rule": f"{title} rule",
                       "implication": None, "source": ["PR #1"], "tags": [],
                       "created_at": "2026-02-01T00:00:00Z", "last_verified": None,
                       "deprecated": False, "_meta": {}, **extra})


def _ef_project(tmp_path: Path, *lines: str) -> Path:
    project = tmp_path / "proj"
    (project / ".memory").mkdir(parents=True)
    (project / ".memory" / "events.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return project


# -- EF Memory: a line of unexpected shape (issue 38) -------------------------------------

@pytest.mark.parametrize("field, value", [
    ("severity", ["S1"]), ("severity", {"level": "S1"}), ("classification", ["hard"]),
    ("type", {"kind": "lesson"}), ("title", ["Walrus"]), ("content", "walrus text"),
    ("tags", {"a": 1}), ("source", "PR #2"), ("created_at", 20260201), ("deprecated", "no"),
    ("last_verified", ["2026-02-01"]), ("rule", 7)])
def test_an_ef_line_of_unexpected_shape_is_skipped_with_a_warning(tmp_path, workspace,
                                                                  isolated_home, field, value):
    """One line whose `severity` was a list made every search and doctor die with
    `TypeError: unhashable type`; now it is a damaged line, like one that is not JSON."""
    project = _ef_project(tmp_path, _event("lesson-a-00000001", "Walrus harbour"),
                          json.dumps({**json.loads(_event("lesson-b-00000002", "Walrus pier")),
                                      field: value}))
    _configure(isolated_home, workspace, {"kind": "ef_memory", "root": str(project)})
    for form in ("json", "markdown", "ef", "text"):
        result = _run(workspace, "memory", "rank", "-q", "walrus", "--format", form,
                      "--days", "36500")
        assert result.exit_code == 0, result.stderr
        assert "1 damaged line skipped (line 2)" in result.stderr
    found, _ = _rank(workspace, "walrus")
    assert [r["meta"]["id"] for r in found["results"]] == ["lesson-a-00000001"]
    doctor = _run(workspace, "doctor")
    assert doctor.exit_code in (0, 1) and "1 damaged lines skipped" in doctor.stdout


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=3), max_leaves=6)


@settings(max_examples=200, deadline=None)
@given(fields=st.dictionaries(st.sampled_from(
    ["type", "classification", "severity", "title", "rule", "implication", "content", "source",
     "tags", "created_at", "last_verified", "deprecated", "_meta", "verify"]), _json_values))
def test_any_ef_field_of_any_json_type_reads_without_error(fields):
    """Every field the reader looks at, with any JSON value: an entry or a damaged line,
    never an exception (read, warning, ranking order and the startup check's counts)."""
    from datetime import date

    source = EFMemorySource()
    text = json.dumps({"id": "lesson-x-00000001", **fields})
    entries = read_entries(source, text, "events.jsonl")
    warning = source.warning(text, "events.jsonl")
    assert len(entries) + (warning is not None) + bool(fields.get("deprecated") is True) >= 1
    for entry in entries:
        source.priority(entry.meta)
        source.notes(entry.meta, Path("/nonexistent"), date(2026, 3, 1))


# -- EF Memory: entries that mention the tag (issue 39) -----------------------------------

def test_an_ef_entry_hides_what_its_tags_hide_and_fails_closed_within_itself(tmp_path,
                                                                             workspace,
                                                                             isolated_home):
    """A tag pair inside an entry hides what it encloses, an unclosed tag the rest of that
    entry (its later fields too), never the next line; no warning, no doctor advice to edit
    the other tool's file. Before, each such line was dropped, and every command warned."""
    project = _ef_project(
        tmp_path,
        _event("lesson-a-00000001", f"Walrus gate <private>{SECRET}</private> code"),
        _event("lesson-b-00000002", f"Walrus dock <private> {SECRET}",
               content=[f"{SECRET} more"], rule=f"{SECRET} rule"),
        _event("lesson-c-00000003", "Walrus pier"))
    _configure(isolated_home, workspace, {"kind": "ef_memory", "root": str(project)})
    found, stderr = _rank(workspace, "walrus")
    assert stderr == ""
    by_id = {r["meta"]["id"]: r for r in found["results"]}
    assert set(by_id) == {"lesson-a-00000001", "lesson-b-00000002", "lesson-c-00000003"}
    assert by_id["lesson-b-00000002"]["content"] == "Walrus dock"
    assert by_id["lesson-b-00000002"]["meta"]["rule"] is None
    assert SECRET not in json.dumps(found)
    assert _rank(workspace, SECRET[:6] + "*")[0]["results"] == []
    doctor = _run(workspace, "doctor")
    assert "never closed" not in doctor.stdout and "damaged" not in doctor.stdout
    assert SECRET not in doctor.stdout


# -- transcripts: tags per record, deep records (issues 37, 38) ---------------------------

def _claude_line(kind: str, text: object, second: int, **extra) -> str:
    content = text if not isinstance(text, str) else [{"type": "text", "text": text}]
    return json.dumps({"type": kind, "sessionId": "s1", "cwd": "/p",
                       "timestamp": f"2026-02-14T09:12:{second:02d}.000Z",
                       "message": {"role": kind, "content": content}, **extra})


def _claude_projects(tmp_path: Path, *lines: str) -> Path:
    projects = tmp_path / "claude" / "projects"
    (projects / "-p").mkdir(parents=True)
    (projects / "-p" / "s1.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return projects


def test_an_unclosed_tag_in_a_tool_result_hides_only_its_own_record(tmp_path, workspace,
                                                                    isolated_home):
    """The agent read a file that documents `<private>`: its tool result holds the tag,
    never closed. Before, every later message of the session was hidden."""
    tool_result = [{"type": "tool_result", "tool_use_id": "t1",
                    "content": f"Wrap secrets in <private> like this {SECRET}"}]
    projects = _claude_projects(
        tmp_path,
        _claude_line("user", "Please read the privacy docs for the harbour project.", 1),
        _claude_line("user", tool_result, 2, toolUseResult={"stdout": f"<private> {SECRET}"}),
        _claude_line("assistant", "The harbour ferry leaves from pier seven at noon.", 3))
    _configure(isolated_home, workspace, {"kind": "claude_code", "root": str(projects)})
    found, stderr = _rank(workspace, "harbour ferry")
    assert stderr == "" and [r["content"] for r in found["results"]][:1] == [
        "The harbour ferry leaves from pier seven at noon."]
    assert SECRET not in json.dumps(found)


def test_a_miniclaw_transcript_hides_per_record_too(workspace):
    """miniclaw's own sessions/*.jsonl: a record with an unclosed tag (written by hand or
    by an older version) hides the rest of that record only, never the next records."""
    (workspace / "sessions").mkdir()
    lines = [json.dumps({"role": "user", "content": f"My locker code <private> {SECRET}",
                         "timestamp": "2026-02-14T09:12:03Z"}),
             json.dumps({"role": "assistant", "content": "The walrus statue is by the ferry.",
                         "timestamp": "2026-02-14T09:12:04Z"})]
    (workspace / "sessions" / "s1.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    found, _ = _rank(workspace, "walrus statue")
    assert [r["content"] for r in found["results"]] == ["The walrus statue is by the ferry."]
    assert _rank(workspace, SECRET)[0]["results"] == []
    entries = read_entries(TranscriptSource(), "\n".join(lines), "sessions/s1.jsonl")
    assert [e.text.strip() for e in entries] == ["My locker code", "The walrus statue is by the ferry."]


def _nested(depth: int) -> object:
    value: object = "deep"
    for _ in range(depth):
        value = {"a": [value]} if depth % 2 else [value]
    return value


def test_a_deeply_nested_record_is_skipped_with_a_warning(tmp_path, workspace, isolated_home):
    """A Claude Code record whose `toolUseResult` nests 1,500 levels, and a line of
    miniclaw's sessions/*.jsonl nested as deep: every search died with RecursionError."""
    deep = "[" * 1500 + '"x"' + "]" * 1500
    projects = _claude_projects(
        tmp_path,
        _claude_line("user", "Where is the lighthouse key kept these days?", 1),
        _claude_line("user", "tool output", 2)[:-1] + f', "toolUseResult": {deep}}}',
        _claude_line("assistant", "The lighthouse key hangs in the boathouse.", 3))
    (workspace / "sessions").mkdir()
    (workspace / "sessions" / "s2.jsonl").write_text(
        '{"role": "user", "content": "nested", "extra": ' + deep + "}\n"
        + json.dumps({"role": "user", "content": "The lighthouse opens at dawn in summer."})
        + "\n", encoding="utf-8")
    _configure(isolated_home, workspace, {"kind": "claude_code", "root": str(projects)})
    found, stderr = _rank(workspace, "lighthouse")
    assert sorted(r["content"] for r in found["results"]) == [
        "The lighthouse key hangs in the boathouse.", "The lighthouse opens at dawn in summer.",
        "Where is the lighthouse key kept these days?"]
    assert "-p/s1.jsonl: 1 record nested too deeply to read skipped (line 2)" in stderr
    assert "sessions/s2.jsonl: 1 record nested too deeply to read skipped (line 1)" in stderr
    result = _run(workspace, "sessions", "search", "lighthouse")
    assert result.exit_code == 0, result.stderr


_noise = st.lists(st.sampled_from(["<private>", "</private>", "lake ", "tent ", "\n", '"',
                                   "\u003cprivate>", "</ private >"]), max_size=6).map("".join)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=_noise, after=_noise, where=st.integers(0, 3), opening=st.sampled_from(
    ["<private>", "\u003cprivate>", "< PRIVATE >", "\uff1cprivate\uff1e"]))
def test_a_tag_never_reaches_past_its_record_nor_shows_what_it_hides(before, after, where,
                                                                      opening):
    """Privacy per record, over JSON Lines (both transcript formats and EF Memory): the
    other records are whole, and a secret after an opening tag (closed or not, spelled
    with JSON escapes or not) is in no entry and no metadata."""
    message = f"harbour {before} {opening} {SECRET} {after}"
    miniclaw = [json.dumps({"role": "user", "content": f"Record {i} about the quiet harbour",
                            "timestamp": "2026-02-14T09:12:03Z"}) for i in range(4)]
    miniclaw[where] = json.dumps({"role": "user", "content": message,
                                  "timestamp": "2026-02-14T09:12:03Z"})
    claude = [_claude_line("user", f"Record {i} about the quiet harbour", i) for i in range(4)]
    claude[where] = _claude_line("user", message, where)
    ef = [_event(f"lesson-x-0000000{i}", f"Record {i} about the quiet harbour")
          for i in range(4)]
    ef[where] = _event(f"lesson-x-0000000{where}", message)
    for source, lines in ((TranscriptSource(), miniclaw), (ClaudeCodeSource(), claude),
                          (EFMemorySource(), ef)):
        text = "\n".join(line.replace("\\u003c", "\u003c") for line in lines)
        entries = read_entries(source, text, "s.jsonl")
        for entry in entries:
            assert SECRET not in entry.text and SECRET not in json.dumps(dict(entry.meta))
        shown = {entry.line_start: entry.text.split("\n")[0] for entry in entries}
        for number in range(1, 5):
            if number != where + 1:
                assert shown[number] == f"Record {number - 1} about the quiet harbour", source


# -- ClaudeCodeSource and the doctor: per record, no advice to edit the tool's file ---------

def test_doctor_does_not_ask_to_edit_a_transcript_that_quotes_the_tag(tmp_path, workspace,
                                                                      isolated_home):
    projects = _claude_projects(
        tmp_path, _claude_line("user", "Explain the private tag syntax please, in detail.", 1),
        _claude_line("assistant", f"You write <private> then the {SECRET} text.", 2))
    _configure(isolated_home, workspace, {"kind": "claude_code", "root": str(projects)})
    doctor = _run(workspace, "doctor")
    assert "never closed" not in doctor.stdout and "</private>" not in doctor.stdout
    assert ClaudeCodeSource().line_records


# -- links out of a source's root (issue 38) ----------------------------------------------

def test_an_ef_memory_folder_linked_out_of_the_root_is_not_read(tmp_path, workspace,
                                                                isolated_home):
    """A project whose `.memory` is a link to a folder outside every allowed root: EF
    Memory built `.memory/events.jsonl` and checked only its last step, so the events
    there were indexed and served (and counted by doctor's startup check)."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "drafts").mkdir(parents=True)
    (elsewhere / "events.jsonl").write_text(_event("lesson-s-00000001", f"Walrus {SECRET}")
                                            + "\n", encoding="utf-8")
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".memory").symlink_to(elsewhere, target_is_directory=True)
    _configure(isolated_home, workspace, {"kind": "ef_memory", "root": str(project)})
    found, _ = _rank(workspace, "walrus")
    assert found["results"] == [] and SECRET not in json.dumps(found)
    doctor = _run(workspace, "doctor")
    # doctor does not read through the link either: it says the store was not checked, and why
    assert ("EF Memory: not checked: .memory/events.jsonl is reached through a folder link"
            in doctor.stdout and SECRET not in doctor.stdout), doctor.stdout
    source = EFMemorySource(root=str(project))
    assert source.files(workspace) == []
    assert source.file(workspace, str(project / ".memory" / "events.jsonl")) is None


@pytest.mark.parametrize("kind, layout", [
    ("conkeeper", "notes/a.md"), ("mnemonic", "_semantic/decisions/a.memory.md"),
    ("claude_code", "-p/s1.jsonl"), ("ef_memory", ".memory/events.jsonl")])
def test_no_source_reads_a_file_through_a_folder_linked_out_of_its_root(tmp_path, workspace,
                                                                        kind, layout):
    """Every source, whether it walks its root or names a path: a folder on the way that is
    a link (here to a folder outside the root) is never entered, by the listing or by
    `file()` (what the index's watch asks for a changed path)."""
    from miniclaw.sources.base import kind_class

    root = tmp_path / "root"
    outside = tmp_path / "outside"
    first, rest = layout.split("/", 1)
    (outside / rest).parent.mkdir(parents=True)
    (outside / rest).write_text("{}\n" if layout.endswith("jsonl") else "- x\n",
                                encoding="utf-8")
    root.mkdir()
    (root / first).symlink_to(outside, target_is_directory=True)
    source = kind_class(kind)(root=str(root), name=kind)
    assert source.files(workspace) == []
    assert source.file(workspace, str(root / layout)) is None


# -- one file, one entry set (issue 38) -----------------------------------------------------

@pytest.mark.parametrize("how", ["symlink", "hard link"])
def test_a_file_under_two_names_of_one_root_is_indexed_once(tmp_path, workspace, isolated_home,
                                                            how):
    """A ConKeeper file that is a link to another file of the same root (or a hard link):
    every search showed the same memory twice, under two paths. Kept under its own name."""
    root = tmp_path / "ck" / ".claude" / "memory"
    (root / "decisions").mkdir(parents=True)
    (root / "decisions" / "notes.md").write_text("- The walrus statue moved to the pier.\n",
                                                 encoding="utf-8")
    link = root / "a-first-name.md"
    if how == "symlink":
        link.symlink_to(root / "decisions" / "notes.md")
    else:
        os.link(root / "decisions" / "notes.md", link)
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": str(root)})
    found, _ = _rank(workspace, "walrus statue")
    paths = [r["path"] for r in found["results"]]
    expected = f"{root}/decisions/notes.md" if how == "symlink" else f"{root}/a-first-name.md"
    assert paths == [expected]
    assert _run(workspace, "memory", "status", "--json").exit_code == 0


@pytest.mark.skipif(os.environ.get("MINICLAW_PLATFORM_SIM") == "1",
                    reason="needs the inotify watch (Linux only)")
def test_a_hard_link_made_while_a_store_watches_is_not_a_second_copy(tmp_path, workspace):
    """A long-lived store (MCP server, chat) watches its folders and re-reads only the
    paths that changed: a hard link made then to a file it has was indexed as a second
    file (a new symlink already made the watch look at everything)."""
    import asyncio

    from miniclaw.memory import MemoryStore
    from miniclaw.sources.base import SOURCES
    from miniclaw.sources.conkeeper import ConKeeperSource
    from tests.conftest import NOW

    root = tmp_path / "ck"
    root.mkdir()
    (root / "notes.md").write_text("- The walrus statue moved to the pier.\n", encoding="utf-8")

    async def run() -> list[str]:
        async with MemoryStore(workspace, sources=(*SOURCES, ConKeeperSource(root=str(root))),
                               roots=[str(root)], now=lambda: NOW) as store:
            for _ in range(3):  # the second refresh starts the watch
                await store.search_memories("walrus", days=None)
            assert store.index._watch is not None and store.index._watch.active
            os.link(root / "notes.md", root / "again.md")
            return [hit.path for hit in await store.search_memories("walrus", days=None)]

    assert asyncio.run(run()) == [f"{root}/again.md"]  # one file: the first of its names


@settings(max_examples=150, deadline=None)
@given(fields=st.dictionaries(st.sampled_from(
    ["type", "role", "content", "message", "timestamp", "sessionId", "session_id", "cwd",
     "isMeta", "isSidechain", "isApiErrorMessage", "recall", "interrupted"]), _json_values),
    message=st.dictionaries(st.sampled_from(["model", "content", "role"]), _json_values))
def test_a_transcript_record_of_any_shape_reads_without_error(fields, message):
    """Both transcript formats, every field the readers look at with any JSON value (a
    message's content blocks too): entries or nothing, never an exception."""
    for record in (fields, {**fields, "message": message},
                   {**fields, "message": {**message, "content": [fields, message]}}):
        line = json.dumps(record)
        for source in (TranscriptSource(), ClaudeCodeSource(sidechains=True)):
            for entry in read_entries(source, line + "\n" + line, "s.jsonl"):
                assert isinstance(entry.text, str) and entry.text
            source.warning(line, "s.jsonl")
