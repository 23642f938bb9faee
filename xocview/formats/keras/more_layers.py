"""Small Keras layers as ONNX operators: PReLU, group and unit normalization, RepeatVector
and Dot, each written the way Keras 3 computes it (its epsilons included), so that the
executor's outputs equal Keras's."""

from __future__ import annotations

from collections.abc import Callable

from xocview.formats.keras.call import Call, NotMapped

__all__ = ["MORE"]

Lower = Callable[[Call], int]


def _prelu(c: Call) -> int:
    return c.op("PRelu", [c.x, c.w(0)])  # alpha's shape broadcasts onto x without the batch


def _l2(c: Call, x: int, axis: int, epsilon: float) -> int:
    """Keras's ``normalize``: ``x * min(rsqrt(sum(x * x)), 1 / epsilon)`` along ``axis``."""
    total = c.op("ReduceSum", [c.op("Mul", [x, x]), c.ints([axis], "axes")], {"keepdims": 1})
    inv = c.op("Reciprocal", [c.op("Sqrt", [total])])
    inv = c.op("Min", [inv, c.const(1.0 / epsilon, c.dtype(x), "cap")])
    return c.op("Mul", [x, inv])


def _unit_norm(c: Call) -> int:
    axis = c.cfg("axis", -1)
    if isinstance(axis, list):
        if len(axis) != 1:
            raise NotMapped(f"unit normalization over axes {axis}")
        axis = axis[0]
    return _l2(c, c.x, int(axis), 1e-12)


def _group_norm(c: Call) -> int:
    """Statistics over the spatial axes and the channels of each group, then per-channel
    gamma and beta (channels last)."""
    x = c.x
    axis = c.cfg("axis", -1)
    if axis != -1 and axis != c.rank(x) - 1:  # tf.keras 2 records no ranks, but axis -1
        raise NotMapped(f"group normalization on axis {axis}")
    has_weights = c.cfg("scale", True) or c.cfg("center", True)
    channels = c.weight_shape(0)[0] if has_weights else c.dim(x, -1)
    groups = int(c.cfg("groups", 32))
    if groups <= 0 or channels % groups:
        raise NotMapped(f"{channels} channels in {groups} groups")
    shape = c.op("Shape", [x], dtype="int64")
    g = c.op("Reshape", [x, c.ints([0, -1, groups, channels // groups], "grouped")])
    axes = c.ints([1, 3], "axes")
    mean = c.op("ReduceMean", [g, axes], {"keepdims": 1})
    d = c.op("Sub", [g, mean])
    var = c.op("ReduceMean", [c.op("Mul", [d, d]), axes], {"keepdims": 1})
    eps = c.const(float(c.cfg("epsilon", 1e-3)), c.dtype(x), "epsilon")
    y = c.op("Mul", [d, c.op("Reciprocal", [c.op("Sqrt", [c.op("Add", [var, eps])])])])
    y = c.op("Reshape", [y, shape])
    k = 0
    if c.cfg("scale", True):
        y, k = c.op("Mul", [y, c.w(0)]), 1
    if c.cfg("center", True):
        y = c.op("Add", [y, c.w(k)])
    return y


def _repeat_vector(c: Call) -> int:
    n = int(c.cfg("n"))
    y = c.op("Unsqueeze", [c.x, c.ints([1], "axis")])
    return c.op("Tile", [y, c.ints([1, n, 1], "repeats")])


def _dot(c: Call) -> int:
    """Keras's ``batch_dot`` of two rank-2 or rank-3 inputs over one axis of each."""
    xs = c.xs
    if len(xs) != 2:
        raise NotMapped(f"a dot of {len(xs)} inputs")
    a, b = xs
    ra, rb = c.rank(a), c.rank(b)
    axes = c.cfg("axes")
    pair = [axes, axes] if isinstance(axes, int) else axes
    if not isinstance(pair, list) or len(pair) != 2 or ra != rb or ra not in (2, 3):
        raise NotMapped(f"a dot over axes {axes!r} of rank {ra} and {rb} inputs")
    ax, bx = int(pair[0]) % ra, int(pair[1]) % rb
    if ax == 0 or bx == 0:
        raise NotMapped("a dot over the batch axis")
    if c.cfg("normalize", False):
        a, b = _l2(c, a, ax, 1e-7), _l2(c, b, bx, 1e-7)
    if ra == 2:
        return c.op("ReduceSum", [c.op("Mul", [a, b]), c.ints([1], "axes")], {"keepdims": 1})
    if ax == 1:
        a = c.op("Transpose", [a], {"perm": [0, 2, 1]})
    if bx == 2:
        b = c.op("Transpose", [b], {"perm": [0, 2, 1]})
    return c.op("MatMul", [a, b])


MORE: dict[str, Lower] = {
    "PReLU": _prelu,
    "UnitNormalization": _unit_norm,
    "GroupNormalization": _group_norm,
    "RepeatVector": _repeat_vector,
    "Dot": _dot,
}
