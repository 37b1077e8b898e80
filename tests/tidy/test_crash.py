"""A crash at any point of `memory tidy --apply` leaves each file whole, old or new, and
loses no memory: a real process killed with SIGKILL at a chosen write."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from miniclaw.entries.parsing import parse_daily_note, parse_long_term
from tests.cli.test_cli import run, snapshot

# Runs `miniclaw ... memory tidy --apply --yes --limit 1` with SIGKILL sent to itself at
# the chosen step of the writes: "fsync N" (the Nth temp file half made: written, not yet
# synced or renamed) or "rename N" (just after the Nth rename).
KILLER = """
import os, signal, sys
kind, nth = sys.argv[1], int(sys.argv[2])
count = {"fsync": 0, "rename": 0}
real_replace, real_fsync = os.replace, os.fsync

def counted(what):
    count[what] += 1
    if count[what] == nth:
        os.kill(os.getpid(), signal.SIGKILL)

def replace(src, dst, *a, **k):
    real_replace(src, dst, *a, **k)
    if str(dst).endswith(".md"):
        counted("rename")

def fsync(fd):
    if kind == "fsync" and os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).endswith(".tmp"):
        counted("fsync")
    real_fsync(fd)

os.replace, os.fsync = replace, fsync
sys.argv = ["miniclaw", "--workspace", sys.argv[3], "memory", "tidy", "--apply", "--yes",
            "--limit", "1"]
from miniclaw.cli import main
main()
"""


def texts(ws: Path) -> list[str]:
    """Every entry's text in the workspace, the merge line left out."""
    out = []
    for path in sorted((ws / "memory").glob("*.md")):
        parse = parse_long_term if path.name == "MEMORY.md" else \
            (lambda text, rel: parse_daily_note(text, rel, None))
        out += [e.text.split("\n~ merged from ")[0] for e in parse(path.read_text(), path.name)]
    return out


@pytest.mark.parametrize("kind,nth", [("fsync", 1), ("rename", 1), ("fsync", 2), ("rename", 2),
                                      ("fsync", 3)])
def test_a_kill_mid_apply_leaves_old_or_new_files_and_loses_nothing(planted, tmp_path, kind, nth):
    old = snapshot(planted)
    done = tmp_path / "done"
    shutil.copytree(planted, done)
    assert run(CliRunner(), done, "memory", "tidy", "--apply", "--yes", "--limit", "1").exit_code == 0
    new = snapshot(done)
    changed = [name for name in old if old[name] != new[name]]
    assert len(changed) == 3  # MEMORY.md (the merged entry) and two notes (copies removed)
    proc = subprocess.run([sys.executable, "-c", KILLER, kind, str(nth), str(planted)],
                          capture_output=True, timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    now = {name: data for name, data in snapshot(planted).items() if not name.endswith(".tmp")}
    assert set(now) == set(old)
    states = ["old" if now[n] == old[n] else "new" if now[n] == new[n] else "torn" for n in now]
    assert "torn" not in states
    renamed = nth - 1 if kind == "fsync" else nth
    assert states.count("new") == renamed
    if renamed:  # the file that receives the merged entry is written first
        assert now["memory/MEMORY.md"] == new["memory/MEMORY.md"]
    assert set(t.casefold().rstrip(".") for t in texts(planted)) >= \
        {"prefers dark roast coffee", "sam's rent is 1200 dollars a month",
         "met alex at the climbing gym on pine street", "sam's rent is 1350 dollars a month"}
    # run again: it finishes the job, the crash cost nothing but a repeat
    again = run(CliRunner(), planted, "memory", "tidy", "--apply", "--yes", "--limit", "1")
    assert again.exit_code == 0, again.stderr
    report = json.loads(run(CliRunner(), planted, "memory", "tidy", "--json").stdout)
    assert not any("coffee" in e["content"] for c in report["duplicates"] for e in c["entries"])
