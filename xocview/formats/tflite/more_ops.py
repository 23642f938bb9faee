"""Mappings of the less common TFLite builtins (splits and stacks, resizes, transposed
convolution, arg/top-k, normalisation), merged into the one table of ``ops``."""

from __future__ import annotations

from collections.abc import Callable

from xocview.formats.tflite.lower import Lower, NotMapped
from xocview.model.dtypes import DTYPES

__all__ = ["MORE"]

Map = Callable[[Lower], None]
_TO_NCHW = [0, 3, 1, 2]
_TO_NHWC = [0, 2, 3, 1]


def _to(e: Lower, t: int, dtype: str, out: int | None = None) -> int:
    """``t`` cast to ``dtype`` (written into ``out`` when given)."""
    if out is None and e.dtype(t) == dtype:
        return t
    attrs = {"to": DTYPES[dtype].onnx_code}
    return e.op("Cast", [t], attrs, out=None if out is None else [out], dtype=dtype)[0]


def _axis(e: Lower, k: int) -> int:
    return e.ints(k)[0]


def split(e: Lower) -> None:
    """SPLIT (axis, x): equal parts; SPLIT_V (x, sizes, axis)."""
    x, axis = e.x(1), _axis(e, 0)
    e.op("Split", [x], {"axis": axis, "num_outputs": len(e.outs)}, out=e.outs)


def split_v(e: Lower) -> None:
    sizes = e.ints(1)
    if -1 in sizes:
        raise NotMapped("a size of -1")
    e.op("Split", [e.x(0), e.i64(sizes, "split")], {"axis": _axis(e, 2)}, out=e.outs)


def pack(e: Lower) -> None:
    axis = int(e.opt("axis", 0))
    if axis < 0:
        axis += e.rank(e.x(0)) + 1
    at = e.i64([axis], "axes")
    parts = [e.op1("Unsqueeze", [t, at]) for t in e.ins if t is not None]
    e.last("Concat", parts, {"axis": axis})


def unpack(e: Lower) -> None:
    axis = int(e.opt("axis", 0))
    at = e.i64([axis], "axes")
    if len(e.outs) == 1:
        e.last("Squeeze", [e.x(0), at])
        return
    parts = [e.fresh("part", e.dtype(e.x(0))) for _ in e.outs]
    e.op("Split", [e.x(0)], {"axis": axis, "num_outputs": len(e.outs)}, out=parts)
    for part, out in zip(parts, e.outs, strict=True):
        e.op("Squeeze", [part, at], out=[out])


def tile(e: Lower) -> None:
    e.last("Tile", [e.x(0), _to(e, e.x(1), "int64")])


def resize(nearest: bool) -> Map:
    """NHWC resized on axes 1 and 2 to the constant size input."""

    def lower(e: Lower) -> None:
        size = e.i64(e.ints(1), "sizes")
        corners, half = (
            bool(e.opt("align_corners", False)),
            bool(e.opt("half_pixel_centers", False)),
        )
        attrs: dict[str, object] = {"axes": [1, 2], "mode": "nearest" if nearest else "linear"}
        if corners:
            attrs["coordinate_transformation_mode"] = "align_corners"
        elif half:
            attrs["coordinate_transformation_mode"] = (
                "tf_half_pixel_for_nn" if nearest else "half_pixel"
            )
        else:
            attrs["coordinate_transformation_mode"] = "asymmetric"
        if nearest:
            attrs["nearest_mode"] = "round_prefer_ceil" if corners else "floor"
        e.last("Resize", [e.x(0), None, None, size], attrs)

    return lower


