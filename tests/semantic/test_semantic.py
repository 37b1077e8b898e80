"""Find by meaning (issue 16): the vector retriever and the modes hybrid and vector
(miniclaw/semantic/retriever.py), with the real offline model.

Tests marked `needs_model` run only where `pip install -e '.[semantic]'` put the model in
(they skip, saying why, elsewhere: CI installs `.[dev]` only); the others check what a
search does without it (BM25, said as data and on screen, never an error) and that the
other modes never import the numeric libraries.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniclaw.semantic import model as embedding
from miniclaw.index.derived import DerivedData
from miniclaw.search.hints import SearchWarning
from miniclaw.index.search_index import Filters
from miniclaw.search.options import SearchOptions
from miniclaw.search.query import parse_query
from miniclaw.search.scoring import Request, get_mode
from miniclaw.semantic import retriever as semantic
from tests.conftest import daily_note, long_term, write

from tests.semantic import needs_model

FACTS = ["Caroline started working at the adoption agency",
         "Walked the Blue Ridge trail up to the summit with Dana",
         "Tea with Sam on Sunday",
         "The car needs new brake pads before winter",
         "Booked flights to Lisbon for the conference"]


@pytest.fixture
def no_model(monkeypatch):
    """The extra not installed: a package of it cannot be found."""
    monkeypatch.setattr(embedding, "_NEEDS", {"no_such_module_xyz": "no-such-package"})


def _vectors(store) -> tuple[int, int]:
    return DerivedData(store.index, embedding.NAME).progress()


@needs_model
async def test_hybrid_finds_what_no_query_word_says(store, workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    # No entry holds "hiking" (or its stem): BM25 finds nothing, the vectors find the trail.
    assert (await store.search("did I go hiking?", mode="bm25")).results == []
    found = await store.search("did I go hiking?", mode="hybrid")
    assert found.mode == "hybrid" and found.degraded is None
    assert found.results[0].content == FACTS[1]
    work = await store.search("what does Caroline do for work?", mode="vector")
    assert work.results[0].content == FACTS[0]


@needs_model
async def test_unrelated_memories_are_not_results(store, workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    found = await store.search("quantum chromodynamics lecture notes", mode="vector")
    assert found.results == [] and found.total == 0


@needs_model
async def test_hybrid_is_explained_by_each_retrievers_part(store, workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    found = await store.search("brake pads for the car", mode="hybrid", explain=True)
    top = found.results[0]
    assert top.content == FACTS[3]
    parts = dict(top.explanation)
    assert set(parts) == {"bm25", "vector"} and all(v > 0 for v in parts.values())
    assert sum(parts.values()) == pytest.approx(top.score)


DOG_NAMES = ("Choosing a name for a new dog is a fun part of bringing a puppy home. Popular "
             "dog names include Max, Bella, Charlie, Luna and Cooper. Pick a short name of one "
             "or two syllables that your dog can tell apart from common commands such as sit "
             "or stay, and make sure everyone in the family uses the same name. Many owners "
             "name a dog after its colour, its breed, a favourite food or a famous character. "
             "Say the name in a happy voice, reward the dog when it looks at you, and practise "
             "a few minutes a day: most puppies learn their name within a week or two.")


@needs_model
async def test_a_long_entrys_cosine_is_scaled_by_its_length(store, workspace):
    # The essay is closer to the question by raw cosine (0.69 against 0.60): a long text's
    # vector is near many questions. Scaled by LONG_TERMS / length, the turn that answers
    # comes first, and the essay's score is its cosine scaled so.
    answer = "We called the puppy Biscuit, after his colour."
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", [DOG_NAMES, answer])))
    question = "what did I name my new dog?"
    found = await store.search(question, mode="vector", explain=True)
    assert [r.content for r in found.results] == [answer, DOG_NAMES]
    model = embedding.load()
    query, essay = model.embed_query(question), model.embed([DOG_NAMES])[0]
    essay = semantic._unpacked(semantic._packed(essay))  # as stored (bfloat16)
    source = store.index.sources[0]
    ids = store.index.matching(source, Filters((source.name,)))
    essay_id = next(i for i, e in store.index.entries(ids).items() if e.text == DOG_NAMES)
    length = store.index.lengths([essay_id])[essay_id]
    assert length > semantic.LONG_TERMS
    assert found.results[1].score == pytest.approx(
        float(query @ essay) * semantic.LONG_TERMS / length, abs=1e-5)


@needs_model
async def test_a_bm25_score_does_not_depend_on_which_list_found_the_entry(store, workspace):
    # Cut at 1, BM25's list holds the fence only; the vector's brings in the two turns, whose
    # BM25 scores must still take their neighbour context (each holds one query word, the
    # other turn the other): the same scores as when BM25's own list holds them.
    write(workspace, "memory/2026-02-10.md", daily_note("2026-02-10", [
        "Mel: Caroline, how is the new job going?",
        "It's great, I work with kids at the adoption agency every day."],
        ["10:00:00", "10:01:00"]))
    write(workspace, "memory/2026-02-01.md", daily_note("2026-02-01", [
        "Caroline fixed the fence; Caroline's work on the fence took all of Caroline's work "
        "day."], ["09:00:00"]))
    ranker = store.ranker()
    query, mode = parse_query("where does Caroline work?"), get_mode("hybrid")
    plan = ranker._prepare(query, mode, True, list(store.index.sources))
    request = Request(query, tuple(plan.terms), plan.stats,
                      ranker.filters(SearchOptions(days=None)))
    notes = next(s for s in store.index.sources if s.sequence)
    cut, whole = (ranker._search_source(notes, mode, request, (k, k)) for k in (1, 50))
    assert len(cut.scores[0]) == len(whole.scores[0]) == 3
    assert cut.scores[0] == pytest.approx(whole.scores[0])


@needs_model
async def test_vectors_are_kept_per_text_and_dropped_with_the_entry(store, workspace):
    path = write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    await store.search("trail", mode="hybrid")
    assert _vectors(store) == (5, 5)
    # A move keeps the vector (same text, same hash); a deleted entry takes its vector along.
    path.write_text(long_term(("2026-02-11", list(reversed(FACTS[1:])))), encoding="utf-8")
    found = await store.search("did I go hiking?", mode="hybrid")
    assert found.results[0].content == FACTS[1]
    assert _vectors(store) == (4, 4)
    rows = store.index.db.run(lambda c: c.execute(
        "SELECT COUNT(*) FROM derived WHERE kind = ?", (embedding.NAME,)).fetchone()[0])
    assert rows == 4


@needs_model
async def test_a_new_entry_is_embedded_by_the_next_search(store, workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    await store.search("tea", mode="hybrid")
    await store.add_long_term("Adopted a grey kitten named Miso from the shelter")
    found = await store.search("new pet cat", mode="vector")
    assert found.results[0].content.startswith("Adopted a grey kitten")
    assert _vectors(store) == (6, 6)


@needs_model
async def test_hybrid_says_how_far_along_the_vectors_are_and_ranks_with_them(
        store, workspace, monkeypatch):
    monkeypatch.setattr(semantic, "EMBED_PER_SEARCH", 2)
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    first = await store.search("Lisbon flights", mode="hybrid")
    assert SearchWarning("vectors", embedded=2, total=5) in first.warnings
    assert first.results[0].content == FACTS[4]  # BM25's part still ranks
    second = await store.search("Lisbon flights", mode="hybrid")
    assert SearchWarning("vectors", embedded=4, total=5) in second.warnings
    third = await store.search("Lisbon flights", mode="hybrid")
    assert not [w for w in third.warnings if w.kind == "vectors"]
    assert _vectors(store) == (5, 5)


@needs_model
async def test_vectors_follow_the_filters_of_every_source(store, workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    write(workspace, "memory/2026-02-13.md", daily_note(
        "2026-02-13", ["Went for a long hike in the hills, legs sore"], ["18:00:00"]))
    found = await store.search("did I go hiking?", mode="vector", sources=["daily_note"])
    assert [hit.source for hit in found.results] == ["daily_note"]
    fenced = await store.search("walk in nature", mode="vector", exclude=["hills"])
    assert all("hills" not in hit.content for hit in fenced.results)
    assert FACTS[1] in [hit.content for hit in fenced.results]


@needs_model
async def test_a_damaged_vector_in_the_index_leaves_its_text_to_bm25(store, workspace,
                                                                   monkeypatch):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    await store.search("Lisbon", mode="hybrid")

    def damage(conn):
        with conn:
            conn.execute("UPDATE derived SET value = x'0102' WHERE kind = ?", (embedding.NAME,))

    store.index.db.run(damage)
    monkeypatch.setattr(semantic, "_TABLES", {})  # as a new process reads the index
    found = await store.search("Lisbon flights", mode="hybrid", explain=True)
    assert found.results[0].content == FACTS[4]
    assert dict(found.results[0].explanation)["vector"] == 0.0


@needs_model
async def test_a_processs_first_search_counts_the_vectors_by_reading_them(store, workspace,
                                                                        monkeypatch):
    """A process's first look reads every vector, and that is their count: the table is
    not walked a second time to count them (on L, 15-20 ms of a one-shot hybrid search).
    The search ranks as a process that had read them before."""
    from miniclaw.index import derived as derived_module

    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    warm = await store.search("Lisbon flights", mode="hybrid", explain=True)
    counts: list = []
    count_progress = derived_module._count_progress
    monkeypatch.setattr(derived_module, "_count_progress", lambda conn, kind, *done: (
        counts.append(done[0] if done else None), count_progress(conn, kind, *done))[1])
    monkeypatch.setattr(DerivedData, "count", lambda self: counts.append("count") or 0)
    monkeypatch.setattr(semantic, "_TABLES", {})  # as a new process reads the index
    first = await store.search("Lisbon flights", mode="hybrid", explain=True)
    assert counts == [len(FACTS)]  # the values read, passed on: no COUNT of the table
    assert [(h.content, h.score, h.explanation) for h in first.results] == \
        [(h.content, h.score, h.explanation) for h in warm.results]
    assert not first.warnings


async def test_without_the_model_hybrid_runs_bm25_and_says_so(store, workspace, no_model):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    plain = await store.search("Lisbon conference", mode="bm25")
    for mode in ("hybrid", "vector"):
        found = await store.search("Lisbon conference", mode=mode)
        assert found.mode == "bm25"
        assert [(h.content, h.score) for h in found.results] == \
            [(h.content, h.score) for h in plain.results]
        assert found.to_dict()["degraded"] == {
            "kind": "degraded", "requested": mode, "mode": "bm25",
            "reason": "no embedding model installed"}
    assert "degraded" not in plain.to_dict()


def _cli(workspace, *args, patch_missing: bool = False, env_extra=None):
    """`python -m miniclaw ...` in a subprocess; with `patch_missing`, as if the extra were
    not installed (one of its packages cannot be found)."""
    code = textwrap.dedent("""
        import sys
        from miniclaw.semantic import model as embedding
        if sys.argv[1] == "missing":
            embedding._NEEDS = {"no_such_module_xyz": "no-such-package"}
        sys.argv = ["miniclaw", *sys.argv[2:]]
        from miniclaw.cli import main
        main()
    """)
    env = {**os.environ, "NO_COLOR": "1", **(env_extra or {})}
    return subprocess.run([sys.executable, "-c", code, "missing" if patch_missing else "-",
                           "--workspace", str(workspace), *args],
                          capture_output=True, text=True, env=env, timeout=120)


def test_cli_shows_the_mode_that_ran_when_hybrid_cannot(workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    done = _cli(workspace, "memory", "rank", "Lisbon", "--mode", "hybrid", patch_missing=True)
    assert done.returncode == 0, done.stderr
    assert "[bm25] \u26a0 no embedding model installed" in done.stdout
    assert "Booked flights to Lisbon" in done.stdout and "Traceback" not in done.stderr
    as_json = _cli(workspace, "memory", "rank", "Lisbon", "--mode", "hybrid", "--json",
                   patch_missing=True)
    data = json.loads(as_json.stdout)
    assert data["mode"] == "bm25" and data["degraded"]["requested"] == "hybrid"


_OUT_OF_MEMORY = textwrap.dedent("""
    import sys
    from miniclaw.semantic import model as embedding
    real = embedding.import_onnxruntime
    def out_of_memory(*args, **kwargs):  # what onnxruntime does under a memory limit
        raise MemoryError("std::bad_alloc")
    def patched():
        module = real()
        module.InferenceSession = out_of_memory
        return module
    embedding.import_onnxruntime = patched
    sys.argv = ["miniclaw", *sys.argv[1:]]
    from miniclaw.cli import main
    main()
