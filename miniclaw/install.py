"""How to install an optional part (an extra) of this miniclaw, in the words of a command.

The name `miniclaw` on PyPI is another project: `pip install 'miniclaw[semantic]'` run
outside this checkout installs that one. So every hint names this project's own source: the
folder it was installed from (pip records it in `direct_url.json`), or the checkout the
running package sits in, installed with the Python running miniclaw now (a bare `pip` may be
another environment's). Only when neither is known does the hint say what to look for.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path


def install_command(extra: str) -> str:
    """The command that adds `extra` ("semantic", "mcp") to the miniclaw running now."""
    found = _source()
    python = shlex.quote(sys.executable or "python3")
    if found is None:
        return (f"{python} -m pip install -e '<the miniclaw source folder>[{extra}]' (from "
                "the folder you installed miniclaw from: `miniclaw` on PyPI is another project)")
    folder, editable = found
    return f"{python} -m pip install {'-e ' if editable else ''}{shlex.quote(f'{folder}[{extra}]')}"


def _source() -> tuple[str, bool] | None:
    """(the folder this miniclaw was installed from, editable?), or None when unknown."""
    import json
    from importlib import metadata
    from urllib.parse import unquote, urlsplit

    try:
        # Package metadata pip wrote, not a file of the user's.
        recorded = json.loads(metadata.distribution("miniclaw").read_text("direct_url.json") or "{}")
        url = urlsplit(recorded.get("url", ""))
        folder = unquote(url.path) if url.scheme == "file" else ""
        if folder and _is_checkout(Path(folder)):
            return folder, bool((recorded.get("dir_info") or {}).get("editable"))
    except (metadata.PackageNotFoundError, ValueError, AttributeError, TypeError, OSError):
        pass
    checkout = Path(__file__).resolve().parent.parent  # running from a checkout, uninstalled
    return (str(checkout), True) if _is_checkout(checkout) else None


def _is_checkout(folder: Path) -> bool:
    """Whether `folder` holds this project's source: its pyproject.toml beside the package
    and the workspace template (the layout of this repository), without reading a file."""
    return all(os.path.exists(folder / part) for part in
               ("pyproject.toml", "miniclaw/__init__.py", "workspace_template"))
