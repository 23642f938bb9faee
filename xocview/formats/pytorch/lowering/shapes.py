"""ATen ops that move, pick or make values: views, indexing, splits, concatenation, and the
tensor factories (arange, full, ones, zeros, *_like).

Sizes may be symbolic (``Ref(sym=True)``): shape tensors are then built by ``Emit.ints`` from
constants and the symbols' one-element tensors, so a graph exported with a dynamic batch runs
at any batch size.
"""

from __future__ import annotations

from typing import Any

from xocview.formats.pytorch.lowering.elementwise import operand
from xocview.formats.pytorch.lowering.emit import Emit, NotMapped
from xocview.formats.pytorch.pt2_schema import Ref

__all__ = ["reshape", "transpose", "unsqueeze"]

_END = 2**63 - 1


def _axis(d: int, rank: int) -> int:
    if not -rank <= d < max(rank, 1):
        raise NotMapped(f"dimension {d} out of range for rank {rank}")
    return d % rank if rank else 0


def reshape(e: Emit) -> None:
    """view / reshape / _unsafe_view: Reshape to the size list (-1 kept, 0 meaning 0)."""
    size = e.arg("size", None) if e.has("size") else e.arg("shape")
    shape = e.ints(size, "shape")
    attrs = {"allowzero": 1} if 0 in size else None
    e.emit("Reshape", [e.x("self"), shape], attrs)


def flatten(e: Emit) -> None:
    """flatten(start, end): Flatten for [N, rest], else a Reshape that keeps the dims before
    ``start`` (0: copy) and reads the ones after ``end`` from the input's shape."""
    x = e.x("self")
    rank = e.rank(x)
    if rank == 0:
        e.emit("Reshape", [x, e.const([1], "int64", "shape")])
        return
    start, end = _axis(e.arg("start_dim", 0), rank), _axis(e.arg("end_dim", -1), rank)
    if start == end:
        e.emit("Identity", [x])
        return
    if end == rank - 1 and start == 1:
        e.emit("Flatten", [x], {"axis": 1})
        return
    if 0 in e.shape(x):
        raise NotMapped("flatten of an empty tensor")
    shape = e.const([0] * start + [-1], "int64", "shape")
    if end < rank - 1:
        rest = e.op1("Shape", [x], attrs={"start": end + 1}, dtype="int64")
        shape = e.op1("Concat", [shape, rest], attrs={"axis": 0})
    e.emit("Reshape", [x, shape])


def unflatten(e: Emit) -> None:
    """Split dim ``dim`` into ``sizes``; the dims after it are read from the input's shape."""
    x = e.x("self")
    rank = e.rank(x)
    d = _axis(e.arg("dim"), rank)
    shape = e.ints([0] * d + list(e.arg("sizes")), "shape")
    if d < rank - 1:
        rest = e.op1("Shape", [x], attrs={"start": d + 1}, dtype="int64")
        shape = e.op1("Concat", [shape, rest], attrs={"axis": 0})
    e.emit("Reshape", [x, shape])


def permute(e: Emit) -> None:
    x = e.x("self")
    rank = e.rank(x)
    e.emit("Transpose", [x], {"perm": [_axis(d, rank) for d in e.arg("dims")]})


def transpose(e: Emit) -> None:
    x = e.x("self")
    rank = e.rank(x)
    if rank < 2:
        e.emit("Identity", [x])
        return
    perm = list(range(rank))
    a = _axis(e.arg("dim0"), rank)
    b = _axis(e.arg("dim1", 1), rank)
    perm[a], perm[b] = perm[b], perm[a]
    e.emit("Transpose", [x], {"perm": perm})


def reverse(e: Emit) -> None:
    """numpy_T: all dims reversed."""
    x = e.x("self")
    e.emit("Transpose", [x], {"perm": list(range(e.rank(x)))[::-1]})


def swap_last(e: Emit) -> None:
    """mT / mH / adjoint of real tensors: the last two dims swapped."""
    x = e.x("self")
    rank = e.rank(x)
    if rank < 2 or e.dtype(x).startswith("complex"):
        raise NotMapped("a matrix transpose of fewer than 2 dims or of complex values")
    e.emit("Transpose", [x], {"perm": [*range(rank - 2), rank - 1, rank - 2]})


