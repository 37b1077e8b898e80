"""The write path and the file boundary, attacked: control characters, link swaps, FIFOs,
huge files, identity files out of the workspace, and a rewrite as root.

- Text to be written (`memory add`, a piped chat's `/remember` and `/note`) holding a NUL,
  another C0/C1 control character or a lone surrogate is one `Error:` line, nothing written;
  the file stays readable and later adds work.
- Another process that swaps a note for a symlink to an outside file, in a loop, while adds
  run: the outside file never changes, and its text never reaches MEMORY.md.
- A FIFO where a memory or identity file should be hangs nothing (`memory add`, `context`,
  `chat --once`); identity files that link out of the workspace are not read.
- A file near the 16 MB limit warns on add; an add past it is refused, nothing written.
- `memory add --long` as root keeps MEMORY.md's owner and group.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest

from miniclaw.errors import MiniclawError
from miniclaw.memory import MemoryStore
from miniclaw.fs.files import MAX_FILE_BYTES, NEAR_LIMIT_BYTES
from miniclaw.workspace import init_workspace
from tests.reliability.support import assert_one_error_line, bad_stderr_lines, cli

SECRET = "zqoutsidesecretzq"


def _today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    init_workspace(workspace)
    return workspace


def _memory(ws: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((ws / "memory").iterdir()) if p.is_file()}


# -- control characters ----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["title \x1b]0;pwned\x07 here", "bell\x07", "c1 \x9b31m red",
                                  "form\x0cfeed", "del\x7f"], ids=["osc", "bel", "csi", "ff", "del"])
@pytest.mark.parametrize("kind", [["--long"], []], ids=["long", "daily"])
def test_memory_add_refuses_control_characters(ws, env, text, kind):
    before = _memory(ws)
    done = cli(env, "--workspace", str(ws), "memory", "add", *kind, text)
    assert done.returncode == 2, done.stderr
    line = assert_one_error_line(done.stderr)
    assert "control character" in line and "U+" in line, line
    assert _memory(ws) == before
    assert cli(env, "--workspace", str(ws), "memory", "add", *kind, "still works").returncode == 0


@pytest.mark.parametrize("option", ["--category", "--tag"])
def test_memory_add_refuses_control_characters_in_category_and_tags(ws, env, option):
    before = _memory(ws)
    done = cli(env, "--workspace", str(ws), "memory", "add", option, "\x1ftravel", "a note")
    assert done.returncode == 2, done.stderr
    assert "control character" in assert_one_error_line(done.stderr)
    assert _memory(ws) == before


def test_a_piped_chat_remember_and_note_with_nul_are_refused_and_the_session_goes_on(ws, env):
    lines = ["/remember tea \x00 with lemon", "/note walked \x00 the dog", "/remember bell \x07 rings",
             "/remember plain fact kept", "/note plain note kept"]
    stdin = "\n".join(lines).encode() + b"\n"
    done = cli(env, "--workspace", str(ws), "chat", input=stdin, timeout=60)
    assert done.returncode == 1, done.stderr  # piped, and lines were refused
    assert "Traceback" not in done.stdout + done.stderr
    errors = [line for line in (done.stdout + done.stderr).splitlines() if "Error:" in line]
    assert len(errors) == 3 and all("control character" in e for e in errors), errors
    for raw in _memory(ws).values():
        assert b"\x00" not in raw and b"lemon" not in raw and b"dog" not in raw
    long = cli(env, "--workspace", str(ws), "memory", "read", "--long")
    day = cli(env, "--workspace", str(ws), "memory", "read")
    assert "plain fact kept" in long.stdout and "plain note kept" in day.stdout
    assert bad_stderr_lines(long.stderr + day.stderr) == []


# -- a racing process swaps a note for a link ------------------------------------------------------

SWAPPER = textwrap.dedent("""
    import os, sys
    folder, outside, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.chdir(folder)
    names = sorted(n for n in os.listdir(".") if n.endswith(".md"))
    kept = {name: 0 for name in names}
    print("ready", flush=True)
    for i in range(rounds):
        for name in names:
            if os.path.islink(name):  # put the newest kept version back
                os.link(f".keep-{name}-{kept[name]}", ".back", follow_symlinks=False)
                os.rename(".back", name)
            else:  # keep every version seen (rewrites make new files), then swap in a link
                kept[name] += 1
                try:
                    os.link(name, f".keep-{name}-{kept[name]}", follow_symlinks=False)
                except FileNotFoundError:
                    kept[name] -= 1
                    continue
                os.symlink(outside, ".link")
                os.rename(".link", name)
    for name in names:
        if os.path.islink(name):
            os.link(f".keep-{name}-{kept[name]}", ".back", follow_symlinks=False)
            os.rename(".back", name)
    print("done", flush=True)
