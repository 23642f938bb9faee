"""TensorFlow's space/batch blocks, 3-D convolution and pooling, Unique and bicubic resizing
(``bicubic``) as ONNX ops (part of ``ops.TF_ONNX``), the ops TFLite's matching builtins also run as.

A frozen graph rarely gives an activation's shape, so unlike TFLite's mappings (which read
the file's fixed sizes) these need only the constants: the space/batch blocks take their sizes
from a Shape op when they run, and a transposed convolution's input size follows from the
``input_sizes`` it must be the gradient of.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xocview.formats.tensorflow.bicubic import resize_bicubic
from xocview.formats.tensorflow.lower import NotMapped, TfEmit
from xocview.model.dtypes import DTYPES

__all__ = ["SPATIAL"]

Map = Callable[[TfEmit], None]
_INT_MAX = 2**63 - 1
TO_FIRST = [0, 4, 1, 2, 3]
TO_LAST = [0, 2, 3, 4, 1]
DHWIO_TO_OIDHW = [4, 3, 0, 1, 2]


def _blocks(e: TfEmit) -> tuple[list[int], list[list[int]]]:
    """The block sizes (input 1) and the pads or crops (input 2) as (begin, end) pairs."""
    block = e.ints(1)
    pairs = [[int(a), int(b)] for a, b in e.value(2).reshape(-1, 2).tolist()]
    if len(pairs) != len(block) or min(block, default=0) < 1:
        raise NotMapped("block_shape and paddings/crops do not fit")
    return block, pairs


def _dims(e: TfEmit, t: int, m: int) -> tuple[int, int, int]:
    """Shape(t) cut into the batch [1], the ``m`` spatial sizes and the other sizes."""
    dims = e.op1("Shape", [t], dtype="int64")
    cuts = [(0, 1), (1, m + 1), (m + 1, _INT_MAX)]
    b, s, r = (e.op1("Slice", [dims, e.i64([a], "a"), e.i64([z], "z")]) for a, z in cuts)
    return b, s, r


def space_to_batch_nd(e: TfEmit) -> None:
    """[B, s.., rest] padded, each spatial axis split (s/b, b) and the blocks moved before B
    (the other axes flattened into one while they move)."""
    block, pads = _blocks(e)
    m, y = len(block), e.x(0)
    if any(v for pair in pads for v in pair):
        at = [*[a for a, _ in pads], *[z for _, z in pads]]
        axes = e.i64(list(range(1, m + 1)), "axes")
        y = e.op1("Pad", [y, e.i64(at, "pads"), None, axes], attrs={"mode": "constant"})
    batch, spatial, rest = _dims(e, y, m)
    q = e.op1("Div", [spatial, e.i64(block, "block")])
    column = e.const(np.array(block, dtype=np.int64).reshape(m, 1), "int64", "blocks")
    pairs = e.op1("Concat", [e.op1("Unsqueeze", [q, e.i64([1], "at")]), column], attrs={"axis": 1})
    pairs = e.op1("Reshape", [pairs, e.i64([-1], "flat")])
    split = e.op1("Concat", [batch, pairs, e.i64([-1], "rest")], attrs={"axis": 0})
    y = e.op1("Reshape", [y, split])
    perm = [*range(2, 2 * m + 1, 2), 0, *range(1, 2 * m, 2), 2 * m + 1]
    y = e.op1("Transpose", [y], attrs={"perm": perm})
    out = e.op1("Concat", [e.i64([-1], "batch"), q, rest], attrs={"axis": 0})
    e.last("Reshape", [y, out])


def batch_to_space_nd(e: TfEmit) -> None:
    """[b.., B, s.., rest] interleaved back into [B, s*b.., rest], then the crops cut off."""
    block, crops = _blocks(e)
    m, x = len(block), e.x(0)
    total, spatial, rest = _dims(e, x, m)
    batch = e.op1("Div", [total, e.i64([int(np.prod(block))], "blocks")])
    split = e.op1(
        "Concat", [e.i64(block, "block"), batch, spatial, e.i64([-1], "rest")], attrs={"axis": 0}
    )
    y = e.op1("Reshape", [x, split])
    perm = [m, *[v for d in range(m) for v in (m + 1 + d, d)], 2 * m + 1]
    y = e.op1("Transpose", [y], attrs={"perm": perm})
    full = e.op1("Mul", [spatial, e.i64(block, "block")])
    shape = e.op1("Concat", [batch, full, rest], attrs={"axis": 0})
    if not any(v for pair in crops for v in pair):
        e.last("Reshape", [y, shape])
        return
    y = e.op1("Reshape", [y, shape])
    starts = e.i64([a for a, _ in crops], "starts")
    ends = e.i64([-z if z else _INT_MAX for _, z in crops], "ends")
    e.last("Slice", [y, starts, ends, e.i64(list(range(1, m + 1)), "axes")])


def _first(e: TfEmit) -> bool:
    fmt = str(e.attr("data_format", "NDHWC"))
    if fmt not in ("NDHWC", "NCDHW"):
        raise NotMapped(f"data_format {fmt}")
    return fmt == "NCDHW"


def _three(e: TfEmit, name: str) -> list[int]:
    """The D, H and W entries of a 5-entry attribute in ``data_format`` order."""
    got = [int(v) for v in e.attr(name, [1, 1, 1, 1, 1])]
    if len(got) != 5:
        raise NotMapped(f"{name} has {len(got)} entries, not 5")
    return got[2:5] if _first(e) else got[1:4]


def _same(e: TfEmit) -> bool:
    padding = str(e.attr("padding", "VALID"))
    if padding not in ("SAME", "VALID"):
        raise NotMapped(f"padding {padding}")
    return padding == "SAME"


def _around(e: TfEmit, op_type: str, x: int, rest: list[int], attrs: dict[str, object]) -> None:
    """``op_type`` (NCDHW) on ``x``, between Transposes when the op's layout is NDHWC."""
    if _first(e):
        e.last(op_type, [x, *rest], attrs)
        return
    t = e.op1("Transpose", [x], attrs={"perm": TO_FIRST})
    y = e.op1(op_type, [t, *rest], attrs=attrs)
    e.last("Transpose", [y], {"perm": TO_LAST})


