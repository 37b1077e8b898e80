"""`miniclaw sources list|add|remove` and per-source counts in `memory status` (issue 14,
item 1): real subprocesses, a real config.json, the ConKeeper fixtures copied to tmp_path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.formats import FORMAT_FIXTURES

FIXTURES = FORMAT_FIXTURES / "conkeeper"


def _cli(workspace: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miniclaw", "-w", str(workspace), *args],
                          capture_output=True, text=True, env=os.environ.copy(), timeout=120)


def _ok(workspace: Path, *args: str) -> dict:
    done = _cli(workspace, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def memory_root(tmp_path: Path) -> Path:
    target = tmp_path / "app"
    shutil.copytree(FIXTURES / "project", target, copy_function=shutil.copy)
    return target / ".claude" / "memory"


def _config(home: Path) -> dict:
    return json.loads((home / ".miniclaw" / "config.json").read_text(encoding="utf-8"))


def test_add_list_search_status_and_remove(workspace, memory_root, isolated_home):
    (isolated_home / ".miniclaw").mkdir()
    other = {"llm": {"provider": "echo"}, "workspaces": {"/elsewhere": {"roots": ["/x"]}}}
    (isolated_home / ".miniclaw" / "config.json").write_text(json.dumps(other), encoding="utf-8")

    added = _ok(workspace, "sources", "add", "conkeeper", str(memory_root), "--name", "app")
    assert added["added"] == {"kind": "conkeeper", "root": str(memory_root), "name": "app"}  # not under HOME
    config = _config(isolated_home)
    assert config["llm"] == other["llm"] and config["workspaces"]["/elsewhere"] == {"roots": ["/x"]}
    mine = config["workspaces"][str(workspace)]
    assert mine["sources"][:2] == ["long_term", "daily_note"] and mine["roots"] == [str(memory_root)]

    found = _ok(workspace, "memory", "rank", "FTS5", "--all", "--source", "app")
    assert found["total"] > 0 and {r["source"] for r in found["results"]} == {"app"}

    listed = {row["name"]: row for row in _ok(workspace, "sources", "list")["sources"]}
    assert list(listed) == ["long_term", "daily_note", "transcripts", "app"]
    assert listed["app"]["kind"] == "conkeeper" and listed["app"]["reachable"] is True
    assert listed["app"]["entries"] > 0 and listed["app"]["root"] == str(memory_root)

    status = _ok(workspace, "memory", "status")
    counts = {row["name"]: row for row in status["sources"]}
    assert counts["app"]["entries"] == listed["app"]["entries"] > 0
    assert counts["app"]["files_indexed"] == counts["app"]["files_on_disk"] == 10
    text = _cli(workspace, "memory", "status").stdout
    assert f"app: {counts['app']['entries']} entries in 10 files" in text

    removed = _ok(workspace, "sources", "remove", "app")
    assert removed["removed"]["name"] == "app"
    mine = _config(isolated_home)["workspaces"][str(workspace)]
    assert mine["sources"] == ["long_term", "daily_note", "transcripts"] and mine["roots"] == []
    assert memory_root.joinpath("active-context.md").exists()  # files untouched


def test_a_root_that_goes_away_is_listed_as_not_reachable(workspace, memory_root):
    _ok(workspace, "sources", "add", "conkeeper", str(memory_root))
    shutil.rmtree(memory_root)
    listed = {row["name"]: row for row in _ok(workspace, "sources", "list")["sources"]}
    assert listed["conkeeper"]["reachable"] is False
    assert "(not reachable)" in _cli(workspace, "sources", "list").stdout


@pytest.mark.parametrize("args, words", [
    (["add", "zettel", "."], "unknown source kind 'zettel'"),
    (["add", "conkeeper", "/no/such/folder"], "is not a folder"),
    (["remove", "nope"], "no source named 'nope'"),
    # a built-in source is added back by its name alone
    (["add", "long_term"], "already has a source named 'long_term'"),
    (["add", "long_term", "."], "long_term is a built-in source: add it without a folder"),
    (["add", "daily_note", "--name", "x"], "keeps its name: add it without --name"),
    (["add", "conkeeper"], "give the folder the conkeeper memory lives in"),
])
def test_bad_input_is_one_error_line_exit_2_and_nothing_written(workspace, isolated_home, args, words):
    done = _cli(workspace, "sources", *args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("Error: ") and words in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert not (isolated_home / ".miniclaw" / "config.json").exists()


def test_a_second_source_of_one_name_is_refused(workspace, memory_root, isolated_home):
    _ok(workspace, "sources", "add", "conkeeper", str(memory_root))
    before = (isolated_home / ".miniclaw" / "config.json").read_bytes()
    done = _cli(workspace, "sources", "add", "conkeeper", str(memory_root))
    assert done.returncode == 2 and "--name" in done.stderr
    assert (isolated_home / ".miniclaw" / "config.json").read_bytes() == before
    twin = memory_root.parent.parent.parent / "twin"  # another store of the kind
    shutil.copytree(memory_root, twin, copy_function=shutil.copy)
    _ok(workspace, "sources", "add", "conkeeper", str(twin), "--name", "twin")


def test_the_source_option_names_configured_sources_in_its_error(workspace, memory_root):
    _ok(workspace, "sources", "add", "conkeeper", str(memory_root), "--name", "app")
    done = _cli(workspace, "memory", "rank", "FTS5", "--source", "nope")
    assert done.returncode == 2 and "app" in done.stderr and "Traceback" not in done.stderr


def test_a_root_under_the_home_folder_is_written_with_a_tilde(workspace, isolated_home):
    root = isolated_home / "code" / "app" / ".claude" / "memory"
    shutil.copytree(FIXTURES / "project" / ".claude" / "memory", root, copy_function=shutil.copy)
    added = _ok(workspace, "sources", "add", "conkeeper", str(root))
    assert added["added"]["root"] == "~/code/app/.claude/memory"
    found = _ok(workspace, "memory", "rank", "FTS5", "--all", "--source", "conkeeper")
    assert found["results"][0]["path"].startswith("~/code/app/.claude/memory/")


def test_a_new_config_file_is_private_to_its_owner(workspace, memory_root, isolated_home):
    _ok(workspace, "sources", "add", "conkeeper", str(memory_root))
    assert (isolated_home / ".miniclaw").stat().st_mode & 0o777 == 0o700
    assert (isolated_home / ".miniclaw" / "config.json").stat().st_mode & 0o777 == 0o600
    assert [p.name for p in (isolated_home / ".miniclaw").iterdir()] == ["config.json"]


def test_add_help_names_every_kind(workspace: Path):
    from miniclaw.sources.base import KINDS

    shown = " ".join(_cli(workspace, "sources", "add", "--help").stdout.split())
    assert all(kind in shown for kind in KINDS), shown


def test_adds_at_the_same_time_keep_every_source(workspace, tmp_path, isolated_home):
    """config.json is read, changed and written under a lock: no add loses another's."""
    import threading

    from miniclaw.sources import config as source_config

    roots = [tmp_path / f"store{n}" for n in range(24)]
    start = threading.Barrier(4)

    def adds(mine: list[Path]) -> None:
        start.wait()
        for root in mine:
            root.mkdir()
            source_config.add(workspace, "conkeeper", str(root), name=root.name)

    threads = [threading.Thread(target=adds, args=(roots[n::4],)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    settings = next(iter(_config(isolated_home)["workspaces"].values()))
    assert sorted(item["name"] for item in settings["sources"] if isinstance(item, dict)) == \
        sorted(root.name for root in roots)


def _another_change_first(monkeypatch, other) -> None:
    """The race, made deterministic: `other` (another process's whole change) runs just
    before this one's change takes the config lock."""
    from miniclaw import config

    update = config.update_workspace_settings
    pending = [other]

    def racing(workspace, change):
        if pending:
            pending.pop()()  # its own update goes straight through
        return update(workspace, change)

    monkeypatch.setattr(config, "update_workspace_settings", racing)


def test_two_adds_of_one_name_at_once_cannot_both_succeed(workspace, tmp_path, isolated_home,
                                                          monkeypatch):
    """The name is checked under the lock: before, both adds passed their checks and
    config.json ended with two sources named `app`, which every search then refused."""
    from miniclaw.errors import UsageError
    from miniclaw.sources import config as source_config

    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    _another_change_first(monkeypatch,
                          lambda: source_config.add(workspace, "conkeeper", str(first), "app"))
    with pytest.raises(UsageError, match="already has a source named 'app'"):
        source_config.add(workspace, "conkeeper", str(second), "app")
    settings = _config(isolated_home)["workspaces"][str(workspace)]
    assert [item for item in settings["sources"] if isinstance(item, dict)] == \
        [{"kind": "conkeeper", "root": str(first), "name": "app"}]
    assert settings["roots"] == [str(first)]


def test_a_remove_racing_another_remove_takes_out_the_source_it_names(workspace, tmp_path,
                                                                      isolated_home, monkeypatch):
    """Which item goes is decided under the lock: before, the index was computed from the
    sources as they were, and popped `app`'s neighbour once another remove had gone first."""
    from miniclaw.sources import config as source_config

    for name in ("one", "app", "two"):
        (tmp_path / name).mkdir()
        source_config.add(workspace, "conkeeper", str(tmp_path / name), name)
    _another_change_first(monkeypatch, lambda: source_config.remove(workspace, "long_term"))
    removed = source_config.remove(workspace, "app").item
    assert removed == {"kind": "conkeeper", "root": str(tmp_path / "app"), "name": "app"}
    settings = _config(isolated_home)["workspaces"][str(workspace)]
    assert [item if isinstance(item, str) else item["name"] for item in settings["sources"]] \
        == ["daily_note", "transcripts", "one", "two"]
    assert settings["roots"] == [str(tmp_path / "one"), str(tmp_path / "two")]


def test_a_remove_of_a_source_another_removed_meanwhile_is_refused(workspace, tmp_path,
                                                                   isolated_home, monkeypatch):
    from miniclaw.errors import UsageError
    from miniclaw.sources import config as source_config

    (tmp_path / "app").mkdir()
    source_config.add(workspace, "conkeeper", str(tmp_path / "app"), "app")
    _another_change_first(monkeypatch, lambda: source_config.remove(workspace, "app"))
    with pytest.raises(UsageError, match="no source named 'app'"):
        source_config.remove(workspace, "app")
    names = _config(isolated_home)["workspaces"][str(workspace)]["sources"]
    assert names == ["long_term", "daily_note", "transcripts"]


def test_adds_of_one_name_from_processes_at_once_leave_exactly_one(workspace, tmp_path,
                                                                   isolated_home):
    """Real processes, started together: however they interleave, one add wins and the
    others are refused with one Error line, and config.json holds one source of the name."""
    roots = [tmp_path / f"store{n}" for n in range(4)]
    for root in roots:
        root.mkdir()
    procs = [subprocess.Popen([sys.executable, "-m", "miniclaw", "-w", str(workspace), "sources",
                               "add", "conkeeper", str(root), "--name", "app"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for root in roots]
    results = [(proc.returncode, err) for proc in procs
               for _, err in [proc.communicate(timeout=120)]]
    assert sorted(code for code, _ in results) == [0, 2, 2, 2], results
    assert all(err.startswith("Error: ") for code, err in results if code == 2)
    settings = _config(isolated_home)["workspaces"][str(workspace)]
    assert [item["name"] for item in settings["sources"] if isinstance(item, dict)] == ["app"]
    assert len(settings["roots"]) == 1


def test_a_built_in_source_removed_can_be_added_back(workspace, isolated_home):
    """Before, `sources add` took only a kind and a folder: once `long_term` was removed,
    only editing config.json by hand brought MEMORY.md back into search."""
    (workspace / "memory" / "MEMORY.md").write_text(
        "# Memory\n\n## 2026-02-10\n- Prefers dark roast coffee\n", encoding="utf-8")
    _ok(workspace, "sources", "remove", "long_term")
    assert _ok(workspace, "memory", "rank", "coffee", "--all")["results"] == []
    finding = next(f for f in _ok(workspace, "doctor")["findings"]
                   if f["path"] == "memory/MEMORY.md")
    assert "leave out long_term" in finding["message"]
    assert finding["fix"] == "`miniclaw sources add long_term` searches it again"

    added = _ok(workspace, "sources", "add", "long_term")
    assert added["added"] == "long_term"
    mine = _config(isolated_home)["workspaces"][str(workspace)]
    assert mine["sources"] == ["daily_note", "transcripts", "long_term"] and "roots" not in mine
    found = _ok(workspace, "memory", "rank", "coffee", "--all")["results"]
    assert [hit["content"] for hit in found] == ["Prefers dark roast coffee"]


def test_a_folder_with_no_files_of_the_kind_is_added_with_a_warning(workspace, tmp_path,
                                                                    memory_root):
    """A mnemonic store's parent folder, given by mistake: added (a store may be new), but
    said on stderr; before, nothing told why its searches found nothing."""
    empty = tmp_path / "not-the-store"
    empty.mkdir()
    done = _cli(workspace, "sources", "add", "mnemonic", str(empty), "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["added"]["root"] == str(empty)
    assert done.stderr == (f"Warning: no mnemonic memory files under {empty} (yet): is it the "
                           "folder the memory lives in?\n")
    done = _cli(workspace, "sources", "add", "conkeeper", str(memory_root))
    assert done.returncode == 0 and done.stderr == ""


def test_a_folder_another_source_reads_is_refused(workspace, tmp_path, isolated_home):
    """Two sources over one file made every search fail ("cannot use the search index ...
    UNIQUE constraint failed"); the second add is refused now, and nothing is written.
    Sources whose folders nest but whose files differ (an EF Memory project holding a
    ConKeeper folder) are fine."""
    project = tmp_path / "app"
    shutil.copytree(FIXTURES / "project", project, copy_function=shutil.copy)
    memory = project / ".claude" / "memory"
    (workspace / "memory" / "MEMORY.md").write_text("# Memory\n\n- Tea\n", encoding="utf-8")
    _ok(workspace, "sources", "add", "conkeeper", str(memory), "--name", "app")
    before = (isolated_home / ".miniclaw" / "config.json").read_bytes()
    for args, taken in [(["conkeeper", str(project / ".claude"), "--name", "wide"], "app"),
                        (["conkeeper", str(workspace / "memory"), "--name", "mine"],
                         "long_term")]:
        done = _cli(workspace, "sources", "add", *args)
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert done.stderr.startswith("Error: ") and len(done.stderr.splitlines()) == 1
        assert f"is already searched as the source '{taken}'" in done.stderr
        assert (isolated_home / ".miniclaw" / "config.json").read_bytes() == before
    assert _ok(workspace, "memory", "rank", "FTS5", "--all")["total"] > 0
    (project / ".memory").mkdir()
    _ok(workspace, "sources", "add", "ef_memory", str(project))


def _configure(home: Path, workspace: Path, *items: object) -> None:
    """config.json as a person may edit it by hand (no `sources add` check runs)."""
    (home / ".miniclaw").mkdir(exist_ok=True)
    (home / ".miniclaw" / "config.json").write_text(json.dumps({"workspaces": {str(workspace): {
        "sources": ["long_term", "daily_note", *items]}}}), encoding="utf-8")


def test_two_sources_over_one_file_still_search_and_warn_once(workspace, tmp_path,
                                                             isolated_home):
    """A hand-edited config.json whose sources read one file (nested roots, or a kind over
    memory/): every search, `memory index`, `context` failed ("UNIQUE constraint failed:
    files.path"). Now the first source in config order reads it, and each says so once,
    one `Warning:` line naming both sources; the other files are searched as ever."""
    root = tmp_path / "app" / ".claude" / "memory"
    root.mkdir(parents=True)
    (root / "patterns.md").write_text("# Patterns\n- Use snake_case for FTS5 tables\n",
                                      encoding="utf-8")
    (root / "more.md").write_text("# More\n- FTS5 needs a rebuild after bulk loads\n",
                                  encoding="utf-8")
    (workspace / "memory" / "MEMORY.md").write_text("# Memory\n\n- FTS5 is fine\n",
                                                    encoding="utf-8")
    _configure(isolated_home, workspace,
               {"kind": "conkeeper", "root": str(root), "name": "app"},
               {"kind": "conkeeper", "root": str(root.parent), "name": "wide"},
               {"kind": "conkeeper", "root": str(workspace / "memory"), "name": "mine"})
    said = [f"Warning: the sources 'app' and 'wide' both read {root}/more.md: the index "
            "keeps a file once, so it is searched as 'app' only: remove one from config.json "
            "(`miniclaw sources remove wide`)",
            "Warning: the sources 'long_term' and 'mine' both read memory/MEMORY.md: the index "
            "keeps a file once, so it is searched as 'long_term' only: remove one from "
            "config.json (`miniclaw sources remove mine`)"]
    for args in (["memory", "index"], ["search", "FTS5", "--all", "-n", "9"],
                 ["memory", "rank", "FTS5", "--all"], ["context", "FTS5"]):
        done = _cli(workspace, *args)
        assert done.returncode == 0, done.stderr
        lines = done.stderr.splitlines()  # context adds its token count
        assert sorted(line for line in lines if not line.startswith("(about ")) == said, args
    found = _ok(workspace, "search", "FTS5", "--all", "-n", "9")
    assert sorted((hit["source"], hit["path"]) for hit in found["results"]) == [
        ("app", f"{root}/more.md"), ("app", f"{root}/patterns.md"),
        ("long_term", "memory/MEMORY.md")]
    assert sorted(w["message"] for w in found["warnings"]) == [line.removeprefix("Warning: ")
                                                               for line in said]
    listed = {row["name"]: row["entries"] for row in _ok(workspace, "sources", "list")["sources"]}
    assert listed["app"] == 2 and listed["wide"] == 0 and listed["long_term"] == 1


# -- one folder, other spellings; roots too wide to be a store (a new user's trial) --------

def _invoke(workspace: Path, *args: str):
    from typer.testing import CliRunner

    from miniclaw.cli import app

    return CliRunner().invoke(app, ["--workspace", str(workspace), *args])


def _refused(done, *words: str) -> str:
    assert done.exit_code == 2 and done.stdout == "", (done.stdout, done.stderr)
    [line] = done.stderr.splitlines()
    assert line.startswith("Error: ") and all(word in line for word in words), line
    return line


@pytest.fixture
def nested(tmp_path: Path, workspace: Path) -> Path:
    """A ConKeeper-like folder `parent/sub` holding one note, added as the source `sub`."""
    sub = tmp_path / "t" / "parent" / "sub"
    sub.mkdir(parents=True)
    (sub / "notes.md").write_text("- nested giraffe note\n", encoding="utf-8")
    assert _invoke(workspace, "sources", "add", "conkeeper", str(sub), "--name", "sub").exit_code == 0
    return sub.parent


def test_a_folder_another_source_reads_is_refused_however_it_is_spelled(workspace, nested,
                                                                        tmp_path, isolated_home):
    """The check compared paths as written: `//tmp/...` and a link to the parent folder were
    accepted, and every search showed the note once per source."""
    link = tmp_path / "t" / "lnk" / "par"
    link.parent.mkdir()
    link.symlink_to(nested)
    config = isolated_home / ".miniclaw" / "config.json"
    before = config.read_bytes()
    for name, root in [("par", str(nested)), ("p2", "/" + str(nested)), ("p3", str(link)),
                       ("p4", f"{nested}/./sub/../")]:
        _refused(_invoke(workspace, "sources", "add", "conkeeper", root, "--name", name),
                 "is already searched as the source 'sub'")
        assert config.read_bytes() == before


def test_two_spellings_of_one_folder_in_config_json_search_the_file_once(workspace, nested,
                                                                        tmp_path, isolated_home):
    """A hand-edited config.json (no `sources add` check ran): the file is searched once, as
    the first source's, and each search and doctor say which sources overlap."""
    link = tmp_path / "t" / "lnk"
    link.symlink_to(nested)
    _configure(isolated_home, workspace,
               {"kind": "conkeeper", "root": str(nested / "sub"), "name": "sub"},
               {"kind": "conkeeper", "root": "/" + str(nested), "name": "p2"},
               {"kind": "conkeeper", "root": str(link), "name": "p3"})
    done = _invoke(workspace, "search", "giraffe", "--all", "--json")
    assert done.exit_code == 0, done.stderr
    found = json.loads(done.stdout)
    assert [(hit["source"], hit["path"]) for hit in found["results"]] == [
        ("sub", f"{nested}/sub/notes.md")]
    assert sorted(w["message"] for w in found["warnings"]) == [
        f"the sources 'sub' and 'p2' both read /{nested}/sub/notes.md: the index keeps a "
        "file once, so it is searched as 'sub' only: remove one from config.json "
        "(`miniclaw sources remove p2`)",
        f"the sources 'sub' and 'p3' both read {link}/sub/notes.md: the index keeps a file "
        "once, so it is searched as 'sub' only: remove one from config.json "
        "(`miniclaw sources remove p3`)"]
    report = json.loads(_invoke(workspace, "doctor", "--json").stdout)
    assert sorted(f["path"] for f in report["findings"] if "both read" in f["message"]) == \
        sorted(["/" + str(nested), str(link)])


def test_a_hard_link_is_one_file_too(workspace, tmp_path, isolated_home):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    (first / "notes.md").write_text("- a linked okapi note\n", encoding="utf-8")
    os.link(first / "notes.md", second / "notes.md")
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": str(first), "name": "a"},
               {"kind": "conkeeper", "root": str(second), "name": "b"})
    found = json.loads(_invoke(workspace, "search", "okapi", "--all", "--json").stdout)
    assert [hit["source"] for hit in found["results"]] == ["a"] and len(found["warnings"]) == 1


@pytest.mark.parametrize("where, words", [
    ("/", "/ is the root of the file system"),
    ("~", "is your home folder itself"),
    ("home", "is your home folder itself"),  # the same folder by its full path
    ("above-home", "holds your home folder"),  # through a link, too
    ("workspace", "is the workspace, whose files miniclaw reads itself"),
    ("above-workspace", "holds the workspace"),
])
def test_a_root_that_is_the_whole_disk_home_or_the_workspace_is_refused(
        workspace, tmp_path, monkeypatch, where, words):
    """`sources add conkeeper /` was accepted, and the next search listed the whole file
    system (47 s); a folder holding the workspace reads miniclaw's own notes as another
    tool's."""
    home = tmp_path / "users" / "alice"  # beside the workspace, not above it
    home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "lnk").symlink_to(tmp_path / "users")
    root = {"/": "/", "~": "~", "home": str(home), "above-home": str(tmp_path / "lnk"),
            "workspace": str(workspace), "above-workspace": str(workspace.parent)}[where]
    line = _refused(_invoke(workspace, "sources", "add", "conkeeper", root), words)
    assert "give the folder the conkeeper memory lives in" in line
    assert not (home / ".miniclaw" / "config.json").exists()


def test_a_store_under_the_home_folder_is_still_fine(workspace, isolated_home):
    store = isolated_home / "notes"
    store.mkdir()
    done = _invoke(workspace, "sources", "add", "conkeeper", str(store))
    assert done.exit_code == 0, done.stderr


# -- source names (a new user's trial) -----------------------------------------------------

RULE = ("a name is 1 to 64 letters (A-Z, a-z), digits, '.', '_' or '-', starting with a "
        "letter or digit")


@pytest.mark.parametrize("name, shown", [
    ("a\nb", r"'a\nb'"),  # split the `sources list` line in two
    ("   ", "'   '"),
    ("--weird", "'--weird'"),  # as `--name=--weird`
    ("x\x1b[31my", r"'x\x1b[31my'"),
    ("", "''"),  # silently became the kind's name
    (".hidden", "'.hidden'"),
    ("two words", "'two words'"),
    ("café", "'café'"),
    ("n" * 65, "'" + "n" * 40 + "'..."),
])
def test_a_name_that_is_not_a_simple_word_is_refused(workspace, tmp_path, isolated_home,
                                                     name, shown):
    store = tmp_path / "store"
    store.mkdir()
    line = _refused(_invoke(workspace, "sources", "add", "conkeeper", str(store),
                            f"--name={name}"))
    assert line == f"Error: the source name {shown} is not allowed: {RULE}"
    assert not (isolated_home / ".miniclaw" / "config.json").exists()


def test_a_built_in_source_added_back_with_an_empty_name_is_refused(workspace, isolated_home):
    _refused(_invoke(workspace, "sources", "add", "long_term", "--name="),
             "the built-in source long_term keeps its name: add it without --name")


@pytest.mark.parametrize("name", ["app", "App2", "ef_memory", "work.notes", "x-1", "9", "a" * 64])
def test_simple_names_are_accepted(workspace, tmp_path, isolated_home, name):
    store = tmp_path / "store"
    store.mkdir()
    done = _invoke(workspace, "sources", "add", "conkeeper", str(store), "--name", name)
    assert done.exit_code == 0, done.stderr
    assert _config(isolated_home)["workspaces"][str(workspace)]["sources"][-1]["name"] == name


def test_a_name_edited_into_config_json_is_searched_listed_on_one_line_and_removable(
        workspace, tmp_path, isolated_home):
    """config.json may already hold such a name: it keeps working (no config that worked is
    refused now); `sources list` shows it escaped on its own line, and doctor warns."""
    store = tmp_path / "store"
    store.mkdir()
    (store / "notes.md").write_text("- an okapi note\n", encoding="utf-8")
    _configure(isolated_home, workspace, {"kind": "conkeeper", "root": str(store),
                                          "name": "a\nb"})
    found = json.loads(_invoke(workspace, "search", "okapi", "--all", "--json").stdout)
    assert [hit["source"] for hit in found["results"]] == ["a\nb"]
    listed = _invoke(workspace, "sources", "list").stdout.splitlines()
    assert len(listed) == 3 and listed[2].startswith(r"'a\nb'  [conkeeper]  ")
    names = [row["name"] for row in json.loads(_invoke(workspace, "sources", "list",
                                                       "--json").stdout)["sources"]]
    assert names == ["long_term", "daily_note", "a\nb"]
    assert _invoke(workspace, "sources", "remove", "a\nb").exit_code == 0


# -- the JSON of add and remove; --format (a new user's trial) ------------------------------

@pytest.mark.parametrize("form", [["--json"], ["--format", "json"], ["-f", "json"]])
def test_add_and_remove_print_one_json_shape_for_every_kind_of_source(workspace, tmp_path,
                                                                       isolated_home, form):
    """`added`/`removed` is the item as config.json holds it (a string for a built-in
    source, an object for others: kept as it was); `source` has the same fields for both,
    those of a `sources list` row; and both commands take --format as `sources list` does
    (before, `--format` was "No such option")."""
    store = tmp_path / "store"
    store.mkdir()
    config = str(isolated_home / ".miniclaw" / "config.json")

    def ok(*args: str) -> dict:
        done = _invoke(workspace, "sources", *args, *form)
        assert done.exit_code == 0, done.stderr
        return json.loads(done.stdout)

    assert ok("remove", "long_term") == {
        "removed": "long_term", "source": {"name": "long_term", "kind": "built-in",
                                           "root": "memory"}, "config": config}
    assert ok("add", "long_term") == {
        "added": "long_term", "source": {"name": "long_term", "kind": "built-in",
                                         "root": "memory"}, "config": config}
    item = {"kind": "conkeeper", "root": str(store), "name": "app"}
    source = {"name": "app", "kind": "conkeeper", "root": str(store)}
    assert ok("add", "conkeeper", str(store), "--name", "app") == {
        "added": item, "source": source, "config": config}
    listed = json.loads(_invoke(workspace, "sources", "list", "--json").stdout)["sources"]
    assert {key: listed[-1][key] for key in source} == source
    assert ok("remove", "app") == {"removed": item, "source": source, "config": config}
    kind_default = ok("add", "mnemonic", str(store))
    assert kind_default["added"] == {"kind": "mnemonic", "root": str(store)}
    assert kind_default["source"] == {"name": "mnemonic", "kind": "mnemonic", "root": str(store)}


def test_add_and_remove_say_in_text_what_they_changed(workspace, tmp_path, isolated_home):
    store = tmp_path / "store"
    store.mkdir()
    (store / "notes.md").write_text("- a note\n", encoding="utf-8")
    config = isolated_home / ".miniclaw" / "config.json"
    for args, said in [
            (["add", "conkeeper", str(store), "--name", "app", "--format", "text"],
             f"Added app (conkeeper, {store}) to {config}; the next search indexes it."),
            (["remove", "app", "-f", "text"],
             f"Removed app (conkeeper, {store}) from {config}; its files were not touched."),
            (["remove", "transcripts"],
             f"Removed transcripts from {config}; its files were not touched.")]:
        done = _invoke(workspace, "sources", *args)
        assert done.exit_code == 0 and done.stdout == said + "\n", done.stderr


@pytest.mark.parametrize("args, words", [
    (["add", "conkeeper", "STORE", "--format", "xml"], "--format must be text or json, not 'xml'"),
    (["add", "conkeeper", "STORE", "--format", "text", "--json"], "choose one of --json or --format"),
    (["remove", "long_term", "--format", "markdown"], "--format must be text or json"),
])
def test_a_bad_format_is_refused_before_anything_is_written(workspace, tmp_path, isolated_home,
                                                            args, words):
    store = tmp_path / "store"
    store.mkdir()
    _refused(_invoke(workspace, "sources", *[str(store) if a == "STORE" else a for a in args]),
             words)
    assert not (isolated_home / ".miniclaw" / "config.json").exists()


def test_a_source_renamed_finds_its_memories_under_its_new_name(workspace, tmp_path,
                                                                isolated_home):
    """Its files' rows in the index kept the old name, and the index said it was up to
    date (same paths, sizes, times): after `sources remove app` and `sources add ... --name
    work`, or a name changed in config.json (as doctor advises for a name `add` refuses),
    no search found the store's memories again until the file changed."""
    store = tmp_path / "store"
    store.mkdir()
    (store / "notes.md").write_text("- an okapi note\n", encoding="utf-8")

    def found(*args: str) -> list[str]:
        done = _invoke(workspace, "search", "okapi", "--all", "--json", *args)
        assert done.exit_code == 0, done.stderr
        return [hit["source"] for hit in json.loads(done.stdout)["results"]]

    assert _invoke(workspace, "sources", "add", "conkeeper", str(store), "--name", "app").exit_code == 0
    assert found() == ["app"]
    assert _invoke(workspace, "sources", "remove", "app").exit_code == 0
    assert _invoke(workspace, "sources", "add", "conkeeper", str(store), "--name", "work").exit_code == 0
    status = json.loads(_invoke(workspace, "memory", "status", "--json").stdout)
    assert status["stale_files"] == [f"{store}/notes.md"] and status["missing_files"] == []
    doctor = json.loads(_invoke(workspace, "doctor", "--json").stdout)
    assert [f["message"] for f in doctor["findings"] if f["check"] == "index"] == [
        f"1 file changed since indexed ({store}/notes.md): the next search updates it"]
    assert found("--source", "work") == ["work"] and found() == ["work"]
    config = isolated_home / ".miniclaw" / "config.json"
    config.write_text(config.read_text(encoding="utf-8").replace('"work"', '"notes"'),
                      encoding="utf-8")
    assert found() == ["notes"]
    counts = {row["name"]: row["entries"]
              for row in json.loads(_invoke(workspace, "memory", "status", "--json").stdout)["sources"]}
    assert counts["notes"] == 1


def test_a_folder_another_source_reads_is_refused_while_it_is_still_empty(
        workspace, tmp_path, isolated_home):
    """Issue 38: the check compared only the files a folder held now, so an empty folder
    passed: a transcripts source over the workspace's own sessions/ was accepted, and from
    the first chat every search warned that two sources read the same file. Folders are
    compared now (links resolved, either one holding the other)."""
    (workspace / "sessions").mkdir()
    projects = tmp_path / "claude" / "projects"
    (projects / "-home-me-app").mkdir(parents=True)
    assert _invoke(workspace, "sources", "add", "claude_code", str(projects)).exit_code == 0
    config = isolated_home / ".miniclaw" / "config.json"
    before = config.read_bytes()
    for kind, root, taken in [("transcripts", workspace / "sessions", "transcripts"),
                              ("claude_code", projects / "-home-me-app", "claude_code"),
                              ("claude_code", projects.parent, "claude_code")]:
        _refused(_invoke(workspace, "sources", "add", kind, str(root), "--name", "again"),
                 f"is already searched as the source '{taken}'")
        assert config.read_bytes() == before
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert _invoke(workspace, "sources", "add", "transcripts", str(elsewhere),
                   "--name", "old_chats").exit_code == 0


def test_sessions_search_that_finds_nothing_says_how_to_add_claude_codes_conversations(
        workspace, isolated_home):
    """Issue 39: with ~/.claude/projects on the machine and no claude_code source, `sessions
    search` said only "No conversation matches": nothing told how to search Claude Code's."""
    hint = ("Claude Code's conversations are not searched: `miniclaw sources add claude_code "
            "~/.claude/projects` adds them")
    assert hint not in _invoke(workspace, "sessions", "search", "lisbon").stderr  # no folder
    (isolated_home / ".claude" / "projects" / "-home-me-app").mkdir(parents=True)
    done = _invoke(workspace, "sessions", "search", "lisbon")
    assert done.exit_code == 0 and "No conversation matches 'lisbon'." in done.stdout
    assert done.stderr.splitlines() == [hint]
    assert _invoke(workspace, "sources", "add", "claude_code",
                   str(isolated_home / ".claude" / "projects")).exit_code == 0
    assert hint not in _invoke(workspace, "sessions", "search", "lisbon").stderr


def test_sources_add_writes_through_a_config_json_that_links_to_a_dotfiles_folder(
        workspace, tmp_path, isolated_home, memory_root):
    """config.json replaced atomically replaced the link itself: a config.json kept in a
    dotfiles folder stopped being the one miniclaw reads, and the copy kept lost the change."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "config.json").write_text(json.dumps({"timezone": "UTC"}), encoding="utf-8")
    (isolated_home / ".miniclaw").mkdir()
    link = isolated_home / ".miniclaw" / "config.json"
    link.symlink_to(dotfiles / "config.json")
    assert _invoke(workspace, "sources", "add", "conkeeper", str(memory_root)).exit_code == 0
    assert link.is_symlink()
    kept = json.loads((dotfiles / "config.json").read_text(encoding="utf-8"))
    assert kept["timezone"] == "UTC" and kept["workspaces"]
    assert not list(dotfiles.glob(".config.*.tmp")) and not list(link.parent.glob(".config.*"))


@pytest.fixture
def deep_folder(memory_root: Path):
    """`memory_root/deep/d/d/...`, 1,200 folders; removed bottom-up after the test, since
    shutil.rmtree (and pytest's clean-up of old temporary folders) recurses and fails on it."""
    top = str(memory_root / "deep")
    yield top
    order, todo = [], [top] if os.path.isdir(top) else []
    while todo:
        folder = todo.pop()
        order.append(folder)
        with os.scandir(folder) as listed:
            for entry in listed:
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
                else:
                    os.unlink(entry.path)
    for folder in reversed(order):
        os.rmdir(folder)


def test_a_source_folder_too_deep_is_left_out_with_a_warning_and_the_rest_searched(
        workspace, memory_root, deep_folder, isolated_home):
    """Issue 37: a source folder ~1,200 levels deep made `sources add`, every search and
    `doctor` die with RecursionError. Folders past `MAX_FOLDER_DEPTH` are left out, named
    once; the rest of the source, the part just above the limit too, is searched."""
    from miniclaw.sources.base import MAX_FOLDER_DEPTH

    folder = deep_folder
    for level in range(1, 1201):  # os.makedirs recurses too
        os.mkdir(folder)
        if level in (MAX_FOLDER_DEPTH, 1200):
            Path(folder, "notes.md").write_text(f"# Depth {level}\n\nThe quokka burrow at "
                                                f"depth {level}.\n", encoding="utf-8")
        folder += "/d"
    (isolated_home / ".miniclaw").mkdir()
    added = _cli(workspace, "sources", "add", "conkeeper", str(memory_root), "--name", "app")
    assert added.returncode == 0 and "Traceback" not in added.stderr, added.stderr
    run = _cli(workspace, "search", "quokka", "--all", "--json")
    assert run.returncode == 0, run.stderr
    assert [r["content"] for r in json.loads(run.stdout)["results"]] == [
        f"The quokka burrow at depth {MAX_FOLDER_DEPTH}."]
    said = [line for line in run.stderr.splitlines() if "folders deep" in line]
    assert len(said) == 1 and f"more than {MAX_FOLDER_DEPTH} folders deep" in said[0], run.stderr
    doctor = _cli(workspace, "doctor")
    assert doctor.returncode in (0, 1) and "Traceback" not in doctor.stderr, doctor.stderr