def t(e: Emit) -> None:
    x = e.x("self")
    if e.rank(x) < 2:
        e.emit("Identity", [x])
    else:
        e.emit("Transpose", [x], {"perm": [1, 0]})


def unsqueeze(e: Emit) -> None:
    e.emit("Unsqueeze", [e.x("self"), e.const([e.arg("dim")], "int64", "dim")])


def squeeze(e: Emit) -> None:
    """Squeeze of the listed dims that have size 1 (torch leaves the others)."""
    x = e.x("self")
    shape = e.shape(x)
    dims = e.arg("dim", None)
    if dims is None:
        wanted = list(range(len(shape)))
    else:
        wanted = [_axis(d, len(shape)) for d in (dims if isinstance(dims, list) else [dims])]
    if any(shape[d] < 0 for d in wanted) and dims is None:
        raise NotMapped("squeeze of all dims when some sizes are symbolic")
    ones = [d for d in wanted if shape[d] == 1 or shape[d] < 0]
    if not ones:
        e.emit("Identity", [x])
    else:
        e.emit("Squeeze", [x, e.const(ones, "int64", "dim")])


def expand(e: Emit) -> None:
    """Expand to ``size``, -1 (keep) written as 1, which ONNX broadcasting keeps."""
    size = [1 if (isinstance(v, int) and v == -1) else v for v in e.arg("size")]
    e.emit("Expand", [e.x("self"), e.ints(size, "size")])


def expand_as(e: Emit) -> None:
    other = e.op1("Shape", [e.x("other")], dtype="int64")
    e.emit("Expand", [e.x("self"), other])


def repeat(e: Emit) -> None:
    x = e.x("self")
    repeats = list(e.arg("repeats"))
    extra = len(repeats) - e.rank(x)
    if extra < 0:
        raise NotMapped("fewer repeats than dimensions")
    if extra:
        x = e.op1("Unsqueeze", [x, e.const(list(range(extra)), "int64", "dims")])
    e.emit("Tile", [x, e.ints(repeats, "repeats")])


def cat(e: Emit) -> None:
    dtype = e.out_dtype()
    rank = len(e.shape(e.out()))
    parts = [e.cast(t, dtype) for t in e.xs("tensors") if e.shape(t) != [0] or rank == 1]
    e.emit("Concat", parts, {"axis": _axis(e.arg("dim", 0), rank)})


def stack(e: Emit) -> None:
    dtype = e.out_dtype()
    rank = len(e.shape(e.out()))
    d = _axis(e.arg("dim", 0), rank)
    axes = e.const([d], "int64", "dim")
    parts = [e.op1("Unsqueeze", [e.cast(t, dtype), axes]) for t in e.xs("tensors")]
    e.emit("Concat", parts, {"axis": d})


def slice_(e: Emit) -> None:
    x = e.x("self")
    rank = e.rank(x)
    d = _axis(e.arg("dim", 0), rank)
    start, end, step = e.arg("start", 0), e.arg("end", _END), e.arg("step", 1)
    if isinstance(end, int) and end > _END:
        end = _END
    inputs = [e.ints([start], "start"), e.ints([end], "end"), e.const([d], "int64", "dim")]
    e.emit("Slice", [x, *inputs, e.ints([step], "step")])


def narrow(e: Emit) -> None:
    x = e.x("self")
    d = _axis(e.arg("dim"), e.rank(x))
    start, length = e.arg("start"), e.arg("length")
    if not isinstance(start, int) or not isinstance(length, int):
        raise NotMapped("narrow with a symbolic start or length")
    ins = [e.const([start], "int64", "start"), e.const([start + length], "int64", "end")]
    e.emit("Slice", [x, *ins, e.const([d], "int64", "dim")])


def select(e: Emit) -> None:
    x = e.x("self")
    d = _axis(e.arg("dim"), e.rank(x))
    e.emit("Gather", [x, e.scalar(e.arg("index"), "int64", "index")], {"axis": d})


