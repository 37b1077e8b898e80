"""`miniclaw memory tidy`: the report, --apply's merges, and what it refuses."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from miniclaw.entries.parsing import parse_daily_note, parse_long_term
from tests.cli.test_cli import assert_usage_error, run, snapshot
from tests.conftest import write


def tidy(ws: Path, *args: str):
    return run(CliRunner(), ws, "memory", "tidy", *args)


def test_the_report_finds_the_cluster_and_the_changed_fact_and_never_names_a_private_file(planted):
    before = snapshot(planted)
    result = tidy(planted, "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["scope"] == {"days": None, "files": 3, "entries": 8}
    clusters = [[e["ref"].split("#")[0] for e in c["entries"]] for c in report["duplicates"]]
    assert clusters == [["memory/2026-11-02.md:5", "memory/MEMORY.md:6", "memory/2026-11-20.md:11"],
                        ["memory/2026-11-02.md:12", "memory/2026-11-20.md:18"]]
    first = report["duplicates"][0]["entries"][0]
    assert set(first) >= {"ref", "citation", "date", "time", "category", "tags", "content"}
    assert [(c["older"]["citation"], c["newer"]["citation"]) for c in report["conflicts"]] == \
        [("memory/MEMORY.md:4", "memory/2026-11-20.md:5")]
    assert "2026-11-21" not in result.stdout + result.stderr
    text = tidy(planted)
    assert text.exit_code == 0
    assert "Duplicates (2 clusters" in text.stdout and "memory/MEMORY.md:4#" in text.stdout
    assert "2026-11-21" not in text.stdout + text.stderr
    assert snapshot(planted) == before  # read only


def test_days_and_limit_narrow_the_report(planted):
    report = json.loads(tidy(planted, "--days", "3", "--json").stdout)  # today is far later
    assert report["scope"]["days"] == 3 and report["duplicates"] == []
    report = json.loads(tidy(planted, "--limit", "1", "--json").stdout)
    assert len(report["duplicates"]) == 1 and len(report["conflicts"]) == 1


def test_bad_usage_is_one_line_and_exit_2_with_nothing_written(planted):
    before = snapshot(planted)
    assert "not a terminal" in assert_usage_error(tidy(planted, "--apply"))
    assert_usage_error(tidy(planted, "--days", "3", "--all"))
    assert_usage_error(tidy(planted, "--limit", "0"))
    assert_usage_error(tidy(planted, "--yes"))
    assert_usage_error(tidy(planted, "--days", "0"))
    assert snapshot(planted) == before


def test_apply_merges_each_cluster_keeping_the_earliest_date_every_tag_and_category(planted):
    result = tidy(planted, "--apply", "--yes")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("Merged ") == 2
    memory = parse_long_term((planted / "memory/MEMORY.md").read_text(), "memory/MEMORY.md")
    coffee = [e for e in memory if "coffee" in e.text]
    assert len(coffee) == 1
    merged = coffee[0]
    assert merged.text == ("Prefers dark roast coffee\n~ merged from memory/2026-11-02.md:5, "
                           "memory/2026-11-20.md:11")
    assert (merged.date.isoformat(), merged.time) == ("2026-11-02", "08:00:00")
    assert merged.category == "preference" and merged.tags == ("coffee", "food")
    rent = [e for e in memory if "rent" in e.text]
    assert [e.text for e in rent] == ["Sam's rent is 1200 dollars a month"]  # a pair: untouched
    early = parse_daily_note((planted / "memory/2026-11-02.md").read_text(), "x", None)
    late = parse_daily_note((planted / "memory/2026-11-20.md").read_text(), "x", None)
    alex = [e for e in early + late if "Alex" in e.text]
    assert len(alex) == 1 and alex[0].tags == ("friends",) and alex[0].time == "09:00:00"
    # where the copy was when it was merged: the first merge had moved it up from line 18
    assert alex[0].text.endswith("~ merged from memory/2026-11-20.md:11")
    assert "Sam's rent is 1350" in (planted / "memory/2026-11-20.md").read_text()
    assert "coffee" in (planted / "memory/2026-11-21.md").read_text()  # the private file stays
    again = json.loads(tidy(planted, "--json").stdout)
    assert again["duplicates"] == [] and len(again["conflicts"]) == 1


def test_a_cluster_that_changed_since_the_report_is_refused(planted):
    from miniclaw.memory import MemoryStore
    from miniclaw.tidy import merge, report

    async def work():
        async with MemoryStore(planted) as store:
            found = await report.build(store)
            path = planted / "memory/2026-11-20.md"
            path.write_text(path.read_text().replace("Prefers dark roast coffee.",
                                                     "Prefers dark roast coffee, black."))
            before = snapshot(planted)
            done = await merge.apply(store, found.duplicates)
            return before, done

    before, done = asyncio.run(work())
    assert "changed since the report" in done[0].refused and done[0].merged is None
    assert done[1].merged is not None  # the other cluster still merges
    after = snapshot(planted)
    assert after["memory/MEMORY.md"] == before["memory/MEMORY.md"]
    assert after["memory/2026-11-02.md"] != before["memory/2026-11-02.md"]


def test_apply_refuses_a_cluster_a_copy_was_added_to(planted):
    from miniclaw.memory import MemoryStore
    from miniclaw.tidy import merge, report

    async def work():
        async with MemoryStore(planted) as store:
            found = await report.build(store)
            with (planted / "memory/2026-11-20.md").open("a") as f:
                f.write("\n---\n\n## 11:00:00 UTC\n\nPrefers dark roast coffee.\n<!-- @category: food -->\n")
            return await merge.apply(store, found.duplicates[:1])

    done = asyncio.run(work())
    assert done[0].refused and "changed since the report" in done[0].refused


def test_at_a_terminal_it_asks_before_each_merge_and_q_stops(planted):
    """A real terminal (a pty on stdin): y merges the first cluster, q stops before the
    second."""
    import os
    import pty
    import subprocess
    import sys

    main, tty = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "miniclaw", "--workspace", str(planted),
                             "memory", "tidy", "--apply"], stdin=tty, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    os.close(tty)
    os.write(main, b"y\nq\n")
    out, err = proc.communicate(timeout=60)
    os.close(main)
    assert proc.returncode == 0, err
    assert err.count("Merge these into one entry? [y/n/q]") == 2
    assert out.count("Merged ") == 1
    report = json.loads(tidy(planted, "--json").stdout)
    assert len(report["duplicates"]) == 1  # the second cluster is still there


def test_a_cluster_with_a_private_part_is_refused_and_the_part_kept(planted):
    note = planted / "memory/2026-11-20.md"
    note.write_text(note.read_text().replace(
        "Prefers dark roast coffee.", "Prefers dark roast coffee. <private>beans from Tom</private>"))
    before = snapshot(planted)
    result = tidy(planted, "--apply", "--yes", "--limit", "1")
    assert result.exit_code == 1
    assert "holds a private part" in result.stderr and "Tom" not in result.stderr + result.stdout
    assert snapshot(planted) == before


def test_an_entry_already_superseded_takes_no_part(planted):
    """After `memory add --supersedes`, the old fact is settled: no pair, no cluster."""
    result = run(CliRunner(), planted, "memory", "add", "Sam's rent is 1400 dollars a month",
                 "--long", "--supersedes", "memory/MEMORY.md:4")
    assert result.exit_code == 0, result.stderr
    report = json.loads(tidy(planted, "--json").stdout)
    olds = [c["older"]["content"] for c in report["conflicts"]]
    assert "Sam's rent is 1200 dollars a month" not in olds
    assert not any("1200" in e["content"] for c in report["duplicates"] for e in c["entries"])
    assert report["scope"]["entries"] == 8  # 8 as before: one added, one superseded


def test_a_fifo_named_like_a_note_is_skipped_not_waited_on(planted):
    import os

    os.mkfifo(planted / "memory/2026-11-25.md")
    result = tidy(planted, "--json")
    assert result.exit_code == 0, result.stderr
    assert len(json.loads(result.stdout)["duplicates"]) == 2
