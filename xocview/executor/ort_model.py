"""The .onnx file as onnxruntime is given it: every node named by the id our ONNX reader gave it.

Then the kernel names in onnxruntime's profile are our node ids or, after a fusion, point at
one (see ``ort_profile``). The reader names an unnamed node ``<op>_<k>``, makes repeated names
unique and turns a local function's call into a group over its body; here the functions are
inlined (as onnxruntime would inline them) and the nodes renamed in the reader's order, after
checking that the graph still has the file's nodes. External data stays in its files.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import onnx
from onnx.external_data_helper import load_external_data_for_tensor, uses_external_data

from xocview.errors import RunError
from xocview.executor.failures import exception_free
from xocview.model import Graph, Node

__all__ = ["model_nodes", "named_model"]

# External tensors up to this size are read into the model: onnxruntime cannot infer shapes
# from a shape tensor it was given only as a path (a ConstantOfShape's), and these are small.
_INLINE_BYTES = 1 << 16


def named_model(graph: Graph, model_path: str | Path) -> tuple[bytes, Path | None]:
    """The serialized model of ``model_path`` with local functions inlined and every node
    named by the id ``graph`` gives it, and the folder of its external data (None without).

    External tensors stay in their files (small ones are read in); their paths must stay
    inside the model's folder. Raises RunError for a file that cannot be read or whose nodes
    are no longer those of the graph (edited since it was read).
    """
    path = Path(model_path)
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as e:  # protobuf's DecodeError, OSError...
        raise RunError(f"{path}: cannot read the ONNX model ({exception_free(str(e))})") from e
    if model.functions:
        model = _inlined(model, path)
    _rename(model, graph, path)
    folder = _external_data(model, path.resolve().parent)
    try:
        return model.SerializeToString(), folder
    except ValueError as e:  # over protobuf's 2 GB
        raise RunError(f"{path}: the model is too big to hand to onnxruntime ({e})") from e


def _inlined(model: onnx.ModelProto, path: Path) -> onnx.ModelProto:
    """The model with its local functions' bodies in place of their calls, as onnxruntime
    would run them, but named by us."""
    try:
        import onnx.inliner
    except ImportError as e:  # onnx < 1.16
        raise RunError(f"{path}: inlining its functions needs onnx >= 1.16 ({e})") from e
    try:
        return onnx.inliner.inline_local_functions(model)
    except Exception as e:  # the inliner's own errors are plain RuntimeErrors
        raise RunError(f"{path}: cannot inline its functions ({e})") from e


def _proto_nodes(g: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    """A graph's nodes, each followed by its bodies' (in attribute order): the order in which
    the ONNX reader adds nodes."""
    for node in g.node:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _proto_nodes(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    yield from _proto_nodes(sub)


def model_nodes(graph: Graph) -> list[Node]:
    """The graph's nodes that stand for a NodeProto of the inlined model, in reading order:
    not the derived scope and section groups, nor the groups of function calls."""
    return [
        nd
        for nd in graph.nodes
        if "derived" not in nd.metadata
        and not ("function" in nd.metadata and "children_ids" in nd.metadata)
    ]


def _rename(model: onnx.ModelProto, graph: Graph, path: Path) -> None:
    """Name each NodeProto after its node of the graph, checking that they are the same."""
    protos = list(_proto_nodes(model.graph))
    ours = model_nodes(graph)
    for k, (proto, node) in enumerate(zip(protos, ours, strict=False)):
        if proto.op_type != node.op_type:
            raise _edited(
                path, f"node {node.id!r} is a {node.op_type}, the file's node {k} a {proto.op_type}"
            )
    if len(protos) != len(ours):
        raise _edited(path, f"the graph has {len(ours)} operator nodes, the file {len(protos)}")
    for proto, node in zip(protos, ours, strict=True):
        proto.name = node.id


def _edited(path: Path, problem: str) -> RunError:
    return RunError(
        f"{path}: {problem}; onnxruntime runs the file as it is on disk, so the graph must be "
        "the one read from it (reload it, or run the edited graph on the xocview engine)"
    )


def _tensors(g: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    """Every tensor of a graph and its bodies: initializers and tensor attributes."""
    yield from g.initializer
    for node in g.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                yield attr.t
            elif attr.type == onnx.AttributeProto.TENSORS:
                yield from attr.tensors
            elif attr.type == onnx.AttributeProto.GRAPH:
                yield from _tensors(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    yield from _tensors(sub)


def _external_data(model: onnx.ModelProto, folder: Path) -> Path | None:
    """Check the external tensors' paths and read the small ones in; the folder onnxruntime
    must read the others from (None when none is left)."""
    left = False
    for tensor in _tensors(model.graph):
        if not uses_external_data(tensor):
            continue
        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        target = (folder / location).resolve()
        if not location or Path(location).is_absolute() or not target.is_relative_to(folder):
            raise RunError(
                f"{folder}: tensor {tensor.name!r}: external data path {location!r} leaves the "
                "model's folder; expected a path inside it"
            )
        if _size(tensor, info) <= _INLINE_BYTES:
            try:
                load_external_data_for_tensor(tensor, str(folder))
            except (OSError, ValueError) as e:
                raise RunError(f"{target}: cannot read tensor {tensor.name!r} ({e})") from e
            tensor.data_location = onnx.TensorProto.DEFAULT
            del tensor.external_data[:]
        else:
            left = True
    return folder if left else None


def _size(tensor: onnx.TensorProto, info: Mapping[str, str]) -> int:
    if info.get("length", "").isdigit():
        return int(info["length"])
    itemsize = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    return int(np.prod(tensor.dims, dtype=np.int64)) * itemsize