""")


@needs_model
def test_a_model_that_cannot_load_for_memory_falls_back_to_bm25_and_says_so(workspace):
    """Under a memory limit the installed model cannot load: hybrid searches (and context,
    and auto) traced back instead of searching by BM25 with the degradation notice."""
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))

    def miniclaw(*args):
        done = subprocess.run([sys.executable, "-c", _OUT_OF_MEMORY, "--workspace",
                               str(workspace), *args], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "NO_COLOR": "1"})
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        return done

    for mode in ("hybrid", "vector"):
        found = json.loads(miniclaw("memory", "rank", "Lisbon", "--mode", mode, "--json").stdout)
        assert found["mode"] == "bm25" and found["degraded"]["requested"] == mode
        assert found["degraded"]["reason"] == "the embedding model did not load here (out of memory)"
        assert found["degraded"]["installed"] is True
        assert found["results"][0]["content"] == "Booked flights to Lisbon for the conference"
    for command in (("memory", "rank"), ("search",)):  # auto said nothing in JSON (QA)
        auto = json.loads(miniclaw(*command, "Lisbon", "--mode", "auto", "--json").stdout)
        assert auto["mode"] == "bm25" and "Lisbon" in auto["results"][0]["content"]
        assert auto["degraded"]["reason"] == "the embedding model did not load here (out of memory)"
    for mode in ("hybrid", "auto"):  # the notice gave a reinstall command for a memory limit
        context = miniclaw("context", "flights to Lisbon", "--mode", mode)
        assert "Booked flights to Lisbon" in context.stdout
        assert context.stderr.startswith("([bm25] \u26a0 the embedding model did not load here "
                                          "(out of memory): searched by bm25)\n"), context.stderr
        assert "pip install" not in context.stderr and "onnxruntime" not in context.stderr


@needs_model
def test_a_saved_query_graph_overwritten_is_made_again_and_said_once(workspace):
    """Its weights overwritten with other bytes of the same size (mtime put back): every
    hybrid search failed ("indices element out of data bounds"), and it was never made
    again."""
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    first = _cli(workspace, "memory", "rank", "Lisbon", "--mode", "hybrid", "--json")
    assert first.returncode == 0, first.stderr
    from miniclaw.config import cache_dir

    weights, = (cache_dir() / "models").glob(f"{embedding.NAME}-query-*/weights.bin")
    before = weights.stat()
    weights.write_bytes(bytes(reversed(weights.read_bytes())))
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    runs = [subprocess.run([sys.executable, "-c", _IN_ONE_PROCESS, "--workspace",
                            str(workspace), "memory", "rank", "Lisbon", "--mode", "hybrid",
                            "--json"], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "NO_COLOR": "1"}) for _ in range(2)]
    runs.append(_cli(workspace, "memory", "rank", "Lisbon", "--mode", "hybrid", "--json"))
    assert all(run.returncode == 0 for run in runs), runs[0].stderr
    assert [json.loads(run.stdout) for run in runs] == [json.loads(first.stdout)] * 3
    assert runs[0].stderr.count("saved embedding model") == 1 and "made again" in runs[0].stderr
    assert runs[1].stderr == runs[2].stderr == ""


@needs_model
def test_a_saved_query_graph_overwritten_is_said_once_by_a_one_shot_search_too(workspace):
    """A one-shot hybrid search (its model was once loaded in a forked child whose stderr was
    /dev/null) made the graph again, but nothing said it had been changed."""
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    first = _cli(workspace, "memory", "rank", "Lisbon", "--mode", "hybrid", "--json")
    assert first.returncode == 0, first.stderr
    from miniclaw.config import cache_dir

    weights, = (cache_dir() / "models").glob(f"{embedding.NAME}-query-*/weights.bin")
    before = weights.stat()
    weights.write_bytes(bytes(reversed(weights.read_bytes())))
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    runs = [_cli(workspace, "memory", "rank", "Lisbon", "--mode", "hybrid", "--json")
            for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), runs[0].stderr
    assert [json.loads(run.stdout) for run in runs] == [json.loads(first.stdout)] * 2
    assert runs[0].stderr.count("saved embedding model") == 1 and "made again" in runs[0].stderr
    assert runs[1].stderr == ""


_IN_ONE_PROCESS = ("import sys\n"
                   "sys.argv = ['miniclaw', *sys.argv[1:]]\nfrom miniclaw.cli import main\nmain()")


def _imported(workspace, mode: str, one_process: bool = False) -> set[str]:
    """The modules a `memory rank` imports (`one_process`: started by `-c`, as before)."""
    program = ["-c", _IN_ONE_PROCESS] if one_process else ["-m", "miniclaw"]
    done = subprocess.run([sys.executable, "-X", "importtime", *program,
                           "--workspace", str(workspace), "memory", "rank", "Lisbon",
                           "--mode", mode], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, done.stderr
    return {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()
            if line.startswith("import time:")}


@pytest.mark.parametrize("mode", ["bm25", "keyword", "basic"])
def test_a_lexical_search_never_imports_the_numeric_libraries(workspace, mode):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    imported = _imported(workspace, mode)
    assert "miniclaw" in imported  # the import log is read as it should be
    assert not imported & {"numpy", "onnxruntime", "tokenizers", "onnx"}


@needs_model
def test_a_semantic_search_loads_the_model(workspace):
    """The first search embeds the memories and rewrites the query graph (onnx, once: it is
    saved); the next, its vectors all there, needs no onnx."""
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    assert {"numpy", "onnxruntime", "tokenizers", "onnx"} <= _imported(workspace, "hybrid",
                                                                        one_process=True)
    later = _imported(workspace, "hybrid", one_process=True)
    assert {"onnxruntime", "tokenizers"} <= later and "onnx" not in later


@needs_model
def test_memory_index_embeds_the_whole_workspace(workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    done = _cli(workspace, "memory", "index", "--json")
    assert done.returncode == 0, done.stderr
    vectors = json.loads(done.stdout)["vectors"]
    assert (vectors["embedded"], vectors["total"]) == (5, 5) and vectors["per_second"] > 0
    said = _cli(workspace, "memory", "index")  # nothing left to embed: no rate to tell
    assert said.stdout.splitlines()[-1] == "Vectors for meaning search: 5 of 5 texts."
    again = _cli(workspace, "memory", "rank", "did I go hiking?", "--mode", "hybrid", "--json")
    data = json.loads(again.stdout)
    assert data["results"][0]["content"] == FACTS[1] and data["warnings"] == []


@needs_model
async def test_embed_index_syncs_first(store):
    for day in ("seeds", "compost", "tomatoes"):
        await store.add_daily_note(f"Garden: planted {day}")
    assert await store.embed_index() == (3, 3)


def test_memory_index_without_the_model_indexes_as_before(workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    done = _cli(workspace, "memory", "index", "--json", patch_missing=True)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["entries_added"] == 5 and "vectors" not in data



def test_a_process_reads_vectors_stored_since_its_last_look(store, workspace):
    """The matrix of a long-lived process: all vectors at the first look, then only the
    texts embedded since (by it or by another process), and nothing when none were."""
    np = pytest.importorskip("numpy")
    from miniclaw.index.sync import content_hash

    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS[:3])))
    store.index.refresh()
    derived = DerivedData(store.index, embedding.NAME)
    rows = np.eye(3, embedding.DIM, dtype=np.float32)
    hashes = [content_hash(text) for text in FACTS[:3]]
    derived.put({hashes[0]: semantic._packed(rows[0])})
    table = semantic._Vectors()
    table.catch_up(store.index, embedding.NAME)
    assert table.hashes == [hashes[0]]
    derived.put({h: semantic._packed(row) for h, row in zip(hashes[1:], rows[1:])})
    table.catch_up(store.index, embedding.NAME)
    assert sorted(table.hashes) == sorted(hashes)
    for h, row in zip(hashes, rows):
        assert np.array_equal(table.matrix[table.rows[h]], row)
    matrix = table.matrix
    table.catch_up(store.index, embedding.NAME)
    assert table.matrix is matrix  # nothing new: nothing read


def test_a_look_that_found_no_usable_vector_reads_again_only_when_the_count_changes(
        store, workspace, monkeypatch):
    """A table with no row (every value damaged, or none stored yet) has still been looked
    at: the next look counts and returns, as for a table with rows, and reads the values
    again only once more were stored (review of 2026-11-28)."""
    np = pytest.importorskip("numpy")
    from miniclaw.index.sync import content_hash

    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS[:2])))
    store.index.refresh()
    derived = DerivedData(store.index, embedding.NAME)
    derived.put({content_hash(FACTS[0]): b"\x01\x02"})  # damaged: no row
    reads: list = []
    joined = DerivedData.joined
    monkeypatch.setattr(DerivedData, "joined",
                        lambda self, size: reads.append(size) or joined(self, size))
    table = semantic._Vectors()
    assert table.catch_up(store.index, embedding.NAME) == 1 and not table.hashes
    assert table.catch_up(store.index, embedding.NAME) == 1 and len(reads) == 1
    derived.put({content_hash(FACTS[1]): semantic._packed(np.eye(1, embedding.DIM)[0])})
    assert table.catch_up(store.index, embedding.NAME) == 2 and len(reads) == 2
    assert table.hashes == [content_hash(FACTS[1])]


def test_a_processs_first_look_holds_the_vectors_once(store, workspace):
    """The first look reads every vector (on L, 12 MB stored, 25 MB as the matrix): into
    one buffer, made the matrix in one step, not as one value per text and then their join,
    which held them twice (peak memory of a one-shot hybrid search). Counted by tracemalloc,
    so it does not depend on timing."""
    np = pytest.importorskip("numpy")
    import tracemalloc

    from miniclaw.index.sync import content_hash

    texts = [f"note {i} about topic {i * 7}" for i in range(2000)]
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", texts)))
    store.index.refresh()
    rows = np.stack([semantic._unpacked(semantic._packed(row)) for row in np.random.default_rng(
        3).standard_normal((len(texts), embedding.DIM))])
    DerivedData(store.index, embedding.NAME).put(
        {content_hash(t): semantic._packed(row) for t, row in zip(texts, rows)})
    table = semantic._Vectors()
    tracemalloc.start()
    try:
        table.catch_up(store.index, embedding.NAME)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert table.matrix.shape == rows.shape and not table.matrix.flags.writeable
    for text, row in zip(texts, rows):
        assert np.array_equal(table.matrix[table.rows[content_hash(text)]], row)
    # the stored buffer (half the matrix) and the matrix; held twice would be 2x
    assert peak < 1.65 * rows.nbytes, (peak, rows.nbytes)


def test_vectors_are_stored_in_half_the_bytes_and_an_older_indexs_float32_ones_converted(
        store, workspace):
    """A bfloat16 vector fits in a row of SQLite's page (a float32 one took an overflow page
    of its own): an index written by an older miniclaw, with float32 vectors, has them
    converted at a process's first read, as the same vectors rounded, and not embedded
    again; a value of neither size is damaged and left out."""
    np = pytest.importorskip("numpy")
    from miniclaw.index.sync import content_hash

    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS[:4])))
    store.index.refresh()
    derived = DerivedData(store.index, embedding.NAME)
    rows = np.random.default_rng(5).standard_normal((4, embedding.DIM)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    hashes = [content_hash(text) for text in FACTS[:4]]
    derived.put({hashes[0]: semantic._packed(rows[0]), hashes[1]: rows[1].tobytes(),
                 hashes[2]: rows[2].tobytes(), hashes[3]: b"\x01\x02"})
    table = semantic._Vectors()
    table.catch_up(store.index, embedding.NAME)
    assert sorted(table.hashes) == sorted(hashes[:3])
    for h, row in zip(hashes[:3], rows):
        assert table.matrix.dtype == np.float32
        assert np.array_equal(table.matrix[table.rows[h]],
                              semantic._unpacked(semantic._packed(row)))
        assert np.allclose(table.matrix[table.rows[h]], row, rtol=1 / 256, atol=0)
    stored = derived.get(hashes)
    assert {h: len(v) for h, v in stored.items()} == {
        hashes[0]: semantic.STORED_BYTES, hashes[1]: semantic.STORED_BYTES,
        hashes[2]: semantic.STORED_BYTES, hashes[3]: 2}
    again = semantic._Vectors()  # the next process reads them as stored now
    again.catch_up(store.index, embedding.NAME)
    assert np.array_equal(again.matrix[again.rows[hashes[1]]], table.matrix[table.rows[hashes[1]]])
    assert derived.progress() == (4, 4)  # nothing left to embed


def test_an_older_indexs_vectors_are_converted_when_new_texts_were_embedded_first(
        store, workspace):
    """Texts embedded by this process (`embed_missing`) before its first look start its
    table: the float32 vectors read after must be converted and stored too, not only in
    this process (review of 2026-11-27)."""
    np = pytest.importorskip("numpy")
    from miniclaw.index.sync import content_hash

    texts = ["apple pie recipe", "bread loaf notes", "cloud nine"]
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", texts[:2])))
    store.index.refresh()
    derived = DerivedData(store.index, embedding.NAME)
    old = np.full(embedding.DIM, embedding.DIM ** -0.5, dtype=np.float32)
    derived.put({content_hash(t): old.tobytes() for t in texts[:2]})  # an older index's
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", texts)))
    store.index.refresh()

    class Model:
        name = embedding.NAME

        def embed(self, batch):
            return np.full((len(batch), embedding.DIM), embedding.DIM ** -0.5, np.float32)

    table = semantic._Vectors()
    table.add({h: semantic._packed(Model().embed([t])[0]) for h, t in derived.missing()})
    table.catch_up(store.index, embedding.NAME)
    assert sorted(table.hashes) == sorted(content_hash(t) for t in texts)
    assert {len(v) for v in derived.get(table.hashes).values()} <= {semantic.STORED_BYTES}
    assert len(derived.get(table.hashes)) == 2  # the new text's is the model's to store
    for h in table.hashes:
        assert np.array_equal(table.matrix[table.rows[h]], semantic._unpacked(
            semantic._packed(old)))


def test_an_older_indexs_vectors_are_converted_for_the_search_when_it_cannot_be_written(
        store, workspace, monkeypatch):
    np = pytest.importorskip("numpy")
    from miniclaw.errors import SearchIndexError
    from miniclaw.index.sync import content_hash

    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS[:1])))
    store.index.refresh()
    row = np.full(embedding.DIM, embedding.DIM ** -0.5, dtype=np.float32)
    text_hash = content_hash(FACTS[0])
    DerivedData(store.index, embedding.NAME).put({text_hash: row.tobytes()})

    def read_only(self, values):
        raise SearchIndexError("attempt to write a readonly database")

    monkeypatch.setattr(DerivedData, "put", read_only)
    table = semantic._Vectors()
    table.catch_up(store.index, embedding.NAME)
    assert np.array_equal(table.matrix[table.rows[text_hash]],
                          semantic._unpacked(semantic._packed(row)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0, width=32), min_size=1, max_size=embedding.DIM))
def test_a_stored_vector_is_each_component_rounded_to_its_nearest_bfloat16(values):
    """Half the bytes, each component rounded to the nearest bfloat16 (7 bits after the
    point: within half a step of 2^(exponent - 7)), and storing a stored vector again
    changes nothing."""
    np = pytest.importorskip("numpy")
    vector = np.array(values, dtype=np.float32)
    stored = semantic._packed(vector)
    back = semantic._float32(stored)
    assert len(stored) == 2 * len(values) and back.dtype == np.float32
    _, exponent = np.frexp(vector)  # vector = mantissa * 2^exponent, 0.5 <= |mantissa| < 1
    exponent = np.maximum(exponent, -125)  # below 2^-126 (subnormal), the step stays 2^-133
    assert np.all(np.abs(back - vector) <= np.ldexp(1.0, exponent - 1 - 7) / 2)
    assert semantic._packed(back) == stored


def test_cosines_are_the_rows_products_with_the_query():
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((50, embedding.DIM)).astype(np.float32)
    query = rng.standard_normal(embedding.DIM).astype(np.float32)
    assert np.allclose(semantic._cosines(matrix, query), matrix @ query, atol=1e-4)
    assert semantic._cosines(matrix[:0], query).shape == (0,)


@needs_model
async def test_a_warm_hybrid_search_counts_the_vectors_once(store, workspace, monkeypatch):
    """Counting L's vectors costs ~1 ms: a search whose vectors are complete counts them
    once (`progress`, to know they are complete), and the matrix's catch-up reuses that
    count instead of counting again."""
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    await store.search("did I go hiking?", mode="hybrid")  # embeds all, reads the matrix
    calls: list[str] = []
    for name in ("progress", "count"):
        counted = getattr(DerivedData, name)
        monkeypatch.setattr(DerivedData, name, lambda self, *a, _f=counted, _n=name, **k: (
            calls.append(_n), _f(self, *a, **k))[1])
    found = await store.search("a walk in the hills", mode="hybrid")
    assert found.results and calls == ["progress"]


@needs_model
async def test_the_query_is_embedded_while_the_search_goes_on(store, workspace, monkeypatch):
    """prepare() hands the query's embedding (and the cosines) to a background thread and
    returns: BM25's retrieval runs meanwhile (onnxruntime runs without the GIL), and the
    vector retriever waits for it. The results are those of a search that waited first."""
    import threading

    from miniclaw.search.query import parse_query

    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    expected = await store.search("did I go hiking?", mode="hybrid", explain=True)
    store.index.refresh()
    release = threading.Event()
    embed = semantic._query_vector.__wrapped__

    def held(text, embedder=None):
        assert release.wait(60), "never released"
        return embed(text, embedder)

    monkeypatch.setattr(semantic, "_query_vector", held)
    retriever = semantic.VectorRetriever()
    assert retriever.prepare(store.index, parse_query("did I go hiking?")) == ()
    release.set()  # prepare returned while the query's vector was still being waited for
    assert retriever._query.shape == (embedding.DIM,)
    hashes, cosines = retriever._similar
    assert len(hashes) == len(cosines) == len(FACTS)
    again = await store.search("did I go hiking?", mode="hybrid", explain=True)
    assert again.results == expected.results


@pytest.mark.parametrize("text, asks", [
    ("What inspired you?", True),
    ("Mel: Wow, Caroline! What inspired you?", True),
    ("Cool! What causes are you working on? Tell me more?", True),
    ("  Did you go?\n", True),
    ("I painted it after a visit to the center. Do you like it?", False),
    ("Thanks, Melanie! I painted this after I visited a LGBTQ center.", False),
    # one sentence that tells and asks reads as asking (rare: 0.4% of LongMemEval's
    # evidence turns, 0.6% of LoCoMo's, are read as asking only)
    ("user: I adopted a dog named Max last week, what food should I buy?", True),
    ("user: I adopted a dog named Max last week. What food should I buy?", False),
    ("Is it? [shares a photo: a dog]", False),
    ("", False),
])
def test_a_text_that_only_asks(text, asks):
    assert semantic.asks_only(text) is asks


@needs_model
async def test_hybrid_does_not_count_the_cosine_of_a_turn_that_only_asks(store, workspace):
    # The question is close to the question asked (vector alone finds it), but it holds no
    # answer: in hybrid it keeps its BM25 share only; the answer keeps its cosine.
    write(workspace, "memory/2026-02-10.md", daily_note("2026-02-10", [
        "Mel: Wow, what inspired your painting for the art show?",
        "Caroline: I painted it after I visited the LGBTQ center, to capture unity."],
        ["10:00:00", "10:01:00"]))
    question = "What inspired Caroline's painting?"
    alone = {hit.content.split()[0]: hit.score
             for hit in (await store.search(question, mode="vector")).results}
    assert alone["Mel:"] > semantic.MIN_SIMILARITY
    fused = await store.search(question, mode="hybrid", explain=True)
    parts = {hit.content.split()[0]: dict(hit.explanation) for hit in fused.results}
    assert parts["Mel:"]["vector"] == 0.0 and parts["Mel:"]["bm25"] > 0
    assert parts["Caroline:"]["vector"] == pytest.approx(alone["Caroline:"])
    assert [hit.content.split()[0] for hit in fused.results] == ["Caroline:", "Mel:"]