def index_select(e: Emit) -> None:
    x = e.x("self")
    e.emit("Gather", [x, e.x("index")], {"axis": _axis(e.arg("dim"), e.rank(x))})


def embedding(e: Emit) -> None:
    e.emit("Gather", [e.x("weight"), e.x("indices")], {"axis": 0})


def gather(e: Emit) -> None:
    x = e.x("self")
    e.emit("GatherElements", [x, e.x("index")], {"axis": _axis(e.arg("dim"), e.rank(x))})


def index(e: Emit) -> None:
    """Advanced indexing by integer tensors: one index (Gather), or a run of adjacent ones
    broadcast together (GatherND on those dims brought to the front)."""
    x = e.x("self")
    rank = e.rank(x)
    items = e.arg("indices")
    given = [k for k, v in enumerate(items) if v is not None]
    if not given or given != list(range(given[0], given[-1] + 1)):
        raise NotMapped("indices that are not one adjacent run")
    refs = [items[k] for k in given]
    idx = [e.cast(e.values.value(r.name), "int64") for r in refs]
    if any(e.dtype(e.values.value(r.name)) == "bool" for r in refs):
        raise NotMapped("boolean mask indices")
    first = given[0]
    if len(idx) == 1:
        e.emit("Gather", [x, idx[0]], {"axis": first})
        return
    if first:  # bring the indexed dims to the front
        order = [*given, *[k for k in range(rank) if k not in given]]
        x = e.op1("Transpose", [x], attrs={"perm": order})
    last = e.const([-1], "int64", "last")
    shape = e.op1("Shape", [idx[0]], dtype="int64")
    for t in idx[1:]:
        shape = e.op1("Max", [shape, e.op1("Shape", [t], dtype="int64")])  # equal ranks assumed
    stacked = [e.op1("Unsqueeze", [e.op1("Expand", [t, shape]), last]) for t in idx]
    where = e.op1("Concat", stacked, attrs={"axis": -1})
    if not first:
        e.emit("GatherND", [x, where])
        return
    got = e.op1("GatherND", [x, where])
    b = len(e.shape(e.out())) - (rank - len(given))  # the broadcast index rank
    perm = [*range(b, b + first), *range(b), *range(b + first, b + rank - len(given))]
    e.emit("Transpose", [got], {"perm": perm})


def split(e: Emit) -> None:
    """split / split_with_sizes / chunk / unbind: one Split to the recorded outputs."""
    x = e.x("self")
    rank = e.rank(x)
    d = _axis(e.arg("dim", 0), rank)
    n = len(e.out_names)
    sizes = [e.shape(e.out(k))[d] if e.out_names[k] else -1 for k in range(n)]
    if any(s < 0 for s in sizes):
        sizes = _sizes_from_args(e, x, d, n)
    outs = [e.out(k) if e.out_names[k] else e.op1("Identity", [x]) for k in range(n)]
    e.op("Split", [x, e.const(sizes, "int64", "split")], {"axis": d}, out=outs)


def _sizes_from_args(e: Emit, x: int, d: int, n: int) -> list[int]:
    total = e.dim(x, d)
    if e.has("split_sizes"):
        return list(e.arg("split_sizes"))
    step = e.arg("split_size")
    return [min(step, total - k * step) for k in range(n)]


def unbind(e: Emit) -> None:
    x = e.x("self")
    d = _axis(e.arg("dim", 0), e.rank(x))
    n = len(e.out_names)
    parts = e.op("Split", [x, e.const([1] * n, "int64", "split")], {"axis": d}, out=n)
    axes = e.const([d], "int64", "dim")
    for k, part in enumerate(parts):
        if e.out_names[k] is not None:
            e.op("Squeeze", [part, axes], out=[e.out(k)])


def sym_size(e: Emit) -> None:
    x = e.x("self")
    d = _axis(e.arg("dim"), e.rank(x))
    e.emit("Shape", [x], {"start": d, "end": d + 1})


def sym_numel(e: Emit) -> None:
    e.emit("Reshape", [e.op1("Size", [e.x("self")], dtype="int64"), e.const([1], "int64", "one")])


