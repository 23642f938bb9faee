"""Shapes of weights that a file does not state, inferred from what their consumer receives.

MXNet symbol files name every parameter but give no shapes; the shapes follow from the data
the consuming op sees and its attributes (a convolution's weight is ``(filters, channels /
group, *kernel)``). The runtime asks here when it first meets such a weight, then fills it with
seeded random values like any weight without values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from xocview.model import Graph, Node

__all__ = ["infer_weight_shape"]

Shape = tuple[int, ...]
Rule = Callable[[Graph, Node, int, Sequence[np.ndarray | None], dict[str, Any]], Shape | None]


def _source_attr(node: Node, *names: str) -> int | None:
    """An integer attribute of the source format (kept in metadata ``attrs``/``params``)."""
    for key in ("attrs", "params", "attributes"):
        attrs = node.metadata.get(key)
        if isinstance(attrs, dict):
            for name in names:
                value = attrs.get(name)
                if isinstance(value, int) and not isinstance(value, bool):
                    return value
                if isinstance(value, str) and value.strip().isdigit():
                    return int(value)
    return None


def _declared_dim(graph: Graph, node: Node, output: int, axis: int) -> int | None:
    """A known dimension of one of the node's declared outputs."""
    if output >= len(node.outputs):
        return None
    t = graph.tensors[node.outputs[output]]
    if t.metadata.get("rank_unknown") or len(t.shape) <= axis:
        return None
    d = t.shape[axis]
    return d if isinstance(d, int) and d > 0 else None


def _known_dim(arrays: Sequence[np.ndarray | None], position: int, axis: int) -> int | None:
    a = arrays[position] if position < len(arrays) else None
    return int(a.shape[axis]) if a is not None and a.ndim > axis else None


def _conv(
    graph: Graph, node: Node, pos: int, arrays: Sequence[Any], attrs: dict[str, Any]
) -> Shape | None:
    x = arrays[0]
    if x is None:
        return None
    filters = (
        _declared_dim(graph, node, 0, 1)
        or (_known_dim(arrays, 2, 0) if pos == 1 else _known_dim(arrays, 1, 0))
        or _source_attr(node, "num_filter", "channels", "out_channels", "num_output")
    )
    if filters is None:
        return None
    if pos == 2:
        return (filters,)
    group = int(attrs.get("group", 1))
    kernel = attrs.get("kernel_shape")
    if not kernel:
        return None
    if node.op_type == "ConvTranspose":
        return (int(x.shape[1]), filters // group, *map(int, kernel))
    return (filters, int(x.shape[1]) // group, *map(int, kernel))


def _gemm(
    graph: Graph, node: Node, pos: int, arrays: Sequence[Any], attrs: dict[str, Any]
) -> Shape | None:
    a = arrays[0]
    if a is None or a.ndim != 2:
        return None
    k = a.shape[0] if attrs.get("transA") else a.shape[1]
    n = _declared_dim(graph, node, 0, 1) or _source_attr(node, "num_hidden", "units", "num_output")
    if n is None:
        return None
    if pos == 2:
        return (n,)
    return (n, k) if attrs.get("transB") else (k, n)


def _channels(
    graph: Graph, node: Node, pos: int, arrays: Sequence[Any], attrs: dict[str, Any]
) -> Shape | None:
    """Per-channel parameters (batch and instance norm scale, bias, mean, variance)."""
    c = _known_dim(arrays, 0, 1)
    return None if c is None else (c,)


def _prelu(
    graph: Graph, node: Node, pos: int, arrays: Sequence[Any], attrs: dict[str, Any]
) -> Shape | None:
    """One slope per channel, shaped to broadcast along axis 1 as the source frameworks mean."""
    x = arrays[0]
    if x is None or x.ndim < 2:
        return None
    return (int(x.shape[1]), *([1] * (x.ndim - 2)))


def _layer_norm(
    graph: Graph, node: Node, pos: int, arrays: Sequence[Any], attrs: dict[str, Any]
) -> Shape | None:
    x = arrays[0]
    return None if x is None else tuple(int(d) for d in x.shape[int(attrs.get("axis", -1)) :])


def _like_other(
    graph: Graph, node: Node, pos: int, arrays: Sequence[Any], attrs: dict[str, Any]
) -> Shape | None:
    """An elementwise operand takes the shape of the other one."""
    others = [a for k, a in enumerate(arrays) if k != pos and a is not None]
    return tuple(int(d) for d in others[0].shape) if others else None


_RULES: dict[str, Rule] = {
    "Conv": _conv,
    "ConvTranspose": _conv,
    "Gemm": _gemm,
    "BatchNormalization": _channels,
    "InstanceNormalization": _channels,
    "PRelu": _prelu,
    "LayerNormalization": _layer_norm,
    "Add": _like_other,
    "Sub": _like_other,
    "Mul": _like_other,
    "Div": _like_other,
}


def infer_weight_shape(
    graph: Graph,
    node: Node,
    position: int,
    arrays: Sequence[np.ndarray | None],
    attrs: dict[str, Any],
) -> Shape | None:
    """The shape of ``node``'s input ``position`` from its other inputs, or None if unknown."""
    rule = _RULES.get(node.op_type)
    return None if rule is None else rule(graph, node, position, arrays, attrs)
