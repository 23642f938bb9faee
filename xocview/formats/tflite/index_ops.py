"""Mappings of TFLite's index, segment and bitwise builtins (one-hot, range, where, scatter,
segment reductions, diagonals, unique, shifts), merged into the one table of ``ops``.

Each is written with the ONNX ops that give TFLite's result exactly: boolean reductions through
integers, reversal as a Slice of step -1, segment sums as a ScatterND with reduction onto a
tensor holding the reduction's identity, diagonals as a Where over an identity mask.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xocview.formats.tflite.lower import Lower, NotMapped
from xocview.model.dtypes import DTYPES

__all__ = ["INDEX"]

Map = Callable[[Lower], None]
_INT_MAX = 2**63 - 1


def _to(e: Lower, t: int, dtype: str, out: int | None = None) -> int:
    """``t`` cast to ``dtype`` (written into ``out`` when given)."""
    if out is None and e.dtype(t) == dtype:
        return t
    attrs = {"to": DTYPES[dtype].onnx_code}
    return e.op("Cast", [t], attrs, out=None if out is None else [out], dtype=dtype)[0]


def one_hot(e: Lower) -> None:
    """A negative index is all ``off`` in TFLite; ONNX counts it from the end, so it is moved
    out of range first."""
    idx, depth = e.x(0), e.x(1)
    d = _to(e, depth, e.dtype(idx))
    zero = e.const(0, e.dtype(idx), "zero")
    idx = e.op1("Where", [e.op1("Less", [idx, zero]), d, idx])
    shape = e.i64([1], "one")
    off = e.op1("Reshape", [e.x(3), shape])
    on = e.op1("Reshape", [e.x(2), shape])
    values = e.op1("Concat", [off, on], attrs={"axis": 0})
    e.last("OneHot", [idx, depth, values], {"axis": int(e.opt("axis", -1))})


def range_(e: Lower) -> None:
    e.last("Range", [e.x(0), e.x(1), e.x(2)])


def zeros_like(e: Lower) -> None:
    zero = e.const(0, e.dtype(e.x(0)), "zero")
    e.last("Expand", [zero, e.op1("Shape", [e.x(0)])])


def bool_reduce(op_type: str) -> Map:
    """REDUCE_ANY / REDUCE_ALL as ReduceMax / ReduceMin over 0/1 integers."""

    def lower(e: Lower) -> None:
        keep = 1 if e.opt("keep_dims", False) else 0
        x = _to(e, e.x(0), "int32")
        y = e.op1(op_type, [x, e.i64(e.ints(1), "axes")], attrs={"keepdims": keep})
        _to(e, y, "bool", e.outs[0])

    return lower


def reverse_v2(e: Lower) -> None:
    axes = e.ints(1)
    n = len(axes)
    starts, ends = e.i64([-1] * n, "starts"), e.i64([-_INT_MAX] * n, "ends")
    e.last("Slice", [e.x(0), starts, ends, e.i64(axes, "axes"), e.i64([-1] * n, "steps")])


def where(e: Lower) -> None:
    """The coordinates of the true elements, one row each: NonZero transposed."""
    nz = e.op1("NonZero", [e.x(0)])
    if e.dtype(e.outs[0]) == "int64":
        e.op("Transpose", [nz], {"perm": [1, 0]}, out=[e.outs[0]])
        return
    _to(e, e.op1("Transpose", [nz], attrs={"perm": [1, 0]}), e.dtype(e.outs[0]), e.outs[0])


def rank(e: Lower) -> None:
    size = e.op1("Size", [e.op1("Shape", [e.x(0)])], dtype="int64")
    _to(e, size, e.dtype(e.outs[0]), e.outs[0])


def _filled(e: Lower, shape: int, value: float | int, dtype: str) -> int:
    """A tensor of ``shape`` (an int64 shape tensor) holding ``value``."""
    return e.op1("Expand", [e.const(value, dtype, "fill"), shape])


def scatter_nd(e: Lower) -> None:
    """Duplicate indices add up in TFLite: ScatterND with reduction add onto zeros."""
    idx, updates = _to(e, e.x(0), "int64"), e.x(1)
    zeros = _filled(e, _to(e, e.x(2), "int64"), 0, e.dtype(updates))
    e.last("ScatterND", [zeros, idx, updates], {"reduction": "add"})


def embedding_lookup(e: Lower) -> None:
    e.last("Gather", [e.x(1), e.x(0)], {"axis": 0})


_START = {"add": 0.0, "mul": 1.0}


def _identity(reduction: str, dtype: str) -> float | int:
    """The value of an empty segment: 0 for a sum, 1 for a product, the type's lowest for a
    maximum and highest for a minimum (as TFLite leaves them)."""
    if reduction in _START:
        return _START[reduction]
    info = np.finfo(np.float32) if dtype in ("float32", "float16") else np.iinfo(dtype)
    return info.min if reduction == "max" else info.max


def segment(reduction: str, sorted_ids: bool) -> Map:
    """SEGMENT_SUM (data, ids): max(ids)+1 rows; UNSORTED_SEGMENT_* (data, ids, n): n rows."""

    def lower(e: Lower) -> None:
        data, ids = e.x(0), _to(e, e.x(1), "int64")
        if sorted_ids:
            top = e.op1("ReduceMax", [ids], attrs={"keepdims": 1})
            rows = e.op1("Add", [e.op1("Reshape", [top, e.i64([1], "one")]), e.i64([1], "1")])
        else:
            rows = e.op1("Reshape", [_to(e, e.x(2), "int64"), e.i64([1], "one")])
        rest = e.op1(
            "Slice", [e.op1("Shape", [data]), e.i64([e.rank(e.x(1))], "s"), e.i64([_INT_MAX], "e")]
        )
        shape = e.op1("Concat", [rows, rest], attrs={"axis": 0})
        start = _filled(e, shape, _identity(reduction, e.dtype(data)), e.dtype(data))
        at = e.op1("Unsqueeze", [ids, e.i64([-1], "last")])
        e.last("ScatterND", [start, at, data], {"reduction": reduction})

    return lower


def _eye(e: Lower, rows: int, cols: int) -> int:
    return e.const(np.eye(rows, cols, dtype=bool), "bool", "diagonal")


def matrix_diag(e: Lower) -> None:
    x = e.x(0)
    n = e.dim(x, e.rank(x) - 1)
    column = e.op1("Unsqueeze", [x, e.i64([-1], "axes")])
    e.last("Where", [_eye(e, n, n), column, e.const(0, e.dtype(x), "zero")])


def matrix_set_diag(e: Lower) -> None:
    """The diagonal (length min(M, N)) spread along the longer side, picked by an eye mask."""
    x, diag = e.x(0), e.x(1)
    m, n = e.dim(x, e.rank(x) - 2), e.dim(x, e.rank(x) - 1)
    spread = e.op1("Unsqueeze", [diag, e.i64([-1 if m <= n else -2], "axes")])
    e.last("Where", [_eye(e, m, n), spread, x])


def atan2(e: Lower) -> None:
    """atan(y/x) moved into the quadrant of (x, y); the axes as C's atan2 gives them."""
    y, x = e.x(0), e.x(1)
    dt = e.dtype(y)
    zero, pi = e.const(0.0, dt, "zero"), e.const(np.pi, dt, "pi")
    half = e.const(np.pi / 2, dt, "half_pi")
    a = e.op1("Atan", [e.op1("Div", [y, x])])
    up = e.op1("GreaterOrEqual", [y, zero])
    left = e.op1("Where", [up, e.op1("Add", [a, pi]), e.op1("Sub", [a, pi])])
    axis = e.op1("Where", [e.op1("Greater", [y, zero]), half, e.op1("Neg", [half])])
    axis = e.op1("Where", [e.op1("Equal", [y, zero]), zero, axis])
    vertical = e.op1("Where", [e.op1("Less", [x, zero]), left, axis])
    e.last("Where", [e.op1("Greater", [x, zero]), a, vertical])


