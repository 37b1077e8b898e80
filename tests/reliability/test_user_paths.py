"""Every file a user controls is opened through the shared no-follow, capped, non-blocking
open (`fs/files.py`), doctor and config.json included (issue 37): a FIFO there must not
hang a command, a link to /dev/zero must not eat the memory, a link out of a source's root
is not read; and what `json` refuses in any way, or a source class that is no class, is one
line naming the file, exit 2, never a traceback."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write

MAIN = [sys.executable, "-m", "miniclaw"]


def _capped() -> None:
    """A process that reads /dev/zero fails at 2 GB, not when the machine runs out."""
    resource.setrlimit(resource.RLIMIT_DATA, (2 << 30, 2 << 30))


def run(workspace: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """The CLI as a process, with a timeout well short of the suite's: a hang fails fast."""
    return subprocess.run([*MAIN, "--workspace", str(workspace), *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=40,
                          preexec_fn=_capped)


def config_file(home: Path) -> Path:
    (home / ".miniclaw").mkdir(exist_ok=True)
    return home / ".miniclaw" / "config.json"


def one_line_usage_error(done: subprocess.CompletedProcess, *words: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert all(word in lines[0] for word in words), lines[0]
    return lines[0]


@pytest.mark.parametrize("plant", ["fifo", "dev_zero", "folder"])
def test_a_config_json_that_is_no_regular_file_is_one_line_not_a_hang(
        workspace: Path, isolated_home: Path, plant: str):
    path = config_file(isolated_home)
    if plant == "fifo":
        os.mkfifo(path)
    elif plant == "dev_zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    for command in (["search", "roast"], ["sources", "list"]):
        one_line_usage_error(run(workspace, *command), str(path), "not a regular file",
                             "remove it")


def test_a_config_json_link_to_a_regular_file_is_still_read(workspace: Path,
                                                             isolated_home: Path, tmp_path: Path):
    """A dotfiles repository links config.json: that keeps working."""
    real = tmp_path / "dotfiles" / "config.json"
    real.parent.mkdir()
    real.write_text(json.dumps({"timezone": "Asia/Tokyo"}))
    config_file(isolated_home).symlink_to(real)
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    done = run(workspace, "doctor", "--json")
    assert "time zone: Asia/Tokyo" in json.loads(done.stdout)["checked"]


@pytest.mark.parametrize(("raw", "said"), [
    (b'{"timezone": "UTC", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nests too deeply"),
    (b'{"timezone": "UTC", "x": ' + b"7" * 5000 + b"}", "cannot be read as JSON"),
    (b'{"timezone": "Europe/Paris\xff"}', "not UTF-8"),
    (b'{"timezone": "UTC", ', "not valid JSON"),
    (b'{"timezone": "UTC", "workspaces": {"/a\\u0000b": {}}}', "NUL character"),
])
def test_config_json_that_json_refuses_in_any_way_is_one_line(
        workspace: Path, isolated_home: Path, raw: bytes, said: str):
    path = config_file(isolated_home)
    path.write_bytes(raw)
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    one_line_usage_error(run(workspace, "search", "roast"), str(path), said,
                         "fix or remove it" if "UTF-8" not in said else "save it as UTF-8")
    doctor = run(workspace, "doctor", "--json")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr
    [finding] = [f for f in json.loads(doctor.stdout)["findings"] if f["check"] == "settings"]
    assert said in finding["message"]


@pytest.mark.parametrize(("spec", "said"), [
    ("os:sep", "is not a memory source"),  # a string, not a class
    ("json:loads", "is not a memory source"),  # a function
    ("builtins:dict", "is not a memory source"),  # a class, but not a source's
    ("miniclaw.sources.base:FileSource", "is not a memory source"),  # abstract: no owns()
    ("broken_source:Notes", "cannot be loaded (RuntimeError: half-written module)"),
    ("picky_source:Notes", "cannot be made from its settings (KeyError"),
])
def test_a_source_class_that_is_not_a_usable_class_is_one_line(
        workspace: Path, isolated_home: Path, tmp_path: Path, spec: str, said: str):
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "broken_source.py").write_text("raise RuntimeError('half-written module')\n")
    (modules / "picky_source.py").write_text(
        "from miniclaw.sources.base import FileSource\n"
        "class Notes(FileSource):\n"
        "    def __init__(self, **settings):\n"
        "        settings['needed']\n"
        "    def owns(self, relative):\n"
        "        return relative.endswith('.md')\n"
        "    def parse(self, text, path):\n"
        "        return []\n")
    config_file(isolated_home).write_text(json.dumps({"workspaces": {str(workspace): {
        "sources": ["long_term", {"class": spec, "root": str(tmp_path)}],
        "roots": [str(tmp_path)]}}}))
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(modules),
                                                       os.environ.get("PYTHONPATH")]))}
    one_line_usage_error(run(workspace, "search", "roast", env=env),
                         str(config_file(isolated_home)), repr(spec), said, "config.json")
    doctor = run(workspace, "doctor", "--json", env=env)
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr
    assert any(said in f["message"] for f in json.loads(doctor.stdout)["findings"])


