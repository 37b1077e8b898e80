"""Other tools' output shapes (issue 14, item 5): `memory rank --format ef` reads as EF
Memory's `/memory-search` output does (compared with the tool's own output on the same
store, `expected/search-basic.txt`), `--format mnemonic` as mnemonic's search-subcall JSON."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from miniclaw.cli.render_formats import EVIDENCE_CHARS, ef_text
from miniclaw.memory import MemoryStore
from miniclaw.sources.base import SOURCES
from miniclaw.sources.ef_memory import EFMemorySource, result_notes
from tests.formats import FORMAT_FIXTURES

FIXTURES = FORMAT_FIXTURES
LABEL = re.compile(r"^\[(Hard|Soft)\]( \[S[123]\])? ([a-z_]+)((?: \[[^\]]+\])*)(?:\s+score: .*)?$")


def parse_ef(text: str) -> tuple[int, list[dict], list[str]]:
    """What a consumer of EFM's search output reads: the count, each entry block (label,
    Title, Rule, Implication, Source lines) and the tips."""
    found = re.search(r"^Found (\d+) entries \(showing top (\d+)\):$", text, re.MULTILINE)
    assert found, text
    body, _, tips = text.partition("\nTips:\n")
    blocks = []
    for chunk in body[found.end():].split("\n---\n"):
        lines = [line for line in chunk.strip("\n").split("\n") if line.strip()]
        if not lines:
            continue
        label = LABEL.match(lines[0])
        assert label, lines[0]
        block = {"label": (label.group(1), (label.group(2) or "").strip(), label.group(3)),
                 "flags": label.group(4).strip(), "Source": []}
        for line in lines[1:]:
            if line.startswith(" " * 8):
                block["Source"].append(line.strip())
            elif not line.startswith("  "):
                key, _, value = line.partition(": ")
                block.setdefault(key, value) if key != "Source" else block["Source"].append(value)
        blocks.append(block)
    assert len(blocks) == int(found.group(2))
    return int(found.group(1)), blocks, [t[2:] for t in tips.split("\n") if t.startswith("- ")]


def _copy(tmp_path: Path, kind: str) -> Path:
    shutil.copytree(FIXTURES / kind, tmp_path / kind)
    for folder, _, names in os.walk(tmp_path / kind):
        os.chmod(folder, 0o755)
        for name in names:
            os.chmod(os.path.join(folder, name), 0o644)
    return tmp_path / kind


def _cli(workspace: Path, tmp_path: Path, sources: list, roots: list, *args: str):
    home = tmp_path / "mchome"
    home.mkdir(exist_ok=True)
    (home / "config.json").write_text(json.dumps({"workspaces": {str(workspace): {
        "sources": ["long_term", "daily_note", *sources], "roots": roots}}}), encoding="utf-8")
    env = {**os.environ, "MINICLAW_HOME": str(home), "MINICLAW_WORKSPACE": str(workspace)}
    return subprocess.run([sys.executable, "-m", "miniclaw", "memory", "rank", *args], env=env,
                          capture_output=True, text=True, timeout=120)


def test_ef_format_reads_as_the_tools_output(workspace, tmp_path):
    project = _copy(tmp_path, "efm") / "project"
    run = _cli(workspace, tmp_path, [{"class": "miniclaw.sources.ef_memory:EFMemorySource",
                                      "root": str(project)}], [str(project)],
               "transcript fork", "--format", "ef", "--all")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("/memory-search transcript fork  [bm25]")
    total, blocks, tips = parse_ef(run.stdout)
    expected = (FIXTURES / "efm/expected/search-basic.txt").read_text().split("\n$ ")[0]
    want_total, want, want_tips = parse_ef(expected)
    assert total == want_total == 3
    strip = lambda bs: [{k: v for k, v in b.items() if k != "flags"} for b in bs]  # noqa: E731
    assert strip(blocks) == strip(want)  # the same entries, labels and fields, same order
    assert tips[0] == want_tips[0] == "2 Hard + 1 Soft entries returned"


async def test_ef_flags_by_the_stores_clock(workspace, tmp_path):
    project = _copy(tmp_path, "efm") / "project"
    as_of = datetime(2026, 3, 15, tzinfo=timezone.utc)
    async with MemoryStore(workspace, now=lambda: as_of, roots=[project], sources=(
            *SOURCES, EFMemorySource(root=str(project)))) as store:
        found = await store.search("transcript fork", days=None)
        text = ef_text(found, result_notes(store, found))
    _, blocks, tips = parse_ef(text)
    assert [b["flags"] for b in blocks] == ["", "[Stale?] [Source may be outdated]", ""]
    assert any(tip.startswith("[Source may be outdated]") for tip in tips)


def test_ef_format_with_nothing_found_and_other_sources(workspace, tmp_path):
    project = _copy(tmp_path, "efm") / "project"
    (workspace / "memory/MEMORY.md").write_text("## 2026-02-01\n\n- The fork in the road\n",
                                                encoding="utf-8")
    sources = [{"class": "miniclaw.sources.ef_memory:EFMemorySource", "root": str(project)}]
    run = _cli(workspace, tmp_path, sources, [str(project)], "zyzzyva", "--format", "ef")
    assert run.returncode == 0 and "No matching entries found." in run.stdout
    run = _cli(workspace, tmp_path, sources, [str(project)], "fork", "--format", "ef", "--all")
    _, blocks, _ = parse_ef(run.stdout)
    other = [b for b in blocks if b["label"][2] == "long_term"]
    assert other and other[0]["Source"] == ["memory/MEMORY.md:3"]
    assert all(b["Source"] for b in blocks)  # every result has its Source


def test_mnemonic_format_is_the_search_subcall_json(workspace, tmp_path):
    store = _copy(tmp_path, "mnemonic")
    home, project = store / "home/.claude/mnemonic", store / "project/.claude/mnemonic"
    sources = [{"class": "miniclaw.sources.mnemonic:MnemonicSource", "root": str(home)},
               {"class": "miniclaw.sources.mnemonic:MnemonicSource", "root": str(project),
                "name": "mnemonic_project"}]
    run = _cli(workspace, tmp_path, sources, [str(store)], "SQLite", "--format", "mnemonic",
               "--all")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert {"iteration", "pattern", "namespace_filter", "tag_filter", "files_searched",
            "files_matched", "findings", "coverage", "refinement_suggestions"} <= set(out)
    assert out["files_searched"] == 10 and out["pattern"] == "SQLite"
    first = out["findings"][0]
    assert first["title"] == "Use SQLite FTS5 for keyword search"  # case-insensitive match
    assert first["relevance"] == "high" and first["namespace"] == "_semantic/decisions"
    assert first["file"].startswith(str(home)) and first["type"] == "semantic"
    for finding in out["findings"]:
        assert set(finding) == {"file", "id", "title", "namespace", "type", "tags",
                                "relevance", "evidence", "citations_count"}
        assert finding["relevance"] in ("high", "medium", "low")
        assert len(finding["evidence"]) <= EVIDENCE_CHARS and "#" not in finding["evidence"][:2]
    assert "_semantic/decisions" in out["coverage"]["namespaces_searched"]
    assert all(isinstance(s, str) for s in out["refinement_suggestions"])
    narrowed = _cli(workspace, tmp_path, sources, [str(store)], "python", "--format",
                    "mnemonic", "--all", "--meta", "namespace=_semantic/knowledge")
    out = json.loads(narrowed.stdout)
    assert out["namespace_filter"] == "_semantic/knowledge"
    assert {f["namespace"] for f in out["findings"]} == {"_semantic/knowledge"}
    assert out["coverage"]["namespaces_searched"] == ["_semantic/knowledge"]
    assert "_semantic/decisions" in out["coverage"]["namespaces_suggested"]


def test_a_bad_format_or_meta_is_a_usage_error(workspace, tmp_path):
    for args in (["x", "--format", "efm"], ["x", "--meta", "namespace"],
                 ["x", "--meta", "a b=c"]):
        run = _cli(workspace, tmp_path, [], [], *args)
        assert run.returncode == 2 and run.stderr.startswith("Error: ")
        assert "Traceback" not in run.stderr and run.stdout == ""
