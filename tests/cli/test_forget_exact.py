"""Issues 37-39: a forget changes exactly the lines of the entry its citation named.

Issue 37: forgetting the last entry of a daily note took the `<private>` block that ends the
entry before it. Issue 39: a citation taken before the file shifted forgot another memory.
Issues 38/39: `forget -q` refused a whole batch for one transcript hit, and had no --dry-run.
"""

from __future__ import annotations

import asyncio
import json
from datetime import date as Date
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from miniclaw.errors import MiniclawError
from tests.cli.test_cli import run
from tests.cli.test_forget import entries


def _today_note(ws: Path) -> Path:
    (note,) = (ws / "memory").glob("2*.md")
    return note


def _search(runner: CliRunner, ws: Path, query: str) -> list[dict]:
    result = run(runner, ws, "search", query, "--all", "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["results"]


# -- issue 37: the lines of the entry, and no others ---------------------------------------


def test_forget_the_last_daily_entry_keeps_the_private_block_ending_the_one_before(
        runner: CliRunner, workspace: Path):
    dentist = "Dentist on Friday\n<private>\ninsurance number 12345\n</private>"
    assert run(runner, workspace, "memory", "add", dentist).exit_code == 0
    assert run(runner, workspace, "memory", "add", "Lunch with Sam on Thursday").exit_code == 0
    note = _today_note(workspace)
    before = note.read_text()
    (lunch,) = _search(runner, workspace, "lunch")
    result = run(runner, workspace, "memory", "forget", lunch["citation"], "--yes")
    assert result.exit_code == 0, result.stderr
    after = note.read_text()
    assert "insurance number 12345\n</private>\n" in after  # the dentist's private lines stay
    assert "Lunch" not in after
    assert after == before[: before.index("</private>\n") + len("</private>\n")]


def test_forget_a_daily_entry_keeps_the_private_block_after_its_separator(
        runner: CliRunner, workspace: Path):
    text = ("# Daily Note - 2026-02-14\n\n## 09:00:00 UTC\n\nKayak on Saturday\n\n---\n\n"
            "<private>\nloose secret\n</private>\n\n## 10:00:00 UTC\n\nLunch with Sam\n")
    note = workspace / "memory/2026-02-14.md"
    note.write_text(text)
    result = run(runner, workspace, "memory", "forget", "memory/2026-02-14.md:5", "--yes")
    assert result.exit_code == 0, result.stderr
    assert note.read_text() == ("# Daily Note - 2026-02-14\n\n<private>\nloose secret\n"
                                "</private>\n\n## 10:00:00 UTC\n\nLunch with Sam\n")


_POSITIONS = st.sampled_from([None, "start", "middle", "end"])


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sections=st.lists(st.tuples(_POSITIONS, st.booleans(), st.booleans()),
                         min_size=1, max_size=5),
       pick=st.integers(0, 4))
def test_forgetting_a_daily_entry_removes_its_section_and_nothing_else(workspace: Path,
                                                                        sections, pick):
    """Sections with a private block at their start, middle or end, tagged or not, with a
    private block between the separator and the next heading or not: forgetting one leaves
    every line of every other section, and every block outside a section, as it was."""
    from miniclaw.memory import MemoryStore
    from miniclaw.store.forget import forget

    lines = ["# Daily Note - 2026-02-14", ""]
    own: list[list[str]] = []
    for i, (private, tagged, loose) in enumerate(sections):
        if i:
            lines += ["", "---", ""]
        if loose:
            lines += ["<private>", f"loose-{i}", "</private>", ""]
        block = ["<private>", f"secret-{i}", "</private>"]
        body = {None: [f"note-{i}"], "start": block + [f"note-{i}"],
                "middle": [f"note-{i}", *block, f"more-{i}"], "end": [f"note-{i}", *block]}
        section = [f"## {9 + i:02d}:00:00 UTC", "", *body[private]]
        section += [f"<!-- @tag: t{i} -->"] if tagged else []
        own.append(section)
        lines += section
    text = "\n".join(lines) + "\n"
    path = workspace / "memory/2026-02-14.md"
    path.write_text(text)
    target = pick % len(sections)

    async def scenario():
        async with MemoryStore(workspace) as store:
            before = await store.read_day(Date(2026, 2, 14))
            await forget(store, [before[target]])
            return before, await store.read_day(Date(2026, 2, 14))

    before, after = asyncio.run(scenario())
    kept = path.read_text().split("\n")
    assert [e.text for e in after] == [e.text for i, e in enumerate(before) if i != target]
    for i, section in enumerate(own):
        found = any(kept[j:j + len(section)] == section for j in range(len(kept)))
        assert found == (i != target), (i, target, text, kept)
    for i, (_, _, loose) in enumerate(sections):
        assert (f"loose-{i}" in kept) == loose
    assert f"secret-{target}" not in kept


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bullets=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=5),
       pick=st.integers(0, 4))
