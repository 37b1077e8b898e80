"""`miniclaw doctor` over the workspace's configured sources (issue 14): a configuration a
search would refuse is an error finding (not a crash), each source's root is reachable, its
files get the per-file checks under their display paths, and staleness covers them all."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import write
from tests.test_doctor import register_mcp, run


def _configure(home: Path, workspace: Path, *items: object) -> None:
    (home / ".miniclaw").mkdir(exist_ok=True)
    (home / ".miniclaw" / "config.json").write_text(json.dumps({"workspaces": {str(workspace): {
        "sources": ["long_term", "daily_note", *items]}}}), encoding="utf-8")


def _report(workspace: Path) -> dict:
    done = run(workspace, "doctor", "--json")
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def test_a_bad_source_configuration_is_an_error_finding(workspace, isolated_home):
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    _configure(isolated_home, workspace, {"kind": "zettel", "root": "/x"})
    done = run(workspace, "doctor", "--json")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [finding] = [f for f in json.loads(done.stdout)["findings"] if f["check"] == "sources"]
    assert finding["severity"] == "error" and "unknown kind" in finding["message"]
    assert finding["path"].endswith("config.json") and finding["fix"]


def test_each_sources_files_are_checked_and_its_staleness_seen(workspace, isolated_home, tmp_path):
    root = tmp_path / "app" / ".claude" / "memory"
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    write(root, "patterns.md", "# Patterns\n- Use snake_case\n")
    write(root, "progress.md", "# Progress\n- one\n<private>\n- secret pin zebra-quartz\n")
    (root / "bad.md").write_bytes(b"# Bad\n- caf\xe9\n")
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": str(root), "name": "app"})
    register_mcp(isolated_home, workspace)
    assert run(workspace, "memory", "index").returncode == 0
    report = _report(workspace)
    found = {(f["path"], f["severity"]): f["message"] for f in report["findings"]}
    assert "never closed" in found[(f"{root}/progress.md", "warning")]
    assert "UTF-8" in found[(f"{root}/bad.md", "warning")]
    assert any(line.startswith("source app ") and line.endswith("3 files")
               for line in report["checked"])
    assert "zebra-quartz" not in json.dumps(report)

    write(root, "patterns.md", "# Patterns\n- Use snake_case\n- And kebab-case for files\n")
    stale = [f for f in _report(workspace)["findings"] if f["check"] == "index"]
    assert len(stale) == 1 and f"{root}/patterns.md" in stale[0]["message"]


def test_an_unreachable_source_root_is_an_error_naming_it(workspace, isolated_home, tmp_path):
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": "~/gone", "name": "old"})
    finding = [f for f in _report(workspace)["findings"] if f["check"] == "sources"]
    assert [(f["severity"], f["path"]) for f in finding] == [("error", "~/gone")]
    assert "'old'" in finding[0]["message"] and "sources remove old" in finding[0]["fix"]


def test_two_sources_reading_one_file_is_a_warning_naming_them(workspace, isolated_home,
                                                              tmp_path):
    """A hand-edited config.json with nested roots of one kind: every search failed
    ("cannot use the search index ... UNIQUE constraint failed"), and doctor said Healthy.
    A search now reads the file as the first source's (and warns): a warning here too."""
    root = tmp_path / "app" / ".claude" / "memory"
    write(root, "patterns.md", "# Patterns\n- Use snake_case\n")
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": str(root), "name": "app"},
               {"kind": "conkeeper", "root": str(root.parent), "name": "wide"})
    done = run(workspace, "doctor", "--json")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [finding] = [f for f in json.loads(done.stdout)["findings"] if f["check"] == "sources"]
    assert finding["severity"] == "warning" and finding["path"] == str(root.parent)
    assert finding["message"] == (f"the sources 'app' and 'wide' both read {root}/patterns.md: "
                                  "the index keeps a file once, so it is searched as 'app' only")
    assert finding["fix"] == "`miniclaw sources remove wide`"
    # A kind over memory/ shares MEMORY.md with long_term (doctor skipped memory/'s sources).
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": str(workspace / "memory"),
                                          "name": "mine"})
    [finding] = [f for f in _report(workspace)["findings"] if f["check"] == "sources"]
    assert finding["message"] == ("the sources 'long_term' and 'mine' both read "
                                  "memory/MEMORY.md: the index keeps a file once, so it is "
                                  "searched as 'long_term' only")


