"""`memory tidy --suggest`: proposals from a real local model server; nothing written
without --apply, and a server that is down or talks nonsense is one line, exit 1."""

from __future__ import annotations

import json
import socket

import pytest
from typer.testing import CliRunner

from miniclaw.entries.parsing import parse_long_term
from tests.chat.conftest import no_model_settings  # noqa: F401 (autouse: no settings leak in)
from tests.chat.server import FakeModelServer, reply, stream, text_chunks
from tests.cli.test_cli import assert_usage_error, run, snapshot
from tests.conftest import write


@pytest.fixture
def notes(planted):
    write(planted, "memory/2026-11-22.md", "# Daily Note - 2026-11-22\n\n## 08:00:00 UTC\n\n"
          "Allergic to peanuts <private>the clinic code is 4471</private>\n<!-- @tag: health -->\n")
    return planted


def suggest(ws, server_url, *args):
    return CliRunner().invoke(
        __import__("miniclaw.cli.app", fromlist=["app"]).app,
        ["--workspace", str(ws), "memory", "tidy", "--suggest", *args],
        env={"MINICLAW_LLM_BASE_URL": server_url, "MINICLAW_LLM_MODEL": "tiny"})


def answer(payload) -> tuple:
    return stream(*text_chunks("```json\n", json.dumps(payload), "\n```"))


def peanut_id(request) -> int:
    shown = request["messages"][1]["content"]
    line = next(l for l in shown.splitlines() if "peanuts" in l)
    return int(line[1:line.index("]")])


def test_proposals_are_printed_with_citations_and_nothing_is_written(notes):
    before = snapshot(notes)
    proposal = {"id": 6, "text": "Allergic to peanuts", "reason": "health"}
    with FakeModelServer([answer({"proposals": [proposal, {"id": 999, "text": "x"}]})]) as server:
        result = suggest(notes, server.url, "--json")
    assert peanut_id(server.requests[0]) == 6  # the newest of the notes not in MEMORY.md
    assert result.exit_code == 0, result.stderr
    found = json.loads(result.stdout)["proposals"]
    assert len(found) == 1 and found[0]["text"] == "Allergic to peanuts"
    assert found[0]["from"]["ref"].startswith("memory/2026-11-22.md:5#")
    assert found[0]["from"]["content"] == "Allergic to peanuts"  # its private part gone
    sent = server.bodies[0]
    assert "4471" not in sent and "clinic code" not in sent  # private text never sent
    assert "2026-11-21" not in sent  # nor the private file's notes
    assert snapshot(notes) == before


def test_suggest_apply_adds_each_accepted_proposal_through_the_add_path(notes):
    with FakeModelServer() as server:
        server.default = answer({"proposals": [{"id": 6, "text": "Allergic to peanuts"}]})
        result = suggest(notes, server.url, "--apply", "--yes")
    assert result.exit_code == 0, result.stderr
    assert "Added to long-term memory: memory/MEMORY.md:" in result.stdout
    memory = parse_long_term((notes / "memory/MEMORY.md").read_text(), "memory/MEMORY.md")
    assert [(e.text, e.tags) for e in memory if "peanut" in e.text] == \
        [("Allergic to peanuts", ("health",))]


@pytest.mark.parametrize("step", [reply(200, "not json at all"),
                                  stream(*text_chunks("Sure! Here are some ideas.")),
                                  reply(500, {"error": {"message": "model crashed"}})])
def test_garbage_or_a_failing_server_is_one_line_and_nothing_written(notes, step):
    before = snapshot(notes)
    with FakeModelServer([step]) as server:
        result = suggest(notes, server.url, "--apply", "--yes")
    assert result.exit_code == 1, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in result.stderr
    assert snapshot(notes) == before


def test_a_server_that_is_down_is_one_line(notes):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = suggest(notes, f"http://127.0.0.1:{port}/v1")
    assert result.exit_code == 1
    assert "cannot reach" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_no_server_configured_is_a_usage_error(notes):
    before = snapshot(notes)
    line = assert_usage_error(run(CliRunner(), notes, "memory", "tidy", "--suggest"))
    assert "model server" in line
    assert snapshot(notes) == before


def test_a_proposal_memory_md_holds_already_is_not_added_again(notes):
    """--suggest --apply goes through the add door: the coffee preference is in MEMORY.md."""
    coffee = {"id": 2, "text": "Prefers dark roast coffee"}
    before = snapshot(notes)
    with FakeModelServer() as server:
        server.default = answer({"proposals": [coffee]})
        result = suggest(notes, server.url, "--apply", "--yes")
    assert result.exit_code == 0, result.stderr
    assert "Already remembered: memory/MEMORY.md:6#" in result.stdout
    memory = (notes / "memory/MEMORY.md").read_text()
    assert memory.count("Prefers dark roast coffee") == 1
    assert snapshot(notes) == before
