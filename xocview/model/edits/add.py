"""Adding a node: inputs checked against the ONNX schema, an output tensor with inferred type.

The output's dtype and shape come from ONNX shape inference run on a one-node model built from
the new node and its inputs' types (small weights with values go in as initializers, so that
Reshape and the like can infer). When ONNX does not know the op or inference gives nothing, the
output takes the first input's dtype and an unknown rank (``shape`` [] with ``rank_unknown``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from xocview.errors import EditError
from xocview.model.dtypes import DTYPES
from xocview.model.edits.attrs import EXTRA_ATTRIBUTES_KEY, attribute_type, check_attribute_value
from xocview.model.edits.lookup import check_new_id, tensor_pos, unique_id
from xocview.model.edits.steps import Edit, InsertNode, InsertTensor
from xocview.model.graph import Node, Tensor

if TYPE_CHECKING:
    from xocview.model.graph import Graph

__all__ = ["add_node", "infer_output"]

MAX_INITIALIZER = 1024  # weights up to this many values feed inference with their values


def _schema(op_type: str) -> Any:
    """The newest ONNX schema of ``op_type`` in the default domain, or None."""
    import onnx.defs

    try:
        return onnx.defs.get_schema(op_type)
    except onnx.defs.SchemaError:
        return None


def _check_arity(op_type: str, n: int) -> None:
    schema = _schema(op_type)
    if schema is None:
        return
    lo, hi = schema.min_input, schema.max_input
    if lo <= n <= hi:
        return
    wanted = f"at least {lo}" if hi >= 2**31 - 1 else (f"{lo}" if lo == hi else f"{lo} to {hi}")
    raise EditError(f"ONNX {op_type} takes {wanted} inputs, not {n}; give {wanted} tensor ids")


def _split_attributes(
    op_type: str, attributes: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Checked attributes: those the schema defines, and the rest (for metadata)."""
    known: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for name, value in attributes.items():
        if not isinstance(name, str) or not name:
            raise EditError(f"attribute name {name!r} is empty; give a name")
        checked = check_attribute_value(op_type, name, value)
        (known if attribute_type(op_type, name) is not None else extra)[name] = checked
    return known, extra


def add_node(
    graph: Graph,
    op_type: str,
    inputs: Sequence[str],
    *,
    node_id: str | None = None,
    output_id: str | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> Edit:
    """Append a node of ``op_type`` reading the tensors ``inputs`` and writing a new tensor.

    Ids not given are made unique from the op type (``Relu``, ``Relu_2``; ``Relu_out``).
    Raises EditError for an empty op type, an unknown input, an input count outside the ONNX
    schema's range, a bad attribute value, or a taken id.
    """
    if not isinstance(op_type, str) or not op_type.strip():
        raise EditError(f"op type {op_type!r} is empty; give an operator name such as 'Relu'")
    if isinstance(inputs, str):
        raise EditError(f"inputs {inputs!r} is one string; give a list of tensor ids")
    ins = [tensor_pos(graph, t) for t in inputs]
    _check_arity(op_type, len(ins))
    known, extra = _split_attributes(op_type, attributes or {})
    nid = unique_id(graph, "node", op_type) if node_id is None else node_id
    check_new_id(graph, "node", nid)
    oid = unique_id(graph, "tensor", f"{nid}_out") if output_id is None else output_id
    check_new_id(graph, "tensor", oid)
    dtype, shape, meta = infer_output(graph, op_type, ins, known)
    out = Tensor(oid, "activation", shape, dtype, meta)
    node = Node(nid, op_type, ins, [len(graph.tensors)], known, {})
    if extra:
        node.metadata[EXTRA_ATTRIBUTES_KEY] = extra
    steps = (InsertTensor(len(graph.tensors), out), InsertNode(len(graph.nodes), node))
    edit = Edit(f"add {op_type} node '{nid}'", steps)
    edit.apply(graph)
    return edit


def infer_output(
    graph: Graph, op_type: str, inputs: Sequence[int], attributes: Mapping[str, Any]
) -> tuple[str, list[int], dict[str, Any]]:
    """dtype, shape and metadata of the single output of a would-be node (see the module doc).

    Never raises: inference is a best effort and any failure gives the unknown-rank answer.
    """
    fallback = graph.tensors[inputs[0]].dtype if inputs else "undefined"
    try:
        found = _onnx_infer(graph, op_type, inputs, attributes)
    except Exception:  # ONNX refuses the op, the types or the attributes: nothing inferred
        found = None
    if found is None:
        return fallback, [], {"rank_unknown": True}
    dtype, shape = found
    if dtype == "undefined":
        dtype = fallback
    if shape is None:
        return dtype, [], {"rank_unknown": True}
    return dtype, shape, {}


def _onnx_infer(
    graph: Graph, op_type: str, inputs: Sequence[int], attributes: Mapping[str, Any]
) -> tuple[str, list[int] | None] | None:
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper, shape_inference

    if _schema(op_type) is None:
        return None
    names = [f"in{k}" for k in range(len(inputs))]
    value_infos, inits = [], []
    for name, t in zip(names, inputs, strict=True):
        ten = graph.tensors[t]
        code = DTYPES[ten.dtype].onnx_code if ten.dtype in DTYPES else 0
        unknown = bool(ten.metadata.get("rank_unknown"))
        dims = None if unknown else [d if d >= 0 else None for d in ten.shape]
        value_infos.append(helper.make_tensor_value_info(name, code, dims))
        size = int(np.prod(ten.shape)) if not unknown and min(ten.shape, default=0) >= 0 else -1
        if ten.kind == "weight" and ten.has_data and 0 <= size <= MAX_INITIALIZER:
            data = ten.data
            if data is not None:
                inits.append(numpy_helper.from_array(np.asarray(data), name))
    node = helper.make_node(op_type, names, ["out"], **dict(attributes))
    g = helper.make_graph([node], "infer", value_infos, [], initializer=inits)
    opset = helper.make_opsetid("", onnx.defs.onnx_opset_version())
    model = helper.make_model(g, opset_imports=[opset])
    inferred = shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    for vi in inferred.graph.value_info:
        if vi.name == "out" and vi.type.HasField("tensor_type"):
            tt = vi.type.tensor_type
            by_code = {d.onnx_code: d.name for d in DTYPES.values()}
            dtype = by_code.get(tt.elem_type, "undefined")
            if not tt.HasField("shape"):
                return dtype, None
            shape = [int(d.dim_value) if d.HasField("dim_value") else -1 for d in tt.shape.dim]
            return dtype, shape
    return None
