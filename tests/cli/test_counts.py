"""Issue 18, polish: every count people read is singular or plural as it should be (the
context's token line, the chat's /context), in a real process."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_asking import miniclaw


def _one_of_each(workspace: Path) -> None:
    """One identity file, one memory that matches, one entry in today's note."""
    (workspace / "USER.md").write_text("# User\n\nLikes short answers.\n", encoding="utf-8")
    assert miniclaw(workspace, "memory", "add", "--long", "Sam approved the atlas budget").returncode == 0
    assert miniclaw(workspace, "memory", "add", "Bought oat milk").returncode == 0


def test_the_context_line_counts_one_as_one(workspace: Path):
    _one_of_each(workspace)
    done = miniclaw(workspace, "context", "-q", "what did Sam approve for atlas?")
    assert done.returncode == 0, done.stderr
    line = done.stderr.decode().strip()
    assert line.endswith("estimated: 1 identity file, 1 memory, 1 note entry)"), line


def test_the_chat_context_counts_one_as_one(workspace: Path):
    _one_of_each(workspace)
    done = miniclaw(workspace, "chat", stdin=b"what did Sam approve for atlas?\n/context\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert "estimated: 1 memory, 1 note entry, 0 earlier turns)" in out, out