def conv_3d(e: TfEmit) -> None:
    """NDHWC input, DHWIO filter -> Conv on NCDHW with an OIDHW weight."""
    w = e.op1("Transpose", [e.x(1)], attrs={"perm": DHWIO_TO_OIDHW})
    attrs: dict[str, object] = {"strides": _three(e, "strides")}
    attrs.update(dilations=_three(e, "dilations"), auto_pad="SAME_UPPER" if _same(e) else "VALID")
    _around(e, "Conv", e.x(0), [w], attrs)


def conv_3d_backprop_input(e: TfEmit) -> None:
    """(input_sizes, filter D H W O I, out_backprop) as ConvTranspose with explicit pads. The
    gradient's input size is the forward convolution's output size for ``input_sizes``; TF
    puts an odd pad after, and what the stride leaves over goes to ``output_padding``."""
    sizes, kernel = e.ints(0), list(e.value(1).shape)
    if len(sizes) != 5 or len(kernel) != 5:
        raise NotMapped("input_sizes or the filter is not 5-D")
    strides, dil, same = _three(e, "strides"), _three(e, "dilations"), _same(e)
    out = sizes[2:5] if _first(e) else sizes[1:4]
    pads, extra = [0] * 6, [0] * 3
    for d in range(3):
        k = (kernel[d] - 1) * dil[d] + 1
        n = -(-out[d] // strides[d]) if same else -(-(out[d] - k + 1) // strides[d])
        full = strides[d] * (n - 1) + k
        total = max(full - out[d], 0) if same else 0
        pads[d], pads[d + 3] = total // 2, total - total // 2
        extra[d] = out[d] - (full - total)
    if min(extra) < 0 or any(x >= s for x, s in zip(extra, strides, strict=True)):
        raise NotMapped("input_sizes does not fit the transposed convolution")
    w = e.op1("Transpose", [e.x(1)], attrs={"perm": DHWIO_TO_OIDHW})
    attrs: dict[str, object] = {"strides": strides, "dilations": dil, "pads": pads}
    attrs.update(kernel_shape=kernel[:3], output_padding=extra)
    _around(e, "ConvTranspose", e.x(2), [w], attrs)


def pool_3d(op_type: str) -> Map:
    """MaxPool3D, AvgPool3D (TF's SAME average counts only the input's cells, as ONNX's)."""

    def lower(e: TfEmit) -> None:
        attrs: dict[str, object] = {"kernel_shape": _three(e, "ksize")}
        attrs.update(strides=_three(e, "strides"), auto_pad="SAME_UPPER" if _same(e) else "VALID")
        _around(e, op_type, e.x(0), [], attrs)

    return lower


def unique(e: TfEmit) -> None:
    """Unique elements in the order they first occur, and each element's index among them
    (TF's input is 1-D, so ONNX's flattening Unique gives the same)."""
    x = e.x(0)
    if not e.tensors[e.root(x)].metadata.get("rank_unknown") and e.rank(x) != 1:
        raise NotMapped("Unique of a tensor that is not 1-D")
    inverse = e.fresh("inverse", "int64")
    outs = [e.outs[0], e.fresh("first", "int64"), inverse, e.fresh("counts", "int64")]
    e.op("Unique", [x], {"sorted": 0}, out=outs)
    if len(e.outs) > 1:
        want = str(e.attr("out_idx", "int32"))
        e.op("Cast", [inverse], {"to": DTYPES[want].onnx_code}, out=[e.outs[1]])
        e.tensors[e.outs[1]].dtype = want  # (the NodeDef's T names the values' type only)


SPATIAL: dict[str, Map] = {
    "SpaceToBatchND": space_to_batch_nd,
    "BatchToSpaceND": batch_to_space_nd,
    "Conv3D": conv_3d,
    "Conv3DBackpropInputV2": conv_3d_backprop_input,
    "MaxPool3D": pool_3d("MaxPool"),
    "AvgPool3D": pool_3d("AveragePool"),
    "Unique": unique,
    "ResizeBicubic": resize_bicubic,
}