def test_forgetting_a_long_term_bullet_keeps_the_private_lines_of_the_others(workspace: Path,
                                                                              bullets, pick):
    """MEMORY.md bullets, each maybe followed by a private block and an annotation: a
    forget removes the bullet (with its annotation) and leaves the other bullets' lines."""
    from miniclaw.memory import MemoryStore
    from miniclaw.store.forget import forget

    lines = ["# Memory", "", "## 2026-02-01"]
    for i, (private, tagged) in enumerate(bullets):
        lines.append(f"- fact-{i}")
        lines += ["<private>", f"secret-{i}", "</private>"] if private else []
        lines += [f"<!-- @tag: t{i} -->"] if tagged else []
    text = "\n".join(lines) + "\n"
    path = workspace / "memory/MEMORY.md"
    path.write_text(text)
    target = pick % len(bullets)

    async def scenario():
        async with MemoryStore(workspace) as store:
            before = await store.read_long_term()
            try:
                await forget(store, [before[target]])
            except MiniclawError:
                assert path.read_text() == text
            return await store.read_long_term()

    after = asyncio.run(scenario())
    kept = path.read_text().split("\n")
    for i, (private, _) in enumerate(bullets):
        if i != target:
            assert f"- fact-{i}" in kept
            assert (f"secret-{i}" in kept) == private
    assert f"- fact-{target}" not in kept or len(after) == len(bullets)


# -- issue 39: a citation names its entry, not its lines ----------------------------------

NOTES = ("Dentist appointment on Friday", "Lunch with Sam on Thursday",
         "Start the passport renewal")


def _three_notes(runner: CliRunner, ws: Path) -> dict[str, dict]:
    """Three notes added today, and the search results of the first two, by first word."""
    for text in NOTES:
        assert run(runner, ws, "memory", "add", text).exit_code == 0
    return {hit["content"].split()[0]: hit for hit in _search(runner, ws, "dentist lunch")}


def test_a_bare_citation_taken_before_the_file_shifted_never_forgets_another_memory(
        runner: CliRunner, workspace: Path):
    """The issue's reproduction: the second citation named the lunch; after the first
    forget the passport note sat at its lines and was removed. Now it is refused, saying
    where the lunch is now, and nothing is written."""
    cited = _three_notes(runner, workspace)
    first = run(runner, workspace, "memory", "forget", cited["Dentist"]["citation"], "--yes")
    assert first.exit_code == 0, first.stderr
    note = _today_note(workspace)
    before = note.read_bytes()
    second = run(runner, workspace, "memory", "forget", cited["Lunch"]["citation"], "--yes")
    assert second.exit_code == 2, (second.stdout, second.stderr)
    assert "changed since" in second.stderr and ":5#" in second.stderr
    assert note.read_bytes() == before  # the passport note (and the lunch) are still there
    assert "Traceback" not in second.stderr


def test_a_ref_taken_before_the_file_shifted_forgets_its_own_memory(runner: CliRunner,
                                                                      workspace: Path):
    cited = _three_notes(runner, workspace)
    assert "#" in cited["Lunch"]["ref"] and cited["Lunch"]["ref"].startswith(
        cited["Lunch"]["citation"] + "#")
    assert run(runner, workspace, "memory", "forget", cited["Dentist"]["ref"], "--yes").exit_code == 0
    second = run(runner, workspace, "memory", "forget", cited["Lunch"]["ref"], "--yes")
    assert second.exit_code == 0, second.stderr
    assert "has moved since it was cited" in second.stderr
    left = [e["content"] for e in entries(runner, workspace, "--date", _today_note(workspace).stem)]
    assert left == ["Start the passport renewal"]


def test_search_text_prints_the_ref(runner: CliRunner, workspace: Path):
    cited = _three_notes(runner, workspace)
    result = run(runner, workspace, "search", "lunch")
    assert cited["Lunch"]["ref"] in result.stdout.split()