def _efm_project(tmp_path: Path, workspace: Path, home: Path) -> Path:
    from tests.sources.test_ef_memory import _event

    project = tmp_path / "app"
    (project / ".memory" / "drafts").mkdir(parents=True)
    from datetime import datetime, timezone

    fresh = datetime.now(timezone.utc).isoformat()  # not stale by the real clock doctor uses
    (project / ".memory" / "events.jsonl").write_text(
        _event("lesson-a-00000001", "Fine", created_at=fresh, last_verified=fresh) + "\n")
    config_file(home).write_text(json.dumps({"workspaces": {str(workspace): {"sources": [
        "long_term", "daily_note", {"kind": "ef_memory", "root": str(project)}]}}}))
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    return project


def _efm_finding(workspace: Path, project: Path) -> str:
    done = run(workspace, "doctor", "--json")
    assert "Traceback" not in done.stderr, done.stderr
    [message] = [f["message"] for f in json.loads(done.stdout)["findings"]
                 if f["path"] == str(project) and f["message"].startswith("EF Memory")]
    return message


@pytest.mark.parametrize("plant", ["fifo", "dev_zero", "link_out"])
def test_doctor_reads_an_ef_memory_store_through_the_safe_open(
        workspace: Path, isolated_home: Path, tmp_path: Path, plant: str):
    """Issue 37: doctor's EF Memory startup check read events.jsonl with a plain open(): a
    FIFO hung it, a link to /dev/zero ate the memory, a link out of the project was read."""
    from tests.sources.test_ef_memory import _event

    project = _efm_project(tmp_path, workspace, isolated_home)
    events = project / ".memory" / "events.jsonl"
    events.unlink()
    if plant == "fifo":
        os.mkfifo(events)
    elif plant == "dev_zero":
        events.symlink_to("/dev/zero")
    else:
        elsewhere = tmp_path / "elsewhere.jsonl"
        elsewhere.write_text("".join(_event(f"lesson-x-0000000{i}", f"Out {i}") + "\n"
                                     for i in range(3)))
        events.symlink_to(elsewhere)
    message = _efm_finding(workspace, project)
    assert "not checked" in message and "entries" not in message, message


def test_doctor_skips_ef_memory_drafts_that_are_no_regular_files(
        workspace: Path, isolated_home: Path, tmp_path: Path):
    project = _efm_project(tmp_path, workspace, isolated_home)
    drafts = project / ".memory" / "drafts"
    os.mkfifo(drafts / "waiting.json")
    (drafts / "zero.json").symlink_to("/dev/zero")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"_meta": {"capture_timestamp": "2020-01-01T00:00:00Z"}}))
    (drafts / "out.json").symlink_to(outside)
    assert _efm_finding(workspace, project) == "EF Memory: 1 entries, all healthy"


def test_doctor_reads_claude_json_through_the_safe_open(workspace: Path, isolated_home: Path):
    """~/.claude.json as a FIFO hung doctor; as a link to /dev/zero it ate the memory."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    claude = isolated_home / ".claude.json"
    for plant in ("fifo", "dev_zero"):
        if plant == "fifo":
            os.mkfifo(claude)
        else:
            claude.unlink()
            claude.symlink_to("/dev/zero")
        done = run(workspace, "doctor", "--json")
        assert "Traceback" not in done.stderr
        [finding] = [f for f in json.loads(done.stdout)["findings"] if f["path"] == str(claude)]
        assert finding["severity"] == "warning" and "not a regular file" in finding["message"]


def test_doctor_reads_an_index_header_through_the_safe_open(workspace: Path, isolated_home: Path,
                                                            tmp_path: Path):
    """MINICLAW_INDEX naming a FIFO: doctor and its --fix must not hang on the header."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    fifo = tmp_path / "index.sqlite3"
    os.mkfifo(fifo)
    for args in (["doctor", "--json"], ["doctor", "--fix", "--json"]):
        done = run(workspace, *args, env={"MINICLAW_INDEX": str(fifo)})
        assert "Traceback" not in done.stderr and done.returncode == 1, done.stderr
        assert any(f["check"] == "index" and f["severity"] == "error"
                   for f in json.loads(done.stdout)["findings"])