def test_a_source_over_the_home_folder_or_the_workspace_is_a_warning(workspace, isolated_home,
                                                                    tmp_path):
    """What `sources add` refuses, written into config.json by hand: said, not walked."""
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": "~", "name": "all"},
               {"kind": "conkeeper", "root": str(tmp_path), "name": "above"})
    report = _report(workspace)
    found = {f["path"]: f for f in report["findings"] if f["check"] == "sources"}
    assert found["~"]["severity"] == "warning"
    assert found["~"]["message"] == ("the source 'all': its root is your home folder itself; "
                                     "every search lists every file of its kind there")
    assert found["~"]["fix"] == ("`miniclaw sources remove all`, then add the folder its "
                                 "memory lives in")
    assert found[str(tmp_path)]["message"].startswith(
        f"the source 'above': its root holds the workspace ({workspace})")
    assert not any(line.startswith(("source all", "source above")) for line in report["checked"])


def test_a_source_name_edited_into_config_json_that_add_refuses_is_a_warning(
        workspace, isolated_home, tmp_path):
    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    _configure(isolated_home, workspace,
               {"kind": "conkeeper", "root": str(tmp_path / "a"), "name": "bad\x1b[2Jname"},
               {"kind": "conkeeper", "root": str(tmp_path / "b"), "name": "fine.name"})
    report = _report(workspace)
    [finding] = [f for f in report["findings"] if "simple name" in f["message"]]
    assert finding["severity"] == "warning" and finding["check"] == "sources"
    assert finding["message"] == (r"the source name 'bad\x1b[2Jname' is not a simple name: it "
                                  "garbles listings and is hard to give to --source")
    assert finding["fix"].startswith('rename it in config.json ("name": 1 to 64 letters')
    assert r"sources: long_term, daily_note, 'bad\x1b[2Jname', fine.name" in report["checked"]
    text = run(workspace, "doctor").stdout
    assert "\x1b" not in text and "1 warning" in text.splitlines()[-1]


def test_a_source_too_wide_is_not_walked_for_the_index_staleness(workspace, isolated_home,
                                                                 tmp_path, monkeypatch):
    """Its finding said "not walked", but the staleness check of the index listed it all the
    same: a hand-edited `/` root made doctor take minutes before it could say so. The
    index's rows of that source are not called stale either."""
    import sqlite3

    from miniclaw import config, doctor
    from miniclaw.sources import base as sources

    write(workspace, "memory/MEMORY.md", "# Memory\n\n- Prefers dark roast\n")
    write(tmp_path, "elsewhere/CLAUDE.md", "# Notes\n\n- kept apart\n")
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": str(tmp_path),
                                          "name": "above"})
    assert run(workspace, "memory", "index").returncode == 0  # a search reads it all the same
    with sqlite3.connect(config.index_path(workspace)) as conn:
        assert conn.execute("SELECT count(*) FROM files WHERE source = 'above'").fetchone()[0]
    listed = []
    real = sources.listing
    monkeypatch.setattr(sources, "listing",
                        lambda source, ws: listed.append(source.name) or real(source, ws))
    report = doctor.examine(workspace).to_dict()
    assert "above" not in listed and {"long_term", "daily_note"} <= set(listed)
    assert [f["path"] for f in report["findings"] if f["check"] == "index"] == []
    assert [f["path"] for f in report["findings"] if f["check"] == "sources"] == [str(tmp_path)]