""")


def test_a_note_swapped_for_a_link_in_a_loop_never_writes_or_reads_outside(ws, tmp_path):
    """A real race: a process swaps MEMORY.md and today's note for links to an outside file
    (and back) as fast as it can, while this process adds to both. Whatever interleaving
    happens, the outside file is never changed and its text never lands in memory/."""
    outside = tmp_path / "outside.md"
    outside.write_text(f"# Memory\n\n- {SECRET} private elsewhere\n", encoding="utf-8")
    digest = hashlib.sha256(outside.read_bytes()).hexdigest()
    folder = ws / "memory"
    (folder / f"{_today()}.md").write_text(f"# Daily Note - {_today()}\n\n## 01:00:00 UTC\n\nseed\n")
    outcomes = {"written": 0, "refused": 0}

    async def add_many() -> None:
        async with MemoryStore(ws) as store:
            for i in range(400):
                for add in (store.add_long_term, store.add_daily_note):
                    try:
                        await add(f"added fact number {i}")
                        outcomes["written"] += 1
                    except MiniclawError:  # saw the link (or it changed while opened): refused
                        outcomes["refused"] += 1

    with subprocess.Popen([sys.executable, "-c", SWAPPER, str(folder), str(outside), "4000"],
                          stdout=subprocess.PIPE, text=True) as swapper:
        try:
            assert swapper.stdout.readline().strip() == "ready"
            asyncio.run(add_many())
            assert swapper.wait(timeout=300) == 0
        finally:
            if swapper.poll() is None:
                swapper.kill()
    assert hashlib.sha256(outside.read_bytes()).hexdigest() == digest, "an add wrote outside"
    versions = [p for p in folder.iterdir() if p.is_file() and not p.is_symlink()]
    assert len(versions) > 10
    for path in versions:
        assert SECRET.encode() not in path.read_bytes(), f"outside text copied into {path.name}"
    assert outcomes["written"] > 0 and outcomes["refused"] > 0, outcomes


# -- FIFOs, devices and identity files -------------------------------------------------------------


@pytest.mark.parametrize("name", ["MEMORY.md", "TODAY"])
def test_memory_add_to_a_fifo_does_not_hang(ws, env, name):
    name = f"{_today()}.md" if name == "TODAY" else name
    path = ws / "memory" / name
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    args = ["--long"] if name == "MEMORY.md" else []
    done = cli(env, "--workspace", str(ws), "memory", "add", *args, "into a pipe", timeout=20)
    assert done.returncode == 1, done.stderr
    line = assert_one_error_line(done.stderr)
    assert name in line and "not a regular file" in line, line
    # The lock was released: the next add (to the other file) goes through at once.
    other = [] if args else ["--long"]
    assert cli(env, "--workspace", str(ws), "memory", "add", *other, "elsewhere",
               timeout=20).returncode == 0


@pytest.mark.parametrize("kind", ["fifo", "fifo-via-inside-link", "dev-zero-link", "outside-link",
                                  "huge"])
def test_identity_files_are_regular_files_inside_the_workspace(ws, env, tmp_path, kind):
    soul = ws / "SOUL.md"
    soul.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(soul)
    elif kind == "fifo-via-inside-link":
        os.mkfifo(ws / "pipe.md")
        soul.symlink_to("pipe.md")
    elif kind == "dev-zero-link":
        soul.symlink_to("/dev/zero")
    elif kind == "outside-link":
        (tmp_path / "secret.md").write_text(f"{SECRET} is the outside secret\n")
        soul.symlink_to(tmp_path / "secret.md")
    else:
        soul.write_bytes(f"{SECRET} big\n".encode() * (MAX_FILE_BYTES // 20 + 1))
    for args in (["context", "-q", "anything at all"], ["chat", "--once", "hello there"]):
        done = cli(env, "--workspace", str(ws), *args, timeout=30)
        assert done.returncode == 0, (args, done.stderr)
        assert SECRET not in done.stdout + done.stderr
        assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
        warnings = [line for line in done.stderr.splitlines() if line.startswith("Warning: ")]
        assert len(warnings) == 1 and "SOUL.md" in warnings[0], done.stderr


def test_identity_file_linked_inside_the_workspace_is_used(ws, env):
    (ws / "docs").mkdir()
    (ws / "docs/soul.md").write_text("You are zqinsidesoulzq, a careful assistant.\n")
    (ws / "SOUL.md").unlink()
    (ws / "SOUL.md").symlink_to("docs/soul.md")
    done = cli(env, "--workspace", str(ws), "context", "-q", "anything at all")
    assert done.returncode == 0 and "zqinsidesoulzq" in done.stdout, done.stderr


# -- the size limit --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["long", "daily"])
def test_an_add_near_the_size_limit_warns_and_one_past_it_is_refused(ws, env, kind):
    path = ws / "memory" / ("MEMORY.md" if kind == "long" else f"{_today()}.md")
    header = (b"# Memory\n\n" if kind == "long" else
              f"# Daily Note - {_today()}\n\n## 01:00:00 UTC\n\n".encode())
    filler = b"filler words in a long note\n"
    path.write_bytes(header + filler * ((NEAR_LIMIT_BYTES - len(header)) // len(filler)))
    args = ["--long"] if kind == "long" else []
    near = cli(env, "--workspace", str(ws), "memory", "add", *args, "x " * 2000)
    assert near.returncode == 0, near.stderr
    warnings = [line for line in near.stderr.splitlines() if line.startswith("Warning: ")]
    assert bad_stderr_lines(near.stderr) == [] and len(warnings) == 1, near.stderr
    assert path.name in warnings[0] and "16 MB" in warnings[0], warnings
    with path.open("ab") as handle:  # now a few bytes short of the limit
        handle.write(b"y" * (MAX_FILE_BYTES - path.stat().st_size - 10) + b"\n")
    before = path.read_bytes()
    over = cli(env, "--workspace", str(ws), "memory", "add", *args, "one fact too many")
    assert over.returncode == 1, over.stderr
    line = assert_one_error_line(over.stderr)
    assert path.name in line and "16 MB" in line and "nothing was written" in line, line
    assert path.read_bytes() == before
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temp file left


# -- owner -----------------------------------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_memory_add_long_as_root_keeps_the_owner_and_group(ws, env):
    path = ws / "memory/MEMORY.md"
    cli(env, "--workspace", str(ws), "memory", "add", "--long", "first fact")
    os.chown(path, 12345, 23456)
    os.chmod(path, 0o640)
    done = cli(env, "--workspace", str(ws), "memory", "add", "--long", "added by root")
    assert done.returncode == 0, done.stderr
    st = path.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (12345, 23456, 0o640)
    assert "added by root" in path.read_text(encoding="utf-8")
