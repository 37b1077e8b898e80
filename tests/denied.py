"""A folder its user may not read, for any user: what `chmod 000 FOLDER` does to a user
who is not root, done at the operating system's boundary (the `os` calls), so that the
tests run as root too, where a real chmod stops nothing.

For a user who is not root, a folder without permissions cannot be listed or opened, and
nothing inside it can be opened or even looked at (stat: no search permission), while
the folder's own stat still works (it needs only its parent). `DeniedFolder` makes the
`os` calls do exactly that for one folder, until `lift()` (the chmod back).
"""

from __future__ import annotations

import errno
import os

import pytest


class DeniedFolder:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, folder: os.PathLike[str] | str) -> None:
        self.folder = os.path.abspath(folder)
        self.on = True
        for name, inside_only in (("open", False), ("listdir", False), ("scandir", False),
                                  ("stat", True), ("lstat", True)):
            monkeypatch.setattr(os, name, self._guard(getattr(os, name), inside_only))

    def lift(self) -> None:
        """Access is given back (`chmod 755`)."""
        self.on = False

    def _blocked(self, path: object, inside_only: bool, dir_fd: object) -> bool:
        if not self.on or dir_fd is not None or not isinstance(path, (str, bytes, os.PathLike)):
            return False  # a descriptor, or relative to one: the folder was opened before
        absolute = os.path.abspath(os.fsdecode(path))
        return (absolute.startswith(self.folder + os.sep)
                or (absolute == self.folder and not inside_only))

    def _guard(self, real, inside_only: bool):
        def call(path=".", *args, **kwargs):
            if self._blocked(path, inside_only, kwargs.get("dir_fd")):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))
            return real(path, *args, **kwargs)

        return call
