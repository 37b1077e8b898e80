"""Issue 34: miniclaw on systems without Linux's extras (macOS, Windows).

Two kinds of test. The seams of `miniclaw/fs/platform.py` run here with the capability
switched off or faked (Windows' branches: reparse points, no owners, no process groups);
those marked `windows` run against the real system there too. And `tests/platform_sim/`'s
sitecustomize, on PYTHONPATH of a real `python -m miniclaw`, removes fcntl, os.fork,
O_NOFOLLOW, O_NONBLOCK, O_CLOEXEC, O_DIRECTORY, os.fchown and inotify: the issue's scenario,
48 adds from 8 processes, and a named subset of the suite (`SIM_SUBSET`) run so, in CI.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from miniclaw.fs import platform
from tests.conftest import NOW

REPO = Path(__file__).resolve().parents[2]
SIM = REPO / "tests" / "platform_sim"
windows = pytest.mark.skipif(sys.platform != "win32", reason="the real Windows API")


# -- seams: each branch with the capability switched off ------------------------------------

@pytest.fixture
def checked_open(monkeypatch):
    """`open_nofollow` as on a system without O_NOFOLLOW and O_NONBLOCK."""
    monkeypatch.setattr(platform, "NOFOLLOW", 0)
    monkeypatch.setattr(platform, "NONBLOCK", 0)


def test_checked_open_refuses_a_link_and_never_opens_a_fifo(tmp_path, checked_open):
    note = tmp_path / "note.md"
    note.write_text("hello\n")
    (tmp_path / "link.md").symlink_to(note)
    with pytest.raises(OSError) as link:
        platform.open_nofollow(tmp_path / "link.md", os.O_RDONLY, 0o600)
    assert link.value.errno == errno.ELOOP
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.md")  # opened, it would wait for a writer forever
        with pytest.raises(OSError) as fifo:
            platform.open_nofollow(tmp_path / "pipe.md", os.O_RDONLY, 0o600)
        assert fifo.value.errno == errno.ENXIO
    fd = platform.open_nofollow(note, os.O_RDONLY, 0o600)
    try:
        assert os.read(fd, 10) == b"hello\n"
    finally:
        os.close(fd)


def test_checked_open_notices_a_swap_between_its_look_and_its_open(tmp_path, checked_open,
                                                                    monkeypatch):
    """The symlink-swap race without O_NOFOLLOW: the name is a regular file when looked at,
    a link to another file when opened; the fstat after the open tells, and nothing is read."""
    note, secret = tmp_path / "note.md", tmp_path / "secret.md"
    note.write_text("note\n")
    secret.write_text("secret\n")
    real_open = os.open

    def swapping_open(path, flags, mode=0o777, **kw):
        if Path(path) == note:
            note.unlink()
            note.symlink_to(secret)
        return real_open(path, flags, mode, **kw)

    monkeypatch.setattr(os, "open", swapping_open)
    with pytest.raises(OSError) as swapped:
        platform.open_nofollow(note, os.O_RDWR, 0o600)
    assert swapped.value.errno == errno.ELOOP
    assert secret.read_text() == "secret\n"


def test_checked_create_follows_no_link(tmp_path, checked_open):
    (tmp_path / "dangling.md").symlink_to(tmp_path / "elsewhere.md")
    with pytest.raises(FileExistsError):
        platform.open_nofollow(tmp_path / "dangling.md", os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                               0o600)
    assert not (tmp_path / "elsewhere.md").exists()
    fd = platform.open_nofollow(tmp_path / "new.md", os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)
    assert stat.S_ISREG(os.lstat(tmp_path / "new.md").st_mode)


def test_a_windows_junction_or_symlink_is_a_link_other_reparse_points_are_not():
    """Windows' lstat keeps a name surrogate's reparse tag; a OneDrive placeholder is a file."""
    regular = stat.S_IFREG | 0o644
    assert platform.is_link(SimpleNamespace(st_mode=regular, st_reparse_tag=0xA0000003))
    assert platform.is_link(SimpleNamespace(st_mode=regular, st_reparse_tag=0xA000000C))
    assert not platform.is_link(SimpleNamespace(st_mode=regular, st_reparse_tag=0x9000001A))
    assert not platform.is_link(SimpleNamespace(st_mode=regular))
    assert platform.is_link(SimpleNamespace(st_mode=stat.S_IFLNK | 0o777))


@windows
def test_windows_junction_is_refused(tmp_path):  # pragma: no cover - Windows only
    import _winapi

    (tmp_path / "target").mkdir()
    _winapi.CreateJunction(str(tmp_path / "target"), str(tmp_path / "junction"))
    assert platform.is_link(os.lstat(tmp_path / "junction"))


def test_without_owners_every_file_is_mine_and_modes_are_set_by_path(tmp_path, monkeypatch):
    """Windows has no geteuid, fchown or (before 3.13) fchmod: the seams take the other way."""
    path = tmp_path / "f"
    path.write_text("x")
    monkeypatch.delattr(os, "geteuid")
    monkeypatch.delattr(os, "fchmod")
    monkeypatch.delattr(os, "fchown", raising=False)
    assert platform.owned_by_me(SimpleNamespace(st_uid=12345))
    fd = os.open(path, os.O_RDONLY)
    try:
        platform.set_mode_and_owner(fd, path, None, 0o640)
    finally:
        os.close(fd)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_without_process_groups_the_child_itself_is_stopped(monkeypatch):
    monkeypatch.setattr(platform, "KILLPG", None)
    calls = []
    proc = SimpleNamespace(pid=1, kill=lambda: calls.append("kill"),
                           terminate=lambda: calls.append("terminate"))
    platform.end_group(proc, False)
    platform.end_group(proc, True)
    assert calls == ["terminate", "kill"]


def test_without_posix_signals_no_process_is_probed(monkeypatch):
    """On Windows os.kill(pid, 0) would end the process: it is never called there."""
    monkeypatch.setattr(os, "kill", lambda *a: pytest.fail("os.kill called"))
    monkeypatch.setattr(os, "name", "nt")
    assert platform.process_alive(2 ** 22)


def test_the_cache_is_in_localappdata_without_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "AppData" / "Local"))
    assert platform.cache_home() == tmp_path / "AppData" / "Local"
    monkeypatch.delenv("LOCALAPPDATA")
    assert platform.cache_home() == Path.home() / ".cache"


@pytest.fixture
def lock_file_lock(monkeypatch):
    """`exclusive` as where a folder cannot be flocked (Windows)."""
    monkeypatch.setattr(platform, "FOLDER_FLOCK", False)


def test_lock_without_flock_excludes_threads_and_lives_outside_the_notes(tmp_path,
                                                                        lock_file_lock):
    folder = tmp_path / "memory"
    folder.mkdir()
    order = []

    def second():
        with platform.exclusive(folder):
            order.append("second")

    with platform.exclusive(folder):
        other = threading.Thread(target=second)
        other.start()
        time.sleep(0.3)
        order.append("first")
    other.join(10)
    assert order == ["first", "second"]
    assert os.listdir(folder) == []
    lock = platform.lock_file(folder)
    assert lock.parent == platform.cache_home() / "miniclaw" / "locks"
    assert lock.stat().st_size == 0  # SQLite wrote nothing: no journal, no page


def test_lock_without_flock_excludes_another_process(tmp_path, lock_file_lock):
    """The holder marks `done` just before it lets go: whoever gets the lock next sees it."""
    folder, done = tmp_path / "memory", tmp_path / "done"
    folder.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom pathlib import Path\n"
         "from miniclaw.fs import platform\nplatform.FOLDER_FLOCK = False\n"
         "with platform.exclusive(Path(sys.argv[1])):\n print('held', flush=True)\n"
         " time.sleep(1)\n Path(sys.argv[2]).touch()\n", str(folder), str(done)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with platform.exclusive(folder):
            assert done.exists()
    finally:
        holder.wait(30)
        holder.stdout.close()


def test_lock_of_a_killed_holder_is_released(tmp_path, lock_file_lock):
    folder = tmp_path / "memory"
    folder.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom pathlib import Path\n"
         "from miniclaw.fs import platform\nplatform.FOLDER_FLOCK = False\n"
         "with platform.exclusive(Path(sys.argv[1])):\n print('held', flush=True)\n"
         " time.sleep(60)\n", str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    started = time.monotonic()
    with platform.exclusive(folder):
        assert time.monotonic() - started < 5


def test_crlf_files_are_read_and_appended_correctly(store, workspace):
    """Files saved by a Windows editor: CRLF line ends. Entries, lines and adds are right."""
    import asyncio

    long_term = workspace / "memory" / "MEMORY.md"
    long_term.write_bytes(b"# Long-term Memory\r\n\r\n## 2026-02-01\r\n\r\n"
                          b"- Sam prefers green tea\r\n- The boat is moored at pier 9\r\n")
    day = workspace / "memory" / f"{NOW.date().isoformat()}.md"
    day.write_bytes(b"# 2026-02-14\r\n\r\n## 08:00:00 UTC\r\n\r\nKayak trip planned\r\n"
                    b"with Ana\r\n")

    async def scenario():
        tea = (await store.search("green tea")).results
        kayak = (await store.search("kayak")).results
        await store.add_long_term("Ana likes the harbour")
        harbour = (await store.search("harbour")).results
        return tea, kayak, harbour

    tea, kayak, harbour = asyncio.run(scenario())
    assert (tea[0].content, tea[0].line_start) == ("Sam prefers green tea", 5)
    assert "\r" not in kayak[0].content and kayak[0].content.startswith("Kayak trip")
    assert kayak[0].line_start == 5
    assert harbour[0].content == "Ana likes the harbour"
    assert b"- The boat is moored at pier 9\r\n" in long_term.read_bytes()


# -- the simulation: capabilities removed, real processes ------------------------------------

def sim_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MINICLAW_", "PYTEST_", "COV_"))}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), PYTHONPATH=str(SIM),
               MINICLAW_TIMEZONE="UTC", PYTHONIOENCODING="utf-8")
    return env


def miniclaw(env, *args, input=None, check=True):
    run = subprocess.run([sys.executable, "-m", "miniclaw", *args], env=env, input=input,
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert "Traceback" not in run.stderr, run.stderr
    if check:
        assert run.returncode == 0, (args, run.stdout, run.stderr)
    return run


@pytest.fixture
def sim(tmp_path):
    home = tmp_path / "simhome"
    home.mkdir()
    return sim_env(home)


def test_the_simulation_removes_what_it_says(sim):
    probe = ("import os, ctypes\n"
             "try:\n import fcntl\nexcept ImportError:\n print('no fcntl')\n"
             "print([n for n in ('fork', 'O_NOFOLLOW', 'O_NONBLOCK', 'O_CLOEXEC', 'O_DIRECTORY',"
             " 'fchown') if hasattr(os, n)])\n"
             "print(hasattr(ctypes.CDLL(None), 'inotify_init1'))\n"
             "import miniclaw.memory\nfrom miniclaw.fs import platform\n"
             "print(platform.FOLDER_FLOCK, platform.NOFOLLOW, platform.DIR_FD)\n")
    run = subprocess.run([sys.executable, "-c", probe], env=sim, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["no fcntl", "[]", "False", "False 0 False"]


def test_the_issue_scenario_runs_without_the_posix_extras(sim, tmp_path):
    ws = Path(sim["HOME"]) / ".miniclaw" / "workspace"
    miniclaw(sim, "init")
    miniclaw(sim, "memory", "add", "--long", "Ana's boat is moored at pier 9")
    added = miniclaw(sim, "memory", "add", "Kayak trip with Ana on Saturday").stdout
    assert "memory/" in added and "\\" not in added  # citations use / on every system
    found = miniclaw(sim, "search", "kayak", "--format", "json")
    (hit,) = json.loads(found.stdout)["results"]
    assert hit["content"].startswith("Kayak trip")

    note = next((ws / "memory").glob("20*.md"))  # a hand edit, seen by the next search
    note.write_text(note.read_text() + "\n## 10:00:00 UTC\n\nLighthouse visit booked\n")
    assert "Lighthouse visit" in miniclaw(sim, "search", "lighthouse").stdout
    assert "pier 9" in miniclaw(sim, "search", "pier").stdout

    miniclaw(sim, "memory", "forget", "-q", "lighthouse", "--yes")
    assert "Lighthouse" not in note.read_text()
    assert "No memories matched" in miniclaw(sim, "search", "lighthouse").stdout

    assert "pier 9" in miniclaw(sim, "context", "where is the boat moored?").stdout
    chat = miniclaw(sim, "chat", "--once", "where is Ana's boat?", "--provider", "echo")
    assert "pier 9" in chat.stdout
    doctor = miniclaw(sim, "doctor", "--format", "json", check=False)
    assert doctor.returncode in (0, 1)
    assert json.loads(doctor.stdout)["workspace"] == str(ws)

    refused = miniclaw(sim, "memory", "add", "bad \x07 bell", check=False)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    (ws / "memory" / "MEMORY.md").unlink()
    (ws / "memory" / "MEMORY.md").symlink_to(tmp_path / "outside.md")
    linked = miniclaw(sim, "memory", "add", "--long", "x", check=False)
    assert linked.returncode == 2 and "symlink" in linked.stderr
    assert len(linked.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "outside.md").exists()


def test_mcp_runs_without_the_posix_extras(sim):
    pytest.importorskip("mcp")
    miniclaw(sim, "init")
    miniclaw(sim, "memory", "add", "--long", "The wifi router is in the hall closet")
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                    "clientInfo": {"name": "sim", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "search_memory", "arguments": {"query": "router"}}},
    ]
    proc = subprocess.Popen([sys.executable, "-m", "miniclaw", "mcp"], env=sim,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    answers = {}
    try:
        for line in lines:
            proc.stdin.write(json.dumps(line) + "\n")
            proc.stdin.flush()
            if "id" in line:
                answer = json.loads(proc.stdout.readline())
                answers[answer["id"]] = answer
    finally:
        proc.stdin.close()
        stderr = proc.stderr.read()
        proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()
    assert "Traceback" not in stderr, stderr
    assert "result" in answers[1], answers[1]
    assert "hall closet" in json.dumps(answers[2]["result"]), answers[2]


ADDER = """
import subprocess, sys, time
from pathlib import Path
go = Path(sys.argv[1])
while not go.exists():
    time.sleep(0.005)
