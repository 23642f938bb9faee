"""TensorFlow's shape, slicing, joining and padding ops as ONNX ops (part of ``ops.TF_ONNX``).

StridedSlice is written without knowing the input's rank: a new axis is inserted first
(Unsqueeze), so each entry of the slice spec names one axis, counted from the front before
an ellipsis and from the back after it; then one Slice and one Squeeze for shrunk axes.
"""

from __future__ import annotations

from collections.abc import Callable

from xocview.formats.tensorflow.lower import NotMapped, TfEmit
from xocview.model.dtypes import DTYPES

__all__ = ["SLICING"]

Map = Callable[[TfEmit], None]

_INT_MAX = 2**63 - 1
_INT_MIN = -(2**63)


def _int64(e: TfEmit, k: int, label: str) -> int:
    try:
        return e.i64(e.ints(k), label)
    except NotMapped:
        t = e.x(k)
        if e.dtype(t) == "int64":
            return t
        return e.op1("Cast", [t], attrs={"to": DTYPES["int64"].onnx_code}, dtype="int64")


def _indices(e: TfEmit, k: int) -> int:
    """Input ``k`` as int64 indices of its own shape."""
    try:
        return e.const(e.value(k), "int64", "indices")
    except NotMapped:
        return _int64(e, k, "indices")


def reshape(e: TfEmit) -> None:
    e.last("Reshape", [e.x(0), _int64(e, 1, "shape")], {"allowzero": 1})


def squeeze(e: TfEmit) -> None:
    dims = [int(d) for d in e.attr("squeeze_dims", [])]
    if not dims:
        e.last("Squeeze", [e.x(0)])
        return
    e.last("Squeeze", [e.x(0), e.i64(dims, "axes")])


def expand_dims(e: TfEmit) -> None:
    e.last("Unsqueeze", [e.x(0), e.i64([e.int1(1)], "axes")])


def transpose(e: TfEmit) -> None:
    e.last("Transpose", [e.x(0)], {"perm": e.ints(1)})


def concat_v2(e: TfEmit) -> None:
    """(values..., axis)."""
    *values, _ = e.ins
    e.last("Concat", values, {"axis": e.int1(len(e.ins) - 1)})


def concat(e: TfEmit) -> None:
    """(axis, values...): the TF1 order."""
    e.last("Concat", e.ins[1:], {"axis": e.int1(0)})


def pack(e: TfEmit) -> None:
    axis = int(e.attr("axis", 0))
    at = e.i64([axis], "axis")
    parts = [e.op1("Unsqueeze", [x, at]) for x in e.ins]
    e.last("Concat", parts, {"axis": axis})


def unpack(e: TfEmit) -> None:
    axis = int(e.attr("axis", 0))
    at = e.i64([axis], "axis")
    parts = [e.fresh("part", e.dtype(e.x(0))) for _ in e.outs]
    e.op("Split", [e.x(0)], {"axis": axis, "num_outputs": len(e.outs)}, out=parts)
    for part, out in zip(parts, e.outs, strict=True):
        e.op("Squeeze", [part, at], out=[out])


def split(e: TfEmit) -> None:
    """(axis, value), ``num_split`` equal parts."""
    n = int(e.attr("num_split"))
    if n != len(e.outs):
        raise NotMapped(f"num_split {n} but {len(e.outs)} outputs")
    e.op("Split", [e.x(1)], {"axis": e.int1(0), "num_outputs": n}, out=e.outs)


def split_v(e: TfEmit) -> None:
    """(value, size_splits, axis); one size may be -1: the rest of the axis."""
    sizes, axis = e.ints(1), e.int1(2)
    if -1 in sizes:
        whole = e.dim(e.x(0), axis)
        sizes[sizes.index(-1)] = whole - sum(s for s in sizes if s != -1) - 0
    if len(sizes) != len(e.outs):
        raise NotMapped(f"{len(sizes)} sizes but {len(e.outs)} outputs")
    e.op("Split", [e.x(0), e.i64(sizes, "split")], {"axis": axis}, out=e.outs)