def test_a_ref_whose_memory_is_gone_or_doubled_is_refused(runner: CliRunner, workspace: Path):
    cited = _three_notes(runner, workspace)
    ref = cited["Lunch"]["ref"]  # line 11
    note = _today_note(workspace)
    text = note.read_text()

    def holding(*texts: str) -> str:
        out = text
        for i, old in enumerate(NOTES):
            out = out.replace(old, f"{{{i}}}")
        note.write_text(out.format(*texts))
        return out.format(*texts)

    holding(NOTES[0], "Lunch with Ana on Thursday", NOTES[2])
    gone = run(runner, workspace, "memory", "forget", ref, "--yes")
    assert gone.exit_code == 2 and "no longer in the file" in gone.stderr
    doubled = holding(NOTES[1], "Kayak on Saturday", NOTES[1])
    refused = run(runner, workspace, "memory", "forget", ref, "--yes")
    assert refused.exit_code == 2 and "more than once" in refused.stderr
    assert note.read_text() == doubled
    holding(NOTES[0], "Kayak on Saturday", NOTES[1])  # the lunch moved to line 17
    moved = run(runner, workspace, "memory", "forget", ref, "--dry-run")
    assert moved.exit_code == 0, moved.stderr
    assert "memory/" in moved.stdout and ".md:17" in moved.stdout
    assert "Lunch with Sam" in note.read_text()  # a dry run writes nothing


def test_edit_opens_where_the_ref_is_now_and_refuses_a_stale_bare_citation(
        runner: CliRunner, workspace: Path, tmp_path: Path, monkeypatch):
    import sys

    cited = _three_notes(runner, workspace)
    assert run(runner, workspace, "memory", "forget", cited["Dentist"]["ref"], "--yes").exit_code == 0
    record = tmp_path / "argv.json"
    editor = tmp_path / "editor.py"
    editor.write_text(f"import json, sys\nopen({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    monkeypatch.delenv("VISUAL", raising=False)
    stale = run(runner, workspace, "memory", "edit", cited["Lunch"]["citation"])
    assert stale.exit_code == 2 and not record.exists()
    result = run(runner, workspace, "memory", "edit", cited["Lunch"]["ref"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(record.read_text()) == ["+5", str(_today_note(workspace))]


def test_chat_forget_and_the_forget_tool_check_the_citation_too(runner: CliRunner,
                                                                 workspace: Path):
    """`/forget` in a chat, and the forget_memory tool, go through the same check."""
    from tests.chat.test_cli_chat import miniclaw

    from miniclaw.errors import UsageError
    from miniclaw.memory import MemoryStore
    from miniclaw.memory_tools import MemoryTools

    cited = _three_notes(runner, workspace)
    chat = miniclaw(workspace, "chat", stdin=f"/forget {cited['Dentist']['citation']}\n"
                                             f"/forget {cited['Lunch']['citation']}\n")
    assert "Forgot" in chat.stdout and "changed since" in chat.stdout + chat.stderr
    note = _today_note(workspace)
    assert "Lunch with Sam" in note.read_text() and "passport" in note.read_text()

    async def yes(entry) -> bool:
        return True

    async def tool():
        async with MemoryStore(workspace) as store:
            tools = MemoryTools(store, confirm=yes)
            try:
                await tools.call("forget_memory", {"citation": cited["Lunch"]["citation"]})
            except UsageError as exc:
                refused = str(exc)
            done = await tools.call("forget_memory", {"citation": cited["Lunch"]["ref"]})
            return refused, done

    refused, done = asyncio.run(tool())
    assert "changed since" in refused
    assert done["entry"]["content"] == "Lunch with Sam on Thursday"
    assert "passport" in note.read_text() and "Lunch" not in note.read_text()


def test_a_bare_citation_still_works_where_it_is_right(runner: CliRunner, workspace: Path):
    cited = _three_notes(runner, workspace)
    result = run(runner, workspace, "memory", "forget", cited["Lunch"]["citation"], "--yes")
    assert result.exit_code == 0, result.stderr
    assert "Lunch" not in _today_note(workspace).read_text()


_TEXTS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "alpha beta"]),
                  min_size=2, max_size=6)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=_TEXTS, order=st.permutations(range(6)), bare=st.booleans())
