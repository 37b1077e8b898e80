"""Every file a user controls is opened through the shared no-follow, capped, non-blocking
open (`memory/files.py`), doctor and config.json included (issue 37): a FIFO there must not
hang a command, a link to /dev/zero must not eat the memory, a link out of a source's root
is not read; and what `json` refuses in any way, or a source class that is no class, is one
line naming the file, exit 2, never a traceback."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write

MAIN = [sys.executable, "-m", "miniclaw"]


def _capped() -> None:
    """A process that reads /dev/zero fails at 2 GB, not when the machine runs out."""
    resource.setrlimit(resource.RLIMIT_DATA, (2 << 30, 2 << 30))


def run(workspace: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """The CLI as a process, with a timeout well short of the suite's: a hang fails fast."""
    return subprocess.run([*MAIN, "--workspace", str(workspace), *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=40,
                          preexec_fn=_capped)


def config_file(home: Path) -> Path:
    (home / ".miniclaw").mkdir(exist_ok=True)
    return home / ".miniclaw" / "config.json"


def one_line_usage_error(done: subprocess.CompletedProcess, *words: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert all(word in lines[0] for word in words), lines[0]
    return lines[0]


@pytest.mark.parametrize("plant", ["fifo", "dev_zero", "folder"])
def test_a_config_json_that_is_no_regular_file_is_one_line_not_a_hang(
        workspace: Path, isolated_home: Path, plant: str):
    path = config_file(isolated_home)
    if plant == "fifo":
        os.mkfifo(path)
    elif plant == "dev_zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    for command in (["search", "roast"], ["sources", "list"]):
        one_line_usage_error(run(workspace, *command), str(path), "not a regular file",
                             "remove it")


def test_a_config_json_link_to_a_regular_file_is_still_read(workspace: Path,
                                                             isolated_home: Path, tmp_path: Path):
    """A dotfiles repository links config.json: that keeps working."""
    real = tmp_path / "dotfiles" / "config.json"
    real.parent.mkdir()
    real.write_text(json.dumps({"timezone": "Asia/Tokyo"}))
    config_file(isolated_home).symlink_to(real)
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    done = run(workspace, "doctor", "--json")
    assert "time zone: Asia/Tokyo" in json.loads(done.stdout)["checked"]


@pytest.mark.parametrize(("raw", "said"), [
    (b'{"timezone": "UTC", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nests too deeply"),
    (b'{"timezone": "UTC", "x": ' + b"7" * 5000 + b"}", "cannot be read as JSON"),
    (b'{"timezone": "Europe/Paris\xff"}', "not UTF-8"),
    (b'{"timezone": "UTC", ', "not valid JSON"),
])
def test_config_json_that_json_refuses_in_any_way_is_one_line(
        workspace: Path, isolated_home: Path, raw: bytes, said: str):
    path = config_file(isolated_home)
    path.write_bytes(raw)
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    one_line_usage_error(run(workspace, "search", "roast"), str(path), said,
                         "fix or remove it" if "UTF-8" not in said else "save it as UTF-8")
    doctor = run(workspace, "doctor", "--json")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr
    [finding] = [f for f in json.loads(doctor.stdout)["findings"] if f["check"] == "settings"]
    assert said in finding["message"]


@pytest.mark.parametrize(("spec", "said"), [
    ("os:sep", "is not a memory source"),  # a string, not a class
    ("json:loads", "is not a memory source"),  # a function
    ("builtins:dict", "is not a memory source"),  # a class, but not a source's
    ("broken_source:Notes", "cannot be loaded (RuntimeError: half-written module)"),
    ("picky_source:Notes", "cannot be made from its settings (KeyError"),
])
def test_a_source_class_that_is_not_a_usable_class_is_one_line(
        workspace: Path, isolated_home: Path, tmp_path: Path, spec: str, said: str):
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "broken_source.py").write_text("raise RuntimeError('half-written module')\n")
    (modules / "picky_source.py").write_text(
        "from miniclaw.memory.sources import FileSource\n"
        "class Notes(FileSource):\n"
        "    def __init__(self, **settings):\n"
        "        settings['needed']\n")
    config_file(isolated_home).write_text(json.dumps({"workspaces": {str(workspace): {
        "sources": ["long_term", {"class": spec, "root": str(tmp_path)}],
        "roots": [str(tmp_path)]}}}))
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(modules),
                                                       os.environ.get("PYTHONPATH")]))}
    one_line_usage_error(run(workspace, "search", "roast", env=env),
                         str(config_file(isolated_home)), repr(spec), said, "config.json")
    doctor = run(workspace, "doctor", "--json", env=env)
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr
    assert any(said in f["message"] for f in json.loads(doctor.stdout)["findings"])


