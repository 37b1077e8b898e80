"""`miniclaw doctor`: a workspace with every problem planted, a healthy one, the model server
check against a real local HTTP server, and `--fix` doing only what cannot lose data."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from miniclaw import config
from tests.conftest import daily_note, write

MAIN = [sys.executable, "-m", "miniclaw"]


def run(workspace: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*MAIN, "--workspace", str(workspace), *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=120)


def snapshot(*folders: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every file under the folders: its bytes (None for what is not a regular file), mode."""
    found = {}
    for folder in folders:
        for root, dirs, names in os.walk(folder):
            for name in dirs + names:
                path = Path(root) / name
                st = os.lstat(path)
                regular = path.is_file() and not path.is_symlink() and st.st_size < 1 << 20
                found[str(path)] = (path.read_bytes() if regular else None, st.st_mode)
    return found


def register_mcp(home: Path, workspace: Path) -> None:
    """A registration that works: doctor starts it (without --workspace it would stop at
    once for want of the default workspace, and doctor says so)."""
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"miniclaw": {
        "command": sys.executable, "args": ["-m", "miniclaw", "--workspace", str(workspace), "mcp"]}}}))


@pytest.fixture
def healthy(workspace: Path, isolated_home: Path) -> Path:
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-14\n- Prefers dark roast\n")
    write(workspace, "memory/2026-02-14.md", daily_note("2026-02-14", ["Met Sam"], ["09:00:00"]))
    assert run(workspace, "memory", "index").returncode == 0
    register_mcp(isolated_home, workspace)
    return workspace


