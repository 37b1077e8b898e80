"""Full disks and I/O errors while writing: one clear error, exit code 1, the file untouched.

Faults are injected into the system calls of `miniclaw.fs.files` (the only module that
writes memory bytes) through a stand-in `os` module: `os.write` that writes a few bytes and
then fails, `os.fsync`, `os.replace`, `os.open`, the temporary file's writes, `mkstemp`.
Where the machine allows it, the same is done for real: a tiny tmpfs filled up (ENOSPC), a
read-only bind mount (EROFS), both inside a private mount namespace (`unshare -rm`), and a
memory folder without write permission (chmod 500; as root, run without CAP_DAC_OVERRIDE).
"""

from __future__ import annotations

import errno
import functools
import json
import os
import shutil
import subprocess
import tempfile
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miniclaw.cli import app
from miniclaw.fs import files, platform
from tests.reliability.support import (PYTHON, REPO, assert_one_error_line, bad_stderr_lines,
                                      chmod_binding_prefix)

# What the one error line must say (any of these, case-insensitively), besides the file name.
MESSAGES = {errno.ENOSPC: ("the disk is full",), errno.EIO: ("Input/output error",),
            errno.EACCES: ("Permission denied",), errno.EROFS: ("Read-only file system", "read-only")}


def _says(line: str, code: int) -> bool:
    return any(words.lower() in line.lower() for words in MESSAGES[code])


def _today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


def _oserror(code: int) -> OSError:
    return OSError(code, os.strerror(code))