def bitwise_xor(e: Lower) -> None:
    e.last("BitwiseXor", [e.x(0), e.x(1)])


def right_shift(e: Lower) -> None:
    """Arithmetic for signed types: offset by 2^(bits-1) to unsigned, shift, offset back."""
    x, s = e.x(0), e.x(1)
    dt = e.dtype(x)
    amount = _to(e, s, "uint64")
    if dt.startswith("uint"):
        e.op("BitShift", [x, _to(e, amount, dt)], {"direction": "RIGHT"}, out=[e.outs[0]])
        return
    if dt not in ("int8", "int16", "int32"):
        raise NotMapped(f"a right shift of {dt}")
    bias = 1 << (int(np.iinfo(dt).bits) - 1)
    moved = _to(e, e.op1("Add", [_to(e, x, "int64"), e.const(bias, "int64", "bias")]), "uint64")
    shifted = e.op1("BitShift", [moved, amount], attrs={"direction": "RIGHT"})
    back = e.op1(
        "BitShift", [e.const(bias, "uint64", "bias_u"), amount], attrs={"direction": "RIGHT"}
    )
    diff = e.op1("Sub", [_to(e, shifted, "int64"), _to(e, back, "int64")])
    _to(e, diff, dt, e.outs[0])


def reverse_sequence(e: Lower) -> None:
    seq, batch = int(e.opt("seq_dim", 0)), int(e.opt("batch_dim", 0))
    if {seq, batch} != {0, 1}:
        raise NotMapped("sequence and batch axes other than 0 and 1")
    attrs = {"batch_axis": batch, "time_axis": seq}
    e.last("ReverseSequence", [e.x(0), _to(e, e.x(1), "int64")], attrs)


