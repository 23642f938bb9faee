"""What a file leaves out about weights, inferred from what their consumer receives.

MXNet symbol files name every parameter but give no shapes; the shapes follow from the data
the consuming op sees and its attributes (a convolution's weight is ``(filters, channels /
group, *kernel)``). XOC files keep no weight values, not even those of the small integer
tensors that ops read as shapes (Reshape's target, Expand's shape, Resize's sizes); their
values follow from the consumer's declared output shape. The runtime asks here when it first
meets such a weight; other weights get seeded random values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from xocview.model import Graph, Node

__all__ = ["SHAPE_ARGUMENTS", "infer_shape_argument", "infer_weight_shape"]

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


_REDUCTIONS = ("Mean", "Sum", "Max", "Min", "Prod", "L1", "L2", "SumSquare", "LogSum", "LogSumExp")
# (op type, input position) of the inputs an op reads as a shape, sizes, repeats, scales or axes.
SHAPE_ARGUMENTS = frozenset(
    {
        ("Reshape", 1),
        ("Expand", 1),
        ("ConstantOfShape", 0),
        ("Tile", 1),
        ("Resize", 2),
        ("Resize", 3),
        ("Upsample", 1),
        ("Squeeze", 1),
        ("Unsqueeze", 1),
        *((f"Reduce{kind}", 1) for kind in _REDUCTIONS),
    }
)


def _declared_shape(graph: Graph, node: Node) -> list[int] | None:
    if not node.outputs:
        return None
    t = graph.tensors[node.outputs[0]]
    if t.metadata.get("rank_unknown"):
        return None
    return [int(d) for d in t.shape]


def infer_shape_argument(
    graph: Graph, node: Node, position: int, arrays: Sequence[np.ndarray | None], dtype: np.dtype
) -> np.ndarray | None:
    """The value of a shape-like weight the file does not keep, from the node's declared output
    shape (and its data input's actual shape); None when they do not tell it."""
    if (node.op_type, position) not in SHAPE_ARGUMENTS:
        return None
    out = _declared_shape(graph, node)
    if out is None:
        return None
    x = arrays[0] if arrays else None
    known = all(d >= 0 for d in out)
    if node.op_type == "Reshape" and sum(d < 0 for d in out) <= 1:
        return np.array(out, dtype=dtype)
    if node.op_type in ("Expand", "ConstantOfShape") or (node.op_type, position) == ("Resize", 3):
        return np.array(out, dtype=dtype) if known else None
    if x is None or not known:
        return None
    if position == 1 and (
        node.op_type in ("Squeeze", "Unsqueeze") or node.op_type.startswith("Reduce")
    ):
        axes = _axes(node, list(x.shape), out)
        return None if axes is None else np.array(axes, dtype=dtype)
    if len(out) != x.ndim or 0 in x.shape:
        return None
    ratio = np.array(out, dtype=np.float64) / np.array(x.shape, dtype=np.float64)
    if node.op_type == "Tile":
        return ratio.astype(dtype)
    return ratio.astype(dtype)  # scales of Resize and Upsample


def _removed(longer: list[int], shorter: list[int]) -> list[int] | None:
    """Positions of ``longer`` left over when ``shorter`` is matched into it in order."""
    gone, k = [], 0
    for i, d in enumerate(longer):
        if k < len(shorter) and shorter[k] == d and len(longer) - i > len(shorter) - k - 1:
            k += 1
        else:
            gone.append(i)
    return gone if k == len(shorter) else None


def _axes(node: Node, x: list[int], out: list[int]) -> list[int] | None:
    """The axes a Squeeze, Unsqueeze or Reduce* node acted on, read off its shapes."""
    if node.op_type == "Unsqueeze":
        return _removed(out, x)
    if node.op_type == "Squeeze" or not node.attributes.get("keepdims", 1):
        return _removed(x, out)
    if len(x) != len(out):
        return None
    return [i for i, (a, b) in enumerate(zip(x, out, strict=True)) if a != b]