def test_no_citation_forgets_another_memory_than_the_one_it_named(workspace: Path, texts,
                                                                  order, bare):
    """Notes with repeated texts; every citation taken at once (the index synced), then
    forgotten one by one in any order: each forget removes the text its citation named,
    or refuses and removes nothing."""
    from miniclaw.memory import MemoryStore
    from miniclaw.store.forget import find, forget

    path = workspace / "memory/2026-02-14.md"
    lines = ["# Daily Note - 2026-02-14"]
    for i, text in enumerate(texts):
        lines += ["", "---", ""] if i else [""]
        lines += [f"## {9 + i:02d}:00:00 UTC", "", text]
    path.write_text("\n".join(lines) + "\n")

    async def scenario():
        async with MemoryStore(workspace) as store:
            await store.refresh_index()
            cited = await store.read_day(Date(2026, 2, 14))
            for i in (i for i in order if i < len(cited)):
                entry = cited[i]
                before = path.read_text()
                count = before.count(f"\n{entry.text}\n")
                try:
                    found = await find(store, entry.citation if bare else entry.ref)
                except MiniclawError:
                    assert path.read_text() == before
                    continue
                assert found.text == entry.text
                await forget(store, [found])
                assert path.read_text().count(f"\n{entry.text}\n") == count - 1

    asyncio.run(scenario())


@given(st.text(max_size=40))
def test_any_citation_text_parses_or_is_a_usage_error(text):
    from miniclaw.errors import UsageError
    from miniclaw.store.forget import parse_citation

    try:
        cited = parse_citation(text)
    except UsageError:
        return
    assert parse_citation(str(cited)) == cited


# -- issues 38/39: forget -q forgets what it can, and --dry-run -------------------------


def _with_transcript(ws: Path, monkeypatch) -> Path:
    """A daily note about the passport and a chat transcript that mentions it more."""
    from tests.conftest import write

    monkeypatch.delenv("MINICLAW_SESSION_ID", raising=False)
    monkeypatch.delenv("CLAUDE_SESSION_ID", raising=False)
    write(ws, "memory/2026-02-14.md", "# Daily Note - 2026-02-14\n\n## 09:00:00 UTC\n\n"
          "Start the passport renewal\n\n---\n\n## 10:00:00 UTC\n\nKayak on Saturday\n")
    # A statement, not a question: a chat question ranks below what was stated (issue 39).
    said = "passport renewal: the passport renewal is due in March, passport renewal first."
    write(ws, "sessions/20260214-091203-s10000.jsonl", json.dumps(
        {"role": "user", "content": said, "timestamp": "2026-02-14T09:00:00.000Z",
         "session_id": "s1"}) + "\n")
    return ws


def test_forget_by_query_skips_a_transcript_and_forgets_the_note(runner: CliRunner,
                                                                   workspace: Path, monkeypatch):
    ws = _with_transcript(workspace, monkeypatch)
    everything = _search(runner, ws, "passport renewal")
    assert everything[0]["source"] != "daily_note"  # the transcript is the best match
    transcript = (ws / "sessions/20260214-091203-s10000.jsonl").read_bytes()
    result = run(runner, ws, "memory", "forget", "-q", "passport renewal", "-n", "3", "--yes")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "Forgot 1 memory: memory/2026-02-14.md:5" in result.stdout
    assert "passport" not in (ws / "memory/2026-02-14.md").read_text()
    assert (ws / "sessions/20260214-091203-s10000.jsonl").read_bytes() == transcript


def test_forget_by_query_names_what_it_skips_and_forgets_the_rest(runner: CliRunner,
                                                                   workspace: Path):
    from tests.conftest import write

    write(workspace, "memory/2026-02-14.md", "# Daily Note - 2026-02-14\n\n## 09:00:00 UTC"
          "\n\nStart the passport renewal\n")
    (workspace / "memory/2026-02-15.md").write_bytes(
        "# Daily Note - 2026-02-15\n\n## 09:00:00 UTC\n\nPassport renewal: photos\n"
        .encode("utf-16"))  # miniclaw reads it but will not write UTF-8 into it
    assert len(_search(runner, workspace, "passport renewal")) == 2
    result = run(runner, workspace, "memory", "forget", "-q", "passport renewal", "-n", "2",
                 "--yes", "--json")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    data = json.loads(result.stdout)
    assert [e["content"] for e in data["forgotten"]] == ["Start the passport renewal"]
    assert [s["ref"].split(":")[0] for s in data["skipped"]] == ["memory/2026-02-15.md"]
    assert "not UTF-8" in data["skipped"][0]["reason"]
    assert "Skipped memory/2026-02-15.md:5#" in result.stderr