class _FailingFile:
    """A file object whose writes fail with `code` once `budget` bytes have gone through."""

    def __init__(self, real, budget: int, code: int) -> None:
        self._real, self._budget, self._code = real, budget, code

    def write(self, data: bytes) -> int:
        if len(data) > self._budget:
            self._real.write(data[: self._budget])
            self._real.flush()
            self._budget = 0
            raise _oserror(self._code)
        self._budget -= len(data)
        return self._real.write(data)

    def __getattr__(self, name):
        return getattr(self._real, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._real.__exit__(*exc)


def _fault_os(monkeypatch, faulty) -> None:
    """`faulty` as `os` where the write path calls it: files.py and platform.py."""
    for module in (files, platform):
        monkeypatch.setattr(module, "os", faulty)


class FaultyOs:
    """Stands in for `os` inside `miniclaw.fs.files` (and `platform`), with some calls
    overridden."""

    def __init__(self, **overrides) -> None:
        self._overrides = overrides

    def __getattr__(self, name):
        return self._overrides.get(name) or getattr(os, name)


def _is_dir_fd(fd: int) -> bool:
    import stat

    return stat.S_ISDIR(os.fstat(fd).st_mode)


def _faults(code: int) -> dict[str, dict]:
    """Name -> the overrides that make one step of a write fail with `code`."""
    def write_some_then_fail():
        calls = []

        def write(fd, data):
            calls.append(fd)
            if len(calls) == 1:
                return os.write(fd, data[:7])  # a short write: the disk filled up meanwhile
            raise _oserror(code)
        return write

    def fail(*args, **kwargs):
        raise _oserror(code)

    def fsync_file_only(fd):
        if _is_dir_fd(fd):
            return os.fsync(fd)
        raise _oserror(code)

    def fsync_dir_only(fd):
        if not _is_dir_fd(fd):
            return os.fsync(fd)
        raise _oserror(code)

    def open_files_only(path, flags, *args, **kwargs):
        if str(path).endswith(".md"):
            raise _oserror(code)
        return os.open(path, flags, *args, **kwargs)

    def fdopen_failing(fd, mode="r", *args, **kwargs):
        real = os.fdopen(fd, mode, *args, **kwargs)
        return _FailingFile(real, 100, code) if "w" in mode else real

    return {
        "write-partial": {"write": write_some_then_fail()},
        "write": {"write": fail},
        "fsync-file": {"fsync": fsync_file_only},
        "open": {"open": open_files_only},
        "tmpfile-write": {"fdopen": fdopen_failing},
        "replace": {"replace": fail},
        "chmod": {"fchmod": fail},
        "fsync-dir": {"fsync": fsync_dir_only},
    }


DAILY_FAULTS = ["write-partial", "write", "fsync-file", "open"]
LONG_FAULTS = ["tmpfile-write", "fsync-file", "replace", "chmod", "mkstemp"]


def _seeded(ws: Path) -> tuple[Path, Path]:
    (ws / "memory").mkdir(parents=True)
    long_term = ws / "memory/MEMORY.md"
    long_term.write_bytes(f"# Memory\n\n## {_today()}\n- Seed fact one (added at {_today()}T01:00:00Z)\n"
                          "- Seed fact <private>hidden</private> two\n".encode())
    daily = ws / f"memory/{_today()}.md"
    daily.write_bytes(f"# Daily Note - {_today()}\n\n## 01:00:00 UTC\n\nSeed note\n".encode())
    return long_term, daily


def _listing(ws: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((ws / "memory").iterdir())}


def _check_failed(result, path: Path, code: int) -> str:
    assert result.exit_code == 1, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    line = assert_one_error_line(result.stderr)
    assert path.name in line and _says(line, code), line
    return line


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
@pytest.mark.parametrize("fault", DAILY_FAULTS)
def test_daily_add_fault_leaves_the_note_unchanged(tmp_path, monkeypatch, fault, code):
    ws = tmp_path / "ws"
    _, daily = _seeded(ws)
    before = _listing(ws)
    _fault_os(monkeypatch, FaultyOs(**_faults(code)[fault]))
    result = CliRunner().invoke(app, ["--workspace", str(ws), "memory", "add", "A new daily note"])
    monkeypatch.undo()
    _check_failed(result, daily, code)
    assert _listing(ws) == before  # byte for byte, and no stray file


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
@pytest.mark.parametrize("fault", DAILY_FAULTS)
def test_first_daily_add_of_the_day_fault_creates_no_note(tmp_path, monkeypatch, fault, code):
    ws = tmp_path / "ws"
    long_term, daily = _seeded(ws)
    daily.unlink()
    before = _listing(ws)
    _fault_os(monkeypatch, FaultyOs(**_faults(code)[fault]))
    result = CliRunner().invoke(app, ["--workspace", str(ws), "memory", "add", "First note today"])
    monkeypatch.undo()
    _check_failed(result, daily, code)
    assert _listing(ws) == before, "a failed first write of the day left a file behind"


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
@pytest.mark.parametrize("fault", LONG_FAULTS)
def test_long_term_add_fault_leaves_memory_md_unchanged(tmp_path, monkeypatch, fault, code):
    ws = tmp_path / "ws"
    long_term, _ = _seeded(ws)
    before = _listing(ws)
    if fault == "mkstemp":
        def mkstemp(*args, **kwargs):
            raise _oserror(code)
        monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    else:
        _fault_os(monkeypatch, FaultyOs(**_faults(code)[fault]))
    result = CliRunner().invoke(app, ["--workspace", str(ws), "memory", "add", "--long",
                                      "A new long-term fact"])
    monkeypatch.undo()
    line = _check_failed(result, long_term, code)
    # The message says "the file was left unchanged": it must be true, or a retry duplicates
    # the entry.
    assert _listing(ws) == before, line


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
def test_long_term_add_folder_fsync_fault_after_the_rename_tells_the_truth(tmp_path, monkeypatch, code):
    """The folder's fsync fails after the new MEMORY.md was renamed into place: the file has
    changed, so the command must not say "left unchanged" (a retry would add the entry
    twice). Either it fails and the file really is unchanged, or it succeeds, the entry is
    there once, and a warning says the change may not be on disk yet."""
    ws = tmp_path / "ws"
    long_term, _ = _seeded(ws)
    before = _listing(ws)
    _fault_os(monkeypatch, FaultyOs(**_faults(code)["fsync-dir"]))
    result = CliRunner().invoke(app, ["--workspace", str(ws), "memory", "add", "--long",
                                      "A new long-term fact"])
    monkeypatch.undo()
    if result.exit_code == 1:
        line = _check_failed(result, long_term, code)
        assert _listing(ws) == before, line
        return
    assert result.exit_code == 0, (result.exit_code, result.stderr)
    after = long_term.read_text(encoding="utf-8")
    assert after.count("A new long-term fact") == 1
    warnings = [w for w in result.stderr.splitlines() if w.startswith("Warning: ")]
    assert len(warnings) == 1 and long_term.name in warnings[0], result.stderr
    assert bad_stderr_lines(result.stderr) == []
    assert sorted(_listing(ws)) == sorted(before)  # no temp file left


def test_a_real_process_with_a_short_write_exits_1(tmp_path, env):
    """The same fault in a real `miniclaw` process: a `-c` wrapper patches the files module
    so that `os.write` fails after 7 bytes, then runs the command line."""
    ws = tmp_path / "ws"
    _, daily = _seeded(ws)
    before = _listing(ws)
    wrapper = textwrap.dedent("""
        import errno, os, sys
        from miniclaw.fs import files
        real_write, budget = os.write, [7]

        class FaultyOs:
            def __getattr__(self, name):
                return getattr(os, name)

            def write(self, fd, data):
                if budget[0] <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                n = real_write(fd, data[:budget[0]])
                budget[0] -= n
                return n

        files.os = FaultyOs()
        sys.argv = ["miniclaw", *sys.argv[1:]]
        from miniclaw.cli import main
        main()
    """)
    done = subprocess.run([PYTHON, "-c", wrapper, "--workspace", str(ws), "memory", "add", "x y z"],
                          env=env, cwd=str(REPO), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done
    line = assert_one_error_line(done.stderr)
    assert "the disk is full" in line and daily.name in line
    assert done.stdout == ""
    assert _listing(ws) == before


# -- the real thing, where the machine allows it ------------------------------------------------


@functools.lru_cache(maxsize=None)
def _can_unshare() -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c",
                            "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d && umount $d; "
                            "r=$?; rmdir $d; exit $r"], capture_output=True, timeout=30)
    return probe.returncode == 0


