"""Operator facts read from resources/ops.json: category, key attributes, FLOPs.

The facts are data (habit 7); this module only interprets them. ops.json is written by
resources/make_ops.py, which documents every category list, key attribute and FLOPs constant.
FLOPs count a multiply-add as 2 and come from tensor shapes and attributes (with the ONNX
defaults from ops.json); an operator or shape they cannot be told from gives None, never a
guess, unless the caller asks for unknown dimensions (a dynamic batch) to count as a given
size and is told whether any did. Weights of ONNX ops are read by input position: omitted
optional inputs (recorded by the ONNX loader in ``metadata["omitted_inputs"]``) are taken into
account.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from xocview.model.dtypes import dtype_by_onnx_code
from xocview.model.graph import Graph, Node
from xocview.model.hierarchy import Hierarchy
from xocview.resources import resource_path

__all__ = [
    "category",
    "flops",
    "flops_assuming",
    "flops_text",
    "graph_flops",
    "graph_flops_assuming",
    "input_names",
    "is_constant_source",
    "key_attributes",
]


@lru_cache(maxsize=1)
def _ops() -> dict[str, dict[str, Any]]:
    """The "ops" table of ops.json, read once per process."""
    with resource_path("ops.json").open(encoding="utf-8") as f:
        ops: dict[str, dict[str, Any]] = json.load(f)["ops"]
    return ops


def category(op_type: str) -> str:
    """The op's category for colouring; "custom" for operators ops.json does not know."""
    return str(_ops().get(op_type, {}).get("category", "custom"))


def is_constant_source(op_type: str) -> bool:
    """Whether the op makes a tensor from its attributes alone (ops.json ``constant``)."""
    return bool(_ops().get(op_type, {}).get("constant", False))


def input_names(op_type: str) -> list[str]:
    """The schema's input names (for edge labels); empty for operators ops.json does not know."""
    return list(_ops().get(op_type, {}).get("inputs", []))


def key_attributes(node: Node) -> str:
    """The short attribute text of a node box ("3x3 /2 g32", "axis=1"); "" when none.

    Only attributes the node sets are shown, so the text never depends on an opset's default;
    a value of an unexpected type is left out rather than failing a paint.
    """
    parts = []
    for spec in _ops().get(node.op_type, {}).get("key_attributes", []):
        if spec["name"] in node.attributes:
            text = _format(spec, node.attributes[spec["name"]])
            if text:
                parts.append(text)
    return " ".join(parts)


def _format(spec: dict[str, Any], value: Any) -> str | None:
    """One key attribute as text, or None when it is hidden or of an unexpected type."""
    if "hide" in spec and _equals(value, spec["hide"]):
        return None
    fmt = spec.get("format", "value")
    if fmt == "flag":
        return str(spec.get("text", spec["name"])) if value else None
    if fmt == "dtype":
        dt = dtype_by_onnx_code(value) if isinstance(value, int) else None
        text = dt.name if dt is not None else None
    elif isinstance(value, list):
        if not value:
            return None
        if fmt == "uniform" and all(v == value[0] for v in value):
            text = _scalar(value[0])
        else:
            text = ("," if fmt == "list" else "x").join(_scalar(v) for v in value)
    else:
        text = _scalar(value)
    return None if text is None else f"{spec.get('prefix', '')}{text}"


def _equals(value: Any, hide: Any) -> bool:
    if isinstance(value, list) and not isinstance(hide, list):
        return bool(value) and all(v == hide for v in value)
    return bool(value == hide)