def transpose_conv(e: Lower) -> None:
    """(output_shape, weights OHWI, input, bias?) as ConvTranspose with explicit pads."""
    out_shape, w, x = e.ints(0), e.x(1), e.x(2)
    k = [e.dim(w, 1), e.dim(w, 2)]
    strides = [int(e.opt("stride_h", 1)), int(e.opt("stride_w", 1))]
    size_in = [e.dim(x, 1), e.dim(x, 2)]
    full = [s * (n - 1) + kk for s, n, kk in zip(strides, size_in, k, strict=True)]
    total = [f - o for f, o in zip(full, out_shape[1:3], strict=True)]
    if e.opt("padding", "SAME") == "VALID":
        total = [min(t, 0) for t in total]
    begin = [max(t, 0) // 2 for t in total]
    end = [max(t, 0) - b for t, b in zip(total, begin, strict=True)]
    extra = [max(-t, 0) for t in total]
    attrs = {"kernel_shape": k, "strides": strides, "pads": begin + end, "output_padding": extra}
    wt = e.op1("Transpose", [w], attrs={"perm": [3, 0, 1, 2]})
    xt = e.op1("Transpose", [x], attrs={"perm": _TO_NCHW})
    bias = e.x(3) if e.has(3) else None
    y = e.op1("ConvTranspose", [xt, wt, bias], attrs=attrs)
    e.last("Transpose", [y], {"perm": _TO_NHWC})


def arg(op_type: str) -> Map:
    def lower(e: Lower) -> None:
        y = e.op1(op_type, [e.x(0)], attrs={"axis": _axis(e, 1), "keepdims": 0}, dtype="int64")
        _to(e, y, e.dtype(e.outs[0]), e.outs[0])

    return lower


def topk(e: Lower) -> None:
    k = e.i64(e.ints(1), "k")
    values = e.outs[0]
    index = e.fresh("indices", "int64")
    e.op("TopK", [e.x(0), k], {"axis": -1, "largest": 1, "sorted": 1}, out=[values, index])
    if len(e.outs) > 1:
        _to(e, index, e.dtype(e.outs[1]), e.outs[1])


def gelu(e: Lower) -> None:
    approximate = "tanh" if e.opt("approximate", False) else "none"
    e.last("Gelu", [e.x(0)], {"approximate": approximate})


def l2_normalization(e: Lower) -> None:
    """x / sqrt(max(sum(x^2), 1e-6)) over the last axis, as TFLite computes it."""
    x = e.x(0)
    axes = e.i64([-1], "axes")
    sq = e.op1("ReduceSumSquare", [x, axes], attrs={"keepdims": 1})
    norm = e.op1("Sqrt", [e.op1("Max", [sq, e.const(1e-6, e.dtype(x), "epsilon")])])
    e.last("Div", [x, norm])


def select(e: Lower) -> None:
    e.last("Where", [e.x(0), e.x(1), e.x(2)])


def nhwc_block(op_type: str) -> Map:
    """SPACE_TO_DEPTH / DEPTH_TO_SPACE: TF's NHWC order is ONNX's DCR mode in NCHW."""

    def lower(e: Lower) -> None:
        attrs: dict[str, object] = {"blocksize": int(e.opt("block_size"))}
        if op_type == "DepthToSpace":
            attrs["mode"] = "DCR"
        xt = e.op1("Transpose", [e.x(0)], attrs={"perm": _TO_NCHW})
        y = e.op1(op_type, [xt], attrs=attrs)
        e.last("Transpose", [y], {"perm": _TO_NHWC})

    return lower


def floor_div(e: Lower) -> None:
    if e.dtype(e.x(0)) not in ("float32", "float16"):
        raise NotMapped("integer floor division")
    e.last("Floor", [e.op1("Div", [e.x(0), e.x(1)])])


def floor_mod(e: Lower) -> None:
    a, b = e.x(0), e.x(1)
    if e.dtype(a) not in ("float32", "float16"):
        e.last("Mod", [a, b], {"fmod": 0})
        return
    q = e.op1("Floor", [e.op1("Div", [a, b])])
    e.last("Sub", [a, e.op1("Mul", [q, b])])


def cumsum(e: Lower) -> None:
    attrs = {
        "exclusive": int(bool(e.opt("exclusive", False))),
        "reverse": int(bool(e.opt("reverse", False))),
    }
    e.last("CumSum", [e.x(0), e.x(1)], attrs)


def shape(e: Lower) -> None:
    _to(e, e.op1("Shape", [e.x(0)], dtype="int64"), e.dtype(e.outs[0]), e.outs[0])


def square(e: Lower) -> None:
    e.last("Mul", [e.x(0), e.x(0)])


def not_equal(e: Lower) -> None:
    e.op("Not", [e.op1("Equal", [e.x(0), e.x(1)], dtype="bool")], out=[e.outs[0]])


def broadcast_to(e: Lower) -> None:
    e.last("Expand", [e.x(0), _to(e, e.x(1), "int64")])


def fill(e: Lower) -> None:
    e.last("Expand", [e.x(1), _to(e, e.x(0), "int64")])


def gather_nd(e: Lower) -> None:
    e.last("GatherND", [e.x(0), _to(e, e.x(1), "int64")])


def add_n(e: Lower) -> None:
    e.last("Sum", [t for t in e.ins if t is not None])


MORE: dict[str, Map] = {
    "SPLIT": split,
    "SPLIT_V": split_v,
    "PACK": pack,
    "UNPACK": unpack,
    "TILE": tile,
    "RESIZE_BILINEAR": resize(nearest=False),
    "RESIZE_NEAREST_NEIGHBOR": resize(nearest=True),
    "TRANSPOSE_CONV": transpose_conv,
    "ARG_MAX": arg("ArgMax"),
    "ARG_MIN": arg("ArgMin"),
    "TOPK_V2": topk,
    "GELU": gelu,
    "L2_NORMALIZATION": l2_normalization,
    "SELECT": select,
    "SELECT_V2": select,
    "SPACE_TO_DEPTH": nhwc_block("SpaceToDepth"),
    "DEPTH_TO_SPACE": nhwc_block("DepthToSpace"),
    "FLOOR_DIV": floor_div,
    "FLOOR_MOD": floor_mod,
    "CUMSUM": cumsum,
    "SHAPE": shape,
    "SQUARE": square,
    "NOT_EQUAL": not_equal,
    "BROADCAST_TO": broadcast_to,
    "FILL": fill,
    "GATHER_ND": gather_nd,
    "ADD_N": add_n,
}