def test_index_prune_skips_a_fifo_in_the_cache_folder(workspace: Path, isolated_home: Path):
    """`index prune` read the header of each *.sqlite3 in the cache with a plain open():
    a FIFO there hung it."""
    cache = isolated_home / ".cache" / "miniclaw"
    cache.mkdir(parents=True)
    os.mkfifo(cache / "stray.sqlite3")
    done = run(workspace, "index", "prune", "--dry-run")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert (cache / "stray.sqlite3").exists()


def test_a_transcript_path_planted_as_a_fifo_is_refused_not_waited_on(tmp_path: Path):
    """The chat's transcript was opened with a plain os.open(O_WRONLY): a FIFO at its path
    blocked the chat forever (no reader)."""
    script = (
        "import asyncio, os, sys\n"
        "from datetime import datetime, timezone\n"
        "from miniclaw.chat.transcript import Transcript\n"
        "from miniclaw.errors import MemoryFileError\n"
        f"folder = {str(tmp_path / 'sessions')!r}\n"
        "os.makedirs(folder)\n"
        "os.mkfifo(os.path.join(folder, 's1.jsonl'))\n"
        "try:\n"
        "    asyncio.run(Transcript(folder, 's1').append('user', 'hi', datetime.now(timezone.utc)))\n"
        "except MemoryFileError as exc:\n"
        "    print('refused:', exc)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=40)
    assert done.stdout.startswith("refused:") and "not a regular file" in done.stdout, done


# -- no reader opens a user's path but through the shared safe open ------------------------

PACKAGE = Path(__file__).resolve().parents[2] / "miniclaw"
#: Calls that open a path by name (or parse a whole file): each must go through
#: `miniclaw/fs/files.py` (`read_bytes`, `read_bytes_async`, `read_head`, `open_regular`,
#: `open_in_workspace`)
#: when the path is one a user controls, or be listed here with why it is not.
OPENERS = frozenset({"open", "read_text", "read_bytes", "write_text", "write_bytes", "load"})
#: (file, enclosing function, call) -> why the path is not a user's, or why the call is safe.
ALLOWED = {
    # The shared safe open itself, and its helpers that open folders (O_DIRECTORY fails on
    # anything but a folder, never blocks).
    ("fs/platform.py", "open_nofollow", "os.open"): "the shared no-follow, non-blocking open",
    ("fs/platform.py", "exclusive", "os.open"): "a folder, O_DIRECTORY",
    ("fs/platform.py", "fsync_folder", "os.open"): "a folder, O_DIRECTORY",
    ("fs/files.py", "read_bytes_async", "aiofiles.open"):
        "its opener is `open_in_workspace`: the shared open, through aiofiles",
    ("sources/base.py", "DailyNoteSource.files", "os.open"): "a folder, O_DIRECTORY",
    # Creating a file that must not exist: O_EXCL never follows a link or opens a FIFO.
    ("workspace.py", "init_workspace", "os.open"): "O_CREAT | O_EXCL",
    ("semantic/model.py", "_write_stamp", "os.open"): "O_CREAT | O_EXCL",
    # The index file: opened only to hold its inode (non-blocking, never read from).
    ("index/database.py", "IndexDatabase._pin", "os.open"): "held, never read; O_NONBLOCK",
    ("index/database.py", "IndexDatabase._check_file", "os.open"): "held, never read; O_NONBLOCK",
    # Files of the system or of installed packages, not of the user.
    ("cli/__init__.py", "_flush", "os.open"): "os.devnull",
    ("mcp/wire.py", "open_wire", "os.open"): "os.devnull",
    ("fs/platform.py", "reopen_terminal", "os.open"): "the terminal of our own stdin/stdout",
    ("semantic/model.py", "_processor", "open"): "/proc/cpuinfo",
    ("index/watch.py", "filesystem_type", "open"): "/proc/self/mountinfo",
    ("search/spelling.py", "_english_words",
     "(Path(spec.origin).parent / 'data' / 'small_en.msgpack.gz').read_bytes"): "wordfreq's data",
    ("workspace.py", "_template_files.walk", "child.read_bytes"): "the package's template",
    ("install.py", "_source", "metadata.distribution('miniclaw').read_text"):
        "the install's metadata (direct_url.json) pip wrote",
    # Not a file at all.
    ("cli/chat.py", "chat.open_session", "ChatSession.open"): "a chat session",
    ("cli/zone_help.py", "ZoneHelpCommand.format_epilog", "formatter.write_text"): "help text",
}


def _opening_calls() -> set[tuple[str, str, str]]:
    """(file, enclosing function, call) of every call in the package that opens by name."""
    import ast

    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        scope: list[str] = []

        def visit(node: ast.AST) -> None:
            named = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            if named:
                scope.append(node.name)
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                call = ast.unparse(func)
                if name in OPENERS and not call.startswith("files.") and (
                        name != "load" or call.startswith("json")):
                    found.add((rel, ".".join(scope), call))
            for child in ast.iter_child_nodes(node):
                visit(child)
            if named:
                scope.pop()

        visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def test_no_reader_opens_a_user_path_but_through_the_shared_safe_open():
    """Issue 37's "done when": a new `open(`, `Path.read_text`, `json.load(open(...))`...
    in the package fails here until it uses `fs/files.py` or is listed in ALLOWED with
    the reason its path is not a user's."""
    found = _opening_calls()
    assert sorted(found - ALLOWED.keys()) == [], "open these through miniclaw/fs/files.py"
    assert sorted(ALLOWED.keys() - found) == [], "stale entries of ALLOWED: remove them"


# -- config.json as a person may leave it: anything is settings or one UsageError ----------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=12) | st.sampled_from(["~", "/", ".", "..", "long_term", "conkeeper",
                                              "ef_memory", "/tmp", "~/x", "os:sep"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["sources", "roots", "kind", "root", "name", "class", "recursive",
                         "label", "x"]) | st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