NAMESPACE_DRIVER = textwrap.dedent(r"""
    import errno, json, os, subprocess, sys
    mnt, mode = sys.argv[1], sys.argv[2]
    env = dict(os.environ)
    ws = os.path.join(mnt, "ws")
    out = {}

    def cli(*args):
        done = subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", ws, *args],
                              env=env, capture_output=True, text=True, timeout=120)
        return {"rc": done.returncode, "out": done.stdout, "err": done.stderr}

    def snapshot():
        folder = os.path.join(ws, "memory")
        return {name: open(os.path.join(folder, name), "rb").read().hex()
                for name in sorted(os.listdir(folder))}

    if mode == "full":
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt], check=True)
        assert cli("init")["rc"] == 0
        assert cli("memory", "add", "--long", "seed fact")["rc"] == 0
        assert cli("memory", "add", "seed note")["rc"] == 0
        fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:  # fill the disk to the brim
            while True:
                os.write(fd, b"\0" * 512)
        except OSError as exc:
            out["fill_errno"] = exc.errno
        os.close(fd)
    else:  # a read-only memory folder
        assert cli("init")["rc"] == 0
        assert cli("memory", "add", "--long", "seed fact")["rc"] == 0
        assert cli("memory", "add", "seed note")["rc"] == 0
        folder = os.path.join(ws, "memory")
        subprocess.run(["mount", "--bind", folder, folder], check=True)
        subprocess.run(["mount", "-o", "remount,ro,bind", folder], check=True)
    before = snapshot()
    out["long"] = cli("memory", "add", "--long", "a long-term fact that needs room " * 200)
    out["daily"] = cli("memory", "add", "a daily note that needs room " * 300)
    out["unchanged"] = snapshot() == before
    out["search"] = cli("memory", "rank", "-q", "seed", "--json")
    print(json.dumps(out))
""")


