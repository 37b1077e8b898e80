"""Reading and writing memory files safely: the only module that touches their bytes.

Guarantees: every write to a workspace's memory files holds one exclusive lock (an `flock`
on the memory folder itself, so no lock files litter the user's notes); appends are a single
`O_APPEND` write followed by fsync; a rewrite goes to a temporary file in the same folder,
is fsynced, then atomically renamed over the old one, and the folder is fsynced; new files
are created 0600 and new folders 0700. Reading never fails on bad bytes: they are replaced
and the caller gets a warning naming the file. OS errors become `MemoryFileError`.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import fcntl
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from miniclaw.errors import MemoryFileError

log = logging.getLogger("miniclaw")

FILE_MODE = 0o600
DIR_MODE = 0o700


_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def decode(raw: bytes, name: str) -> tuple[str, str | None]:
    """Text of a memory file and a warning when its bytes were not valid UTF-8.

    A UTF-16 or UTF-32 file (Windows editors write them) is read by its byte-order mark.
    Text that still holds NUL bytes is some other encoding whose `<private>` tags cannot be
    recognised: it is withheld whole (fail closed), with a warning. A front matter block that
    hides text a person may have meant as memories is named in the warning too.
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
    if text[:1] in ("-", "\ufeff") or not text[:1].isascii():  # maybe front matter
        from miniclaw.memory.privacy import front_matter_warning

        warning = warning or front_matter_warning(text, name)
    return text, warning


def check_appendable(raw: bytes, name: str) -> None:
    """Refuse to add UTF-8 text to a file in another encoding (UTF-16, or holding NUL bytes):
    the result would be unreadable, and the new memory invisible."""
    if any(raw.startswith(bom) for bom, _ in _BOMS) or b"\x00" in raw:
        raise MemoryFileError(f"{name} is not UTF-8 text (UTF-16, or NUL bytes): miniclaw "
                              "writes UTF-8, so save it as UTF-8 first; nothing was written")


def read_bytes(path: str | Path) -> bytes | None:
    """The file's bytes, or None when it does not exist."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MemoryFileError(f"cannot read {path}: {exc.strerror or exc}") from exc


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
    """Hold the exclusive write lock of a memory folder (blocks until it is free)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise MemoryFileError(f"cannot open {folder} to lock it: {exc.strerror or exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_error(path: Path, exc: OSError) -> MemoryFileError:
    reason = "the disk is full" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
    return MemoryFileError(f"cannot write {path}: {reason}; the file was left unchanged")


def append_bytes(path: Path, make: Callable[[bytes], bytes]) -> None:
    """Append `make(current bytes)` to a file, creating it 0600; call under `locked`.

    If the write fails part-way, the file is truncated back to its old length.
    """
    existed = os.path.exists(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, FILE_MODE)
    except OSError as exc:
        raise _write_error(path, exc) from exc
    try:
        with os.fdopen(fd, "rb+", buffering=0, closefd=False) as handle:
            current = handle.read()
        try:
            write_whole(fd, make(current), len(current))
        except OSError as exc:
            if not existed:  # it did not exist before this write: leave no empty note
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise _write_error(path, exc) from exc
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


def replace_bytes(path: Path, data: bytes) -> None:
    """Replace a file's content atomically: temp file, fsync, rename, fsync the folder."""
    import tempfile  # only writers need it

    folder = path.parent
    # A writer killed before its rename leaves its temp file (a full copy, private blocks
    # too): the caller holds the folder lock, so no other writer owns one now.
    for stale in folder.glob(f".{path.name}.*.tmp"):
        with contextlib.suppress(OSError):
            stale.unlink()
    mode = FILE_MODE
    with contextlib.suppress(FileNotFoundError):
        mode = os.stat(path).st_mode & 0o777
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise _write_error(path, exc) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _write_error(path, exc) from exc
    try:
        _fsync_dir(folder)
    except OSError as exc:  # the new content is in place: say so, do not claim "unchanged"
        log.warning("%s was written, but its folder could not be synced to disk (%s): a "
                    "power cut now could lose the change", path, exc.strerror or exc)


def open_regular(path: str | Path, flags: int = os.O_RDONLY, mode: int = FILE_MODE) -> int:
    """A descriptor of `path` opened without following a symlink at its last component, and
    only when what was opened is a regular file (checked on the descriptor, so a swap after a
    check cannot slip in a link, a FIFO or a device). Raises OSError otherwise: ELOOP for a
    link, EINVAL for anything else that is not a regular file, FileNotFoundError."""
    import stat

    # O_NONBLOCK: opening a FIFO would otherwise wait for a writer.
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if not flags & os.O_NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