def test_forget_dry_run_lists_and_writes_nothing(runner: CliRunner, workspace: Path,
                                                 monkeypatch):
    from tests.cli.test_cli import snapshot

    ws = _with_transcript(workspace, monkeypatch)
    before = snapshot(ws)
    result = run(runner, ws, "memory", "forget", "-q", "passport renewal", "--dry-run")
    assert result.exit_code == 0, (result.stdout, result.stderr)  # no --yes, no terminal
    assert "Would forget" in result.stdout and "Start the passport renewal" in result.stdout
    as_json = run(runner, ws, "memory", "forget", "-q", "passport renewal", "--dry-run", "--json")
    assert [e["content"] for e in json.loads(as_json.stdout)["would_forget"]] == [
        "Start the passport renewal"]
    assert snapshot(ws) == before


def test_a_chat_never_forgets_another_memory_after_a_later_search_moved_the_index(
        runner: CliRunner, workspace: Path):
    """The hole a check against the index alone leaves: a search after the first forget
    brings the index up to date, so it agrees the passport note is at the lunch's old
    lines. The chat remembers what each citation it showed stood for, and refuses."""
    from tests.chat.test_cli_chat import miniclaw

    cited = _three_notes(runner, workspace)
    note = _today_note(workspace)
    lunch, dentist = cited["Lunch"]["citation"], cited["Dentist"]["citation"]
    chat = miniclaw(workspace, "chat", stdin=f"/search dentist lunch\n/forget {dentist}\n"
                                             f"/search passport renewal\n/forget {lunch}\n")
    assert f"Forgot {dentist}" in chat.stdout, (chat.stdout, chat.stderr)
    assert "more than one memory" in chat.stdout + chat.stderr
    assert "passport renewal" in note.read_text() and "Lunch with Sam" in note.read_text()


def test_a_bare_citation_from_before_a_forget_is_refused_after_another_search(
        runner: CliRunner, workspace: Path):
    """The same hole across commands: search, forget the dentist, search for something
    else (the index re-syncs: the passport note is at the lunch's old lines for it too),
    then forget the lunch's old citation. The forget noted which places it moved."""
    cited = _three_notes(runner, workspace)
    assert run(runner, workspace, "memory", "forget", cited["Dentist"]["citation"],
               "--yes").exit_code == 0
    (passport,) = _search(runner, workspace, "passport")
    assert passport["citation"] == cited["Lunch"]["citation"]  # the index agrees now
    note = _today_note(workspace)
    before = note.read_bytes()
    late = run(runner, workspace, "memory", "forget", cited["Lunch"]["citation"], "--yes")
    assert late.exit_code == 2, (late.stdout, late.stderr)
    assert "more than one memory" in late.stderr
    assert note.read_bytes() == before
    assert run(runner, workspace, "memory", "forget", passport["ref"], "--yes").exit_code == 0
    assert "passport" not in note.read_text() and "Lunch with Sam" in note.read_text()


def test_a_bare_citation_from_before_a_long_term_insert_is_refused(runner: CliRunner,
                                                                     workspace: Path):
    """`add --long` inserts under today's header; a section after it moves down, and the
    citation of its second bullet named the first one's new lines: forgetting it then
    removed the Atlas deadline (after a search re-synced the index)."""
    from datetime import datetime, timezone

    from tests.conftest import write

    today = datetime.now(timezone.utc).date().isoformat()
    write(workspace, "memory/MEMORY.md", f"# Memory\n\n## {today}\n- Dentist on Friday\n"
          "## Projects\n- Atlas deadline moved to March\n- Budget approved at 40k\n")
    (budget,) = _search(runner, workspace, "budget")
    assert budget["citation"] == "memory/MEMORY.md:7"
    assert run(runner, workspace, "memory", "add", "--long", "Kayak on Saturday").exit_code == 0
    (atlas,) = _search(runner, workspace, "atlas")
    assert atlas["citation"] == "memory/MEMORY.md:7"  # the index agrees: Atlas is at 7 now
    path = workspace / "memory/MEMORY.md"
    before = path.read_bytes()
    late = run(runner, workspace, "memory", "forget", budget["citation"], "--yes")
    assert late.exit_code == 2, (late.stdout, late.stderr)
    assert path.read_bytes() == before
    assert run(runner, workspace, "memory", "forget", budget["ref"], "--yes").exit_code == 0
    assert "Budget" not in path.read_text() and "Atlas" in path.read_text()


