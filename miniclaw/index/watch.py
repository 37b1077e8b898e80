"""Knowing what changed without looking: an inotify watch on every source folder (Linux).

A process that searches many times (the chat loop, a server, a benchmark) would otherwise
stat every note before every search, which costs O(files). The watch tells which paths in the
source folders changed since the last look, so a search re-checks only those.

It is trusted only where it is exact: Linux, a local filesystem (a network mount does not
report other machines' writes), no symlinks in the folder (a write to a link's target is not
reported), no folder named twice (through a link: its changes come under one name).
Anywhere else `changes()` answers None, "unknown", and the caller scans everything.
The kernel queues an event inside the write system call, so a write that returned before a
search starts is always seen by that search. Overflow, or the folder itself being moved or
deleted, also answers None.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from pathlib import Path

from miniclaw.fs import platform

_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF = 0x400, 0x800
_IN_Q_OVERFLOW, _IN_IGNORED, _IN_ONLYDIR, _IN_ISDIR = 0x4000, 0x8000, 0x01000000, 0x40000000
_MASK = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO
         | _IN_CREATE | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR)
_UNKNOWN = _IN_Q_OVERFLOW | _IN_IGNORED | _IN_DELETE_SELF | _IN_MOVE_SELF
_EVENT = struct.Struct("iIII")

# Filesystems whose changes all pass through this kernel, so inotify sees every write.
LOCAL_FILESYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay",
                               "zfs", "f2fs", "jfs", "reiserfs", "bcachefs", "ramfs"})


def filesystem_type(path: str) -> str | None:
    """The filesystem type of the mount holding `path`, from /proc/self/mountinfo."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    best, kind = "", None
    for line in lines:
        fields, _, rest = line.partition(" - ")
        parts = fields.split()
        if len(parts) < 5 or not rest:
            continue
        mount = parts[4].replace("\\040", " ")
        inside = path == mount or path.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, kind = mount, rest.split()[0]
    return kind


class FolderWatch:
    """The paths that changed in a set of folders (every source's) since the last call to
    `changes()`: one inotify descriptor, one watch per folder."""

    def __init__(self, folders: Iterable[Path] | Path) -> None:
        if isinstance(folders, (str, os.PathLike)):
            folders = [folders]
        self.paths = [str(folder) for folder in folders]
        self._fd: int | None = None
        self._watched: dict[int, str] = {}  # watch descriptor -> the folder's path as given
        self._identity: list[tuple[int, int] | None] = []

    def start(self) -> bool:
        """Begin watching; False (and no watch) where the watch could not be exact."""
        if not self.paths or not all(
                os.path.isdir(path) and filesystem_type(os.path.realpath(path)) in LOCAL_FILESYSTEMS
                for path in self.paths):
            return False
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(platform.NONBLOCK | platform.CLOEXEC)
            if fd < 0:
                return False
            self._fd = fd
            for path in self.paths:
                wd = libc.inotify_add_watch(fd, os.fsencode(os.path.realpath(path)), _MASK)
                # A folder named twice (a source's root through a link, or `//tmp`) has one
                # descriptor: its changes would come under one of the names only, and a
                # source that knows the other would miss them, or read a file as its own
                # that another source reads. Every refresh then looks at every file.
                if wd < 0 or wd in self._watched:
                    self.close()
                    return False
                self._watched[wd] = path
        except (OSError, AttributeError):
            self.close()
            return False
        self._identity = self._folder_identity()
        try:
            for path in self.paths:
                with os.scandir(path) as entries:
                    if any(entry.is_symlink() for entry in entries):
                        self.close()
                        return False
        except OSError:  # made unreadable, or gone, since it was watched: no exact watch
            self.close()
            return False
        return True

    def _folder_identity(self) -> list[tuple[int, int] | None]:
        """Which folders the watched paths name now: the workspace may have been moved away
        and another put in its place, which no event on the old folder reports."""
        found = []
        for path in self.paths:
            try:
                st = os.stat(path)
            except OSError:
                found.append(None)
            else:
                found.append((st.st_dev, st.st_ino))
        return found

    @property
    def active(self) -> bool:
        return self._fd is not None

    def changes(self) -> set[str] | None:
        """Paths changed since the last call, or None when that cannot be known."""
        if self._fd is None:
            return None
        names: set[str] = set()
        unknown = self._folder_identity() != self._identity
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                unknown = True
                break
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                raw = data[offset + _EVENT.size : offset + _EVENT.size + length]
                offset += _EVENT.size + length
                name = os.fsdecode(raw.rstrip(b"\0"))
                folder = self._watched.get(wd)
                # A new or moved folder may hold files no watch covers: look at everything.
                if mask & (_UNKNOWN | _IN_ISDIR) or not name or folder is None:
                    unknown = True
                else:
                    names.add(os.path.join(folder, name))
        if not unknown and any(os.path.islink(path) for path in names):
            unknown = True  # a new symlink: its target's writes would go unseen
        if unknown:
            self.close()
            return None
        return names

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._watched = {}