def _scalar(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# --- shapes and inputs ---------------------------------------------------------------------


def _slot(node: Node, position: int | None) -> int | None:
    """The tensor at ONNX input ``position``, minding omitted optional inputs; None if absent."""
    if position is None:
        return None
    omitted = node.metadata.get("omitted_inputs") or []
    if position in omitted:
        return None
    k = position - sum(1 for p in omitted if isinstance(p, int) and p < position)
    return node.inputs[k] if 0 <= k < len(node.inputs) else None


class _Shapes:
    """Tensor shapes as the FLOPs rules see them: fully known, else None; with ``unknown_as``,
    unknown dimensions (symbols such as a dynamic batch, or -1) take that size instead and
    ``assumed`` records that some did."""

    __slots__ = ("assumed", "graph", "unknown_as")

    def __init__(self, graph: Graph, unknown_as: int | None = None) -> None:
        self.graph = graph
        self.unknown_as = unknown_as
        self.assumed = False

    def of(self, tensor: int | None) -> list[int] | None:
        tensors = self.graph.tensors
        if tensor is None or not 0 <= tensor < len(tensors):
            return None
        t = tensors[tensor]
        if t.metadata.get("rank_unknown") or not all(isinstance(d, int) for d in t.shape):
            return None
        if all(d >= 0 for d in t.shape):
            return list(t.shape)
        if self.unknown_as is None:
            return None
        self.assumed = True
        return [self.unknown_as if d < 0 else d for d in t.shape]


def _in(shapes: _Shapes, node: Node, position: int | None) -> list[int] | None:
    return shapes.of(_slot(node, position))


def _out(shapes: _Shapes, node: Node) -> list[int] | None:
    return shapes.of(node.outputs[0]) if node.outputs else None


def _attr(node: Node, name: str) -> Any:
    """The node's attribute, else the ONNX default from ops.json, else None."""
    if name in node.attributes:
        return node.attributes[name]
    return _ops().get(node.op_type, {}).get("defaults", {}).get(name)


def _int(node: Node, name: str) -> int | None:
    value = _attr(node, name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ints(node: Node, name: str) -> list[int] | None:
    value = _attr(node, name)
    if isinstance(value, list) and all(isinstance(v, int) and v >= 0 for v in value):
        return value
    return None


def _size(shape: list[int]) -> int:
    return math.prod(shape)


# --- FLOPs rules (named by the "rule" of an op's "flops" entry in ops.json) -------------------

Rule = Callable[[_Shapes, Node, dict[str, Any]], int | None]


def _zero(shapes: _Shapes, node: Node, spec: dict[str, Any]) -> int | None:
    """Data movement only (reshapes, copies, gathers): no arithmetic, whatever the shapes."""
    return 0


def _per_output(shapes: _Shapes, node: Node, spec: dict[str, Any]) -> int | None:
    y = _out(shapes, node)
    return None if y is None else int(spec.get("per", 1)) * _size(y)


def _per_input(shapes: _Shapes, node: Node, spec: dict[str, Any]) -> int | None:
    x = _in(shapes, node, 0)
    return None if x is None else int(spec.get("per", 1)) * _size(x)


def _variadic(shapes: _Shapes, node: Node, spec: dict[str, Any]) -> int | None:
    """Sum/Max/Min/Mean of n inputs: n - 1 operations per output element (at least one)."""
    y = _out(shapes, node)
    return None if y is None else max(1, len(node.inputs) - 1) * _size(y)


def _pool(shapes: _Shapes, node: Node, spec: dict[str, Any]) -> int | None:
    """One operation per kernel element for each output element."""
    y, kernel = _out(shapes, node), _ints(node, "kernel_shape")
    return None if y is None or kernel is None else _size(kernel) * _size(y)


def _lrn(shapes: _Shapes, node: Node, spec: dict[str, Any]) -> int | None:
    """Sum of squares over ``size`` channels (2 * size), then scale, bias, power, divide (4)."""
    y, size = _out(shapes, node), _int(node, "size")
    return None if y is None or size is None else (2 * size + 4) * _size(y)


def _conv(shapes: _Shapes, node: Node, spec: dict[str, Any]) -> int | None:
    """2 * output elements * (input channels per group * kernel elements), plus the bias add.

    The weight [M, C/group, k...] gives the work per output element; without its shape the
    input's channels, ``group`` and ``kernel_shape`` do.
    """
    y = _out(shapes, node)
    if y is None:
        return None
    w = _in(shapes, node, spec.get("w", 1))
    if w is not None and len(w) >= 3:
        per_output = w[1] * _size(w[2:])
    else:
        x, group, kernel = _in(shapes, node, 0), _int(node, "group"), _ints(node, "kernel_shape")
        if x is None or len(x) < 2 or not group or kernel is None:
            return None
        per_output = x[1] // group * _size(kernel)
    bias = _slot(node, spec.get("b", 2)) is not None
    return 2 * _size(y) * per_output + (_size(y) if bias else 0)


def _conv_transpose(shapes: _Shapes, node: Node, spec: dict[str, Any]) -> int | None:
    """Every input element is scattered through the kernel into M/group output channels:
    2 * input elements * (M/group * kernel elements), plus the bias add on the output."""
    x, y, w = _in(shapes, node, 0), _out(shapes, node), _in(shapes, node, 1)
    if x is None:
        return None
    if w is not None and len(w) >= 3:
        per_input = w[1] * _size(w[2:])
    else:
        group, kernel = _int(node, "group"), _ints(node, "kernel_shape")
        if y is None or len(y) < 2 or not group or kernel is None:
            return None
        per_input = y[1] // group * _size(kernel)
    if _slot(node, 2) is None:
        return 2 * _size(x) * per_input
    return None if y is None else 2 * _size(x) * per_input + _size(y)


def _gemm(shapes: _Shapes, node: Node, spec: dict[str, Any]) -> int | None:
    """2 * M * N * K for op(A) @ op(B), plus M * N for adding C (alpha and beta not counted)."""
    a, b = _in(shapes, node, 0), _in(shapes, node, 1)
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        return None
    m, k = reversed(a) if _int(node, "transA") else a
    n = b[0] if _int(node, "transB") else b[1]
    return 2 * m * n * k + (m * n if _slot(node, 2) is not None else 0)


def _matmul(shapes: _Shapes, node: Node, spec: dict[str, Any]) -> int | None:
    """numpy matmul semantics: 1-D operands are promoted, batch dimensions broadcast."""
    a, b = _in(shapes, node, spec.get("a", 0)), _in(shapes, node, spec.get("b", 1))
    if not a or not b:
        return None
    a = [1, *a] if len(a) == 1 else a
    b = [*b, 1] if len(b) == 1 else b
    if a[-1] != b[-2]:
        return None
    try:
        batch = np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))
    except ValueError:
        return None
    return 2 * _size(list(batch)) * a[-2] * b[-1] * a[-1]


