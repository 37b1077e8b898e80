"""What differs by operating system, in one place: each capability is detected (`hasattr`,
a failed import), never assumed from `sys.platform`, and the rest of miniclaw asks here.

Linux, macOS and Windows keep the same promises; where a guarantee is weaker, it says so.
`tests/platform_sim/` runs the CLI and part of the suite with fcntl, os.fork, O_NOFOLLOW,
O_NONBLOCK, O_CLOEXEC, O_DIRECTORY, os.fchown and inotify removed, on Linux, in CI.

Locks (`exclusive`). Where `fcntl.flock` and folder descriptors exist (Linux, macOS), the
lock is an flock on the folder itself, as before: no lock file in the user's notes.
Elsewhere (Windows) a folder cannot be opened to lock, so the lock is SQLite's exclusive
lock on an empty file in miniclaw's cache folder (`locks/<device>-<inode>.lock`: the
folder's identity, so two spellings of one folder share one lock), never in the memory
folder. SQLite is in the standard library, locks through the OS (POSIX locks, LockFileEx
on Windows) so a crashed holder's lock goes with its process, and excludes two connections
of one process as it excludes two processes; it writes nothing (the file stays empty, no
journal). It was chosen over the others because it is the path the simulated CI run really
exercises (48 adds from 8 processes), not a fake: `msvcrt.locking` only exists on Windows
and its blocking mode polls once a second for ten seconds, then fails; `filelock` and
`portalocker` use fcntl off Windows, and `filelock` without fcntl falls back to a
`SoftFileLock` that a crashed process leaves held. Cost of one lock taken and released
(benchmarks/platform_locks.py, 2026-11-29, load 11): flock 12-16 us, SQLite 245-265 us; a
whole add (its fsync) 0.24-4 ms.

No-follow, no-hang opens (`open_nofollow`). With O_NOFOLLOW and O_NONBLOCK, one open
refuses a link at the last step and never waits on a FIFO, as before. Without them: lstat
first (a link, or a Windows reparse point that names another file, is ELOOP; anything but a
regular file is refused before it is opened, so a FIFO or device is never opened), open, then
fstat: a different device or file id means the name was swapped meanwhile, and the
descriptor is closed before a byte is read or written. What remains: a FIFO or device swapped
in between the lstat and the open is opened (a FIFO's open may then wait for a writer; Windows
has no FIFOs in the file system), and a file system without file ids (FAT: st_ino 0) cannot
tell a swap. A create is always O_EXCL, which follows no link anywhere.
O_CLOEXEC is only a belt: Python opens every descriptor non-inheritable (PEP 446).

Ownership and modes: `fchown` where it exists (only root may give a file away); modes are
set with fchmod where it exists, else chmod by path. Windows keeps only the read-only bit:
files there are private by living in the user's profile, and the docs claim no 0600.

Renames: a rewrite's rename is tried again for half a second while Windows says a reader
has the file open (`replace`).

Change detection: the inotify watch (index/watch.py) is a Linux optimisation (warm bm25
x3.0); everywhere else, and with MINICLAW_WATCH=0, each sync stats every file.

Paths: file ids, not names, tell two spellings of one file apart (a case-insensitive file
system, a link), so a file is never indexed twice: a folder lists MEMORY.md and each daily
note once, under its stored name, and a configured source that reaches one of them by
another spelling is dropped by device and inode (`sources.base.read_once`; on a file system
without ids, by `realpath`, which on Windows returns the stored case). Citations are built
with `/` (`as_posix`) on every system; drive letters and backslashes stay inside `Path`. Paths
over 260 characters on Windows need its LongPathsEnabled setting (Python is long-path
aware). No fork: the index's parse workers are started as new interpreters by path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DIRECTORY = getattr(os, "O_DIRECTORY", None)
# Folders opened as descriptors, listed and stat'ed through them (not on Windows).
DIR_FD = (DIRECTORY is not None and os.stat in os.supports_dir_fd
          and os.listdir in os.supports_fd)
# An flock on a folder's own descriptor: the lock without a lock file.
FOLDER_FLOCK = fcntl is not None and hasattr(fcntl, "flock") and DIRECTORY is not None
KILLPG = getattr(os, "killpg", None)
# Windows: the reparse tags of links (a symlink, a junction); other reparse points (a
# OneDrive placeholder) are ordinary files that os.lstat already follows.
LINK_REPARSE_TAGS = (0xA000000C, 0xA0000003)
LOCK_WAIT_S = 600.0


def open_nofollow(path: str | os.PathLike, flags: int, mode: int) -> int:
    """`os.open` that never follows a link at the last step (OSError ELOOP) and never opens
    a FIFO or device (OSError ENXIO): the module docstring says how, and what race remains
    where the flags are missing."""
    if NOFOLLOW and NONBLOCK:
        return os.open(path, flags | NOFOLLOW | NONBLOCK | CLOEXEC, mode)
    while True:
        try:
            before = os.lstat(path)
        except FileNotFoundError:
            if not flags & os.O_CREAT:
                raise
            try:  # O_EXCL follows no link: what it creates is a new regular file
                return os.open(path, flags | os.O_EXCL | CLOEXEC, mode)
            except FileExistsError:
                if flags & os.O_EXCL:
                    raise
                continue  # created meanwhile: check what is there now
        if flags & os.O_EXCL:
            raise OSError(errno.EEXIST, "exists", str(path))
        if is_link(before):
            raise OSError(errno.ELOOP, "is a link", str(path))
        if not stat.S_ISREG(before.st_mode):  # never opened: a FIFO's open would wait
            raise OSError(errno.ENXIO, "not a regular file", str(path))
        fd = os.open(path, flags | CLOEXEC, mode)
        after = os.fstat(fd)
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
            os.close(fd)
            raise OSError(errno.ELOOP, "changed while opened", str(path))
        return fd


def is_link(st: os.stat_result) -> bool:
    """Whether an lstat result is a link: a symlink, or on Windows a junction."""
    return stat.S_ISLNK(st.st_mode) or getattr(st, "st_reparse_tag", 0) in LINK_REPARSE_TAGS


def owned_by_me(st: os.stat_result) -> bool:
    """Whether this user owns the file; True where files have no POSIX owner (Windows,
    where st_uid is always 0 and the user's profile is theirs)."""
    geteuid = getattr(os, "geteuid", None)
    return geteuid is None or st.st_uid == geteuid()


def set_mode_and_owner(fd: int, path: str | os.PathLike, like: os.stat_result | None,
                       default_mode: int) -> None:
    """Give a new file the mode of `like` (else `default_mode`) and, where the writer may
    (root, as under sudo) and the system has owners, its owner and group."""
    mode = stat.S_IMODE(like.st_mode) if like else default_mode
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:
        os.chmod(path, mode)
    fchown = getattr(os, "fchown", None)
    if like is None or fchown is None or not hasattr(os, "geteuid"):
        return
    if (like.st_uid, like.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(PermissionError):  # only root may give a file away
            fchown(fd, like.st_uid, like.st_gid)


def fsync_folder(folder: str | os.PathLike) -> None:
    """Make a rename in `folder` durable; where a folder cannot be opened (Windows), the
    file system's own journal does it (NTFS logs the rename)."""
    if DIRECTORY is None:
        return
    fd = os.open(folder, os.O_RDONLY | DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace(source: str | os.PathLike, target: str | os.PathLike, *,
            tries: int = 10, wait_s: float = 0.05) -> None:
    """`os.replace`, tried again for up to half a second on PermissionError: Windows refuses
    to replace a file another process has open (Python opens without FILE_SHARE_DELETE), and
    a reader holds a note for milliseconds. Elsewhere the error was final anyway."""
    for attempt in range(tries):
        try:
            os.replace(source, target)
            return
        except PermissionError:
            if attempt == tries - 1:
                raise
            import time

            time.sleep(wait_s)


def cache_home() -> Path:
    """The user's cache folder: $XDG_CACHE_HOME, else %LOCALAPPDATA% (Windows), else
    ~/.cache."""
    env = os.environ.get("XDG_CACHE_HOME") or os.environ.get("LOCALAPPDATA")
    return Path(env).expanduser() if env else Path.home() / ".cache"


@contextlib.contextmanager
def exclusive(folder: Path) -> Iterator[None]:
    """Hold the exclusive lock of `folder` across processes and threads (blocks until it
    is free; a holder that crashed releases it). OSError when it cannot be taken."""
    if FOLDER_FLOCK:
        fd = os.open(folder, os.O_RDONLY | DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock
        return
    with _sqlite_lock(lock_file(folder)):
        yield


def lock_file(folder: Path) -> Path:
    """Where the lock of `folder` lives without flock: named by the folder's identity, in
    miniclaw's cache folder (created 0700), never beside the user's notes."""
    st = os.stat(folder)
    locks = cache_home() / "miniclaw" / "locks"
    locks.mkdir(mode=0o700, parents=True, exist_ok=True)
    return locks / f"{st.st_dev:x}-{st.st_ino:x}.lock"


@contextlib.contextmanager
def _sqlite_lock(path: Path) -> Iterator[None]:
    import sqlite3

    try:
        con = sqlite3.connect(path, timeout=LOCK_WAIT_S, isolation_level=None,
                              check_same_thread=False)
        try:  # no journal: nothing is written, and a journal file made and removed at
            # each lock cost an add 4x (the note's fsync then flushed the folder's changes)
            con.execute("PRAGMA journal_mode=OFF")
            con.execute("BEGIN EXCLUSIVE")
        except BaseException:
            con.close()
            raise
    except sqlite3.Error as exc:
        raise OSError(errno.EAGAIN, f"the lock {path.name} could not be taken ({exc})") from None
    try:
        yield
    finally:
        con.close()  # closing releases the lock


def reopen_terminal(fd: int) -> int | None:
    """A new descriptor of the terminal `fd` is, opened by its name (not made our
    controlling terminal); None where terminals have no name (Windows) or it cannot be
    opened."""
    if not hasattr(os, "ttyname"):
        return None
    try:
        return os.open(os.ttyname(fd), os.O_RDWR | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None


def end_group(proc, hard: bool) -> None:
    """Stop a child started with `start_new_session=True` and its children where process
    groups exist; elsewhere (Windows) the child itself. OSError when it is gone."""
    if KILLPG is not None:
        import signal

        KILLPG(proc.pid, signal.SIGKILL if hard else signal.SIGTERM)
    elif hard:
        proc.kill()
    else:
        proc.terminate()


def process_alive(pid: int) -> bool:
    """Whether process `pid` may still run. Signal 0 probes only under POSIX; on Windows
    `os.kill(pid, 0)` would end it, so there every process counts as alive (a leftover is
    then kept, never another's work removed)."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # alive, under another user, or not a pid
        return True
    return True
