"""The one table of TensorFlow ops and the ONNX ops they run as (``TF_ONNX``).

TensorFlow lays images out NHWC (``data_format``) and convolution filters HWIO (depthwise:
HWCM); ONNX wants NCHW and OIHW. The layout is explicit in the graph: a convolution or
pooling becomes Transpose -> Conv/Pool -> Transpose and its filter goes through a Transpose
(folded once, as a constant, by the executor). Elementwise, shape and reduction ops are in
``more_ops``. Keys are TensorFlow op names as a NodeDef's ``op`` spells them.
"""

from __future__ import annotations

from collections.abc import Callable

from xocview.formats.tensorflow.lower import NotMapped, TfEmit
from xocview.formats.tensorflow.more_ops import MORE
from xocview.formats.tensorflow.spatial import SPATIAL
from xocview.formats.tensorflow.tensor_lists import TENSOR_LISTS
from xocview.model.dtypes import DTYPES

__all__ = ["TF_ONNX"]

Map = Callable[[TfEmit], None]

TO_NCHW = [0, 3, 1, 2]
TO_NHWC = [0, 2, 3, 1]
HWIO_TO_OIHW = [3, 2, 0, 1]


def _nchw(e: TfEmit) -> bool:
    fmt = str(e.attr("data_format", "NHWC"))
    if fmt not in ("NHWC", "NCHW"):
        raise NotMapped(f"data_format {fmt}")
    return fmt == "NCHW"


def _spatial(e: TfEmit, name: str, given: list[int] | None = None) -> list[int]:
    """The H and W entries of a 4-entry attribute (or ``given`` values) in ``data_format``
    order."""
    got = [int(v) for v in (given if given is not None else e.attr(name, [1, 1, 1, 1]))]
    if len(got) != 4:
        raise NotMapped(f"{name} has {len(got)} entries, not 4")
    return got[2:4] if _nchw(e) else got[1:3]


def _padding(e: TfEmit) -> dict[str, object]:
    padding = str(e.attr("padding", "VALID"))
    if padding == "SAME":
        return {"auto_pad": "SAME_UPPER"}
    if padding == "VALID":
        return {"auto_pad": "VALID"}
    if padding == "EXPLICIT":
        pads = [int(v) for v in e.attr("explicit_paddings")]
        if len(pads) != 8:
            raise NotMapped("explicit_paddings has not 8 entries")
        pairs = pads[4:8] if _nchw(e) else pads[2:6]
        return {"pads": [pairs[0], pairs[2], pairs[1], pairs[3]]}
    raise NotMapped(f"padding {padding}")


def _around(e: TfEmit, op_type: str, x: int, rest: list[int], attrs: dict[str, object]) -> None:
    """``op_type`` (NCHW) on ``x``, between Transposes when the op's layout is NHWC."""
    if _nchw(e):
        e.last(op_type, [x, *rest], attrs)
        return
    t = e.op1("Transpose", [x], attrs={"perm": TO_NCHW})
    y = e.op1(op_type, [t, *rest], attrs=attrs)
    e.last("Transpose", [y], {"perm": TO_NHWC})


def conv_2d(e: TfEmit) -> None:
    w = e.op1("Transpose", [e.x(1)], attrs={"perm": HWIO_TO_OIHW})
    attrs = {
        "strides": _spatial(e, "strides"),
        "dilations": _spatial(e, "dilations"),
        **_padding(e),
    }
    _around(e, "Conv", e.x(0), [w], attrs)


def depthwise(e: TfEmit) -> None:
    """Filter H W C M as a grouped Conv's (C*M) 1 H W, ``group`` C."""
    channels = e.dim(e.x(1), 2)
    flat = e.op1("Reshape", [e.x(1), e.i64([0, 0, 1, -1], "shape")])
    w = e.op1("Transpose", [flat], attrs={"perm": HWIO_TO_OIHW})
    attrs = {
        "strides": _spatial(e, "strides"),
        "dilations": _spatial(e, "dilations"),
        "group": channels,
        **_padding(e),
    }
    _around(e, "Conv", e.x(0), [w], attrs)


def conv_backprop_input(e: TfEmit) -> None:
    """(input_sizes, filter H W O I, out_backprop) as ConvTranspose with explicit pads: TF
    puts the odd pad after, as its forward convolution does."""
    sizes = e.ints(0)
    w = e.value(1)
    if len(sizes) != 4 or w.ndim != 4:
        raise NotMapped("input_sizes or the filter is not 4-D")
    strides, dil = _spatial(e, "strides"), _spatial(e, "dilations")
    out_hw = sizes[2:4] if _nchw(e) else sizes[1:3]
    in_hw = [e.dim(e.x(2), d) for d in ((2, 3) if _nchw(e) else (1, 2))]
    pad = str(e.attr("padding", "VALID"))
    if pad not in ("SAME", "VALID"):
        raise NotMapped(f"padding {pad}")
    pads, extra = [0, 0, 0, 0], [0, 0]
    for d in range(2):
        k = (w.shape[d] - 1) * dil[d] + 1
        full = strides[d] * (in_hw[d] - 1) + k
        total = max(full - out_hw[d], 0) if pad == "SAME" else 0
        pads[d], pads[d + 2] = total // 2, total - total // 2
        extra[d] = out_hw[d] - (full - total)
    if min(extra) < 0:
        raise NotMapped("input_sizes is smaller than the transposed convolution makes")
    wt = e.op1("Transpose", [e.x(1)], attrs={"perm": HWIO_TO_OIHW})
    attrs: dict[str, object] = {"strides": strides, "dilations": dil, "pads": pads}
    attrs["output_padding"] = extra
    _around(e, "ConvTranspose", e.x(2), [wt], attrs)


