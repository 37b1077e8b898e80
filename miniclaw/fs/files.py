"""Reading and writing memory files safely: the only module that touches their bytes.

Guarantees: every write to a workspace's memory files holds one exclusive lock
(`platform.exclusive`: an `flock` on the memory folder itself where there is flock, so no
lock files litter the user's notes); appends are a single
`O_APPEND` write followed by fsync; a rewrite goes to a temporary file in the same folder,
is fsynced, then atomically renamed over the old one (keeping its mode, owner and group),
and the folder is fsynced; new files are created 0600 and new folders 0700 (POSIX modes:
on Windows only the read-only bit means anything). What differs by system: `platform`.

Files are opened, under the lock for writes, without following a symlink at the last step
and without blocking on a FIFO, and the open descriptor is checked with `fstat`: the bytes
read and written are those of the regular file that was checked, so another process that
swaps a note for a link meanwhile cannot redirect them (`open_in_workspace`). Only regular
files of at most `MAX_FILE_BYTES` are read. Reading never fails on bad bytes: they are
replaced and the caller gets a warning naming the file. OS errors become `MemoryFileError`.
A coroutine reads a whole file through aiofiles (`read_bytes_async`), that same open its
`opener`; writes are synchronous, one worker-thread call per critical section (the lock
held across no event-loop hop: `store/store.py` has the figures).
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import logging
import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from miniclaw.errors import MemoryFileError, UsageError
from miniclaw.fs import platform

log = logging.getLogger("miniclaw")

FILE_MODE = 0o600
DIR_MODE = 0o700
# Larger files are not indexed, read or added to (a warning names them): a 50 MB note would
# take half a minute and a gigabyte of memory to index. MEMORY.md with 100,000 entries is 9 MB.
MAX_FILE_BYTES = 16 * 1024 * 1024
NEAR_LIMIT_BYTES = MAX_FILE_BYTES * 9 // 10  # an add past this warns that the limit is near
# The temporary file of `replace_bytes` beside the file it replaces: a marker no one else
# writes, then mkstemp's 8 random characters (`.MEMORY.md.miniclaw-k3j2h1q_.tmp`). Only a
# name of this form is ever removed as a leftover: a user's `.MEMORY.md.original.tmp` is
# theirs.
TEMP_MARK = ".miniclaw-"
_TEMP_NAME = re.compile(r"\.(.+)" + re.escape(TEMP_MARK) + r"[a-z0-9_]{8}\.tmp")


class OutsideWorkspaceError(UsageError):
    """A memory or identity file that is a symlink out of the workspace: never followed."""


class NotMemoryFileError(MemoryFileError):
    """A path that holds no readable memory: a FIFO, device, folder or link loop, or a file
    over `MAX_FILE_BYTES`. Readers skip it with a warning; writers refuse it."""


_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def decode(raw: bytes, name: str, *, memory_file: bool = True) -> tuple[str, str | None]:
    """Text of a memory file and a warning when its bytes were not valid UTF-8.

    A UTF-16 or UTF-32 file (Windows editors write them) is read by its byte-order mark.
    Text that still holds NUL bytes is some other encoding whose `<private>` tags cannot be
    recognised: it is withheld whole (fail closed), with a warning. A front matter block that
    hides text a person may have meant as memories is named in the warning too (for memory
    files: an identity file's front matter goes into the prompt like the rest of it).
    """
    encoding = next((codec for bom, codec in _BOMS if raw.startswith(bom)), "utf-8-sig")
    warning = None
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        warning = (f"{name} is not valid {encoding.removesuffix('-sig').upper()} (first bad "
                   f"byte at offset {exc.start}); bad bytes were replaced and the rest is searched")
        text = raw.decode(encoding, "replace")
    if "\x00" in text:
        return "", (f"{name} holds NUL bytes (UTF-16 without a byte-order mark?): it is not "
                    "read or searched until it is saved as UTF-8")
    if warning and text[:1] in ("-", "\ufeff"):
        from miniclaw.entries.privacy import is_private_file

        if is_private_file(text.split("\n", 200)[:200]):  # read with bad bytes replaced
            warning = None  # a private file's bad bytes: its name is not shown for them
    if memory_file and (text[:1] in ("-", "\ufeff") or not text[:1].isascii()):
        from miniclaw.entries.privacy import front_matter_warning

        warning = warning or front_matter_warning(text, name)
    return text, warning


def check_appendable(raw: bytes, name: str) -> None:
    """Refuse to write UTF-8 text into a file in another encoding (UTF-16, NUL bytes, or
    bytes that are not UTF-8: Latin-1 saved by an editor): the file would mix two encodings,
    and the new memory (or the old text) read as garbage in one of them. A MemoryFileError
    (exit 1), not a usage error: the command was right, the file on disk stops it."""
    if any(raw.startswith(bom) for bom, _ in _BOMS) or b"\x00" in raw:
        raise MemoryFileError(f"{name} is not UTF-8 text (UTF-16, or NUL bytes): miniclaw "
                              "writes UTF-8, so save it as UTF-8 first; nothing was written",
                              path=name)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise MemoryFileError(f"{name} is not valid UTF-8 (a bad byte on line {line}): miniclaw "
                              f"writes UTF-8, so save it as UTF-8 first (`miniclaw memory edit "
                              f"{name}:{line}` opens it there); nothing was written",
                              path=name) from None


def read_bytes(path: str | Path, workspace: str | Path | None = None,
               name: str | None = None, *, capped: bool = True) -> bytes | None:
    """The bytes of a regular file, or None when it does not exist; a symlink is followed
    only when it stays inside `workspace` (when given, else always). See `read_fd` for
    `capped`."""
    try:
        fd, st, _ = open_in_workspace(Path(path), workspace, name=name)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MemoryFileError(f"cannot read {name or path}: {exc.strerror or exc}",
                              path=name) from exc
    try:
        return read_fd(fd, st, name or str(path), capped=capped)
    except OSError as exc:
        raise MemoryFileError(f"cannot read {name or path}: {exc.strerror or exc}",
                              path=name) from exc
    finally:
        os.close(fd)


def open_regular(path: str | Path, flags: int = os.O_RDONLY, *,
                 name: str | None = None) -> tuple[int, os.stat_result]:
    """Open a regular file without following a symlink at its last step (OSError ELOOP)
    and without blocking on a FIFO; returns the descriptor and its `fstat`, which proves
    what was opened whatever was checked before. Anything but a regular file is
    `NotMemoryFileError`."""
    name = name or str(path)
    try:
        fd = platform.open_nofollow(path, flags, FILE_MODE)
    except OSError as exc:
        if exc.errno in (errno.EISDIR, errno.ENXIO):  # a folder opened to write, a FIFO
            raise NotMemoryFileError(f"{name} is not a regular file", path=name) from exc
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotMemoryFileError(f"{name} is not a regular file (a FIFO, device or folder)",
                                     path=name)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def open_in_workspace(path: Path, workspace: str | Path | None, flags: int = os.O_RDONLY, *,
                      name: str | None = None) -> tuple[int, os.stat_result, Path]:
    """`open_regular` for a memory or identity file: a symlink is followed only when it
    resolves inside `workspace` (None: always), and its target is opened without following
    links again. Returns the descriptor, its fstat and the path of the file opened."""
    name = name or str(path)
    try:
        fd, st = open_regular(path, flags, name=name)
        return fd, st, path
    except OSError as exc:  # O_EXCL fails on any link, a dangling one too
        if exc.errno != errno.ELOOP and not (exc.errno == errno.EEXIST and os.path.islink(path)):
            raise
    target = Path(os.path.realpath(path))
    if workspace is not None and not inside_workspace(target, workspace):
        raise OutsideWorkspaceError(f"{name} is a symlink out of the workspace; miniclaw does "
                                    "not read or write through it", path=name)
    try:
        fd, st = open_regular(target, flags, name=name)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a loop, or swapped for a link since it was resolved
            raise NotMemoryFileError(f"{name} is a symlink loop or changed while opened",
                                     path=name) from exc
        raise
    return fd, st, target


def inside_workspace(path: str | Path, workspace: str | Path) -> bool:
    """Whether `path`, symlinks resolved, stays inside the workspace (or any root)."""
    root = os.path.realpath(workspace)
    return os.path.commonpath([os.path.realpath(path), root]) == root


def read_head(path: str | Path, count: int, name: str | None = None) -> bytes | None:
    """The first `count` bytes of a regular file (a symlink followed), None when there is
    none: a header check (an index file's) that a FIFO cannot hang. OSError, or
    `NotMemoryFileError` (a MemoryFileError) for what is not a regular file."""
    try:
        fd, _, _ = open_in_workspace(Path(path), None, name=name)
    except FileNotFoundError:
        return None
    try:
        return os.read(fd, count)
    finally:
        os.close(fd)


def shown_name(path: str | Path, name: str) -> str:
    """A file's name as a listing may show it: "a private file" for one whose front matter
    says `private: true` (read with bad bytes replaced, so a file that cannot be decoded is
    judged too), which is never named anywhere (as MCP resources/list does not list it)."""
    try:
        head = read_head(path, 16384, name)
    except (OSError, MemoryFileError):
        return name
    if not head or head[:1] not in (b"-", b"\xef"):
        return name
    from miniclaw.entries.privacy import is_private_file

    text = decode(head, name, memory_file=False)[0]
    return "a private file" if is_private_file(text.split("\n")) else name


def read_fd(fd: int, st: os.stat_result, name: str, *, capped: bool = True) -> bytes:
    """All the bytes of an open regular file (`st` is its fstat). `capped`: at most
    `MAX_FILE_BYTES`, else `NotMemoryFileError`; uncapped (`memory read` of a large note),
    a file that keeps growing while read still stops at its size then, or 16 MB."""
    limit, too_large = _read_limit(st, name, capped)
    chunks, total = [], 0
    while chunk := os.read(fd, max(st.st_size + 1 - total, 65536)):
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise too_large
    return b"".join(chunks)


def _read_limit(st: os.stat_result, name: str, capped: bool) -> tuple[int, NotMemoryFileError]:
    """The most bytes `read_fd` (or `read_bytes_async`) reads, and the error past it; a
    capped read of a file already over the cap fails before a byte is read."""
    too_large = NotMemoryFileError(f"{name} is over {MAX_FILE_BYTES // 1048576} MB: memory files "
                                   "that large are not read; split it into smaller notes")
    if capped and st.st_size > MAX_FILE_BYTES:
        raise too_large
    return (MAX_FILE_BYTES if capped else max(st.st_size, MAX_FILE_BYTES)), too_large


async def read_bytes_async(path: str | Path, workspace: str | Path | None = None,
                           name: str | None = None, *, capped: bool = True) -> bytes | None:
    """`read_bytes` for a coroutine, through aiofiles (the design card's async file layer):
    `open_in_workspace` is its `opener`, so the open is the same no-follow, non-blocking
    one, checked by `fstat`, with the same cap, errors and None for a missing file.
    aiofiles is imported here only: a one-shot search reads no file this way."""
    import aiofiles

    name = name or str(path)
    checked: list[os.stat_result] = []

    def opener(file: str, flags: int) -> int:
        fd, st, _ = open_in_workspace(Path(file), workspace, flags, name=name)
        checked.append(st)
        return fd

    try:
        # buffering=0: each read is one read(2) of the size asked, as in `read_fd`.
        async with aiofiles.open(path, "rb", buffering=0, opener=opener) as handle:
            st = checked[0]
            limit, too_large = _read_limit(st, name, capped)
            chunks, total = [], 0
            while chunk := await handle.read(max(st.st_size + 1 - total, 65536)):
                chunks.append(chunk)
                total += len(chunk)
                if total > limit:
                    raise too_large
            return b"".join(chunks)
    except FileNotFoundError:  # only the open raises it: a read of a descriptor cannot
        return None
    except OSError as exc:
        raise MemoryFileError(f"cannot read {name}: {exc.strerror or exc}", path=name) from exc


def ensure_dir(path: Path) -> None:
    """Create a folder (and its missing parents) with mode 0700."""
    missing, parent = [], path
    while not os.path.exists(parent) and parent != parent.parent:
        missing.append(parent)
        parent = parent.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE, exist_ok=True)
        except OSError as exc:
            raise MemoryFileError(f"cannot create folder {folder}: {exc.strerror or exc}") from exc


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold the exclusive write lock of a memory folder (blocks until it is free):
    `platform.exclusive`, an flock on the folder where there is one."""
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(platform.exclusive(folder))
        except OSError as exc:
            raise MemoryFileError(f"cannot lock {folder}: {exc.strerror or exc}") from exc
        yield


def _write_error(name: str | Path, exc: OSError) -> MemoryFileError:
    reason = "the disk is full" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
    return MemoryFileError(f"cannot write {name}: {reason}; the file was left unchanged",
                           path=str(name))


def check_size(name: str, new_size: int) -> None:
    """Refuse a write that takes a file past `MAX_FILE_BYTES` (it would stop being searched);
    warn when one takes it past `NEAR_LIMIT_BYTES`, while there is room to split it."""
    limit_mb = MAX_FILE_BYTES // 1048576
    if new_size > MAX_FILE_BYTES:
        raise MemoryFileError(f"{name} would grow past {limit_mb} MB, the largest memory file "
                              "miniclaw searches; split it into smaller files (nothing was "
                              "written)", path=name)
    if new_size > NEAR_LIMIT_BYTES:
        log.warning("%s is now %.1f MB, near the %d MB limit of a searchable memory file: "
                    "split it soon (adds that go past the limit are refused)",
                    name, new_size / 1048576, limit_mb)


def open_for_write(path: Path, workspace: Path, name: str,
                   extra_flags: int = 0) -> tuple[int, os.stat_result, Path, bool]:
    """Open (or create, 0600) a memory file to write, under `locked`: (descriptor, fstat,
    path opened, created?). Links out of the workspace are refused, and so is anything but
    a regular file; a read-only file is a clear error."""
    flags = os.O_RDWR | extra_flags
    try:
        try:
            return (*open_in_workspace(path, workspace, flags, name=name), False)
        except FileNotFoundError:
            return (*open_in_workspace(path, workspace, flags | os.O_CREAT | os.O_EXCL,
                                       name=name), True)
    except NotMemoryFileError as exc:
        raise NotMemoryFileError(f"{exc}; nothing was written", path=name) from exc
    except PermissionError as exc:
        if os.path.lexists(path):
            raise MemoryFileError(f"{name} is read-only: make it writable to add memories",
                                  path=name) from exc
        raise _write_error(name, exc) from exc
    except OSError as exc:
        raise _write_error(name, exc) from exc


def append_bytes(path: Path, workspace: Path, name: str, make: Callable[[bytes], bytes]) -> None:
    """Append `make(current bytes)` to a memory file, creating it 0600; call under `locked`.

    The current bytes are read through the descriptor that is written. If the write fails
    part-way, the file is truncated back to its old length; a file this write created is
    removed whatever went wrong (an error in `make` too).
    """
    fd, st, target, created = open_for_write(path, workspace, name, os.O_APPEND)
    try:
        try:
            current = read_fd(fd, st, name)
            data = make(current)
            check_size(name, len(current) + len(data))
            write_whole(fd, data, len(current))
        except OSError as exc:
            raise _write_error(name, exc) from exc
    except BaseException:
        if created:  # it did not exist before this write: leave no empty note
            with contextlib.suppress(OSError):
                os.unlink(target)
        raise
    finally:
        os.close(fd)


def write_whole(fd: int, data: bytes, old_length: int) -> None:
    """Append all of `data` to the O_APPEND file `fd` and fsync it; if that fails part-way
    (a full disk), cut the file back to `old_length`: never half an entry or line."""
    try:
        view = memoryview(data)
        while view:  # one write in practice; a loop for the rare short write
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, old_length)
        raise


def rewrite_bytes(path: Path, workspace: Path, name: str,
                  make: Callable[[bytes], bytes]) -> None:
    """Replace a memory file's content by `make(current bytes)`, read through the same
    no-follow descriptor that was checked; call under `locked`. A file this write created
    is removed if it fails."""
    fd, st, target, created = open_for_write(path, workspace, name)
    try:
        try:
            current = read_fd(fd, st, name)
        except OSError as exc:
            raise _write_error(name, exc) from exc
        finally:
            os.close(fd)
        data = make(current)
        check_size(name, len(data))
        replace_bytes(target, data, st, name)
    except BaseException:
        if created:
            with contextlib.suppress(OSError):
                os.unlink(target)
        raise


def temp_file_of(name: str) -> str | None:
    """The name of the file whose `replace_bytes` temp file is called `name`, or None when
    `name` is not one (not our marker: a user's own `.tmp` file)."""
    match = _TEMP_NAME.fullmatch(name)
    return match.group(1) if match else None


def leftovers(folder: Path, of: str | None = None) -> list[Path]:
    """The temp files `replace_bytes` left in `folder` (of the file `of`, else of any), as
    far as they can be proved ours: our marker in the name, a regular file (not a link) and
    owned by this user. Remove them only under `locked(folder)`: no writer owns one then."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for name in names:
        made_for = temp_file_of(name)
        if made_for is None or (of is not None and made_for != of):
            continue
        try:
            st = os.lstat(folder / name)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and platform.owned_by_me(st):
            found.append(folder / name)
    return found


def replace_bytes(path: Path, data: bytes, like: os.stat_result | None = None,
                  name: str | None = None) -> None:
    """Replace a file's content atomically: temp file, fsync, rename, fsync the folder.

    The new file keeps the mode of `like` (the old file's fstat) and, when the writer may
    (root, as under sudo), its owner and group: a rewrite must not take the file away from
    its user.
    """
    import tempfile  # only writers need it

    name = name or str(path)
    folder = path.parent
    # A writer killed before its rename leaves its temp file (a full copy, private blocks
    # too): the caller holds the folder lock, so no other writer owns one now.
    for stale in leftovers(folder, path.name):
        with contextlib.suppress(OSError):
            stale.unlink()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{TEMP_MARK}", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise _write_error(name, exc) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            platform.set_mode_and_owner(handle.fileno(), tmp, like, FILE_MODE)
            os.fsync(handle.fileno())
        platform.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _write_error(name, exc) from exc
    try:
        platform.fsync_folder(folder)
    except OSError as exc:  # the new content is in place: say so, do not claim "unchanged"
        log.warning("%s was written, but its folder could not be synced to disk (%s): a "
                    "power cut now could lose the change", name, exc.strerror or exc)