def _efm_project(tmp_path: Path, workspace: Path, home: Path) -> Path:
    from tests.sources.test_ef_memory import _event

    project = tmp_path / "app"
    (project / ".memory" / "drafts").mkdir(parents=True)
    from datetime import datetime, timezone

    fresh = datetime.now(timezone.utc).isoformat()  # not stale by the real clock doctor uses
    (project / ".memory" / "events.jsonl").write_text(
        _event("lesson-a-00000001", "Fine", created_at=fresh, last_verified=fresh) + "\n")
    config_file(home).write_text(json.dumps({"workspaces": {str(workspace): {"sources": [
        "long_term", "daily_note", {"kind": "ef_memory", "root": str(project)}]}}}))
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    return project


def _efm_finding(workspace: Path, project: Path) -> str:
    done = run(workspace, "doctor", "--json")
    assert "Traceback" not in done.stderr, done.stderr
    [message] = [f["message"] for f in json.loads(done.stdout)["findings"]
                 if f["path"] == str(project) and f["message"].startswith("EF Memory")]
    return message


@pytest.mark.parametrize("plant", ["fifo", "dev_zero", "link_out"])
def test_doctor_reads_an_ef_memory_store_through_the_safe_open(
        workspace: Path, isolated_home: Path, tmp_path: Path, plant: str):
    """Issue 37: doctor's EF Memory startup check read events.jsonl with a plain open(): a
    FIFO hung it, a link to /dev/zero ate the memory, a link out of the project was read."""
    from tests.sources.test_ef_memory import _event

    project = _efm_project(tmp_path, workspace, isolated_home)
    events = project / ".memory" / "events.jsonl"
    events.unlink()
    if plant == "fifo":
        os.mkfifo(events)
    elif plant == "dev_zero":
        events.symlink_to("/dev/zero")
    else:
        elsewhere = tmp_path / "elsewhere.jsonl"
        elsewhere.write_text("".join(_event(f"lesson-x-0000000{i}", f"Out {i}") + "\n"
                                     for i in range(3)))
        events.symlink_to(elsewhere)
    message = _efm_finding(workspace, project)
    assert "not checked" in message and "entries" not in message, message


def test_doctor_skips_ef_memory_drafts_that_are_no_regular_files(
        workspace: Path, isolated_home: Path, tmp_path: Path):
    project = _efm_project(tmp_path, workspace, isolated_home)
    drafts = project / ".memory" / "drafts"
    os.mkfifo(drafts / "waiting.json")
    (drafts / "zero.json").symlink_to("/dev/zero")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"_meta": {"capture_timestamp": "2020-01-01T00:00:00Z"}}))
    (drafts / "out.json").symlink_to(outside)
    assert _efm_finding(workspace, project) == "EF Memory: 1 entries, all healthy"


def test_doctor_reads_claude_json_through_the_safe_open(workspace: Path, isolated_home: Path):
    """~/.claude.json as a FIFO hung doctor; as a link to /dev/zero it ate the memory."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    claude = isolated_home / ".claude.json"
    for plant in ("fifo", "dev_zero"):
        if plant == "fifo":
            os.mkfifo(claude)
        else:
            claude.unlink()
            claude.symlink_to("/dev/zero")
        done = run(workspace, "doctor", "--json")
        assert "Traceback" not in done.stderr
        [finding] = [f for f in json.loads(done.stdout)["findings"] if f["path"] == str(claude)]
        assert finding["severity"] == "warning" and "not a regular file" in finding["message"]


def test_doctor_reads_an_index_header_through_the_safe_open(workspace: Path, isolated_home: Path,
                                                            tmp_path: Path):
    """MINICLAW_INDEX naming a FIFO: doctor and its --fix must not hang on the header."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    fifo = tmp_path / "index.sqlite3"
    os.mkfifo(fifo)
    for args in (["doctor", "--json"], ["doctor", "--fix", "--json"]):
        done = run(workspace, *args, env={"MINICLAW_INDEX": str(fifo)})
        assert "Traceback" not in done.stderr and done.returncode == 1, done.stderr
        assert any(f["check"] == "index" and f["severity"] == "error"
                   for f in json.loads(done.stdout)["findings"])
