"""The embedder is the user's choice (issue 35): the bundled model, an OpenAI-compatible
`/v1/embeddings` server, or a sentence-transformers / fastembed model (semantic/embedders.py,
semantic/endpoint.py), configured in config.json or the environment.

The server is real (`embedding_server.py`, on 127.0.0.1): good, down, slow, answering the
wrong dimension, garbage, HTTP 500, too few vectors. The client's checks need no numpy (CI
installs `.[dev]` only); what ranks with the vectors does (`needs_numpy`), and skips,
saying why, without it. The libraries are faked only at their import (`sys.modules`).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import sys
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from miniclaw import config
from miniclaw.cli import app
from miniclaw.errors import ModelUnavailable, UsageError
from miniclaw.index.derived import DerivedData
from miniclaw.semantic import embedders
from miniclaw.semantic.endpoint import ServerEmbedder
from tests.conftest import long_term, write
from tests.semantic import needs_model
from tests.semantic.embedding_server import EmbeddingServer, closed_port_url, word_vector

needs_numpy = pytest.mark.skipif(importlib.util.find_spec("numpy") is None,
                                 reason="numpy not installed (pip install numpy)")
KEY = "sk-test-SECRET-0123456789"
FACTS = ["Booked flights to Lisbon for the conference",
         "The car needs new brake pads before winter",
         "Tea with Sam on Sunday",
         "Walked the Blue Ridge trail up to the summit with Dana",
         "Caroline started working at the adoption agency"]


@pytest.fixture
def server():
    running = EmbeddingServer(dim=64)
    yield running
    running.close()


@pytest.fixture
def home(tmp_path, monkeypatch):
    folder = tmp_path / "mchome"
    folder.mkdir()
    monkeypatch.setenv("MINICLAW_HOME", str(folder))
    for name in ("MINICLAW_EMBEDDER", "MINICLAW_EMBEDDER_MODEL", "MINICLAW_EMBEDDER_BASE_URL",
                 "MINICLAW_EMBEDDER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return folder


def configure(home, **embedder) -> None:
    (home / "config.json").write_text(json.dumps({"embedder": embedder}), encoding="utf-8")


def settings_for(url: str, **more) -> config.EmbedderSettings:
    return config.EmbedderSettings("openai", more.pop("model", "words"), url, KEY, **more)


def cli(workspace, *args):
    result = CliRunner().invoke(app, ["--workspace", str(workspace), *args],
                                env={"NO_COLOR": "1"})
    return result


# -- settings -------------------------------------------------------------------------------

def test_the_bundled_model_is_the_default(home):
    assert config.embedder_settings() == config.EmbedderSettings()
    assert embedders.current().identity == "all-MiniLM-L6-v2-int8"  # as before: vectors kept


def test_config_json_and_the_environment_choose_the_embedder(home, monkeypatch):
    configure(home, base_url="http://127.0.0.1:11434/v1", model="nomic-embed-text",
              api_key=KEY, timeout=5, batch_size=16)
    chosen = config.embedder_settings()
    assert chosen == config.EmbedderSettings("openai", "nomic-embed-text",
                                             "http://127.0.0.1:11434/v1", KEY, None, 16, 5.0)
    monkeypatch.setenv("MINICLAW_EMBEDDER_MODEL", "mxbai-embed-large")
    monkeypatch.setenv("MINICLAW_EMBEDDER_API_KEY", "sk-from-env")
    assert config.embedder_settings()[1:4] == ("mxbai-embed-large", "http://127.0.0.1:11434/v1",
                                               "sk-from-env")
    monkeypatch.setenv("MINICLAW_EMBEDDER", "fastembed")
    assert config.embedder_settings().kind == "fastembed"


@pytest.mark.parametrize("embedder, said", [
    ({"kind": "openai", "model": "m"}, "needs the server's URL"),
    ({"base_url": "http://127.0.0.1:1/v1"}, "needs a model name"),
    ({"kind": "word2vec", "model": "m"}, "unknown embedder kind 'word2vec'"),
    ({"base_url": "ftp://host/v1", "model": "m"}, "must start with http://"),
    ({"kind": "fastembed", "model": "m", "dimension": "384"}, "dimension"),
    ({"base_url": "http://h/v1", "model": "m", "api_key": KEY + " ü"}, "API key"),
    ({"base_url": "http://h/v1", "model": "m", "api_key": KEY + "\x07"}, "api_key"),
])
def test_a_bad_setting_is_one_clear_line_without_the_key(home, workspace, embedder, said):
    configure(home, **embedder)
    with pytest.raises(UsageError) as caught:
        config.embedder_settings()
    assert said in str(caught.value) and "SECRET" not in str(caught.value)
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    done = cli(workspace, "memory", "rank", "Lisbon", "--mode", "hybrid")
    assert done.exit_code == 2 and said in done.output and "SECRET" not in done.output
    assert "Traceback" not in done.output
    for query in ("Lisbon", "zebra"):  # a bm25 search does not depend on the embedder
        plain = cli(workspace, "memory", "rank", query)
        assert plain.exit_code == 0 and "Error" not in plain.output, plain.output
    report = json.loads(cli(workspace, "doctor", "--json").stdout)  # a finding, not a crash
    found = [f for f in report["findings"] if f["check"] == "embedder"]
    assert len(found) == 1 and said in found[0]["message"] and found[0]["severity"] == "error"
    assert "SECRET" not in json.dumps(report)


# -- the server's client (no numpy) ---------------------------------------------------------

def test_a_good_server_gives_a_vector_per_text_in_order_and_its_dimension(server):
    embedder = ServerEmbedder(settings_for(server.url))
    texts = ["Booked flights to Lisbon", "Tea with Sam", "brake pads"]
    assert embedder.fetch(texts) == [word_vector(t, 64) for t in texts]  # sent in reverse
    assert embedder.dim == 64 and embedder.identity == "openai:words:64"
    body, authorization = server.requests[0]
    assert body == {"model": "words", "input": texts} and authorization == f"Bearer {KEY}"


@pytest.mark.parametrize("behaviour, said", [
    ("wrong_dim", "answered vectors of 65 numbers, expected 64"),
    ("wrong_count", "answered 1 vectors for 2 texts"),
    ("garbage", "did not answer with embeddings"),
    ("not_embeddings", "did not answer with embeddings"),
    ("error", "answered HTTP 500"),
    ("slow", "did not answer within 0.5 s"),
    ("endless", "did not answer within 0.5 s"),
])
def test_a_server_that_fails_is_one_clear_reason_without_the_key(server, behaviour, said):
    embedder = ServerEmbedder(settings_for(server.url, timeout=0.5))
    embedder.fetch(["first"])  # its dimension is now known: 64
    server.behaviour = behaviour
    with pytest.raises(ModelUnavailable) as caught:
        embedder.fetch(["Lisbon flights", "brake pads"])
    message = str(caught.value)
    assert message.startswith(f"the embedding server {server.url} ") and said in message
    assert "SECRET" not in message and "\n" not in message


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.sampled_from(["data", "index", "embedding", "x"]),
                                       inner, max_size=4), max_leaves=20)


@pytest.fixture(scope="module")
def shared_server():
    running = EmbeddingServer(dim=4)
    yield running
    running.close()


@given(body=_JSON)
@settings(max_examples=40)
def test_any_answer_is_vectors_or_one_clear_reason(shared_server, body):
    """Whatever JSON a server answers, the client gives checked vectors or ModelUnavailable:
    never another exception (a traceback) and never a vector of the wrong shape."""
    shared_server.behaviour = json.dumps(body).encode()
    embedder = ServerEmbedder(settings_for(shared_server.url, timeout=5))
    try:
        vectors = embedder.fetch(["one", "two"])
    except ModelUnavailable as exc:
        assert str(exc).startswith(f"the embedding server {shared_server.url} ")
    else:
        assert len(vectors) == 2 and len({len(v) for v in vectors}) == 1
        assert all(isinstance(x, (int, float)) for v in vectors for x in v)


def test_a_server_that_timed_out_is_not_asked_again_for_a_while(server):
    """A long-lived process (chat, MCP) would wait the whole timeout at every search."""
    embedder = ServerEmbedder(settings_for(server.url, timeout=0.3))
    server.behaviour = "slow"
    with pytest.raises(ModelUnavailable, match="did not answer within 0.3 s$"):
        embedder.fetch(["one"])
    asked = len(server.requests)
    with pytest.raises(ModelUnavailable, match=r"within 0.3 s \(asked again within a minute\)"):
        embedder.fetch(["two"])
    assert len(server.requests) == asked  # not asked
    embedder._quiet_until = 0.0  # a minute later
    server.behaviour = "good"
    assert len(embedder.fetch(["three"])) == 1


def test_a_server_that_is_down_is_said_so():
    url = closed_port_url()
    with pytest.raises(ModelUnavailable, match="is not reachable .connection refused."):
        ServerEmbedder(settings_for(url)).fetch(["x"])


def test_a_dimension_set_is_checked_from_the_first_answer(server):
    embedder = ServerEmbedder(settings_for(server.url, dimension=768))
    assert embedder.identity == "openai:words:768"  # known without asking
    with pytest.raises(ModelUnavailable, match="of 64 numbers, expected 768 .the dimension set"):
        embedder.fetch(["x"])


def test_a_password_in_the_url_is_never_said():
    embedder = ServerEmbedder(settings_for(closed_port_url().replace("//", "//me:pw@")))
    with pytest.raises(ModelUnavailable) as caught:
        embedder.fetch(["x"])
    assert "pw" not in str(caught.value) and "me:" not in str(caught.value)


# -- libraries: only when installed ---------------------------------------------------------

def test_a_library_not_installed_is_one_line_saying_what_to_install(home, workspace, monkeypatch):
    monkeypatch.setitem(embedders.LIBRARIES, "fastembed", ("no_such_fastembed_xyz", "fastembed"))
    configure(home, kind="fastembed", model="BAAI/bge-small-en-v1.5")
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    done = cli(workspace, "memory", "rank", "Lisbon", "--mode", "hybrid")
    assert done.exit_code == 0 and "Booked flights to Lisbon" in done.output
    warning = [line for line in done.output.splitlines() if "\u26a0" in line]
    assert len(warning) == 1 and warning[0].startswith("[bm25] \u26a0 the fastembed embedder "
                                                       "needs ")
    assert "pip install" in warning[0] and "fastembed for hybrid)" in warning[0]
    data = json.loads(cli(workspace, "memory", "rank", "Lisbon", "--mode", "hybrid",
                          "--json").stdout)
    assert data["mode"] == "bm25" and data["degraded"]["requested"] == "hybrid"
    assert "fastembed" in data["degraded"]["install"]


class FakeSentenceTransformer:
    """sentence-transformers' model class, at the import boundary: word vectors of 32."""

    loaded: list[str] = []

    def __init__(self, name: str) -> None:
        self.loaded.append(name)

    def get_sentence_embedding_dimension(self) -> int:
        return 32

    def encode(self, texts, batch_size=32, convert_to_numpy=True):
        import numpy as np

        return np.asarray([word_vector(text, 32) for text in texts], dtype=np.float32) * 3


