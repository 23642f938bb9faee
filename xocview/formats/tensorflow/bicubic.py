"""TensorFlow's ResizeBicubic as ONNX ops that give its values, not ONNX Resize's.

TF does not evaluate Keys' cubic at each sample's offset: it rounds the offset to 1/1024 and
reads the four weights from a table (``resize_bicubic_op.cc``), which moves results by up to
~3e-3 from an exact cubic (what ONNX Resize computes). So each axis is written as TF computes
it: the sample positions from the input's size at run time, the table's weights gathered by
the rounded offset, the four taps' rows gathered (clamped at the edges) and summed. Half-pixel
centres use a = -0.5 and give the taps outside the image no weight (the rest renormalised);
the legacy grids use a = -0.75 and repeat the edge.
"""

from __future__ import annotations

import numpy as np

from xocview.formats.tensorflow.lower import NotMapped, TfEmit
from xocview.model.dtypes import DTYPES

__all__ = ["resize_bicubic"]

_TABLE = 1024


def _table(a: float) -> np.ndarray:
    """Row o: the weights of the taps at -1, 0, 1, 2 for offset o / 1024, in float32 as TF."""
    f = np.float32
    x0 = (np.arange(_TABLE + 1) * 1.0 / _TABLE).astype(f)
    a32 = f(a)
    near = ((a32 + f(2)) * x0 - (a32 + f(3))) * x0 * x0 + f(1)
    x1 = x0 + f(1)
    far = ((a32 * x1 - f(5) * a32) * x1 + f(8) * a32) * x1 - f(4) * a32
    rows = np.stack([far, near, near[::-1], far[::-1]], axis=1)
    return np.asarray(rows, dtype=f)


def _taps(e: TfEmit, x: int, axis: int, n_out: int, mode: tuple[bool, bool]) -> tuple[int, int]:
    """The taps' indices and weights, both [n_out, 4], along ``axis`` of ``x``."""
    corners, half = mode
    n_in = e.op1("Gather", [e.op1("Shape", [x], dtype="int64"), e.i64([axis], "axis")])
    last = e.op1("Sub", [n_in, e.i64([1], "one")])
    if corners and n_out > 1:
        scale = e.op1("Div", [e.cast(last, "float32"), e.const([n_out - 1], "float32", "n")])
    else:
        scale = e.op1("Div", [e.cast(n_in, "float32"), e.const([n_out], "float32", "n")])
    pos = np.arange(n_out, dtype=np.float32)
    if half:
        at = e.op1("Mul", [e.const(pos + np.float32(0.5), "float32", "centres"), scale])
        at = e.op1("Sub", [at, e.const([0.5], "float32", "half")])
    else:
        at = e.op1("Mul", [e.const(pos, "float32", "positions"), scale])
    base = e.op1("Floor", [at])
    steps = e.op1(
        "Round", [e.op1("Mul", [e.op1("Sub", [at, base]), e.const(_TABLE, "float32", "k")])]
    )
    table = e.const(_table(-0.5 if half else -0.75), "float32", "table")
    weights = e.op1("Gather", [table, e.cast(steps, "int64")], attrs={"axis": 0})
    first = e.op1("Unsqueeze", [e.cast(base, "int64"), e.i64([1], "at")])
    raw = e.op1("Add", [first, e.i64([-1, 0, 1, 2], "taps")])
    idx = e.op1("Min", [e.op1("Max", [raw, e.i64([0], "zero")]), last])
    if half:
        inside = e.op1("Equal", [idx, raw], dtype="bool")
        weights = e.op1("Where", [inside, weights, e.const(0.0, "float32", "zero")])
        total = e.op1("ReduceSum", [weights, e.i64([1], "at")], attrs={"keepdims": 1})
        weights = e.op1("Div", [weights, total])
    return idx, weights


def _along(e: TfEmit, x: int, axis: int, n_out: int, mode: tuple[bool, bool]) -> int:
    """``x`` (NHWC) resampled along ``axis`` (1 or 2) to ``n_out``."""
    idx, weights = _taps(e, x, axis, n_out, mode)
    rows = e.op1("Gather", [x, idx], attrs={"axis": axis})  # [.., n_out, 4, ..]
    w = e.op1("Reshape", [weights, e.i64([n_out, 4, *[1] * (3 - axis)], "w")])
    return e.op1(
        "ReduceSum", [e.op1("Mul", [rows, w]), e.i64([axis + 1], "taps")], attrs={"keepdims": 0}
    )


def resize_bicubic(e: TfEmit) -> None:
    """Width first then height (TF's order), in float32 whatever the input's type."""
    sizes = e.ints(1)
    if len(sizes) != 2 or min(sizes) < 1:
        raise NotMapped("size is not two positive sizes")
    mode = (bool(e.attr("align_corners", False)), bool(e.attr("half_pixel_centers", False)))
    x = e.x(0)
    if e.dtype(x) != "float32":
        x = e.op1("Cast", [x], attrs={"to": DTYPES["float32"].onnx_code}, dtype="float32")
    wide = _along(e, x, 2, sizes[1], mode)
    idx, weights = _taps(e, x, 1, sizes[0], mode)
    rows = e.op1("Gather", [wide, idx], attrs={"axis": 1})
    w = e.op1("Reshape", [weights, e.i64([sizes[0], 4, 1, 1], "w")])
    e.last("ReduceSum", [e.op1("Mul", [rows, w]), e.i64([2], "taps")], {"keepdims": 0})