for n in range(6):
    kind = ["--long"] if n % 2 else []
    subprocess.run([sys.executable, "-m", "miniclaw", "memory", "add", *kind,
                    f"parallel marker p{sys.argv[2]}x{n}"], check=True, capture_output=True)
"""


def test_48_adds_from_8_processes_lose_nothing_without_flock(sim, tmp_path):
    miniclaw(sim, "init")
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", ADDER, str(go), str(p)], env=sim,
                              stderr=subprocess.PIPE, text=True) for p in range(8)]
    go.touch()
    for proc in procs:
        _, errors = proc.communicate(timeout=300)
        assert proc.returncode == 0, errors
    memory = Path(sim["HOME"]) / ".miniclaw" / "workspace" / "memory"
    on_disk = "".join(path.read_text() for path in memory.glob("*.md"))
    for p in range(8):  # each marker once in the files, and found by a search
        markers = [f"p{p}x{n}" for n in range(6)]
        assert all(len(re.findall(rf"marker {m}\b", on_disk)) == 1 for m in markers), on_disk
        found = json.loads(miniclaw(sim, "search", " ".join(markers), "-n", "20", "--all",
                                    "--format", "json").stdout)["results"]
        assert sorted(hit["content"] for hit in found) == [f"parallel marker {m}"
                                                            for m in markers]
    assert sorted(os.listdir(memory)) == sorted(["MEMORY.md", next(memory.glob("20*.md")).name])


# The suite's tests of the write path (the symlink-swap race among them), sources, index,
# store and CLI, run with the extras removed: ~1 minute on one core, the time CI can spare
# (tests/index/test_index.py, 75 tests, and test_user_paths.py also pass so, in 80 s and 45 s).
SIM_SUBSET = [
    "tests/reliability/test_write_path.py",
    "tests/sources/test_reading_safely.py",
    "tests/sources/test_file_walk.py",
    "tests/index/test_index_identity.py",
    "tests/index/test_sync_rows.py",
    "tests/store/test_store.py",
    "tests/cli/test_cli.py",
    "tests/cli/test_forget.py",
    "tests/cli/test_concurrent_writes.py",
]


@pytest.mark.skipif(os.environ.get("MINICLAW_PLATFORM_SIM") == "1", reason="already inside")
def test_a_named_subset_of_the_suite_passes_without_the_posix_extras(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["PYTHONPATH"] = str(SIM)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "no:xdist", "--basetemp", str(tmp_path / "nested"),
                          *SIM_SUBSET], env=env, cwd=REPO, capture_output=True, text=True,
                         timeout=900)
    tail = run.stdout[-3000:]
    assert run.returncode == 0, tail + run.stderr[-2000:]
    assert " passed" in tail and " failed" not in tail


def test_a_rename_refused_while_a_reader_has_the_file_is_tried_again(tmp_path, monkeypatch):
    """Windows' PermissionError while another process has the note open, faked: the rewrite
    lands once the reader lets go; a refusal that lasts is still an error."""
    source, target = tmp_path / "new", tmp_path / "MEMORY.md"
    source.write_text("new")
    target.write_text("old")
    real_replace, refusals = os.replace, [2]

    def busy_replace(a, b):
        if refusals[0]:
            refusals[0] -= 1
            raise PermissionError(13, "in use by another process")
        real_replace(a, b)

    monkeypatch.setattr(os, "replace", busy_replace)
    platform.replace(source, target, wait_s=0.001)
    assert target.read_text() == "new" and refusals == [0]
    refusals[0] = 99
    (tmp_path / "again").write_text("x")
    with pytest.raises(PermissionError):
        platform.replace(tmp_path / "again", target, wait_s=0.001)


def test_without_terminal_names_the_terminal_is_not_reopened(monkeypatch):
    """Windows has no os.ttyname: the MCP wire then reads its console by threads."""
    monkeypatch.delattr(os, "ttyname")
    assert platform.reopen_terminal(0) is None