def slice_(e: TfEmit) -> None:
    """(input, begin, size): size -1 runs to the end of the axis."""
    begin, sizes = e.ints(1), e.ints(2)
    if len(begin) != len(sizes):
        raise NotMapped("begin and size differ in length")
    ends = [_INT_MAX if s == -1 else b + s for b, s in zip(begin, sizes, strict=True)]
    axes = list(range(len(begin)))
    ins = [e.x(0), e.i64(begin, "starts"), e.i64(ends, "ends"), e.i64(axes, "axes")]
    e.last("Slice", ins)


def _bits(mask: int, n: int) -> list[bool]:
    return [bool(mask >> i & 1) for i in range(n)]


def _spec(e: TfEmit) -> tuple[list[int], list[list[int]], list[int]]:
    """The slice spec as (new axes, [starts, ends, axes, steps], shrunk axes), each entry's
    axis counted from the front before the ellipsis and from the back after it."""
    begin, end, strides = e.ints(1), e.ints(2), e.ints(3)
    n = len(begin)
    if not (len(end) == len(strides) == n):
        raise NotMapped("begin, end and strides differ in length")
    names = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
    full_b, full_e, ellipsis, new_axis, shrunk = (_bits(int(e.attr(k, 0)), n) for k in names)
    if sum(ellipsis) > 1:
        raise NotMapped("more than one ellipsis")
    cut = ellipsis.index(True) if any(ellipsis) else n
    axis = [i if i < cut else i - n for i in range(n)]
    new = [axis[i] for i in range(n) if new_axis[i] and i != cut]
    table: list[list[int]] = [[], [], [], []]
    shrink = []
    for i in range(n):
        s = strides[i]
        if i == cut or new_axis[i] or (full_b[i] and full_e[i] and s == 1 and not shrunk[i]):
            continue
        if s == 0:
            raise NotMapped("a stride is 0")
        if shrunk[i]:
            row = [begin[i], _INT_MAX if begin[i] == -1 else begin[i] + 1, axis[i], 1]
            shrink.append(axis[i])
        else:
            first = (0 if s > 0 else _INT_MAX) if full_b[i] else begin[i]
            row = [first, (_INT_MAX if s > 0 else _INT_MIN) if full_e[i] else end[i], axis[i], s]
        for column, v in zip(table, row, strict=True):
            column.append(v)
    return new, table, shrink


def strided_slice(e: TfEmit) -> None:
    """Unsqueeze (new axes), Slice, Squeeze (shrunk axes): the ones the spec needs."""
    new, (starts, ends, axes, steps), shrink = _spec(e)
    chain: list[tuple[str, list[int]]] = []  # each op after the one before, the last into y
    if new:
        chain.append(("Unsqueeze", [e.i64(new, "new_axes")]))
    if axes:
        ins = [e.i64(starts, "starts"), e.i64(ends, "ends"), e.i64(axes, "axes")]
        chain.append(("Slice", [*ins, e.i64(steps, "steps")]))
    if shrink:
        chain.append(("Squeeze", [e.i64(shrink, "shrink")]))
    x = e.x(0)
    for op_type, rest in chain[:-1]:
        x = e.op1(op_type, [x, *rest])
    last, rest = chain[-1] if chain else ("Identity", [])
    e.last(last, [x, *rest])


def gather_v2(e: TfEmit) -> None:
    if int(e.attr("batch_dims", 0)) != 0:
        raise NotMapped("batch_dims is not 0")
    e.last("Gather", [e.x(0), e.x(1)], {"axis": e.int1(2)})


