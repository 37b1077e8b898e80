"""A new user's trial, for real: `chmod 000` on memory/ and sessions/, then the commands in
processes the chmod stops (a user who is not root, or root without its permission
override: setpriv). Each names the folder in a warning (stderr, JSON `warnings`), `memory
status` does not say "up to date", doctor asks for permissions, not a mount; and once the
folders are readable again, everything is found as before.

The same for any user (root included), through the operating system's calls, is
`tests/sources/test_unreadable_folders.py`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.reliability.support import PYTHON, REPO, chmod_binding_prefix

DENIED = ("cannot read the folder {}: Permission denied; the memory files in it are not "
          "searched until it can be read")


def _workspace(ws: Path) -> None:
    (ws / "memory").mkdir(parents=True)
    (ws / "sessions").mkdir()
    (ws / "memory" / "MEMORY.md").write_text("# Memory\n\n## 2026-02-10\n- zebra stripes are "
                                             "unique\n", encoding="utf-8")
    (ws / "sessions" / "s1.jsonl").write_text(json.dumps(
        {"role": "user", "content": "tell me about the kestrel nesting season",
         "timestamp": "2026-02-13T09:00:00Z", "session_id": "s1"}) + "\n", encoding="utf-8")


def test_a_user_who_may_not_read_the_folders_is_told(tmp_path, env):
    prefix = chmod_binding_prefix("tests/sources/test_unreadable_folders.py")
    ws = tmp_path / "ws"
    _workspace(ws)

    def miniclaw(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(prefix + [PYTHON, "-m", "miniclaw", "--workspace", str(ws), *args],
                              env=env, cwd=str(REPO), capture_output=True, text=True, timeout=120)

    assert json.loads(miniclaw("search", "zebra", "--json").stdout)["total"] == 1
    for folder in ("memory", "sessions"):
        os.chmod(ws / folder, 0)
    try:
        search = miniclaw("search", "zebra", "--json")
        sessions = miniclaw("sessions", "search", "kestrel")
        status = miniclaw("memory", "status", "--json")
        doctor = miniclaw("doctor", "--json")
    finally:
        for folder in ("memory", "sessions"):
            os.chmod(ws / folder, 0o755)

    assert search.returncode == 0, search.stderr
    data = json.loads(search.stdout)
    assert data["total"] == 0
    assert [(w["path"], w["message"]) for w in data["warnings"]] == [
        ("memory/", DENIED.format("memory/")), ("sessions/", DENIED.format("sessions/"))]
    assert search.stderr.splitlines() == [f"Warning: {DENIED.format('memory/')}",
                                          f"Warning: {DENIED.format('sessions/')}"]

    assert sessions.returncode == 0
    assert f"Warning: {DENIED.format('sessions/')}" in sessions.stderr.splitlines()

    state = json.loads(status.stdout)
    assert state["up_to_date"] is False
    assert [f["path"] for f in state["unreadable_folders"]] == ["memory/", "sessions/"]

    findings = {f["check"]: f for f in json.loads(doctor.stdout)["findings"]
                if f["check"] in ("workspace", "sources")}
    assert "Permission denied" in findings["workspace"]["message"]
    assert "Permission denied" in findings["sources"]["message"]
    for finding in findings.values():
        assert "chmod u+rwx" in finding["fix"] and "mount" not in finding["fix"]

    back = miniclaw("search", "zebra", "--json")  # readable again: found, nothing to say
    assert json.loads(back.stdout)["total"] == 1 and back.stderr == ""
    assert "kestrel" in miniclaw("sessions", "search", "kestrel").stdout
