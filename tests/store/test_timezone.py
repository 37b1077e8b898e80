"""The `timezone` setting: which day's note is today, headers with the offset, readers of
both forms, and UTC workspaces unchanged byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from miniclaw.dates import parse_day, utc_offset
from miniclaw.memory import MemoryStore
from miniclaw.entries.parsing import parse_daily_note
from miniclaw.entries.writing import append_daily, daily_entry, normalize_text
from tests.conftest import NOW

TOKYO = ZoneInfo("Asia/Tokyo")
EVENING = datetime(2026, 2, 14, 20, 30, 5, tzinfo=timezone.utc)  # 05:30:05 on the 15th in Tokyo


def run(workspace: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", str(workspace), *args],
                          capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=120)


@given(st.times(), st.integers(min_value=-14 * 60, max_value=14 * 60),
       st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"),
                             exclude_characters="<"), min_size=1))  # no private tags
def test_a_header_written_in_any_zone_reads_back_with_its_time_and_text(clock, minutes, text):
    when = datetime.combine(date(2026, 2, 14), clock.replace(microsecond=0),
                            timezone(timedelta(minutes=minutes)))
    if not normalize_text(text):
        return  # the store refuses empty text
    raw = append_daily(b"", when.date(), daily_entry(text, when))
    heading = raw.decode().split("\n")[2]
    assert heading.endswith(" UTC" if minutes == 0 else utc_offset(when))
    entries = parse_daily_note(raw.decode(), "memory/2026-02-14.md", when.date())
    assert [(e.time, e.text) for e in entries] == [(clock.strftime("%H:%M:%S"),
                                                    normalize_text(text))]


@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40))
def test_any_heading_text_parses_without_error(title):
    entries = parse_daily_note(f"## {title}\n\nbody\n", "memory/2026-02-14.md", date(2026, 2, 14))
    assert entries and entries[-1].text.endswith("body")


@pytest.mark.parametrize(("suffix", "time"), [
    ("UTC", "09:12:03"), ("utc", "09:12:03"), ("+09:00", "09:12:03"), ("-03:30", "09:12:03"),
    ("", "09:12:03")])
def test_readers_accept_both_header_forms(suffix, time):
    [entry] = parse_daily_note(f"## 09:12:03 {suffix}\n\nMet Sam\n", "memory/x.md", None)
    assert (entry.time, entry.text) == (time, "Met Sam")


def test_a_malformed_offset_is_a_titled_entry_not_a_time():
    [entry] = parse_daily_note("## 09:12:03 +9\n\nMet Sam\n", "memory/x.md", None)
    assert entry.time is None and entry.text.startswith("09:12:03 +9")


@pytest.mark.parametrize(("zone", "offset"), [
    ("Asia/Tokyo", "+09:00"), ("America/St_Johns", "-03:30"), ("Asia/Kathmandu", "+05:45"),
    ("Europe/London", "UTC"), ("UTC", "UTC")])
def test_utc_offset_names_the_offset_or_utc(zone, offset):
    assert utc_offset(NOW.astimezone(ZoneInfo(zone))) == offset  # NOW is in February


async def test_the_zone_decides_which_note_is_today_and_yesterday(workspace: Path):
    store = MemoryStore(workspace, now=lambda: EVENING, zone=TOKYO)
    try:
        assert store.today() == date(2026, 2, 15)
        assert parse_day("yesterday", store.today()) == date(2026, 2, 14)
        entry = await store.add_daily_note("Breakfast with Sam")
        long = await store.add_long_term("Likes natto")
        assert [day for day, _ in await store.read_recent(1)] == [date(2026, 2, 15)]
    finally:
        store.close()
    assert (entry.path, entry.date, entry.time) == ("memory/2026-02-15.md", date(2026, 2, 15), "05:30:05")
    assert (workspace / "memory" / "2026-02-15.md").read_text() == (
        "# Daily Note - 2026-02-15\n\n## 05:30:05 +09:00\n\nBreakfast with Sam\n")
    assert (workspace / "memory" / "MEMORY.md").read_text() == (
        "# Memory\n\n## 2026-02-15\n- Likes natto (added at 2026-02-15T05:30:05+09:00)\n")
    assert (long.date, long.time) == (date(2026, 2, 15), "05:30:05")


async def test_a_utc_workspace_is_written_byte_for_byte_as_before(workspace: Path, isolated_home: Path):
    (isolated_home / ".miniclaw").mkdir()
    (isolated_home / ".miniclaw" / "config.json").write_text('{"timezone": "UTC"}')
    for zone in (None, timezone.utc):  # the setting, then the default
        store = MemoryStore(workspace, now=lambda: NOW, zone=zone)
        try:
            # force: the same fact twice (the door would write it once: tests/store/test_door.py)
            await store.add_daily_note("Met Sam", force=True)
            await store.add_long_term("Prefers tea", force=True)
        finally:
            store.close()
    assert (workspace / "memory" / "2026-02-14.md").read_text() == (
        "# Daily Note - 2026-02-14\n\n## 09:12:03 UTC\n\nMet Sam\n\n---\n\n"
        "## 09:12:03 UTC\n\nMet Sam\n")
    assert (workspace / "memory" / "MEMORY.md").read_text() == (
        "# Memory\n\n## 2026-02-14\n- Prefers tea (added at 2026-02-14T09:12:03Z)\n"
        "- Prefers tea (added at 2026-02-14T09:12:03Z)\n")


async def test_a_note_keeps_its_utc_entries_when_the_zone_changes(workspace: Path):
    for zone in (timezone.utc, TOKYO):
        store = MemoryStore(workspace, now=lambda: datetime(2026, 2, 14, 1, 0, tzinfo=timezone.utc),
                            zone=zone)
        try:
            await store.add_daily_note(f"written in {zone}")
        finally:
            store.close()
    store = MemoryStore(workspace, now=lambda: NOW, zone=TOKYO)
    try:
        entries = await store.read_day(date(2026, 2, 14))
        found = await store.search_memories("written", days=None)
    finally:
        store.close()
    assert [(e.time, e.text) for e in entries] == [("01:00:00", "written in UTC"),
                                                   ("10:00:00", "written in Asia/Tokyo")]
    assert len(found) == 2


@pytest.mark.parametrize("setting", [
    {"env": {"MINICLAW_TIMEZONE": "Mars/Olympus_Mons"}},
    {"env": {"MINICLAW_TIMEZONE": "../../etc/passwd"}},
    {"config": {"timezone": "Nowhere/Town"}},
    {"config": {"timezone": 9}},
])
def test_a_bad_zone_is_one_line_exit_2_and_nothing_written(workspace: Path, isolated_home: Path,
                                                            setting: dict):
    if "config" in setting:
        (isolated_home / ".miniclaw").mkdir()
        (isolated_home / ".miniclaw" / "config.json").write_text(json.dumps(setting["config"]))
    for args in (["memory", "add", "Met Sam"], ["memory", "add", "--long", "Met Sam"],
                 ["memory", "read"], ["memory", "rank", "-q", "sam"]):
        done = run(workspace, *args, env=setting.get("env"))
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1
        assert "IANA name" in done.stderr and "Traceback" not in done.stderr
    assert list((workspace / "memory").iterdir()) == []


@pytest.mark.parametrize("command", ["add", "read", "recent"])
def test_help_of_add_read_and_recent_names_the_zone(command: str, monkeypatch):
    from miniclaw.cli import app

    runner = CliRunner()
    monkeypatch.setenv("MINICLAW_TIMEZONE", "Asia/Tokyo")
    tokyo = runner.invoke(app, ["memory", command, "--help"])
    assert tokyo.exit_code == 0
    assert "Time zone: Asia/Tokyo, where today is" in tokyo.output
    monkeypatch.delenv("MINICLAW_TIMEZONE")
    assert "Time zone: UTC, where today is" in runner.invoke(app, ["memory", command, "--help"]).output
    monkeypatch.setenv("MINICLAW_TIMEZONE", "Nowhere/Town")
    bad = runner.invoke(app, ["memory", command, "--help"])
    assert bad.exit_code == 0 and "Time zone: the setting is not valid" in bad.output


def test_read_names_the_zone_of_a_future_date(workspace: Path):
    done = run(workspace, "memory", "read", "--date", "2999-01-01",
               env={"MINICLAW_TIMEZONE": "Asia/Tokyo"})
    assert done.returncode == 2 and done.stderr.rstrip().endswith("Asia/Tokyo)")


def test_doctor_reports_a_bad_zone(workspace: Path):
    done = run(workspace, "doctor", "--json", env={"MINICLAW_TIMEZONE": "Nowhere/Town"})
    assert done.returncode == 1
    [finding] = [f for f in json.loads(done.stdout)["findings"] if f["check"] == "settings"]
    assert finding["severity"] == "error" and "Nowhere/Town" in finding["message"]


def test_a_search_reads_no_settings_it_does_not_need(workspace: Path, isolated_home: Path):
    """Every search needs today's date: without a timezone setting, config.json (holding the
    model settings) is not parsed, and zoneinfo is not imported for UTC."""
    (isolated_home / ".miniclaw").mkdir()
    config_file = isolated_home / ".miniclaw" / "config.json"
    code = ("import sys\nfrom miniclaw.cli import app\n"
            f"try:\n    app(['-w', {str(workspace)!r}, 'memory', 'rank', '-q', 'x'])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in ('json', 'zoneinfo') if m in sys.modules), file=sys.stderr)\n")
    for settings, loaded in (({"llm": {"model": "llama3.2"}}, "[]"),
                             ({"timezone": "UTC"}, "['json']"),
                             ({"timezone": "Asia/Tokyo"}, "['json', 'zoneinfo']")):
        config_file.write_text(json.dumps(settings))
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120)
        assert done.stderr.strip().splitlines()[-1] == loaded, done.stderr


def test_every_form_a_bad_date_error_lists_is_one_parse_day_takes():
    """The error names the forms a date may take: each of them must parse (a user copies
    them); the error itself is one line naming the flag."""
    import re
    from datetime import date

    from miniclaw import dates
    from miniclaw.errors import UsageError

    today = date(2026, 11, 27)
    with pytest.raises(UsageError) as raised:
        dates.parse_day("lastweek", today, flag="--date")
    message = str(raised.value)
    assert message.startswith("--date 'lastweek' is not a date") and "\n" not in message
    forms = re.findall(r"'([^']+)'", dates._FORMS)
    assert forms == ["14 Feb 2026", "today", "yesterday", "7d", "2w", "3 days ago"]
    assert [dates.parse_day(form, today) for form in ["2026-02-14", *forms]] == [
        date(2026, 2, 14), date(2026, 2, 14), today, date(2026, 11, 26), date(2026, 11, 20),
        date(2026, 11, 13), date(2026, 11, 24)]
    # --since and --until list the phrases of several days too, each of which they take
    spans = re.findall(r"'([^']+)'", dates._SPAN_FORMS)
    assert spans == forms + ["last week", "this month"]
    assert all(dates.parse_day(form, today, flag="--since", end=False) for form in spans)