def arange(e: Emit) -> None:
    dtype = e.out_dtype()
    start = e.arg("start", 0) if e.has("start") else 0
    end, step = e.arg("end"), e.arg("step", 1)
    ins = [e.scalar(v, dtype, n) for v, n in ((start, "start"), (end, "end"), (step, "step"))]
    e.emit("Range", ins)


def full(value_arg: str | None, fill: Any = None, like: bool = False) -> Any:
    """full / ones / zeros / empty / new_* / *_like / scalar_tensor: a value expanded."""

    def lower(e: Emit) -> None:
        dtype = e.out_dtype()
        value = e.arg(value_arg) if value_arg else fill
        scalar = operand(e, value, dtype, "value")
        if like:
            shape = e.op1("Shape", [e.x("self")], dtype="int64")
        elif e.has("size"):
            shape = e.ints(e.arg("size"), "size")
        else:
            e.emit("Identity", [scalar])
            return
        e.emit("Expand", [scalar, shape])

    return lower


def trilu(upper: int) -> Any:
    def lower(e: Emit) -> None:
        k = e.const(e.arg("diagonal", 0), "int64", "diagonal")
        e.emit("Trilu", [e.x("self"), k], {"upper": upper})

    return lower


def flip(e: Emit) -> None:
    x = e.x("self")
    dims = list(e.arg("dims"))
    n = len(dims)
    ins = [e.const([-1] * n, "int64", "start"), e.const([-(2**63)] * n, "int64", "end")]
    e.emit("Slice", [x, *ins, e.const(dims, "int64", "dims"), e.const([-1] * n, "int64", "step")])


def constant_pad(e: Emit) -> None:
    """constant_pad_nd / pad(mode=constant): torch lists (begin, end) from the last dim."""
    x = e.x("self")
    if e.arg("mode", "constant") != "constant":
        raise NotMapped(f"pad mode {e.arg('mode')!r}")
    rank = e.rank(x)
    pad = list(e.arg("pad"))
    begins, ends = [0] * rank, [0] * rank
    for k in range(len(pad) // 2):
        begins[rank - 1 - k], ends[rank - 1 - k] = pad[2 * k], pad[2 * k + 1]
    value = operand(e, e.arg("value", 0) or 0, e.out_dtype(), "value")
    e.emit("Pad", [x, e.ints(begins + ends, "pads"), value], {"mode": "constant"})


def cumsum(e: Emit) -> None:
    x = e.cast(e.x("self"), e.out_dtype())
    e.emit("CumSum", [x, e.const(e.arg("dim"), "int64", "dim")])


def diff(e: Emit) -> None:
    """First differences along ``dim`` (n=1), after prepend/append; booleans differ by xor."""
    if e.arg("n", 1) != 1:
        raise NotMapped("diff with n other than 1")
    x = e.x("self")
    rank = e.rank(x)
    d = _axis(e.arg("dim", -1), rank)
    parts = (
        [e.x(k) for k in ("prepend",) if e.has(k)] + [x] + [e.x(k) for k in ("append",) if e.has(k)]
    )
    whole = e.op1("Concat", parts, attrs={"axis": d}) if len(parts) > 1 else x
    axes = e.const([d], "int64", "dim")
    hi = e.op1(
        "Slice", [whole, e.const([1], "int64", "one"), e.const([2**63 - 1], "int64", "end"), axes]
    )
    lo = e.op1(
        "Slice", [whole, e.const([0], "int64", "zero"), e.const([-1], "int64", "last"), axes]
    )
    e.emit("Xor" if e.dtype(x) == "bool" else "Sub", [hi, lo])


def getitem(e: Emit) -> None:
    """``operator.getitem`` on a list of tensors (kept by some graphs)."""
    items = list(e.args.values())
    if len(items) != 2 or not isinstance(items[0], list) or not isinstance(items[1], int):
        raise NotMapped("getitem of something other than a list of tensors")
    ref = items[0][items[1]]
    if not isinstance(ref, Ref):
        raise NotMapped("getitem of a value that is not a tensor")
    e.emit("Identity", [e.values.value(ref.name)])
