"""Where things live: the miniclaw home, the workspace, and the search index cache.

Precedence for the workspace: an explicit path (``--workspace``), then ``MINICLAW_WORKSPACE``,
then ``$MINICLAW_HOME/workspace``, then ``~/.miniclaw/workspace``. The index is a cache and
never lives inside the workspace: ``MINICLAW_INDEX`` names its file, else it is one file per
workspace under ``$XDG_CACHE_HOME/miniclaw/`` (``~/.cache/miniclaw/`` when unset).
"""

from __future__ import annotations

import zlib
import os
import re
from pathlib import Path

MEMORY_DIR = "memory"
LONG_TERM_FILE = "MEMORY.md"


def miniclaw_home() -> Path:
    """The folder holding config.json and, by default, the workspace."""
    env = os.environ.get("MINICLAW_HOME")
    return Path(env).expanduser() if env else Path.home() / ".miniclaw"


def resolve_workspace(path: str | os.PathLike[str] | None = None) -> Path:
    """The workspace folder to use, absolute, without checking that it exists."""
    if path is None or str(path) == "":
        env = os.environ.get("MINICLAW_WORKSPACE")
        path = env if env else miniclaw_home() / "workspace"
    return Path(path).expanduser().absolute()


def cache_dir() -> Path:
    env = os.environ.get("XDG_CACHE_HOME")
    base = Path(env).expanduser() if env else Path.home() / ".cache"
    return base / "miniclaw"


def index_path(workspace: Path) -> Path:
    """The index file of a workspace: readable name, plus a hash so two workspaces never share."""
    env = os.environ.get("MINICLAW_INDEX")
    if env:
        return Path(env).expanduser().absolute()
    resolved = str(Path(workspace).resolve())
    raw = resolved.encode("utf-8", "surrogateescape")
    # Two CRCs (zlib is already loaded; hashlib's OpenSSL costs ~2 ms at every start).
    digest = f"{zlib.crc32(raw):08x}{zlib.crc32(raw[::-1]):08x}"
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", Path(resolved).name)[:40] or "workspace"
    return cache_dir() / f"{name}-{digest}.sqlite3"
