"""The pass that writes a built TensorFlow graph's ops as ONNX ops (``lower_graph``): each op
the table (``ops.TF_ONNX``) maps is replaced where it stands, in its scope or function call.
"""

from __future__ import annotations

from collections.abc import Callable

from xocview.formats.onnx_emit import NotMapped, placed
from xocview.formats.tensorflow.lower import TfEmit
from xocview.formats.tensorflow.ops import TF_ONNX
from xocview.model import Graph, Node, Tensor
from xocview.model.edits.reinfer import infer_undeclared

__all__ = ["lower_graph"]

_DOMAIN = "tensorflow"
_COPIES = frozenset({"Identity", "ReadVariableOp", "StopGradient", "Snapshot"})
# What a mapping raises when the file's operands do not fit it: the op stays unmapped.
_ARGUMENT_ERRORS = (IndexError, ValueError, TypeError, KeyError, ZeroDivisionError)


Mapping = Callable[[TfEmit], None]


def lower_graph(graph: Graph) -> Graph:
    """Each ``tensorflow`` node the table maps replaced by its ONNX ops (one node, or a group
    of them marked ``derived: "tensorflow"`` in the node's place in its scope or call); the
    others keep their domain and say why in ``not_mapped``."""
    _unknown_ranks(graph)
    through = {
        n.outputs[0]: n.inputs[0]
        for n in graph.nodes
        if n.op_type in _COPIES and n.metadata.get("domain") == _DOMAIN and n.inputs and n.outputs
    }
    ids = {n.id for n in graph.nodes}
    tensor_ids = {t.id for t in graph.tensors}
    nodes: list[Node] = []
    for node in graph.nodes:
        meta = node.metadata
        tf = meta.get("tf")
        if meta.get("domain") != _DOMAIN or "children_ids" in meta or not isinstance(tf, dict):
            nodes.append(node)
            continue
        lower = TF_ONNX.get(node.op_type)
        if lower is None:
            meta.setdefault("not_mapped", f"TensorFlow op {node.op_type} has no ONNX mapping here")
            nodes.append(node)
            continue
        try:
            nodes.extend(_lowered(lower, graph.tensors, node, (ids, tensor_ids), through))
        except NotMapped as e:
            meta["not_mapped"] = f"{node.op_type}: {e}"
            nodes.append(node)
        except _ARGUMENT_ERRORS:
            meta["not_mapped"] = f"{node.op_type}: its operands do not fit the mapping"
            nodes.append(node)
    graph.nodes = nodes
    infer_undeclared(graph)
    return graph


def _unknown_ranks(graph: Graph) -> None:
    """A computed tensor the file gives no shape is of unknown rank, not a scalar."""
    for t in graph.tensors:
        if t.kind in ("activation", "output") and not t.shape and not t.has_data:
            t.metadata.setdefault("rank_unknown", True)


def _lowered(
    lower: Mapping,
    tensors: list[Tensor],
    node: Node,
    taken: tuple[set[str], set[str]],
    through: dict[int, int],
) -> list[Node]:
    """The mapping's ONNX nodes for ``node``, or the graph as it was and an exception."""
    ids, tensor_ids = taken
    mark = len(tensors)
    attrs = dict(node.metadata["tf"].get("attrs", {}))
    e = TfEmit(tensors, node.id, list(node.inputs), list(node.outputs), attrs, through, tensor_ids)
    try:
        lower(e)
        if not e.nodes:
            raise NotMapped("the mapping wrote no operator")
    except BaseException:
        tensor_ids.difference_update(t.id for t in tensors[mark:])
        del tensors[mark:]
        raise
    meta = {k: v for k, v in node.metadata.items() if k not in ("domain", "not_mapped")}
    # one TF op: one ONNX node, or a group of them marked derived "tensorflow"
    return placed(e.nodes, node.id, node.op_type, meta, _DOMAIN, ids)