def pad(mode: str) -> Map:
    def lower(e: TfEmit) -> None:
        pairs = e.value(1)
        if pairs.ndim != 2 or pairs.shape[1] != 2:
            raise NotMapped("paddings is not an n x 2 table")
        pads = [int(v) for v in pairs[:, 0].tolist() + pairs[:, 1].tolist()]
        how = mode
        if mode == "mirror":
            kind = str(e.attr("mode", "REFLECT"))
            if kind != "REFLECT":
                raise NotMapped(f"MirrorPad mode {kind}")
            how = "reflect"
        ins: list[int | None] = [e.x(0), e.i64(pads, "pads")]
        if e.has(2):
            ins.append(e.x(2))
        e.last("Pad", ins, {"mode": how})

    return lower


def reverse_v2(e: TfEmit) -> None:
    """Each listed axis read backwards: a Slice of step -1 from the last element."""
    axes = e.ints(1)
    k = len(axes)
    starts, ends = e.i64([-1] * k, "starts"), e.i64([_INT_MIN] * k, "ends")
    e.last("Slice", [e.x(0), starts, ends, e.i64(axes, "axes"), e.i64([-1] * k, "steps")])


def gather_nd(e: TfEmit) -> None:
    e.last("GatherND", [e.x(0), _indices(e, 1)], {"batch_dims": 0})


def scatter_nd(e: TfEmit) -> None:
    """(indices, updates, shape): updates summed into zeros, as TensorFlow sums repeats."""
    zeros = e.op1("Expand", [e.const(0, e.dtype(e.x(1)), "zero"), _int64(e, 2, "shape")])
    ins = [zeros, _indices(e, 0), e.x(1)]
    e.last("ScatterND", ins, {"reduction": "add"})


def broadcast_to(e: TfEmit) -> None:
    e.last("Expand", [e.x(0), _int64(e, 1, "shape")])


def one_hot(e: TfEmit) -> None:
    """(indices, depth, on, off): a negative index is all ``off`` in TensorFlow but counts
    from the end in ONNX, so it is moved out of range first."""
    idx, depth = e.x(0), e.x(1)
    as_idx = e.op1(
        "Cast", [depth], attrs={"to": DTYPES[e.dtype(idx)].onnx_code}, dtype=e.dtype(idx)
    )
    low = e.op1("Less", [idx, e.const(0, e.dtype(idx), "zero")], dtype="bool")
    idx = e.op1("Where", [low, as_idx, idx])
    one = e.i64([1], "one")
    off, on = e.op1("Reshape", [e.x(3), one]), e.op1("Reshape", [e.x(2), one])
    values = e.op1("Concat", [off, on], attrs={"axis": 0})
    e.last("OneHot", [idx, depth, values], {"axis": int(e.attr("axis", -1))})


def where(e: TfEmit) -> None:
    """The coordinates of the true (non-zero) elements, one row each."""
    if len(e.ins) != 1:
        raise NotMapped("Where with x and y is Select")
    found = e.op1("NonZero", [e.x(0)], dtype="int64")
    e.last("Transpose", [found], {"perm": [1, 0]})


def tile(e: TfEmit) -> None:
    e.last("Tile", [e.x(0), _int64(e, 1, "repeats")])


SLICING: dict[str, Map] = {
    "Reshape": reshape,
    "Squeeze": squeeze,
    "ExpandDims": expand_dims,
    "Transpose": transpose,
    "ConcatV2": concat_v2,
    "Concat": concat,
    "Pack": pack,
    "Unpack": unpack,
    "Split": split,
    "SplitV": split_v,
    "Slice": slice_,
    "StridedSlice": strided_slice,
    "GatherV2": gather_v2,
    "Pad": pad("constant"),
    "PadV2": pad("constant"),
    "MirrorPad": pad("mirror"),
    "Tile": tile,
    "ReverseV2": reverse_v2,
    "GatherNd": gather_nd,
    "ScatterNd": scatter_nd,
    "BroadcastTo": broadcast_to,
    "OneHot": one_hot,
    "Where": where,
}