def _in_namespace(tmp_path: Path, env: dict, mode: str) -> dict:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = subprocess.run(["unshare", "-rm", PYTHON, "-c", NAMESPACE_DRIVER, str(mnt), mode],
                          env=env, cwd=str(REPO), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not _can_unshare(), reason="needs unshare -rm and tmpfs mounts")
def test_a_really_full_disk(tmp_path, env):
    out = _in_namespace(tmp_path, env, "full")
    assert out["fill_errno"] == errno.ENOSPC
    for kind, name in (("long", "MEMORY.md"), ("daily", f"{_today()}.md")):
        assert out[kind]["rc"] == 1, out[kind]
        line = assert_one_error_line(out[kind]["err"])
        assert "the disk is full" in line and name in line, line
        assert out[kind]["out"] == ""
    assert out["unchanged"] is True
    assert out["search"]["rc"] == 0, out["search"]  # reading still works (the index is elsewhere)


@pytest.mark.skipif(not _can_unshare(), reason="needs unshare -rm and bind mounts")
def test_a_read_only_memory_folder(tmp_path, env):
    out = _in_namespace(tmp_path, env, "readonly")
    for kind, name in (("long", "MEMORY.md"), ("daily", f"{_today()}.md")):
        assert out[kind]["rc"] == 1, out[kind]
        line = assert_one_error_line(out[kind]["err"])
        assert _says(line, errno.EROFS) and name in line, line
    assert out["unchanged"] is True
    assert out["search"]["rc"] == 0, out["search"]


# -- an unwritable memory folder ------------------------------------------------------------------


def test_unwritable_memory_folder(tmp_path, env):
    prefix = chmod_binding_prefix("test_unwritable_memory_folder_simulated")
    ws = tmp_path / "ws"
    long_term, daily = _seeded(ws)
    daily.unlink()
    before = _listing(ws)
    os.chmod(ws / "memory", 0o500)
    try:
        results = {}
        for kind, args in (("long", ["--long", "a fact"]), ("daily", ["a note"])):
            results[kind] = subprocess.run(
                prefix + [PYTHON, "-m", "miniclaw", "--workspace", str(ws), "memory", "add", *args],
                env=env, cwd=str(REPO), capture_output=True, text=True, timeout=60)
    finally:
        os.chmod(ws / "memory", 0o700)
    for kind, path in (("long", long_term), ("daily", daily)):
        done = results[kind]
        assert done.returncode == 1, done
        line = assert_one_error_line(done.stderr)
        assert "Permission denied" in line and path.name in line, line
    assert _listing(ws) == before


@pytest.mark.parametrize("kind", ["long", "daily"])
def test_unwritable_memory_folder_simulated(tmp_path, monkeypatch, kind):
    """What chmod 500 does to a non-root user, for any user: creating files fails EACCES."""
    ws = tmp_path / "ws"
    long_term, daily = _seeded(ws)
    daily.unlink()
    before = _listing(ws)

    def open_denied(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and not os.path.exists(path):
            raise _oserror(errno.EACCES)
        return os.open(path, flags, *args, **kwargs)

    def mkstemp(*args, **kwargs):
        raise _oserror(errno.EACCES)

    _fault_os(monkeypatch, FaultyOs(open=open_denied))
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    args = ["--long", "a fact"] if kind == "long" else ["a note"]
    result = CliRunner().invoke(app, ["--workspace", str(ws), "memory", "add", *args])
    monkeypatch.undo()
    _check_failed(result, long_term if kind == "long" else daily, errno.EACCES)
    assert _listing(ws) == before