def _recurrent(shapes: _Shapes, node: Node, spec: dict[str, Any]) -> int | None:
    """Per step, direction and batch row: the gate matrix products 2 * G * H * (I + H), the two
    bias vectors 2 * G * H when B is given, and ``pointwise`` operations per hidden unit.

    Peepholes, clipping and GRU's ``linear_before_reset`` are not counted.
    """
    x, w, r = _in(shapes, node, 0), _in(shapes, node, 1), _in(shapes, node, 2)
    hidden = _int(node, "hidden_size")
    if hidden is None and r is not None and len(r) == 3:
        hidden = r[2]
    if x is None or len(x) != 3 or not hidden:
        return None
    steps, batch = (x[1], x[0]) if _int(node, "layout") else (x[0], x[1])
    if w is not None and len(w) == 3:
        directions = w[0]
    else:
        directions = 2 if _attr(node, "direction") == "bidirectional" else 1
    gates = int(spec["gates"]) * hidden
    per_step = 2 * gates * (x[2] + hidden) + int(spec["pointwise"]) * hidden
    if _slot(node, 3) is not None:
        per_step += 2 * gates
    return steps * batch * directions * per_step


_RULES: dict[str, Rule] = {
    "zero": _zero,
    "per_output": _per_output,
    "per_input": _per_input,
    "variadic": _variadic,
    "pool": _pool,
    "lrn": _lrn,
    "conv": _conv,
    "conv_transpose": _conv_transpose,
    "gemm": _gemm,
    "matmul": _matmul,
    "recurrent": _recurrent,
}


def flops(graph: Graph, node_index: int, *, unknown_dims: int | None = None) -> int | None:
    """Floating-point operations of one run of the node (a multiply-add counts as 2).

    None when ops.json has no FLOPs rule for the op or a shape the rule needs is unknown;
    with ``unknown_dims``, unknown dimensions (a dynamic batch) count as that size instead.
    Raises IndexError for a node index out of range.
    """
    return _flops(_Shapes(graph, unknown_dims), node_index)


def flops_assuming(graph: Graph, node_index: int, unknown_dims: int = 1) -> tuple[int | None, bool]:
    """``flops`` with unknown dimensions taken as ``unknown_dims``, and whether any was."""
    shapes = _Shapes(graph, unknown_dims)
    ops = _flops(shapes, node_index)
    return ops, ops is not None and shapes.assumed


def _flops(shapes: _Shapes, node_index: int) -> int | None:
    node = shapes.graph.nodes[node_index]
    spec = _ops().get(node.op_type, {}).get("flops")
    if spec is None:
        return None
    rule = _RULES.get(spec.get("rule", ""))
    return None if rule is None else rule(shapes, node, spec)


def graph_flops(graph: Graph, *, unknown_dims: int | None = None) -> tuple[int, int]:
    """Total FLOPs over the leaf nodes whose FLOPs are known, and how many leaves are unknown.

    Groups are skipped: their work is their leaves'. Bodies of If/Loop/Scan count once.
    ``unknown_dims`` is as for ``flops``.
    """
    total, unknown, _ = _graph_flops(_Shapes(graph, unknown_dims))
    return total, unknown


def graph_flops_assuming(graph: Graph, unknown_dims: int = 1) -> tuple[int, int, bool]:
    """``graph_flops`` with unknown dimensions taken as ``unknown_dims``, and whether any was."""
    return _graph_flops(_Shapes(graph, unknown_dims))


def _graph_flops(shapes: _Shapes) -> tuple[int, int, bool]:
    is_group = Hierarchy(shapes.graph).is_group.tolist()
    total = unknown = 0
    assumed = False  # by a node that was counted
    for i, group in enumerate(is_group):
        if group:
            continue
        shapes.assumed = False
        f = _flops(shapes, i)
        if f is None:
            unknown += 1
        else:
            total += f
            assumed = assumed or shapes.assumed
    return total, unknown, assumed


def flops_text(ops: int | None, assumed: bool, unknown_nodes: int = 0) -> str:
    """FLOPs as the inspector and ``xocview info`` show them.

    A count that took unknown dimensions (a dynamic batch) as 1 says so. Where some leaves have
    no count, the others' sum is a lower bound, and says so; with nothing counted at all (a
    file without shapes) it is unknown, not 0.
    """
    if ops is None or (unknown_nodes and not ops):
        return f"unknown ({unknown_nodes} nodes without a count)" if unknown_nodes else "unknown"
    text = f"{ops:,}" if not unknown_nodes else f"at least {ops:,}"
    notes = ["unknown dims as 1"] if assumed else []
    if unknown_nodes:
        notes.append(f"{unknown_nodes} nodes without a count")
    return f"{text} ({'; '.join(notes)})" if notes else text
