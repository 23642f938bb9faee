"""Every place an ONNX model can name external data, checked before anything else looks at it.

A TensorProto may keep its bytes in another file (``data_location = EXTERNAL``) wherever one
appears: initializers, the values and indices of sparse initializers, tensor and sparse-tensor
attributes (Constant's ``value``, ``sparse_value``, lists of either), the same inside If/Loop/
Scan bodies, in model-local functions (their nodes and their attributes' default values) and in
training_info graphs. xocview reads only some of them itself, but onnx's checker looks at the
files of all of them and onnxruntime reads them, so every location is checked here, when the
model is read, by ``safe_paths.path_inside``: a path that leaves the model's folder refuses
the model whatever refers to it.

``CONTAINERS`` lists each protobuf field walked to find them; a test compares it with what
onnx's descriptors say can hold a tensor, so a field added by a newer onnx is noticed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import onnx

from xocview.errors import shorten
from xocview.formats.onnx.weights import external_info, external_numbers, weight_place
from xocview.formats.safe_paths import path_inside

__all__ = ["CONTAINERS", "check_locations", "model_tensors"]

# (message, field) pairs whose values hold a TensorProto or SparseTensorProto, at any depth.
CONTAINERS = frozenset(
    {
        ("ModelProto", "graph"),
        ("ModelProto", "functions"),
        ("ModelProto", "training_info"),
        ("TrainingInfoProto", "initialization"),
        ("TrainingInfoProto", "algorithm"),
        ("FunctionProto", "node"),
        ("FunctionProto", "attribute_proto"),
        ("GraphProto", "initializer"),
        ("GraphProto", "sparse_initializer"),
        ("GraphProto", "node"),
        ("NodeProto", "attribute"),
        ("AttributeProto", "t"),
        ("AttributeProto", "tensors"),
        ("AttributeProto", "sparse_tensor"),
        ("AttributeProto", "sparse_tensors"),
        ("AttributeProto", "g"),
        ("AttributeProto", "graphs"),
        ("SparseTensorProto", "values"),
        ("SparseTensorProto", "indices"),
    }
)

_Graphs = list[tuple[str, onnx.GraphProto]]


def check_locations(
    model: onnx.ModelProto, folder: Path, file: str, raw: bytes | None = None
) -> None:
    """Raise FormatError at the tensor's place for the first external tensor whose location
    is not a path inside ``folder`` or whose offset or length is not a byte count.

    ``raw``, the serialized model, lets a model without external data skip the walk: a
    location is a ``location`` key, and a protobuf string is stored as its bytes.
    """
    if raw is not None and b"location" not in raw:
        return
    for place, tensor in model_tensors(model):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        info = external_info(tensor) or {}
        path_inside(info.get("location", ""), folder, file, f"{place} external_data 'location'")
        external_numbers(info, file, place)


def model_tensors(model: onnx.ModelProto) -> Iterator[tuple[str, onnx.TensorProto]]:
    """Every TensorProto of the model, with its place in messages (``initializer 'W'``,
    ``node 'c' attribute 'value'``, ``function 'f' node 'n' ...``), graphs walked without
    recursion (a file can nest bodies deeply)."""
    graphs: _Graphs = [("", model.graph)]
    for k, info in enumerate(model.training_info):
        where = f"training_info[{k}] "
        graphs += [(where + "initialization ", info.initialization)]
        graphs += [(where + "algorithm ", info.algorithm)]
    for fn in model.functions:
        where = f"function '{shorten(fn.name)}' "
        for attr in fn.attribute_proto:
            yield from _attribute(attr, f"{where}attribute '{shorten(attr.name)}'", graphs)
        yield from _nodes(fn.node, where, graphs)
    while graphs:
        prefix, g = graphs.pop()
        for init in g.initializer:
            yield prefix + weight_place(shorten(init.name)), init
        for sp in g.sparse_initializer:
            yield from _sparse(sp, prefix + weight_place(shorten(sp.values.name)))
        yield from _nodes(g.node, prefix, graphs)


def _nodes(
    nodes: Iterator[onnx.NodeProto] | list[onnx.NodeProto], prefix: str, graphs: _Graphs
) -> Iterator[tuple[str, onnx.TensorProto]]:
    """The tensors of the nodes' attributes; their bodies are added to ``graphs``."""
    for k, node in enumerate(nodes):
        for attr in node.attribute:
            if _holds(attr):
                label = f"node '{shorten(node.name)}'" if node.name else f"node[{k}]"
                where = f"{prefix}{label} ({node.op_type}) attribute '{shorten(attr.name)}'"
                yield from _attribute(attr, where, graphs)


def _holds(attr: onnx.AttributeProto) -> bool:
    """Whether any tensor or graph field is set, whatever ``type`` says (a hostile file may
    set a field its type does not name, and some readers look at the field)."""
    return bool(
        attr.HasField("t")
        or attr.HasField("g")
        or attr.HasField("sparse_tensor")
        or attr.tensors
        or attr.graphs
        or attr.sparse_tensors
    )


def _attribute(
    attr: onnx.AttributeProto, place: str, graphs: _Graphs
) -> Iterator[tuple[str, onnx.TensorProto]]:
    """The tensors of one attribute, every field looked at; its graphs go to ``graphs``."""
    if attr.HasField("t"):
        yield place, attr.t
    yield from ((f"{place}[{k}]", x) for k, x in enumerate(attr.tensors))
    if attr.HasField("sparse_tensor"):
        yield from _sparse(attr.sparse_tensor, place)
    for k, sp in enumerate(attr.sparse_tensors):
        yield from _sparse(sp, f"{place}[{k}]")
    if attr.HasField("g"):
        graphs.append((place + " ", attr.g))
    graphs.extend((f"{place}[{k}] ", g) for k, g in enumerate(attr.graphs))


def _sparse(sp: onnx.SparseTensorProto, place: str) -> Iterator[tuple[str, onnx.TensorProto]]:
    yield f"{place} values", sp.values
    yield f"{place} indices", sp.indices