def unique(e: Lower) -> None:
    """Unique elements in the order they first occur, and each element's index among them."""
    x = e.x(0)
    if e.rank(x) != 1:
        raise NotMapped("UNIQUE of a tensor that is not 1-D")
    inverse = e.fresh("inverse", "int64")
    outs = [e.outs[0], e.fresh("first", "int64"), inverse, e.fresh("counts", "int64")]
    e.op("Unique", [x], {"sorted": 0}, out=outs)
    _to(e, inverse, e.dtype(e.outs[1]), e.outs[1])


def broadcast_args(e: Lower) -> None:
    """Two shapes padded with leading ones to one length; a 1 takes the other's size."""
    a, b = e.x(0), e.x(1)
    n = max(e.dim(a, 0), e.dim(b, 0))
    dt = e.dtype(a)
    one = e.const(1, dt, "one")

    def padded(t: int) -> int:
        if e.dim(t, 0) == n:
            return t
        return e.op1("Concat", [e.const([1] * (n - e.dim(t, 0)), dt, "ones"), t], attrs={"axis": 0})

    pa, pb = padded(a), padded(b)
    e.last("Where", [e.op1("Equal", [pa, one]), pb, pa])


def dynamic_update_slice(e: Lower) -> None:
    """``update`` written at ``start`` (clamped so it fits) as a ScatterND over its grid."""
    x, upd = e.x(0), e.x(1)
    dims, sizes = e.shape(x), e.shape(upd)
    if min(dims + sizes, default=0) < 0:
        raise NotMapped("sizes that are not fixed")
    limit = e.i64([d - s for d, s in zip(dims, sizes, strict=True)], "limit")
    start = e.op1("Min", [e.op1("Max", [_to(e, e.x(2), "int64"), e.i64([0], "0")]), limit])
    grid = np.moveaxis(np.indices(sizes, dtype=np.int64), 0, -1)
    at = e.op1("Add", [e.const(grid, "int64", "grid"), start])
    e.last("ScatterND", [x, at, upd])


INDEX: dict[str, Map] = {
    "ONE_HOT": one_hot,
    "RANGE": range_,
    "ZEROS_LIKE": zeros_like,
    "REDUCE_ANY": bool_reduce("ReduceMax"),
    "REDUCE_ALL": bool_reduce("ReduceMin"),
    "REVERSE_V2": reverse_v2,
    "WHERE": where,
    "RANK": rank,
    "SCATTER_ND": scatter_nd,
    "EMBEDDING_LOOKUP": embedding_lookup,
    "SEGMENT_SUM": segment("add", sorted_ids=True),
    "UNSORTED_SEGMENT_SUM": segment("add", sorted_ids=False),
    "UNSORTED_SEGMENT_MAX": segment("max", sorted_ids=False),
    "UNSORTED_SEGMENT_MIN": segment("min", sorted_ids=False),
    "UNSORTED_SEGMENT_PROD": segment("mul", sorted_ids=False),
    "MATRIX_DIAG": matrix_diag,
    "MATRIX_SET_DIAG": matrix_set_diag,
    "ATAN2": atan2,
    "BITWISE_XOR": bitwise_xor,
    "RIGHT_SHIFT": right_shift,
    "REVERSE_SEQUENCE": reverse_sequence,
    "UNIQUE": unique,
    "BROADCAST_ARGS": broadcast_args,
    "DYNAMIC_UPDATE_SLICE": dynamic_update_slice,
}
