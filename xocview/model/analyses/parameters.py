"""Parameter counts: which tensors hold learned values, per node and for the whole graph.

One rule serves both counts, so the graph's total is the sum over the tensors that the
nodes' counts see (a weight shared by several nodes counted once), never less than any node's.
Before, the graph counted tensors of kind "weight" only: the int64 shape inputs of the light
ONNX models' ConstantOfShape nodes (2,194 values for ResNet-50) instead of their outputs.
"""

from __future__ import annotations

import math

from xocview.model.analyses.opfacts import is_constant_source
from xocview.model.graph import Graph

__all__ = ["graph_parameters", "is_parameter", "parameter_size", "parameters"]

_NOT_PARAMETERS = frozenset({"int64", "bool", "string"})  # shapes, indices, axes, masks


def is_parameter(graph: Graph, t: int) -> bool:
    """Whether tensor ``t`` holds learned values, whatever its shape.

    It does when it is of kind "weight" or the output of a constant source (ops.json
    ``constant``: Constant, ConstantOfShape, as the light ONNX models ship their weights), and
    its dtype is not int64, bool or string (shapes, indices and masks, not learned values).
    """
    tensor = graph.tensors[t]
    if tensor.dtype in _NOT_PARAMETERS:
        return False
    if tensor.kind == "weight":
        return True
    p = int(graph.index.producer[t])
    return p >= 0 and is_constant_source(graph.nodes[p].op_type)


def parameter_size(graph: Graph, t: int) -> int | None:
    """Elements of tensor ``t`` when its shape is fully known, else None."""
    tensor = graph.tensors[t]
    known = not tensor.metadata.get("rank_unknown") and all(
        isinstance(d, int) and d >= 0 for d in tensor.shape
    )
    return math.prod(tensor.shape) if known else None


def parameters(graph: Graph, node_index: int) -> int:
    """Elements of the node's parameter inputs (see is_parameter) of fully known shape.

    A weight fed twice is one weight; 0 when there is none. Raises IndexError for a bad index.
    """
    total = 0
    for t in dict.fromkeys(graph.nodes[node_index].inputs):
        if 0 <= t < len(graph.tensors) and is_parameter(graph, t):
            total += parameter_size(graph, t) or 0
    return total


def graph_parameters(graph: Graph) -> tuple[int, int]:
    """The graph's parameter elements and how many parameter tensors have a shape nobody knows
    (left out of the total).

    The total is over the parameter tensors that some node reads, each once: the sum over the
    weights the nodes' counts see. An initializer that no node reads is dead data, not a
    parameter of the network.
    """
    total = unsized = 0
    n = len(graph.tensors)
    fed = dict.fromkeys(t for nd in graph.nodes for t in nd.inputs if 0 <= t < n)
    for t in sorted(fed):
        if is_parameter(graph, t):
            size = parameter_size(graph, t)
            if size is None:
                unsized += 1
            else:
                total += size
    return total, unsized