@pytest.fixture
def sentence_transformers(monkeypatch):
    module = types.ModuleType("sentence_transformers")
    module.__spec__ = importlib.machinery.ModuleSpec("sentence_transformers", None)
    module.SentenceTransformer = FakeSentenceTransformer
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    monkeypatch.setattr(FakeSentenceTransformer, "loaded", [])
    return module


@needs_numpy
async def test_a_sentence_transformers_model_by_name_embeds_memories(home, workspace, store,
                                                                     sentence_transformers):
    configure(home, kind="sentence-transformers", model="all-mpnet-base-v2")
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    assert await store.embed_index() == (5, 5)
    assert FakeSentenceTransformer.loaded == ["all-mpnet-base-v2"]
    kind = "sentence-transformers:all-mpnet-base-v2:32"
    assert DerivedData(store.index, kind).progress() == (5, 5)
    found = await store.search(FACTS[0].lower(), mode="vector")
    assert found.degraded is None and found.results[0].content == FACTS[0]
    assert found.results[0].score == pytest.approx(1.0, abs=0.01)  # unit rows: the cosine


# -- end to end: config -> index -> search, with the real server ----------------------------

@needs_numpy
def test_a_server_embeds_the_index_and_hybrid_search_ranks_with_it(home, workspace, server):
    configure(home, base_url=server.url, model="words", api_key=KEY, batch_size=2)
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    done = cli(workspace, "memory", "index", "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["vectors"]["embedded"] == 5
    sent = [len(body["input"]) for body, _ in server.requests]
    assert sent[0] == 1 and sent[1:] == [2, 2, 1]  # the dimension asked, then batches of 2
    found = json.loads(cli(workspace, "memory", "rank", "Lisbon flights booked", "--mode",
                           "hybrid", "--json", "--explain").stdout)
    assert found["mode"] == "hybrid" and "degraded" not in found and found["warnings"] == []
    top = found["results"][0]
    assert top["content"] == FACTS[0] and set(top["explain"]) == {"bm25", "vector"}
    text = cli(workspace, "memory", "rank", "brake pads", "--mode", "vector")
    assert text.exit_code == 0 and FACTS[1] in text.output and "\u26a0" not in text.output
    assert all(auth == f"Bearer {KEY}" for _, auth in server.requests)


@needs_numpy
async def test_changing_the_model_embeds_again_and_never_mixes_vectors(home, workspace, store,
                                                                      server):
    configure(home, base_url=server.url, model="words-a")
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    assert await store.embed_index() == (5, 5)
    before = await store.search("Blue Ridge trail summit", mode="vector")
    assert before.results[0].content == FACTS[3]
    configure(home, base_url=server.url, model="words-b")  # another model, another length
    server.dim = 24
    progress: list[tuple[int, int]] = []
    assert await store.embed_index(progress=lambda d, t: progress.append((d, t))) == (5, 5)
    assert progress[0] == (0, 5) and progress[-1] == (5, 5)  # every text again, with a bar
    assert DerivedData(store.index, "openai:words-a:64").progress() == (5, 5)  # kept apart
    assert DerivedData(store.index, "openai:words-b:24").progress() == (5, 5)
    after = await store.search("Blue Ridge trail summit walked", mode="vector")
    assert after.degraded is None and after.results[0].content == FACTS[3]
    assert all(len(body["input"][0]) and body["model"] == "words-b"
               for body, _ in server.requests[-2:])


@needs_numpy
async def test_a_new_model_is_used_at_once_embedding_as_the_search_goes(home, workspace, store,
                                                                       server):
    """A search after a change of model never ranks with the old model's vectors: it embeds
    up to EMBED_PER_SEARCH texts by the new one and says how far along they are."""
    configure(home, base_url=server.url, model="words-a")
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    assert await store.embed_index() == (5, 5)
    configure(home, base_url=server.url, model="words-c")
    from miniclaw.semantic import retriever

    retriever_embeds = retriever.VectorRetriever(embed_per_search=2)
    from miniclaw.search.query import parse_query

    store.index.refresh()
    said = retriever_embeds.prepare(store.index, parse_query("tea with Sam"))
    assert [w.params for w in said] == [{"embedded": 2, "total": 5}]
    assert retriever_embeds._kind == "openai:words-c:64"
    assert len(retriever_embeds._similar[0]) == 2  # only the new model's two vectors


@needs_numpy
@pytest.mark.parametrize("behaviour", ["down", "slow", "wrong_dim", "garbage", "error",
                                       "wrong_count"])
def test_a_failing_server_falls_back_to_bm25_saying_so_once(home, workspace, server, behaviour,
                                                          monkeypatch):
    configure(home, base_url=server.url, model="words", api_key=KEY, timeout=0.5)
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    assert cli(workspace, "memory", "index").exit_code == 0  # all embedded while it was good
    expected = json.loads(cli(workspace, "memory", "rank", "Lisbon conference", "--json").stdout)
    if behaviour == "down":
        server.close()
    else:
        server.behaviour = behaviour
    for query in (f"Lisbon conference {behaviour}",):  # a query not embedded yet
        as_json = cli(workspace, "memory", "rank", query, "--mode", "hybrid", "--json")
        assert as_json.exit_code == 0 and "Traceback" not in as_json.output
        data = json.loads(as_json.stdout)
        assert data["mode"] == "bm25" and data["degraded"]["requested"] == "hybrid"
        assert data["degraded"]["reason"].startswith(f"the embedding server {server.url} ")
        assert data["results"][0]["content"] == expected["results"][0]["content"]
        text = cli(workspace, "memory", "rank", query + " again", "--mode", "hybrid")
        warning = [line for line in text.output.splitlines() if "\u26a0" in line]
        assert len(warning) == 1 and warning[0].endswith(": searched by bm25"), text.output
        assert FACTS[0] in text.output
        assert "SECRET" not in as_json.output + text.output
    # nothing lost: the vectors stored are there when the server is good again
    with_index = cli(workspace, "memory", "index", "--json")
    assert with_index.exit_code == 0 and "SECRET" not in with_index.output


@needs_numpy
def test_memory_index_with_the_server_down_indexes_and_warns_once(home, workspace):
    configure(home, base_url=closed_port_url(), model="words", api_key=KEY)
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    done = cli(workspace, "memory", "index")
    assert done.exit_code == 0 and "Traceback" not in done.output
    assert "Indexed 1 file: 5 entries added" in done.output
    said = [line for line in done.output.splitlines() if "vectors not computed" in line]
    assert len(said) == 1 and "is not reachable (connection refused)" in said[0]
    assert "SECRET" not in done.output


@needs_numpy
def test_doctor_says_which_model_embeds_and_how_many_entries_lack_a_vector(home, workspace,
                                                                            server):
    configure(home, base_url=server.url, model="words", api_key=KEY)
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    assert cli(workspace, "memory", "rank", "Lisbon").exit_code == 0  # indexed, no vectors
    report = json.loads(cli(workspace, "doctor", "--json").stdout)
    line = [c for c in report["checked"] if c.startswith("embedder:")]
    assert line == [f"embedder: words at {server.url}, 64 numbers a vector; 5 entries without "
                    "a vector (`miniclaw memory index` computes them)"]
    cli(workspace, "memory", "index")
    configure(home, base_url=server.url, model="words-2", api_key=KEY)
    cli(workspace, "memory", "index")
    report = json.loads(cli(workspace, "doctor", "--json").stdout)
    assert [c for c in report["checked"] if c.startswith("embedder:")] == [
        f"embedder: words-2 at {server.url}, 64 numbers a vector; 0 entries without a vector; "
        "vectors of 1 other model kept, unused"]
    server.close()
    report = json.loads(cli(workspace, "doctor", "--json").stdout)
    found = [f for f in report["findings"] if f["check"] == "embedder"]
    assert len(found) == 1 and found[0]["severity"] == "error"
    assert "not reachable" in found[0]["message"] and "SECRET" not in json.dumps(report)


@needs_model
@needs_numpy
def test_the_bundled_model_behind_a_local_server_finds_by_meaning(home, workspace, server):
    server.behaviour = "bundled"
    configure(home, base_url=server.url, model="minilm")
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    assert cli(workspace, "memory", "index").exit_code == 0
    found = json.loads(cli(workspace, "memory", "rank", "did I go hiking?", "--mode", "hybrid",
                           "--json").stdout)
    assert found["mode"] == "hybrid" and found["results"][0]["content"] == FACTS[3]


@needs_numpy
def test_one_shot_processes_learn_the_dimension_and_fall_back_when_it_changes(home, workspace,
                                                                             server):
    """Real `python -m miniclaw` processes (each learns the server's dimension afresh): a
    server whose vectors change length is another model (its own vectors, computed again);
    with `dimension` set it is an error, and the search runs bm25 and says so."""
    import os
    import subprocess

    def miniclaw(*args):
        done = subprocess.run([sys.executable, "-m", "miniclaw", "--workspace", str(workspace),
                               *args], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "NO_COLOR": "1"})
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        return done

    configure(home, base_url=server.url, model="words", api_key=KEY)
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    assert "5 of 5 texts" in miniclaw("memory", "index").stdout
    found = json.loads(miniclaw("memory", "rank", "Lisbon", "--mode", "hybrid", "--json").stdout)
    assert found["mode"] == "hybrid" and found["results"][0]["content"] == FACTS[0]
    server.behaviour = "wrong_dim"  # 65 numbers now: another model to this index
    found = json.loads(miniclaw("memory", "rank", "tea", "--mode", "vector", "--json").stdout)
    assert found["mode"] == "vector" and found["results"][0]["content"] == FACTS[2]
    configure(home, base_url=server.url, model="words", api_key=KEY, dimension=64)
    text = miniclaw("memory", "rank", "Lisbon", "--mode", "hybrid")
    assert text.stdout.count("\u26a0") == 1 and FACTS[0] in text.stdout
    assert "answered vectors of 65 numbers, expected 64 (the dimension set): searched by bm25" \
        in text.stdout
    server.close()
    down = miniclaw("memory", "rank", "Lisbon", "--mode", "auto", "--json")
    data = json.loads(down.stdout)
    assert data["mode"] == "bm25" and "is not reachable" in data["degraded"]["reason"]
    assert "SECRET" not in down.stdout + down.stderr + text.stdout + text.stderr


