"""Creating a workspace from `workspace_template/`.

`init_workspace` copies every template file that is missing and never overwrites one that
exists, so running it twice, or on a workspace a user already filled, is safe. Folders are
created 0700 and files 0600: memory is private by default.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from miniclaw.errors import MemoryFileError, UsageError
from miniclaw.fs.files import FILE_MODE, ensure_dir

TEMPLATE_PACKAGE = "miniclaw.workspace_template"


def _template_files() -> list[tuple[str, bytes]]:
    """(relative path, bytes) of each template file."""
    root = resources.files(TEMPLATE_PACKAGE)
    found: list[tuple[str, bytes]] = []

    def walk(node, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.name.startswith(("__", ".")):
                continue
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            elif child.name.endswith(".md"):
                found.append((prefix + child.name, child.read_bytes()))

    walk(root, "")
    return found


def init_workspace(workspace: Path) -> list[tuple[str, bool]]:
    """Create the workspace; returns (relative path, created?) for each template file."""
    workspace = Path(workspace)
    if workspace.exists() and not workspace.is_dir():
        raise UsageError(f"{workspace} exists and is not a folder")
    templates = _template_files()  # read them all before creating anything
    ensure_dir(workspace)
    ensure_dir(workspace / "sessions")
    results = []
    for rel, data in templates:
        target = workspace / rel
        ensure_dir(target.parent)
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        except FileExistsError:
            results.append((rel, False))
            continue
        except OSError as exc:
            raise MemoryFileError(f"cannot create {target}: {exc.strerror or exc}") from exc
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        results.append((rel, True))
    return results