_ROOTS = st.sampled_from(["~", "/", ".", "..", "sessions", "memory", "/tmp", "~/x", "", " "])
_ITEM = st.fixed_dictionaries(
    {"kind": st.sampled_from(["conkeeper", "mnemonic", "ef_memory", "transcripts",
                              "claude_code", "zettel"]), "root": _ROOTS | _JSON},
    optional={"name": _JSON, "recursive": _JSON, "label": _JSON, "x": _JSON}) | \
    st.fixed_dictionaries({"class": st.sampled_from([
        "miniclaw.sources.base:FileSource", "miniclaw.sources.conkeeper:ConKeeperSource",
        "os:sep", "builtins:dict", ":", "miniclaw.sources.base:MemorySource"]) | _JSON,
        "root": _ROOTS}, optional={"name": _JSON, "recursive": _JSON})
_SECTION = _JSON | st.fixed_dictionaries(
    {"sources": st.lists(_ITEM | _JSON | st.sampled_from(["long_term", "daily_note"]),
                         max_size=3)},
    optional={"roots": st.lists(_ROOTS | _JSON, max_size=2) | _JSON})


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=64) | _JSON.map(lambda v: json.dumps(v).encode()),
       section=_SECTION)
def test_any_config_json_is_settings_or_one_usage_error(workspace: Path, isolated_home: Path,
                                                        raw: bytes, section: object):
    """What a hand edit may leave: any bytes, or any JSON for this workspace's settings.
    Reading the settings and the sources a search would build either works or is a
    UsageError (one line, exit 2), never another exception."""
    from miniclaw import config
    from miniclaw.errors import UsageError
    from miniclaw.sources.base import check_roots, configured_sources

    path = config_file(isolated_home)
    for text in (raw, json.dumps({"timezone": "UTC", "workspaces": {
            str(workspace): section}}).encode()):
        path.write_bytes(text)
        try:
            config.load_config(warn=False)
            config.time_zone()
            sources, roots = configured_sources(workspace)
            check_roots(sources, workspace, roots)
            for source in sources:
                source.files(workspace)
        except UsageError:
            pass


def test_a_claude_json_over_16_mb_is_still_read(workspace: Path, isolated_home: Path):
    """Claude Code's ~/.claude.json grows with its history: the safe open's 16 MB cap for
    memory files must not make doctor call a large one unreadable."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    (isolated_home / ".claude.json").write_text(json.dumps({
        "history": "x" * (17 << 20),
        "mcpServers": {"miniclaw": {"command": sys.executable, "args": [
            "-m", "miniclaw", "--workspace", str(workspace), "mcp"]}}}))  # doctor starts it
    report = json.loads(run(workspace, "doctor", "--json").stdout)
    assert not [f for f in report["findings"] if f["check"] == "mcp"], report["findings"]
    assert any(line.startswith("MCP: registered in") for line in report["checked"])