class FakeTextEmbedding:
    """fastembed's model class, at the import boundary: a generator of arrays, 16 numbers."""

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name

    def embed(self, texts, batch_size=256):
        import numpy as np

        for text in texts:
            yield np.asarray(word_vector(text, 16), dtype=np.float32)


@needs_numpy
async def test_a_fastembed_model_by_name_embeds_and_a_failing_one_falls_back(
        home, workspace, store, monkeypatch):
    module = types.ModuleType("fastembed")
    module.__spec__ = importlib.machinery.ModuleSpec("fastembed", None)
    module.TextEmbedding = FakeTextEmbedding
    monkeypatch.setitem(sys.modules, "fastembed", module)
    configure(home, kind="fastembed", model="BAAI/bge-small-en-v1.5")
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    assert await store.embed_index() == (5, 5)
    assert DerivedData(store.index, "fastembed:BAAI/bge-small-en-v1.5:16").progress() == (5, 5)
    found = await store.search("brake pads car winter", mode="hybrid")
    assert found.mode == "hybrid" and found.results[0].content == FACTS[1]

    def broken(self, texts, batch_size=256):
        raise RuntimeError("ONNXRuntimeError: the model file is damaged\nat line 3")

    monkeypatch.setattr(FakeTextEmbedding, "embed", broken)
    configure(home, kind="fastembed", model="BAAI/bge-base-en-v1.5", dimension=16)
    found = await store.search("brake pads", mode="hybrid")
    assert found.mode == "bm25" and found.results[0].content == FACTS[1]
    assert found.degraded.params["reason"] == (
        "the embedding model BAAI/bge-base-en-v1.5 (fastembed) did not load (at line 3)")


@needs_model
def test_doctor_names_the_bundled_model_when_it_is_the_embedder(home, workspace):
    write(workspace, "memory/MEMORY.md", long_term(("2026-02-10", FACTS)))
    assert cli(workspace, "memory", "rank", "Lisbon").exit_code == 0  # indexed, no vectors
    report = json.loads(cli(workspace, "doctor", "--json").stdout)
    assert [c for c in report["checked"] if c.startswith("embedder:")] == [
        "embedder: bundled all-MiniLM-L6-v2-int8 (offline), 384 numbers a vector; 5 entries "
        "without a vector (`miniclaw memory index` computes them)"]
