"""A system without the POSIX extras miniclaw used to need, on Linux: with this folder on
PYTHONPATH, `import fcntl` fails and os.fork, O_NOFOLLOW, O_NONBLOCK, O_CLOEXEC,
O_DIRECTORY and os.fchown are gone (as on Windows), and inotify cannot be found (as on
macOS and Windows). tests/test_platforms.py runs miniclaw and part of the suite so."""

import os
import sys

for _name in ("fork", "O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC", "O_DIRECTORY", "fchown"):
    if hasattr(os, _name):
        delattr(os, _name)


class _NoFcntl:
    """A meta path finder that refuses the one module, to all but the mcp SDK: it chooses
    its branch by `sys.platform`, so here on Linux it takes its POSIX one (on Windows it
    never asks for fcntl)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "fcntl":
            return None
        frame = sys._getframe(1)
        while frame and frame.f_globals.get("__name__", "").startswith("importlib"):
            frame = frame.f_back
        if frame and frame.f_globals.get("__name__", "").startswith("mcp."):
            return None
        raise ModuleNotFoundError("No module named 'fcntl' (platform simulation)", name=name)


sys.modules.pop("fcntl", None)
sys.meta_path.insert(0, _NoFcntl())

import ctypes  # noqa: E402

_lookup = ctypes.CDLL.__getattr__


def _no_inotify(self, name):
    if name.startswith("inotify"):
        raise AttributeError(f"{name}: not found (platform simulation)")
    return _lookup(self, name)


ctypes.CDLL.__getattr__ = _no_inotify
os.environ["MINICLAW_PLATFORM_SIM"] = "1"