def bias_add(e: TfEmit) -> None:
    if _nchw(e):
        b = e.op1("Reshape", [e.x(1), e.i64([-1, 1, 1], "shape")])
        e.last("Add", [e.x(0), b])
        return
    e.last("Add", [e.x(0), e.x(1)])


def pool(op_type: str, v2: bool = False) -> Map:
    """MaxPool, AvgPool; ``v2``: ksize and strides are inputs 1 and 2, not attributes."""

    def lower(e: TfEmit) -> None:
        ksize = _spatial(e, "ksize", e.ints(1) if v2 else None)
        attrs: dict[str, object] = {"kernel_shape": ksize}
        attrs.update(strides=_spatial(e, "strides", e.ints(2) if v2 else None), **_padding(e))
        _around(e, op_type, e.x(0), [], attrs)

    return lower


def mat_mul(e: TfEmit) -> None:
    a, b = e.x(0), e.x(1)
    if e.attr("transpose_a", False):
        a = e.op1("Transpose", [a], attrs={"perm": [1, 0]})
    if e.attr("transpose_b", False):
        b = e.op1("Transpose", [b], attrs={"perm": [1, 0]})
    e.last("MatMul", [a, b])


def batch_mat_mul(e: TfEmit) -> None:
    """Adjoint operands (real: transposed) through Einsum, whatever the batch rank."""
    adj_x, adj_y = bool(e.attr("adj_x", False)), bool(e.attr("adj_y", False))
    if not (adj_x or adj_y):
        e.last("MatMul", [e.x(0), e.x(1)])
        return
    left = "...ji" if adj_x else "...ij"
    right = "...kj" if adj_y else "...jk"
    e.last("Einsum", [e.x(0), e.x(1)], {"equation": f"{left},{right}->...ik"})


def fused_batch_norm(e: TfEmit) -> None:
    """Inference batch norm: NCHW as BatchNormalization; NHWC as x * m + a with
    m = scale / sqrt(var + eps) and a = offset - mean * m, broadcast on the last axis."""
    if e.attr("is_training", False):
        raise NotMapped("is_training is true (batch statistics)")
    x, scale, offset, mean, var = (e.x(k) for k in range(5))
    eps = float(e.attr("epsilon", 1e-4))
    if _nchw(e):
        e.last("BatchNormalization", [x, scale, offset, mean, var], {"epsilon": eps})
    else:
        dt = e.dtype(scale)
        std = e.op1("Sqrt", [e.op1("Add", [var, e.const(eps, dt, "epsilon")])])
        m = e.op1("Div", [scale, std])
        a = e.op1("Sub", [offset, e.op1("Mul", [mean, m])])
        if e.dtype(x) != dt:  # half inputs, float statistics: TF's output is of x's type
            to = {"to": DTYPES[e.dtype(x)].onnx_code}
            m, a = (e.op1("Cast", [v], attrs=to, dtype=e.dtype(x)) for v in (m, a))
        e.last("Add", [e.op1("Mul", [x, m]), a])
    for k, src in enumerate([mean, var, mean, var, mean], start=1):
        if k < len(e.outs):
            e.op("Identity", [src], out=[e.outs[k]])


def lrn(e: TfEmit) -> None:
    """TF sums squares over 2r+1 channels and scales the sum by alpha; ONNX divides alpha by
    the window's size."""
    size = 2 * int(e.attr("depth_radius", 5)) + 1
    attrs: dict[str, object] = {"size": size, "alpha": float(e.attr("alpha", 1.0)) * size}
    attrs.update(beta=float(e.attr("beta", 0.5)), bias=float(e.attr("bias", 1.0)))
    t = e.op1("Transpose", [e.x(0)], attrs={"perm": TO_NCHW})
    e.last("Transpose", [e.op1("LRN", [t], attrs=attrs)], {"perm": TO_NHWC})


def _space_depth(op_type: str) -> Map:
    def lower(e: TfEmit) -> None:
        attrs: dict[str, object] = {"blocksize": int(e.attr("block_size"))}
        if op_type == "DepthToSpace":
            attrs["mode"] = "DCR"
        _around(e, op_type, e.x(0), [], attrs)

    return lower


TF_ONNX: dict[str, Map] = {
    "Conv2D": conv_2d,
    "DepthwiseConv2dNative": depthwise,
    "Conv2DBackpropInput": conv_backprop_input,
    "BiasAdd": bias_add,
    "MaxPool": pool("MaxPool"),
    "AvgPool": pool("AveragePool"),
    "MaxPoolV2": pool("MaxPool", v2=True),
    "LRN": lrn,
    "BiasAddV1": bias_add,
    "MatMul": mat_mul,
    "BatchMatMul": batch_mat_mul,
    "BatchMatMulV2": batch_mat_mul,
    "BatchMatMulV3": batch_mat_mul,
    "FusedBatchNorm": fused_batch_norm,
    "FusedBatchNormV2": fused_batch_norm,
    "FusedBatchNormV3": fused_batch_norm,
    "SpaceToDepth": _space_depth("SpaceToDepth"),
    "DepthToSpace": _space_depth("DepthToSpace"),
    **MORE,
    **SPATIAL,
    **TENSOR_LISTS,
}