def test_a_healthy_workspace_has_no_finding_and_exits_0(healthy: Path):
    done = run(healthy, "doctor", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["healthy"] is True
    assert report["findings"] == []
    assert any("registered in" in line for line in report["checked"])
    text = run(healthy, "doctor")
    assert text.returncode == 0 and text.stdout.rstrip().endswith("Healthy.")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def plant_every_problem(workspace: Path, home: Path, tmp_path: Path) -> Path:
    """Every problem doctor knows, one per file; returns the index path."""
    memory = workspace / "memory"
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-14\n- Prefers dark roast\n")
    assert run(workspace, "memory", "index").returncode == 0
    (memory / "2026-02-01.md").write_bytes(b"# Daily Note\n\n## 09:00:00 UTC\n\nbad \xff byte\n")
    write(workspace, "memory/2026-02-02.md", "## 09:00:00 UTC\n\nok\n\n<private>\nsecret pin zebra-quartz\n")
    write(workspace, "memory/2026-02-03.md",
          "---\nMet Sam: about the budget, 40k approved\n---\n\n## 09:00:00 UTC\n\nhi\n")
    (memory / "2026-02-04.md").mkdir()  # not a regular file
    outside = tmp_path / "outside.md"
    outside.write_text("## 09:00:00 UTC\n\nelsewhere\n")
    (memory / "2026-02-05.md").symlink_to(outside)
    with open(memory / "2026-02-06.md", "wb") as big:  # past the 16 MB limit (sparse)
        big.truncate(17 * 1024 * 1024)
    with open(memory / "2026-02-07.md", "wb") as near:  # near it: 15 MB
        near.write(b"## 09:00:00 UTC\n\n" + b"word " * (3 * 1024 * 1024))
    # Named as `files.replace_bytes` names its temp file; and a user's own file it must spare.
    fd, temp = tempfile.mkstemp(prefix=".2026-02-01.md.miniclaw-", suffix=".tmp", dir=memory)
    os.write(fd, b"a full copy, secret pin zebra-quartz\n")
    os.close(fd)
    (memory / ".MEMORY.md.mine.tmp").write_text("the user's own\n")
    write(workspace, "memory/notes.md", "- not a memory file\n")
    index = config.index_path(workspace)
    with open(index, "r+b") as handle:  # damage a page after the header
        handle.seek(4096 + 100)
        handle.write(b"\xde\xad" * 2000)
    (home / ".miniclaw").mkdir()
    (home / ".miniclaw" / "config.json").write_text(json.dumps({
        "llm": {"base_url": f"http://127.0.0.1:{closed_port()}/v1", "model": "llama3.2"},
        "workspaces": {str(workspace): {"sources": [
            "long_term", "daily_note", {"kind": "conkeeper", "root": str(tmp_path / "gone")}]}}}))
    return index


def by_path(report: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for finding in report["findings"]:
        found.setdefault(finding["path"], []).append(finding)
    return found


def test_every_planted_problem_is_a_finding_and_nothing_is_written(
        workspace: Path, isolated_home: Path, tmp_path: Path):
    index = plant_every_problem(workspace, isolated_home, tmp_path)
    before = snapshot(workspace, index.parent)
    done = run(workspace, "doctor", "--json")
    assert done.returncode == 1, done.stderr
    assert snapshot(workspace, index.parent) == before  # read-only: not even a -shm file
    report = json.loads(done.stdout)
    assert report["healthy"] is False
    found = by_path(report)

    def one(path: str, severity: str, *words: str) -> None:
        texts = [f["message"] for f in found.get(path, []) if f["severity"] == severity]
        assert any(all(w in t for w in words) for t in texts), (path, found.get(path))
        assert all(f["fix"] for f in found[path])

    one("memory/2026-02-01.md", "warning", "not valid UTF-8", "offset 35")
    one("memory/2026-02-02.md", "warning", "<private> on line 5 is never closed")
    one("memory/2026-02-03.md", "warning", "front matter")
    one("memory/2026-02-04.md", "warning", "skipped", "not a regular file")
    one("memory/2026-02-05.md", "warning", "skipped", "symlink out of the workspace")
    one("memory/2026-02-06.md", "warning", "skipped", "over 16 MB")
    one("memory/2026-02-07.md", "warning", "near the 16 MB limit")
    [temp] = [p for p in found if p and p.endswith(".tmp")]
    one(temp, "warning", "leftover temporary file")
    one("memory/notes.md", "info", "not searched")
    one(str(index), "error", "damaged")
    base_url = json.loads((isolated_home / ".miniclaw" / "config.json").read_text())["llm"]["base_url"]
    one(base_url, "error", "not reachable")
    one(str(tmp_path / "gone"), "error", "root folder is not reachable")
    one(None, "info", "not registered with Claude Code", str(isolated_home / ".claude.json"))
    assert "zebra-quartz" not in done.stdout + done.stderr  # private text never in the report
    assert any(line.endswith(": 8 memory files") for line in report["checked"])


def test_fix_rebuilds_the_index_and_removes_temp_files_never_a_memory_file(
        workspace: Path, isolated_home: Path, tmp_path: Path):
    index = plant_every_problem(workspace, isolated_home, tmp_path)
    notes = {p.name: p.read_bytes() for p in (workspace / "memory").glob("*.md")
             if p.is_file() and not p.is_symlink()}
    [temp] = (workspace / "memory").glob(".2026-02-01.md.miniclaw-*.tmp")
    done = run(workspace, "doctor", "--fix")
    assert done.returncode == 1  # the memory files' problems remain: doctor never edits them
    assert f"fixed    removed memory/{temp.name}" in done.stdout
    assert "fixed    deleted the damaged index and rebuilt the index" in done.stdout
    assert not temp.exists()
    assert (workspace / "memory" / ".MEMORY.md.mine.tmp").read_text() == "the user's own\n"
    assert {p.name: p.read_bytes() for p in (workspace / "memory").glob("*.md")
            if p.is_file() and not p.is_symlink()} == notes
    after = json.loads(run(workspace, "doctor", "--json").stdout)
    assert [f for f in after["findings"] if f["check"] == "index"] == []
    assert "Prefers dark roast" in run(workspace, "memory", "rank", "-q", "roast").stdout


def test_fix_builds_a_missing_index(workspace: Path, isolated_home: Path):
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-14\n- Prefers dark roast\n")
    register_mcp(isolated_home, workspace)
    first = json.loads(run(workspace, "doctor", "--json").stdout)
    assert [f["message"] for f in first["findings"]] == [
        "not built yet: the first search builds it"]
    assert not config.index_path(workspace).exists()
    done = run(workspace, "doctor", "--fix")
    assert done.returncode == 0 and "rebuilt the index" in done.stdout
    assert json.loads(run(workspace, "doctor", "--json").stdout)["findings"] == []


def test_a_stale_index_is_a_note_not_a_failure(healthy: Path):
    write(healthy, "memory/2026-02-13.md", daily_note("2026-02-13", ["new"], ["08:00:00"]))
    done = run(healthy, "doctor", "--json")
    assert done.returncode == 0
    [finding] = json.loads(done.stdout)["findings"]
    assert finding["severity"] == "info" and "memory/2026-02-13.md" in finding["message"]


def test_a_missing_workspace_is_an_error(tmp_path: Path):
    done = run(tmp_path / "nowhere", "doctor")
    assert done.returncode == 1
    assert "there is no workspace here" in done.stdout and "miniclaw init" in done.stdout
    assert "Traceback" not in done.stderr


def test_an_index_of_another_program_is_left_alone(healthy: Path, tmp_path: Path):
    import sqlite3

    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("PRAGMA application_id = 42")
        conn.execute("CREATE TABLE t (a)")
    before = other.read_bytes()
    done = run(healthy, "doctor", "--fix", env={"MINICLAW_INDEX": str(other)})
    assert done.returncode == 1 and "another program's database" in done.stdout
    assert other.read_bytes() == before


class _Models(BaseHTTPRequestHandler):
    listed: list[str] = []

    def do_GET(self):  # noqa: N802
        body = json.dumps({"object": "list", "data": [{"id": m} for m in self.listed]}).encode()
        status = 200 if self.path == "/v1/models" else 404
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def model_server():
    _Models.listed = ["llama3.2:latest", "qwen2.5:7b"]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(("model", "expected"), [
    ("llama3.2", None),
    ("qwen2.5:7b", None),
    ("mistral", ("warning", "the model 'mistral' is not listed (it lists: llama3.2:latest, qwen2.5:7b)")),
])
def test_the_model_server_check_against_a_real_server(model_server: str, model: str, expected):
    from miniclaw.doctor import model_listed

    found = model_listed(model_server + "/models", model, "sk-test")
    assert found is None if expected is None else found[:2] == expected


def test_the_model_server_check_reports_a_wrong_url_and_a_closed_port(model_server: str):
    from miniclaw.doctor import model_listed

    assert model_listed(model_server + "/nothing", "llama3.2", None)[:2] == (
        "error", f"{model_server}/nothing answered HTTP 404")
    closed = f"http://127.0.0.1:{closed_port()}/v1/models"
    assert model_listed(closed, "llama3.2", None)[:2] == ("error", "not reachable: connection refused")


def test_doctor_with_a_reachable_server_in_the_settings_is_healthy(
        healthy: Path, model_server: str):
    done = run(healthy, "doctor", "--json", env={"MINICLAW_LLM_BASE_URL": model_server,
                                                 "MINICLAW_LLM_MODEL": "llama3.2"})
    assert done.returncode == 0, done.stdout
    report = json.loads(done.stdout)
    assert report["findings"] == []
    assert f"model server {model_server}: model llama3.2" in report["checked"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_note_is_an_error(healthy: Path):
    note = healthy / "memory" / "2026-02-14.md"
    note.chmod(0)
    try:
        done = run(healthy, "doctor", "--json")
    finally:
        note.chmod(0o600)
    [finding] = by_path(json.loads(done.stdout))["memory/2026-02-14.md"]
    assert finding["severity"] == "error" and "unreadable" in finding["message"]


# -- what a new user's trial found ---------------------------------------------------------

def _doctor(*args: str):
    """`miniclaw doctor` in this process (CliRunner): (exit code, JSON report or text, stderr)."""
    from typer.testing import CliRunner

    from miniclaw.cli import app

    done = CliRunner().invoke(app, ["doctor", *args])
    return done.exit_code, (json.loads(done.stdout) if "--json" in args else done.stdout), \
        done.stderr


def test_unknown_config_keys_are_counted_warning_findings(workspace: Path, isolated_home: Path,
                                                         monkeypatch):
    """They were only `Warning:` lines on stderr: no finding, not counted in "N warnings",
    not in the JSON, and doctor said Healthy."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-14\n- Prefers dark roast\n")
    monkeypatch.setenv("MINICLAW_WORKSPACE", str(workspace))
    register_mcp(isolated_home, workspace)
    (isolated_home / ".miniclaw").mkdir()
    path = isolated_home / ".miniclaw" / "config.json"
    path.write_text('{"llm": {"modle": "x"}, "colour": 1}', encoding="utf-8")
    code, report, stderr = _doctor("--json")
    assert code == 1 and report["healthy"] is False and stderr == ""
    settings = [f for f in report["findings"] if f["check"] == "settings"]
    assert settings == [
        {"severity": "warning", "check": "settings", "path": str(path),
         "message": "unknown setting 'llm.modle' is ignored",
         "fix": "did you mean 'model'? rename it in config.json"},
        {"severity": "warning", "check": "settings", "path": str(path),
         "message": "unknown setting 'colour' is ignored",
         "fix": "remove it, or use a known setting (embedder, llm, timezone, workspaces)"}]
    code, text, stderr = _doctor()
    assert code == 1 and stderr == ""
    assert text.splitlines()[-1] == "0 errors, 2 warnings."
    assert f"warning  {path}: unknown setting 'llm.modle' is ignored" in text.splitlines()


def test_known_config_keys_are_no_finding(workspace: Path, isolated_home: Path, monkeypatch):
    write(workspace, "memory/MEMORY.md", "# Memory\n\n## 2026-02-14\n- Prefers dark roast\n")
    monkeypatch.setenv("MINICLAW_WORKSPACE", str(workspace))
    (isolated_home / ".miniclaw").mkdir()
    (isolated_home / ".miniclaw" / "config.json").write_text(json.dumps(
        {"llm": {"provider": "echo", "deadline": 30}, "timezone": "UTC",
         "workspaces": {str(workspace): {"sources": ["long_term", "daily_note"]}}}))
    _, report, stderr = _doctor("--json")
    assert not [f for f in report["findings"] if f["check"] == "settings"] and stderr == ""


def _examine(workspace: Path, cwd: Path) -> dict:
    from miniclaw.doctor import examine

    return examine(workspace, cwd=cwd).to_dict()


def test_an_unreachable_model_server_is_not_also_listed_as_checked(
        workspace: Path, isolated_home: Path, monkeypatch):
    """It said `error http://127.0.0.1:9/v1: not reachable` and, further down, `checked
    model server http://127.0.0.1:9/v1: model llama`."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    monkeypatch.setenv("MINICLAW_WORKSPACE", str(workspace))
    url = f"http://127.0.0.1:{closed_port()}/v1"
    (isolated_home / ".miniclaw").mkdir()
    (isolated_home / ".miniclaw" / "config.json").write_text(json.dumps(
        {"llm": {"base_url": url, "model": "llama"}}))
    code, report, _ = _doctor("--json")
    assert code == 1
    assert [(f["severity"], f["message"]) for f in report["findings"] if f["check"] == "model"] \
        == [("error", "not reachable: connection refused")]
    assert not [line for line in report["checked"] if line.startswith("model server")]
    _, text, _ = _doctor()
    assert f"checked  model server {url}" not in text


def test_a_model_the_server_does_not_list_is_not_also_listed_as_checked(
        healthy: Path, model_server: str, monkeypatch, tmp_path: Path):
    monkeypatch.setenv("MINICLAW_LLM_BASE_URL", model_server)
    monkeypatch.setenv("MINICLAW_LLM_MODEL", "mistral")
    report = _examine(healthy, tmp_path)
    assert [f["severity"] for f in report["findings"] if f["check"] == "model"] == ["warning"]
    assert not [line for line in report["checked"] if line.startswith("model server")]


def _register(home: Path, command: str) -> None:
    (home / ".claude.json").write_text(json.dumps(
        {"mcpServers": {"miniclaw": {"command": command, "args": ["mcp"]}}}))


@pytest.mark.parametrize("command, message, fix", [
    ("/nonexistent/miniclaw", "which does not exist",
     "give the path of the miniclaw command (`which miniclaw` prints it), or reinstall "
     "miniclaw there"),
    ("bin/gone", "which does not exist",  # relative: from the project's folder
     "give the path of the miniclaw command (`which miniclaw` prints it), or reinstall "
     "miniclaw there"),
    ("bin/plain", "which is not an executable file",
     "give the path of the miniclaw command (`which miniclaw` prints it)"),
    ("./bin", "which is not an executable file",  # a folder
     "give the path of the miniclaw command (`which miniclaw` prints it)"),
    ("no-such-miniclaw-command", "which is not on PATH", "give the full path to it"),
])
def test_an_mcp_command_that_cannot_start_says_why_and_is_not_also_registered_ok(
        workspace: Path, isolated_home: Path, tmp_path: Path, command, message, fix):
    """`/nonexistent/miniclaw` was said to be "not on PATH → give the full path to it",
    a full path already, and `checked MCP: registered` was listed as well."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    project = tmp_path / "project"
    (project / "bin").mkdir(parents=True)
    (project / "bin" / "plain").write_text("not a program\n")
    _register(isolated_home, command)
    report = _examine(workspace, project)
    [finding] = [f for f in report["findings"] if f["check"] == "mcp"]
    assert finding == {"severity": "warning", "check": "mcp",
                       "path": str(isolated_home / ".claude.json"),
                       "message": f"the server 'miniclaw' runs {command!r}, {message}",
                       "fix": fix}
    assert not [line for line in report["checked"] if line.startswith("MCP")]


@pytest.mark.parametrize("where", ["absolute", "relative", "on PATH"])
def test_an_mcp_command_that_can_start_is_registered_ok(workspace: Path, isolated_home: Path,
                                                       tmp_path: Path, monkeypatch, where):
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    project = tmp_path / "project"
    (project / "bin").mkdir(parents=True)
    program = project / "bin" / "miniclaw"
    _script(program, ANSWERS)
    monkeypatch.setenv("PATH", f"{project / 'bin'}{os.pathsep}{os.environ['PATH']}")
    _register(isolated_home, {"absolute": str(program), "relative": "bin/miniclaw",
                              "on PATH": "miniclaw"}[where])
    report = _examine(workspace, project)
    assert not [f for f in report["findings"] if f["check"] == "mcp"]
    assert [line for line in report["checked"] if line.startswith("MCP: registered in ")]


ANSWERS = """import sys
sys.stdin.readline()
print('{"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2024-11-05"}}', flush=True)
sys.stdin.read()
"""


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    return path


def _mcp_findings(workspace: Path, home: Path, cwd: Path, server: dict) -> tuple[list, list]:
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"miniclaw": server}}))
    report = _examine(workspace, cwd)
    return ([f for f in report["findings"] if f["check"] == "mcp"],
            [line for line in report["checked"] if line.startswith("MCP")])


def test_a_registered_server_that_exits_at_once_is_an_error_with_its_first_stderr_line(
        workspace: Path, isolated_home: Path, tmp_path: Path):
    """A venv without the mcp extra: its `miniclaw mcp` exits 1 ("needs the mcp package"),
    yet doctor said "registered … Healthy": it only looked for mcp in its own Python. The
    private part of what the server printed stays out of the report."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    program = _script(tmp_path / "miniclaw", "import sys\nsys.stderr.write("
                      "'\\x1b[31merror:\\x1b[0m the MCP server needs the mcp package "
                      "<private>my secret</private>\\nmore\\n')\nsys.exit(1)\n")
    [finding], checked = _mcp_findings(workspace, isolated_home, tmp_path,
                                       {"command": str(program), "args": ["mcp"]})
    assert finding["severity"] == "error"
    assert finding["message"] == (f"the server 'miniclaw' ({program} mcp) does not start: "
                                  "error: the MCP server needs the mcp package")
    assert "run that command in a terminal" in finding["fix"]
    assert checked == []


@pytest.mark.parametrize("command, args, why", [
    ("/bin/false", ["mcp"], "it exited with status 1"),
    (sys.executable, ["-m", "miniclaw", "mcp", "--bogus"], "No such option: --bogus"),
])
def test_a_registered_command_that_fails_or_rejects_its_args_is_an_error(
        workspace: Path, isolated_home: Path, tmp_path: Path, command, args, why):
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    [finding], checked = _mcp_findings(workspace, isolated_home, tmp_path,
                                       {"command": command, "args": args})
    assert finding["severity"] == "error" and why in finding["message"], finding
    assert checked == []


def test_a_registered_server_that_never_answers_is_an_error_and_is_not_left_running(
        workspace: Path, isolated_home: Path, tmp_path: Path, monkeypatch):
    from miniclaw import doctor

    monkeypatch.setattr(doctor, "MCP_PROBE_TIMEOUT_S", 1.0)
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    pid_file = tmp_path / "pid"
    program = _script(tmp_path / "miniclaw", "import os, signal, sys, time\n"
                      "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"  # needs the kill
                      f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                      "time.sleep(120)\n")
    [finding], checked = _mcp_findings(workspace, isolated_home, tmp_path,
                                       {"command": str(program), "args": ["mcp"]})
    assert finding["severity"] == "error"
    assert finding["message"].endswith("does not start: no answer to `initialize` within 1 s")
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_the_real_server_of_this_checkout_answers_with_its_env(
        workspace: Path, isolated_home: Path, tmp_path: Path):
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    findings, checked = _mcp_findings(workspace, isolated_home, tmp_path, {
        "command": sys.executable, "args": ["-m", "miniclaw", "mcp"],
        "env": {"MINICLAW_WORKSPACE": str(workspace)}})
    assert findings == [] and checked


@pytest.mark.parametrize("server", [
    {"command": [sys.executable, "-m", "miniclaw", "mcp"]},
    {"command": sys.executable, "args": "-m miniclaw mcp"},
    {"command": sys.executable, "args": ["-m", "miniclaw", 3]},
    {"command": sys.executable, "args": ["-m", "miniclaw", "mcp"], "env": {"X": 1}},
])
def test_a_malformed_registration_is_its_own_finding(workspace: Path, isolated_home: Path,
                                                     tmp_path: Path, server):
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    [finding], checked = _mcp_findings(workspace, isolated_home, tmp_path, server)
    assert finding["severity"] == "error" and "is malformed" in finding["message"], finding
    assert checked == []


def test_an_index_doctor_finds_broken_is_not_also_listed_as_checked(healthy: Path,
                                                                    tmp_path: Path):
    index = config.index_path(healthy)
    index.write_bytes(b"this is not a database at all" * 10)
    report = _examine(healthy, tmp_path)
    assert [f["severity"] for f in report["findings"] if f["check"] == "index"] == ["error"]
    assert not [line for line in report["checked"] if line.startswith("index ")]


def test_only_temp_files_miniclaw_provably_made_are_removed_by_doctor_fix_or_the_next_add(
        healthy: Path):
    """Issue 38: a user's own `.MEMORY.md.original.tmp` (8 characters between the dots, as
    mkstemp's) was deleted by `doctor --fix` and by the next `memory add --long` as "a
    leftover temporary file". Only a file with the atomic writer's own marker is ours."""
    memory = healthy / "memory"
    theirs = {".MEMORY.md.original.tmp": "my backup of MEMORY.md\n",
              ".2026-02-14.md.abcd1234.tmp": "an editor's copy\n"}
    for name, text in theirs.items():
        (memory / name).write_text(text)
    ours = memory / ".MEMORY.md.miniclaw-k3j2h1q_.tmp"
    ours.write_text("a full copy left by a killed writer\n")
    report = json.loads(run(healthy, "doctor", "--json").stdout)
    listed = [f["path"] for f in report["findings"] if "leftover" in f["message"]]
    assert listed == [f"memory/{ours.name}"]  # listed before any --fix
    done = run(healthy, "doctor", "--fix")
    assert f"removed memory/{ours.name}" in done.stdout and not ours.exists()
    assert all("original" not in line and "abcd1234" not in line for line in done.stdout.splitlines())
    ours.write_text("left by another killed writer\n")
    added = run(healthy, "memory", "add", "--long", "Likes green tea")
    assert added.returncode == 0, added.stderr
    assert not ours.exists()  # the writer's own cleanup: the same proof
    assert {name: (memory / name).read_text() for name in theirs} == theirs
    assert not [p for p in memory.glob(".*.tmp") if p.name not in theirs]


def test_a_registration_whose_server_cannot_start_is_an_error_with_this_checkouts_command(
        healthy: Path, isolated_home: Path, tmp_path: Path):
    """Issue 39: doctor reported a Claude Code registration as fine when `miniclaw mcp`
    could not start (the mcp extra not installed), and the commands it suggested installed
    the other project called miniclaw on PyPI. The registered command is a Python without
    the mcp package (doctor's own has it): doctor starts it and reports what it says."""
    checkout = Path(__file__).resolve().parents[1]
    hide = ("import sys; sys.modules['mcp'] = None; sys.argv = ['miniclaw', *sys.argv[1:]]; "
            "from miniclaw.cli import main; main()")
    program = _script(tmp_path / "miniclaw", hide + "\n")
    (isolated_home / ".claude.json").write_text(json.dumps({"mcpServers": {"miniclaw": {
        "command": str(program), "args": ["--workspace", str(healthy), "mcp"]}}}))
    done = run(healthy, "doctor", "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    [finding] = [f for f in report["findings"] if f["check"] == "mcp"]
    assert finding["severity"] == "error" and "does not start" in finding["message"]
    assert "needs the mcp package" in finding["message"], finding
    assert finding["message"].endswith(f"-m pip install -e '{checkout}[mcp]'"), finding
    assert not [line for line in report["checked"] if line.startswith("MCP")]
    served = subprocess.run([str(program), "--workspace", str(healthy), "mcp"],
                            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert served.returncode == 1 and f"-e '{checkout}[mcp]'" in served.stderr, served.stderr
    assert "'miniclaw[" not in done.stdout + served.stderr
