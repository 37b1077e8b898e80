"""Shared helpers of the reliability suite: real subprocesses, real files, real SQLite.

Every subprocess gets HOME and XDG_CACHE_HOME inside the test's tmp_path and PYTHONPATH
pointing at this checkout, so no test touches the real home or an installed miniclaw.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
DAILY_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")

# Python code defining `interrupt_in_a_finalizer()`: a KeyboardInterrupt raised inside a
# finalizer (a weakref callback, as when a finished task is forgotten just as a turn ends),
# which Python drops with "Exception ignored in: ... Traceback".
INTERRUPT_IN_A_FINALIZER = """
import weakref

class Thing:
    pass

def callback(ref):
    raise KeyboardInterrupt

def interrupt_in_a_finalizer():
    thing = Thing()
    ref = weakref.ref(thing, callback)
    del thing
"""


def subprocess_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINICLAW_")}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), PYTHONPATH=str(REPO),
               NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONSTARTUP", None)
    env.update(extra)
    return env


def cli(env: dict[str, str], *args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """`python -m miniclaw ARGS` in a subprocess; stdout and stderr decoded (bad bytes shown)."""
    done = subprocess.run([PYTHON, "-m", "miniclaw", *args], env=env, capture_output=True,
                          timeout=timeout, cwd=str(REPO), **kwargs)
    done.stdout = done.stdout.decode("utf-8", "replace")
    done.stderr = done.stderr.decode("utf-8", "replace")
    return done


def without_dac_override() -> list[str] | None:
    """A command prefix under which chmod stops a process as it stops any user: [] for a
    user who is not root, setpriv dropping root's permission override, or None when that
    cannot be done here."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        return None
    prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"]
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o500)
        probe = subprocess.run(prefix + ["sh", "-c", f"touch {folder}/x"], capture_output=True)
        os.chmod(folder, 0o700)
    return prefix if probe.returncode != 0 else None


def chmod_binding_prefix(covered_by: str) -> list[str]:
    """`without_dac_override()`, or the test is skipped, naming the test that covers the
    same ground through the system's calls (`covered_by`), which runs everywhere."""
    import pytest

    prefix = without_dac_override()
    if prefix is None:
        pytest.skip(f"running as root without setpriv: chmod cannot stop root ({covered_by} "
                    "covers it through the system's calls)")
    return prefix


def bad_stderr_lines(stderr: str) -> list[str]:
    """Lines of stderr that are not `Warning: ...` lines (crashes, tracebacks, locks)."""
    return [line for line in stderr.splitlines()
            if line.strip() and not line.startswith("Warning: ")]


def assert_one_error_line(stderr: str) -> str:
    """Exactly one `Error: ...` line on stderr (warnings allowed before it), no traceback."""
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.strip() and not line.startswith("Warning: ")]
    assert len(errors) == 1 and errors[0].startswith("Error: "), stderr
    return errors[0]


def rank_json(stdout: str) -> dict:
    """The JSON object of `rank --json`, checked for the contract's shape."""
    data = json.loads(stdout)
    assert isinstance(data, dict) and isinstance(data.get("results"), list), stdout[:500]
    assert isinstance(data["total"], int) and data["total"] >= len(data["results"])
    for rank, hit in enumerate(data["results"], 1):
        assert hit["rank"] == rank and isinstance(hit["content"], str), hit
        assert len(hit["excerpt"]) <= 150, hit["excerpt"]
    return data


def memory_files(workspace: Path) -> list[Path]:
    folder = workspace / "memory"
    return sorted(p for p in folder.iterdir() if p.name == "MEMORY.md" or DAILY_NAME.match(p.name))


def result_key(hits) -> list[tuple]:
    """What must be equal between two searches of the same files (scores rounded)."""
    return [(h.path, h.line_start, h.line_end, h.content, round(h.score, 6), h.matched) for h in hits]


async def search_both(workspace: Path, fresh_index: Path, query: str, **options) -> tuple[list, list]:
    """The same search through the workspace's own index and through a brand-new one."""
    from miniclaw.memory import MemoryStore

    async with MemoryStore(workspace) as store:
        shared = await store.search_memories(query, **options)
    if fresh_index.exists():
        for suffix in ("", "-wal", "-shm"):
            Path(f"{fresh_index}{suffix}").unlink(missing_ok=True)
    async with MemoryStore(workspace, index_path=fresh_index) as store:
        fresh = await store.search_memories(query, **options)
    return result_key(shared), result_key(fresh)