def _added(runner: CliRunner, ws: Path) -> list[str]:
    """The three notes added with no search before: the citations `memory add` printed."""
    said = []
    for text in NOTES:
        result = run(runner, ws, "memory", "add", text)
        assert result.exit_code == 0, result.stderr
        said.append(result.stdout.strip().rpartition(": ")[2])
    return said


def test_memory_add_prints_a_ref_that_a_forget_follows_after_the_file_shifted(
        runner: CliRunner, workspace: Path):
    """`memory add` printed a bare `path:line`: the citation people copy first."""
    dentist, lunch, _ = _added(runner, workspace)
    assert "#" in dentist and "#" in lunch
    assert run(runner, workspace, "memory", "forget", dentist, "--yes").exit_code == 0
    second = run(runner, workspace, "memory", "forget", lunch, "--yes")
    assert second.exit_code == 0, second.stderr
    note = _today_note(workspace).read_text()
    assert "Lunch" not in note and "passport renewal" in note


def test_a_bare_citation_add_printed_is_refused_once_a_forget_before_any_search_moved_it(
        runner: CliRunner, workspace: Path):
    """QA's reproduction: three adds, no search (so no index yet), forget `:5`, then `:11`
    (the lunch, as `memory add` cited it): the passport note had moved to 11 and was
    removed, in the CLI and in a chat's /forget. A forget now notes the places it moved
    even when it has to make the index for it."""
    from tests.chat.test_cli_chat import miniclaw

    dentist, lunch, _ = (c.partition("#")[0] for c in _added(runner, workspace))
    assert run(runner, workspace, "memory", "forget", dentist, "--yes").exit_code == 0
    note = _today_note(workspace)
    before = note.read_bytes()
    second = run(runner, workspace, "memory", "forget", lunch, "--yes")
    assert second.exit_code == 2, (second.stdout, second.stderr)
    assert "changed since" in second.stderr and note.read_bytes() == before
    assert run(runner, workspace, "search", "plumbing").exit_code == 0  # a search between
    again = run(runner, workspace, "memory", "forget", lunch, "--yes")
    assert again.exit_code == 2 and note.read_bytes() == before, again.stderr


def test_a_chat_forget_of_a_bare_citation_add_printed_is_refused_once_it_moved(
        runner: CliRunner, workspace: Path):
    """The same reproduction through a chat's /forget, which asked nothing."""
    from tests.chat.test_cli_chat import miniclaw

    dentist, lunch, _ = (c.partition("#")[0] for c in _added(runner, workspace))
    chat = miniclaw(workspace, "chat", stdin=f"/forget {dentist}\n/forget {lunch}\n")
    assert f"Forgot {dentist}" in chat.stdout and "changed since" in chat.stdout + chat.stderr
    note = _today_note(workspace).read_text()
    assert "passport renewal" in note and "Lunch with Sam" in note and "Dentist" not in note


def test_forget_never_removes_a_note_hidden_whole_in_a_private_block_of_its_lines(
        runner: CliRunner, workspace: Path):
    """QA of issue 37: a timestamped note inside a `<private>` block after another note is
    part of that note's lines as parsed; `forget -q alpha` showed only "Alpha meeting notes"
    and removed 11 lines, the hidden 01:05 note with them. It is refused, writing nothing."""
    text = ("# Daily Note - 2026-02-14\n\n## 01:00:00 UTC\n\nAlpha meeting notes\n\n"
            "<private>\n## 01:05:00 UTC\n\nBeta hidden thing\n</private>\n")
    note = workspace / "memory/2026-02-14.md"
    note.write_text(text)
    for how in (["memory/2026-02-14.md:5"], ["-q", "alpha"]):
        result = run(runner, workspace, "memory", "forget", *how, "--yes")
        assert result.exit_code != 0 and "another note" in result.stderr, result.stderr
        assert "Beta" not in result.stdout + result.stderr
        assert note.read_text() == text
    # A private block that is only the note's own text still goes with it.
    note.write_text(text.replace("## 01:05:00 UTC\n\n", ""))
    assert run(runner, workspace, "memory", "forget", "memory/2026-02-14.md:5",
               "--yes").exit_code == 0
    assert "Alpha" not in note.read_text() and "Beta" not in note.read_text()
